package exclusive

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// flags is a variant as data: each field is one switch in the model.
type flags struct {
	cpuLock             bool // seed 001's per-CPU-lock protocol (else upstream's pending_cpus)
	broadcast           bool // seed 001 with qemu_cond_broadcast in R1 and Q1
	ifNotWhile          bool // H1: start_exclusive waits with if; spurious wake-ups enabled there
	bqlHeld             bool // H2: safe work entered with the BQL held
	finishSafeWork      bool // H3: cpu_list_add runs cpu_exec_start/end under the BQL
	nonRecursive        bool // H5: no exclusive_context_count
	fromExec            bool // H6: vCPU 0's first TB calls start_exclusive
	endDecrementsAlways bool // V-A4
	endSignalsResume    bool // V-A5
	// noSmpMb is V-A1: cpu_exec_start and start_exclusive without their
	// smp_mb(). The variant is defined on x86-TSO (it forces store
	// buffers on whatever the memory parameter says): under sequential
	// consistency a barrier has nothing to order.
	noSmpMb bool
}

// machine is one instance: a variant at one size. It is immutable.
type machine struct {
	v      flags
	nvcpus int
	ncpus  int // vCPUs, plus the hot-plugged CPU in finish-safe-work
	rounds int
	nsafe  int
	nroc   int
	nitems int
	io     int // thread index of the I/O thread
	// tso: x86-TSO memory, one store buffer per thread (param memory=1,
	// or the no-smp-mb variant); newVariant wraps the machine in
	// model.WithTSO.
	tso     bool
	threads []string
	names   []string // mem word names
	// mem word addresses
	aPending model.Addr
	aRunning [maxCPUs]model.Addr
	aDone    [maxItems]model.Addr

	// Names made once, so that a step formats nothing: of the work items,
	// and of each CPU's lock and condition variables as steps touch them.
	itemNames [maxItems]string
	lockNames [maxCPUs]string // cpuN->lock (seed 001) or cpuN->work_mutex
	condNames [maxCPUs]string // cpuN->cond
	haltNames [maxCPUs]string // cpuN->halt_cond
	props     model.Properties
	mutexOf   []model.Mutex // by holder + 1, for Decode
	condOf    []model.Cond  // by set of waiters, for Decode
	keyMax    int           // the longest encoding, without the memory
}

// Metrics.
const (
	mWakeups = iota
	mHandoffs
	mListLock
)

var metricNames = []string{"wakeups", "lock-handoffs", "list-lock-acquisitions"}

func newMachine(v flags, p model.Params) (*machine, error) {
	m := &machine{v: v, nvcpus: p["vcpus"], rounds: p["rounds"], nsafe: p["safe-work"], nroc: p["run-on-cpu"],
		tso: p["memory"] == 1 || v.noSmpMb}
	m.ncpus = m.nvcpus
	if v.finishSafeWork {
		m.ncpus++
	}
	m.nitems = m.nsafe + m.nroc
	if m.nitems > maxItems {
		return nil, fmt.Errorf("safe-work + run-on-cpu = %d work items, at most %d", m.nitems, maxItems)
	}
	if m.nsafe == 0 && !v.fromExec {
		return nil, fmt.Errorf("safe-work=0 leaves no exclusive section to check")
	}
	for i := 0; i < m.nvcpus; i++ {
		m.threads = append(m.threads, fmt.Sprintf("vcpu%d", i))
	}
	m.io = len(m.threads)
	m.threads = append(m.threads, "io-thread")
	if !v.cpuLock {
		m.aPending = m.word("pending_cpus")
		for c := 0; c < m.ncpus; c++ {
			m.aRunning[c] = m.word(fmt.Sprintf("cpu%d->running", c))
		}
	}
	for k := 0; k < m.nroc; k++ {
		m.aDone[m.nsafe+k] = m.word(fmt.Sprintf("wi%d.done", m.nsafe+k))
	}
	for i := 0; i < m.nitems; i++ {
		kind := "wi"
		if m.safe(i) {
			kind = "safe"
		}
		m.itemNames[i] = fmt.Sprintf("%s%d@cpu%d", kind, i, m.itemCPU(i))
	}
	for c := 0; c < m.ncpus; c++ {
		m.lockNames[c] = fmt.Sprintf("cpu%d->work_mutex", c)
		if v.cpuLock {
			m.lockNames[c] = fmt.Sprintf("cpu%d->lock", c)
		}
		m.condNames[c] = fmt.Sprintf("cpu%d->cond", c)
		m.haltNames[c] = fmt.Sprintf("cpu%d->halt_cond", c)
	}
	m.props = model.Properties{
		Invariants: []model.Invariant{
			{Name: PropMutualExclusion, Check: m.mutualExclusion},
			{Name: PropSingleExclusive, Check: m.singleExclusive},
			{Name: PropWorkOnce, Check: m.workOnce},
		},
		Metrics: metricNames,
		Spec:    spec,
	}
	m.mutexOf, m.condOf = syncValues(len(m.threads))
	m.keyMax = len(m.threads)*(9+maxStack) + 7 + m.ncpus*(6+maxItems) + m.nitems
	return m, nil
}

