package exclusive

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// flags is a variant as data: each field is one switch in the model.
type flags struct {
	cpuLock        bool // seed 001's per-CPU-lock protocol (else upstream's pending_cpus)
	broadcast      bool // seed 001 with qemu_cond_broadcast in R1 and Q1
	ifNotWhile     bool // H1: start_exclusive waits with if; defined with spurious wake-ups
	bqlHeld        bool // H2: safe work entered with the BQL held
	finishSafeWork bool // H3: cpu_list_add runs cpu_exec_start/end under the BQL; defined with hot-plug
	nonRecursive   bool // H5: no exclusive_context_count
	fromExec       bool // H6: vCPU 0's first TB calls start_exclusive
	// endDecrementsAlways is V-A4, endSignalsResume V-A5.
	endDecrementsAlways bool
	endSignalsResume    bool
	// noSmpMb is V-A1: cpu_exec_start and start_exclusive without their
	// smp_mb(). The variant is defined on x86-TSO (it forces store
	// buffers on whatever the memory parameter says): under sequential
	// consistency a barrier has nothing to order.
	noSmpMb bool
	// noKick is V-A6: start_exclusive counts a running vCPU without
	// qemu_cpu_kick, so nothing makes it leave cpu_exec.
	noKick bool
	// noSafeKick is V-A6's other half: async_safe_run_on_cpu's
	// queue_work_on_cpu appends the item without qemu_cpu_kick, so a vCPU
	// running TBs never sees exit_request and a halted one never wakes.
	noSafeKick bool
	// noIdle is seed 001 (with the broadcast fix) without the
	// exclusive_idle() the seed adds to cpu_list_add and cpu_list_remove;
	// defined with hot-plug.
	noIdle bool
	// pauseRecheck is seed 001 (with the broadcast fix) with the
	// pause_all_vcpus of the series' v9, which re-reads every
	// cpu->stopped after retaking the BQL; defined with pause=1.
	pauseRecheck bool
}

// An item is one work item: an async_safe_run_on_cpu item or a
// run_on_cpu call, the CPU it is queued on and the thread that queues it.
type item struct {
	safe   bool
	cpu    int
	queuer int
}

// I/O thread actions, in the order of its script.
const (
	ioHotAdd = iota
	ioSafe
	ioRunOnCPU
	ioHotRemove
	ioPause // vm_stop, then vm_start
)

type ioAction struct {
	kind uint8
	item uint8
}

// machine is one instance: a variant at one size. It is immutable.
type machine struct {
	v      flags
	nvcpus int
	ncpus  int // vCPUs, plus the hot-plugged CPU
	// nvthreads: the vCPU threads, threads 0..nvthreads-1, thread c
	// running CPU c: the vCPUs', and with hotplug-thread=1 the hot-plugged
	// CPU's own (thread nvcpus).
	nvthreads int
	hotThread bool // hotplug-thread=1
	pause     bool // pause=1: the I/O thread's vm_stop and vm_start
	// extras: the run state (stop, stopped, unplug, created, runstate,
	// qemu_cpu_cond, qemu_pause_cond) is part of the state, appended to
	// the encoding (hotplug-thread=1, pause=1).
	extras bool
	// tbs is how many TBs each vCPU's guest runs before it halts; 0: it
	// never halts.
	tbs   int
	nsafe int
	nroc  int
	// ncross: async_run_on_cpu items one vCPU queues on another from its
	// TB, without the BQL (cross-work); they come after the run_on_cpu
	// items.
	ncross   int
	nitems   int
	hotplug  bool
	mmio     bool // a TB may make an MMIO access, which takes the BQL
	spurious bool // every thread may wake spuriously once from a qemu_cond_wait
	// atomic[t]: vCPU t's guest executes one atomic instruction that
	// cannot run in parallel (cpu_exec_step_atomic); the last step-atomic
	// vCPUs do.
	atomic   [maxVCPUs]bool
	items    [maxItems]item
	own      [maxVCPUs][]uint8 // the safe items each vCPU queues from its own TBs
	ioScript []ioAction
	io       int // thread index of the I/O thread
	// tso: x86-TSO memory, one store buffer per thread (param memory=1,
	// or the no-smp-mb variant); newVariant wraps the machine in
	// model.WithTSO.
	tso bool
	// arm: ARMv8 memory (param memory=2); newVariant wraps the machine
	// in model.WithARMv8NoPromises, and every mutex has a lock word.
	arm bool
	// drop: the smp_mb() left out (param drop-mb; 0: none).
	drop    int
	threads []string
	names   []string // mem word names
	// mem word addresses
	aPending model.Addr
	aRunning [maxCPUs]model.Addr
	aExit    [maxCPUs]model.Addr
	aDone    [maxItems]model.Addr
	// lock words (memory=2): qemu_cpu_list_lock, the BQL, each CPU's
	// work_mutex or lock.
	aListLock, aBQL model.Addr
	aCPULock        [maxCPUs]model.Addr

	// Names made once, so that a step formats nothing: of the work items,
	// and of each CPU's lock and condition variables as steps touch them.
	itemNames [maxItems]string
	lockNames [maxCPUs]string // cpuN->lock (seed 001) or cpuN->work_mutex
	condNames [maxCPUs]string // cpuN->cond
	haltNames [maxCPUs]string // cpuN->halt_cond
	props     model.Properties
	keyMax    int // the longest encoding, without the memory
	// QEMU's names in the labels, of the seed's era (seed 001's branch,
	// 2018: atomic_set, qemu_mutex_lock_iothread) or of today's
	// (upstream: qatomic_set since 5.2, bql_lock since 9.0).
	atomicSet, atomicRead, mainLock, mainUnlock string
}

