package cputlb

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

type machine struct {
	cfg      config
	n        int // vCPUs
	sources  int // vCPUs 0..sources-1 execute a broadcast invalidate
	accesses uint8
	rounds   uint8 // migration rounds (0: no migration thread)
	commits  uint8 // memory transactions committed by the main loop (0: no main-loop thread)
	rcu      bool  // the old map is freed through RCU (rcu.go); needs a commit
	// vcpuCommit: the first target's guest commits the transaction itself
	// (vcpucommit.go); commits is then 0.
	vcpuCommit bool
	iommu      bool // the IOMMU notifier's thread (iommu.go)
	iommuT     int  // its thread index, or -1
	envCPU     int  // the vCPU whose guest stores to D and reads M (the first target)
	mig        int  // thread index of the migration thread, or -1
	main       int  // thread index of the main loop, or -1
	rcuT       int  // thread index of the call_rcu thread, or -1
	threads    []string
	mem        []string // names of the memory words
	program    [maxCPUs][]op

	// Addresses of the memory words.
	aPTE       [maxSources]model.Addr
	aPending   model.Addr
	aRunning   [maxCPUs]model.Addr
	aHasWaiter [maxCPUs]model.Addr
	aExitReq   [maxCPUs]model.Addr
	aDispatch  [maxCPUs]model.Addr // cpu->cpu_ases[0].memory_dispatch (its generation)
	aDone      [maxCPUs]model.Addr // the run_on_cpu item's wi.done
	aDirty     model.Addr          // D's bit in ram_list.dirty_memory[DIRTY_MEMORY_MIGRATION]
	aRAM       model.Addr          // the contents of D (a counter of the stores to it)
	aMap       model.Addr          // the address space's current map (its dispatch generation)

	props model.Properties
}

func newMachineOf(cfg config, p shape) *machine {
	m := &machine{cfg: cfg, n: p.cpus, sources: p.sources, accesses: uint8(p.accesses),
		rounds: uint8(p.migration), commits: uint8(p.commit), rcu: p.rcu == 1 && p.commit+p.vcpuCommit > 0, vcpuCommit: p.vcpuCommit == 1, iommu: p.iommu == 1, iommuT: -1, envCPU: p.sources, mig: -1, main: -1, rcuT: -1}
	m.threads = append([]string(nil), cpuNames[:m.n]...)
	if m.rounds > 0 {
		m.mig = len(m.threads)
		m.threads = append(m.threads, "migration")
	}
	if m.commits > 0 {
		m.main = len(m.threads)
		m.threads = append(m.threads, "main-loop")
	}
	if m.rcu {
		m.rcuT = len(m.threads)
		m.threads = append(m.threads, "call_rcu")
	}
	if m.iommu {
		m.iommuT = len(m.threads)
		m.threads = append(m.threads, "iommu")
	}
	word := func(name string) model.Addr {
		m.mem = append(m.mem, name)
		return model.Addr(len(m.mem) - 1)
	}
	for s := 0; s < m.sources; s++ {
		m.aPTE[s] = word("pte(" + pageNames[s] + ")")
	}
	m.aPending = word("pending_cpus")
	for c := 0; c < m.n; c++ {
		m.aRunning[c] = word(cpuNames[c] + "->running")
		m.aHasWaiter[c] = word(cpuNames[c] + "->has_waiter")
		m.aExitReq[c] = word(cpuNames[c] + "->exit_request")
		if m.transactions() > 0 && !cfg.uncached {
			m.aDispatch[c] = word(cpuNames[c] + "->cpu_ases[0].memory_dispatch")
		}
		if m.rounds > 0 {
			m.aDone[c] = word("wi(run_on_cpu " + cpuNames[c] + ").done")
		}
	}
	if m.rounds > 0 {
		m.aDirty = word("dirty_memory[MIGRATION](D)")
		m.aRAM = word("ram(D)")
	}
	if m.transactions() > 0 {
		m.aMap = word("address_space_memory.current_map")
	}
	for c := m.sources; c < m.n; c++ {
		m.program[c] = m.targetProgram(c)
	}
	m.props = model.Properties{
		Invariants: []model.Invariant{{Name: WorkOnce, Check: m.workOnce}},
		Assertions: []string{NoStaleTranslation, DispatchCoherent, DirtyTracking, WorkOnce},
		Metrics:    metricNames,
		Spec:       spec,
	}
	if m.rounds > 0 {
		m.props.Invariants = append(m.props.Invariants, model.Invariant{Name: DirtyTracking, Check: m.dirtyTracking})
	}
	if m.rcu {
		m.props.Assertions = append(m.props.Assertions, DispatchLive)
	}
	if m.iommu {
		m.props.Assertions = append(m.props.Assertions, TLBOwnerOnly)
	}
	for s := 0; s < m.sources; s++ {
		s := s
		m.props.Progress = append(m.props.Progress, model.Progress{
			Name:    proceedsName(s),
			Pending: func(st model.State) bool { return m.flushInProgress(st.(*state), s) },
		})
	}
	return m
}