// memOf is the memory of a state, for model.WithTSO.
func memOf(s model.State) *model.Mem { return &s.(*state).mem }

func (m *machine) word(name string) model.Addr {
	m.names = append(m.names, name)
	return model.Addr(len(m.names) - 1)
}

// Work items: 0..nsafe-1 are async_safe_run_on_cpu items queued on vCPU
// i mod n before the run starts (as a synced TLB flush in an earlier TB
// would); nsafe.. are the I/O thread's run_on_cpu calls, the k-th aimed at
// vCPU n-1-k mod n, so that by default they target a vCPU other than the
// one running the safe work.
func (m *machine) itemCPU(i int) int {
	if i < m.nsafe {
		return i % m.nvcpus
	}
	k := i - m.nsafe
	return m.nvcpus - 1 - k%m.nvcpus
}

func (m *machine) safe(i int) bool { return i < m.nsafe }

func (m *machine) itemName(i int) string { return m.itemNames[i] }

// hasCounter: upstream's exclusive_context_count (2023) is present.
func (m *machine) hasCounter() bool { return !m.v.cpuLock && !m.v.nonRecursive }

// nests: the safe work func itself calls start_exclusive/end_exclusive
// once more, as linux-user's dump_core_and_abort does through
// preexit_cleanup (H5). Only in the upstream family, whose code has (or, in
// non-recursive, lacks) the nesting counter; seed 001 predates it.
func (m *machine) nests() bool { return !m.v.cpuLock && !m.v.finishSafeWork }

func (m *machine) Threads() []string { return m.threads }

// Properties: the invariants of properties.go, the metrics and the spec.
func (m *machine) Properties() model.Properties { return m.props }

func (m *machine) Init() model.State {
	s := &state{m: m, mem: model.NewMem(m.names...)}
	if m.tso {
		s.mem.EnableTSO(m.threads...)
	}
	for c := 0; c < m.nvcpus; c++ {
		s.inList[c] = true
	}
	for i := 0; i < m.nsafe; i++ {
		c := m.itemCPU(i)
		s.queue[c][s.qlen[c]] = uint8(i)
		s.qlen[c]++
	}
	for t := 0; t < m.nvcpus; t++ {
		s.th[t].pc = pcVStart
		s.th[t].arg = uint8(t)
	}
	s.th[m.io].pc = pcIOStart
	return s
}

// isDecision reports whether thread t's pc is resolved by settle.
func (m *machine) isDecision(s *state, t int) bool {
	th := &s.th[t]
	switch th.pc {
	case pcVTB:
		return m.v.fromExec && t == 0 && th.round == 0
	case pcPNext:
		return m.v.cpuLock
	}
	return decision(th.pc)
}

// Step runs thread t's next step on s. A thread whose lock is held or
// that still sleeps on its condition variable blocks there (run.lock,
// run.woken), saying what it waits for; one that has finished, or whose
// guest has halted with nothing queued, is done. After the step, settle
// resolves the decisions the thread reached.
func (m *machine) Step(ms model.State, t int, x *model.Exec) {
	s := ms.(*state)
	if s.th[t].pc == pcDone || m.idle(s, t) {
		x.Done()
		return
	}
	r := run{m: m, s: s, t: t, th: &s.th[t], x: x}
	r.step()
	if x.Outcome() == model.Stepped {
		m.settle(s, t)
	}
}

// settle resolves decision pcs of thread t.
func (m *machine) settle(s *state, t int) {
	for i := 0; m.isDecision(s, t); i++ {
		if i > 64 {
			panic("exclusive: settle loops at " + pcName(s.th[t].pc))
		}
		r := run{m: m, s: s, t: t, th: &s.th[t]}
		r.decide()
	}
}

// idle: a vCPU whose guest has halted sleeps on halt_cond with nothing
// queued: in QEMU it would sleep until the next kick; for the model it is
// finished.
func (m *machine) idle(s *state, t int) bool {
	return t < m.nvcpus && s.th[t].pc == pcVHaltWoken && s.haltCond[t].Waiting(t) && s.qlen[t] == 0
}