// Metrics.
const (
	mWakeups = iota
	mHandoffs
	mListLock
)

var metricNames = []string{"wakeups", "lock-handoffs", "list-lock-acquisitions"}

func newMachine(v flags, p model.Params) (*machine, error) {
	m := &machine{v: v, nvcpus: p["vcpus"], tbs: p["tbs"], nsafe: p["safe-work"], nroc: p["run-on-cpu"],
		// if-not-while, finish-safe-work, cpu-lock-no-idle and no-smp-mb
		// fix these (model.Variant.Fixed): Instantiate has set them.
		hotplug: p["hotplug"] == 1, hotThread: p["hotplug-thread"] == 1, pause: p["pause"] == 1,
		mmio: p["mmio"] == 1, spurious: p["spurious"] == 1, tso: p["memory"] == 1,
		arm: p["memory"] == 2, drop: p["drop-mb"]}
	m.atomicSet, m.atomicRead = "qatomic_set", "qatomic_read"
	m.mainLock, m.mainUnlock = "main_loop: bql_lock()", "main_loop: bql_unlock()"
	if v.cpuLock {
		m.atomicSet, m.atomicRead = "atomic_set", "atomic_read"
		m.mainLock, m.mainUnlock = "main_loop: qemu_mutex_lock_iothread()", "main_loop: qemu_mutex_unlock_iothread()"
	}
	m.ncpus = m.nvcpus
	if m.hotplug {
		m.ncpus++
	}
	m.extras = m.hotThread || m.pause
	m.nvthreads = m.nvcpus
	if m.hotThread {
		if !m.hotplug {
			return nil, fmt.Errorf("hotplug-thread=1 is the hot-plugged CPU's thread: it needs hotplug=1")
		}
		if m.nvcpus >= maxVCPUs {
			return nil, fmt.Errorf("hotplug-thread=1 adds the hot-plugged CPU's own thread: at most vcpus=%d", maxVCPUs-1)
		}
		m.nvthreads++
	}
	m.ncross = p["cross-work"]
	m.nitems = m.nsafe + m.nroc + m.ncross
	if k := p["step-atomic"]; k > m.nvcpus {
		return nil, fmt.Errorf("step-atomic=%d: more vCPUs executing an atomic instruction than vcpus=%d", k, m.nvcpus)
	} else {
		for t := m.nvcpus - k; t < m.nvcpus; t++ {
			m.atomic[t] = true
		}
	}
	if m.nitems > maxItems {
		return nil, fmt.Errorf("safe-work + run-on-cpu = %d work items, at most %d", m.nitems, maxItems)
	}
	if m.nsafe == 0 && !v.fromExec {
		return nil, fmt.Errorf("safe-work=0 leaves no exclusive section to check")
	}
	for i := 0; i < m.nvthreads; i++ {
		m.threads = append(m.threads, fmt.Sprintf("vcpu%d", i))
	}
	m.io = len(m.threads)
	m.threads = append(m.threads, "io-thread")
	m.planWork()
	if !v.cpuLock {
		m.aPending = m.word("pending_cpus")
		for c := 0; c < m.ncpus; c++ {
			m.aRunning[c] = m.word(fmt.Sprintf("cpu%d->running", c))
		}
	}
	for c := 0; c < m.ncpus; c++ {
		m.aExit[c] = m.word(fmt.Sprintf("cpu%d->exit_request", c))
	}
	for k := 0; k < m.nroc; k++ {
		m.aDone[m.nsafe+k] = m.word(fmt.Sprintf("wi%d.done", m.nsafe+k))
	}
	if m.drop != 0 && m.drop != dropExecEnd && m.drop != dropExitRequest && v.cpuLock {
		return nil, fmt.Errorf("drop-mb=%d: seed 001's branch has no pending_cpus handshake", m.drop)
	}
	if m.drop == dropExecEnd && v.cpuLock {
		return nil, fmt.Errorf("drop-mb=%d: seed 001's branch has no cpu_exec_end handshake", m.drop)
	}
	if m.arm {
		// Named after their mutexes; "word" as in glibc's lock word.
		m.aListLock = m.word("qemu_cpu_list_lock word")
		m.aBQL = m.word("bql word")
		for c := 0; c < m.ncpus; c++ {
			lock := "work_mutex"
			if v.cpuLock {
				lock = "lock"
			}
			m.aCPULock[c] = m.word(fmt.Sprintf("cpu%d->%s word", c, lock))
		}
	}
	for i := 0; i < m.nitems; i++ {
		kind := "wi"
		if m.safe(i) {
			kind = "safe"
		} else if m.async(i) {
			kind = "async"
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
		Assertions: []string{PropAssertNoWaiter, PropAssertOngoing, PropSingleExclusive, PropWorkOnce, PropVMStopped, PropGuestWhileStopped},
		Progress: []model.Progress{
			{Name: PropStartExclusiveProceeds, Pending: m.inStartExclusive},
			{Name: PropExecStartProceeds, Pending: m.inExecStart},
			// Last: where a lasso also leaves safe work pending (a
			// start_exclusive that never returns holds its item), the
			// property that names the cause is reported first.
			{Name: PropSafeWorkRuns, Pending: m.safeWorkPending},
		},
		Metrics: metricNames,
		Spec:    spec,
	}
	m.keyMax = len(m.threads)*(11+maxStack) + 8 + m.ncpus*(6+maxItems) + m.nitems
	if m.extras {
		m.keyMax += 3 + m.ncpus
	}
	return m, nil
}

// planWork decides who queues which work item on which CPU, and the I/O
// thread's script. Items 0..nsafe-1 are async_safe_run_on_cpu items, the
// i-th on vCPU i mod n: an even one is queued by that vCPU itself from one
// of its TBs (tb_flush, or a synced TLB flush, whose helper queues the
// work on its own CPU and ends the TB), an odd one by the I/O thread
// while the vCPU runs (the gdbstub or monitor asking for a tb_flush). The
// rest are the I/O thread's run_on_cpu calls, the k-th aimed at vCPU
// n-1-k mod n. The I/O thread, which holds the BQL as the main loop does,
// hot-plugs a CPU first (when hot-plug is on), then queues its safe work,
// makes its run_on_cpu calls, and finally unplugs the CPU again.
func (m *machine) planWork() {
	n := m.nvcpus
	for i := 0; i < m.nsafe; i++ {
		c := i % n
		it := item{safe: true, cpu: c, queuer: c}
		if i%2 == 1 {
			it.queuer = m.io
		} else {
			m.own[c] = append(m.own[c], uint8(i))
		}
		m.items[i] = it
	}
	for k := 0; k < m.nroc; k++ {
		m.items[m.nsafe+k] = item{cpu: n - 1 - k%n, queuer: m.io}
	}
	for k := 0; k < m.ncross; k++ {
		// The last vCPU queues on vcpu0 (as flush_all_helper's
		// async_run_on_cpu on every other CPU), after its own safe items.
		i := m.nsafe + m.nroc + k
		m.items[i] = item{cpu: 0, queuer: n - 1}
		m.own[n-1] = append(m.own[n-1], uint8(i))
	}
	if m.hotplug {
		m.ioScript = append(m.ioScript, ioAction{kind: ioHotAdd})
	}
	for i := 0; i < m.nsafe; i++ {
		if m.items[i].queuer == m.io {
			m.ioScript = append(m.ioScript, ioAction{kind: ioSafe, item: uint8(i)})
		}
	}
	if m.pause {
		m.ioScript = append(m.ioScript, ioAction{kind: ioPause})
	}
	for k := 0; k < m.nroc; k++ {
		m.ioScript = append(m.ioScript, ioAction{kind: ioRunOnCPU, item: uint8(m.nsafe + k)})
	}
	if m.hotplug {
		m.ioScript = append(m.ioScript, ioAction{kind: ioHotRemove})
	}
}

// The smp_mb()s drop-mb=N leaves out.
const (
	dropStartExclusive = 1 + iota // start_exclusive's, after atomic_set(pending_cpus, 1)
	dropExecStart                 // cpu_exec_start's, between its store of running and its load of pending_cpus
	dropExecEnd                   // cpu_exec_end's, the same for leaving
	dropExitRequest               // qatomic_set_mb's, after clearing exit_request in the vCPU loop
	dropMax            = dropExitRequest
)

// mb reports whether the smp_mb() at site is there (drop-mb).
func (m *machine) mb(site int) bool { return m.drop != site }

// lockWord is the lock word of mu, a mutex of s (memory=2).
func (m *machine) lockWord(s *state, mu *model.Mutex) model.Addr {
	switch mu {
	case &s.listLock:
		return m.aListLock
	case &s.bql:
		return m.aBQL
	}
	for c := range s.cpuLock {
		if mu == &s.cpuLock[c] {
			return m.aCPULock[c]
		}
	}
	panic("exclusive: a mutex outside the state")
}

// memOf is the memory of a state, for model.WithTSO.
func memOf(s model.State) *model.Mem { return &s.(*state).mem }

func (m *machine) word(name string) model.Addr {
	m.names = append(m.names, name)
	return model.Addr(len(m.names) - 1)
}

func (m *machine) itemCPU(i int) int { return m.items[i].cpu }

func (m *machine) safe(i int) bool { return i < m.nsafe }

// async: item i is an async_run_on_cpu item (cross-work): no one waits
// for it, and its func runs with the BQL like a run_on_cpu item's.
func (m *machine) async(i int) bool { return i >= m.nsafe+m.nroc }

func (m *machine) itemName(i int) string { return m.itemNames[i] }

// hotCPU is the hot-plugged CPU's index.
func (m *machine) hotCPU() int { return m.nvcpus }

// hasCounter: upstream's exclusive_context_count (2023) is present.
func (m *machine) hasCounter() bool { return !m.v.cpuLock && !m.v.nonRecursive }

// nests: the safe work func itself calls start_exclusive/end_exclusive
// once more, as linux-user's dump_core_and_abort does through
// preexit_cleanup (H5). Only in the upstream family, whose code has (or, in
// non-recursive, lacks) the nesting counter; seed 001 predates it.
func (m *machine) nests() bool { return !m.v.cpuLock && !m.v.finishSafeWork }

func (m *machine) Threads() []string { return m.threads }

// Properties: the invariants of properties.go, the progress properties,
// the metrics and the spec.
func (m *machine) Properties() model.Properties { return m.props }

func (m *machine) Init() model.State {
	s := &state{m: m, mem: model.NewMem(m.names...)}
	if m.tso {
		s.mem.EnableTSO(m.threads...)
	}
	if m.arm {
		s.mem.EnableARMv8(m.threads...)
	}
	for c := 0; c < m.nvcpus; c++ {
		s.inList[c] = true
	}
	for t := 0; t < m.nvthreads; t++ {
		s.th[t].pc = pcVStart
		s.th[t].arg = uint8(t)
	}
	s.th[m.io].pc = pcIOStart
	return s
}

// isDecision reports whether thread t's pc is resolved by settle.
func (m *machine) isDecision(s *state, t int) bool {
	switch s.th[t].pc {
	case pcPNext:
		return m.v.cpuLock
	case pcVIdle:
		// With cross-work upstream's work list is read without a lock
		// the queuer holds: a step of its own (vcpu.go).
		return !m.racyIdle()
	}
	return decision(s.th[t].pc)
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
	if m.isHot(t) && s.ctl[t]&cStarted == 0 {
		// The hot-plugged CPU's thread does not exist before
		// qemu_init_vcpu creates it.
		if x.Labelling() {
			x.Label("its creation by qemu_init_vcpu, which comes after cpu_list_add")
		}
		x.Block()
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
// queued: in QEMU it sleeps until the next kick, which a work item queued
// on it brings (the kick's broadcast takes it out of the wait set, and it
// steps again); until then it is done. A spurious wake-up there would
// re-check cpu_thread_is_idle and sleep again, changing nothing any
// property looks at, so it is not offered.
func (m *machine) idle(s *state, t int) bool {
	return t < m.nvthreads && s.th[t].pc == pcVHaltWoken && s.haltCond[t].Waiting(t) && s.qlen[t] == 0
}

// racyIdle: cpu_thread_is_idle's read of the work list can race with a
// queuer: a vCPU queues on another without the BQL (cross-work), and
// upstream's halted vCPU reads the list holding the BQL only. In seed
// 001's branch the reader holds cpu->lock, which the queuer takes too.
func (m *machine) racyIdle() bool { return m.ncross > 0 && !m.v.cpuLock }

// isHot: thread t is the hot-plugged CPU's own vCPU thread (hotplug-thread=1).
func (m *machine) isHot(t int) bool { return m.hotThread && t == m.nvcpus }