func (m *machine) Threads() []string { return m.threads }

// transactions is the number of memory transactions committed, by the
// main loop or by the first target's guest (at most one in all).
func (m *machine) transactions() int {
	if m.vcpuCommit {
		return 1
	}
	return int(m.commits)
}

func (m *machine) Properties() model.Properties { return m.props }

// Init is the start of the interesting window: every vCPU has used the
// pages X_s (its TLB holds X_s->P), drained its work list and is about to
// call cpu_exec_start; no exclusive section is pending and no exit is
// requested. Migration is under way: the first target has stored to page D
// since the stream last carried it (D holds 1, the stream 0), so D's
// dirty bit is set and its TLB entry of D is writable (notdirty_write
// dropped TLB_NOTDIRTY); that target's TLB also holds M, filled under the
// current dispatch (generation 0).
func (m *machine) Init() model.State {
	s := &state{n: uint8(m.n), hasMig: m.rounds > 0, hasMain: m.commits > 0, hasRCU: m.rcu, hasIOMMU: m.iommu, mem: model.NewMem(m.mem...)}
	for p := 0; p < m.sources; p++ {
		s.mem.Init(m.aPTE[p], 1)
	}
	for c := 0; c < m.n; c++ {
		s.cpu[c].tlbX = uint8(1)<<uint(m.sources) - 1
	}
	if m.rounds > 0 {
		s.cpu[m.envCPU].tlbD = tlbWritable
		s.mem.Init(m.aDirty, 1)
		s.mem.Init(m.aRAM, 1)
	}
	if m.transactions() > 0 {
		s.cpu[m.envCPU].tlbM = 1
	}
	// With rcu, a device interrupt is pending on the first target (rcu.go).
	s.cpu[m.envCPU].irq = m.rcu
	return s
}

// Step runs thread t's next step. A step that needs a lock someone else
// holds, or a wake-up that has not come, blocks before it changes
// anything, its label naming what it waits for (the text of a deadlock
// report).
func (m *machine) Step(st model.State, t int, x *model.Exec) {
	s := st.(*state)
	switch t {
	case m.mig:
		m.stepMigration(s, x)
		return
	case m.main:
		m.stepCommit(s, x)
		return
	case m.rcuT:
		m.stepRCU(s, x)
		return
	case m.iommuT:
		m.stepIOMMU(s, x)
		return
	}
	switch s.cpu[t].pc {
	case pcStart, pcStartCheck, pcStartLock, pcStartWaiter, pcStartRelock, pcStartRewait, pcStartUnlock:
		m.stepExecStart(s, t, x)
	case pcExec, pcGuest, pcRCULock, pcRCUUnlock, pcIRQInstall:
		m.stepExec(s, t, x)
	case pcEnd, pcEndCheck, pcEndLock, pcEndWaiter, pcEndSignal, pcEndUnlock:
		m.stepExecEnd(s, t, x)
	case pcClearExit, pcIdle, pcHaltRelock:
		m.stepIdle(s, t, x)
	case pcItemBQL, pcItemRun, pcItemUnBQL, pcItemDone, pcItemPop, pcItemUnlock:
		m.stepWork(s, t, x)
	default:
		m.stepExclusive(s, t, x)
	}
}

// isSource reports whether vCPU c executes a broadcast invalidate.
func (m *machine) isSource(c int) bool { return c < m.sources }

// done: vCPU t is asleep on its halt_cond with an empty work list and its
// guest program finished; nothing is left for it to do until the next
// interrupt.
func (m *machine) done(s *state, t int) bool {
	v := &s.cpu[t]
	return v.pc == pcHaltRelock && s.haltCond[t].Waiting(t) && v.qlen == 0 && m.programDone(t, v)
}

// blockedOn blocks the step while mu is held by another thread, naming
// what it waits for.
func blockedOn(mu *model.Mutex, name string, x *model.Exec) bool {
	if mu.Free() {
		return false
	}
	x.Block()
	if x.Labelling() {
		x.Label(name + " (" + mu.String() + ")")
	}
	return true
}

func listLockBusy(s *state, x *model.Exec) bool { return blockedOn(&s.listLock, listLock, x) }

func cpuLockBusy(s *state, c int, x *model.Exec) bool {
	return blockedOn(&s.cpuLock[c], cpuLockNames[c], x)
}

func tlbLockBusy(s *state, c int, x *model.Exec) bool {
	return blockedOn(&s.tlbLock[c], tlbLockNames[c], x)
}

func bqlBusy(s *state, x *model.Exec) bool {
	if s.bql.Free() {
		return false
	}
	x.Block()
	if x.Labelling() {
		x.Label("the BQL (" + s.bql.String() + ")")
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

// proceedsName is the progress property of source s.
func proceedsName(s int) string { return fmt.Sprintf("cpu%d-next-instruction-runs", s) }
