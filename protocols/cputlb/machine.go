package cputlb

import (
	"github.com/protocheck/protocheck/model"
)

// src is the vCPU executing the broadcast invalidate; the others are
// targets.
const src = 0

type machine struct {
	cfg      config
	n        int
	accesses uint8
	threads  []string
	mem      []string // names of the memory words
	props    model.Properties
}

func newMachineOf(cfg config, n, accesses int) *machine {
	m := &machine{cfg: cfg, n: n, accesses: uint8(accesses), threads: cpuNames[:n:n], mem: memNames(n)}
	m.props = model.Properties{
		Invariants: []model.Invariant{{Name: WorkOnce, Check: m.workOnce}},
		Metrics:    []string{"bql-acquisitions", "kicks"},
		Spec:       spec,
	}
	return m
}

func (m *machine) Threads() []string { return m.threads }

func (m *machine) Properties() model.Properties { return m.props }

// Init is the start of the interesting window: every vCPU has used page X
// (its TLB holds X->P), drained its work list and is about to call
// cpu_exec_start; no exclusive section is pending and no exit is requested.
func (m *machine) Init() model.State {
	s := &state{n: uint8(m.n), mem: model.NewMem(m.mem...)}
	s.mem.Init(wPTE, 1)
	for c := 0; c < m.n; c++ {
		s.cpu[c].tlb = true
	}
	return s
}

// Step runs thread t's next step. A step that needs a lock someone else
// holds, or a wake-up that has not come, blocks before it changes
// anything, its label naming what it waits for (the text of a deadlock
// report).
func (m *machine) Step(st model.State, t int, x *model.Exec) {
	s := st.(*state)
	switch s.cpu[t].pc {
	case pcStart, pcStartCheck, pcStartLock, pcStartWaiter, pcStartRelock, pcStartRewait, pcStartUnlock:
		m.stepExecStart(s, t, x)
	case pcExec, pcGuest:
		m.stepExec(s, t, x)
	case pcEnd, pcEndCheck, pcEndLock, pcEndWaiter, pcEndSignal, pcEndUnlock:
		m.stepExecEnd(s, t, x)
	case pcClearExit, pcIdle, pcHaltRelock:
		m.stepIdle(s, t, x)
	case pcItemBQL, pcItemRun, pcItemUnBQL, pcItemDone:
		m.stepWork(s, t, x)
	default:
		m.stepExclusive(s, t, x)
	}
}

// done: vCPU t is asleep on its halt_cond with an empty work list and its
// guest program finished; nothing is left for it to do until the next
// interrupt.
func (m *machine) done(s *state, t int) bool {
	v := &s.cpu[t]
	return v.pc == pcHaltRelock && s.haltCond[t].Waiting(t) && v.qlen == 0 && m.programDone(t, v)
}

// listLockBusy blocks the step when qemu_cpu_list_lock is held, naming it.
func listLockBusy(s *state, x *model.Exec) bool {
	if s.listLock.Free() {
		return false
	}
	x.Block()
	if x.Labelling() {
		x.Label(listLock + " (" + s.listLock.String() + ")")
	}
	return true
}

// cpuLockBusy blocks the step when vCPU c's cpu->lock is held, naming it.
func cpuLockBusy(s *state, c int, x *model.Exec) bool {
	if s.cpuLock[c].Free() {
		return false
	}
	x.Block()
	if x.Labelling() {
		x.Label(cpuLockNames[c] + " (" + s.cpuLock[c].String() + ")")
	}
	return true
}

// asleep blocks the step of thread t while it is in c's wait set, with
// the label what (what the wake-up waits for).
func asleep(c *model.Cond, t int, x *model.Exec, what string) bool {
	if !c.Waiting(t) {
		return false
	}
	x.Block()
	if x.Labelling() {
		x.Label(what)
	}
	return true
}
