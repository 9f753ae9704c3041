package exclusive

// The real implementation of the exclusive-section protocols: the same
// code as the model (doc.go), written as goroutines over explorer/rt, so
// that it runs under the Go scheduler (stress, -race) and under the
// controlled scheduler, and a model counterexample replays on it.
//
// What it mirrors (the sources of doc.go):
//
//   - upstream: QEMU cpu-common.c @18530e7c, start_exclusive/end_exclusive
//     and cpu_exec_start/cpu_exec_end with the lock-free pending_cpus /
//     has_waiter fast path of c265e976 and the exclusive_context_count
//     nesting counter of 2023; process_queued_cpu_work, queue_work_on_cpu
//     and do_run_on_cpu with qemu_work_cond; mttcg_cpu_thread_fn holding
//     the BQL outside cpu_exec (A.1, A.2);
//   - cpu-lock: seed 001, "[RFC v4 71/71] cpus-common: wait on the CPU lock
//     for exclusive work completion" (Emilio G. Cota, qemu-devel), on
//     the per-CPU-lock series (cota/qemu cpus-common.c @09addeed, cpus.c
//     @031cfd04):
//     cpu_exec_exclusive_locked, waiters on cpu->cond shared with
//     run_on_cpu's wi.done, qemu_tcg_cpu_thread_fn holding cpu->lock
//     (A.3); cpu-lock-broadcast is the fix proposed in A.3 (d');
//   - the other variants are the switches of machine.go's flags, each at
//     the place in the code where the model has it.
//
// Correspondence with the model (the same steps and labels, see package model): the goroutines are
// the model's threads (vcpu0..vcpuN-1, io-thread) created in that order;
// every model step is exactly one rt scheduling point with the model's
// label, byte for byte (a wait's re-acquire step too, through
// Cond.WaitAs). Values a step reads without a lock (pending_cpus,
// cpu->running) complete the label with Env.Note after the load; fields the code reads
// under a lock it holds (has_waiter, exclusive_waiter, the work list, the
// shadow of pending_cpus) are read before the primitive, as the model folds
// those reads into the neighbouring lock step, so the label is known when
// the scheduling point is reached. State the real code keeps in plain
// fields under a lock stays plain here, under the same lock, which is what
// keeps the race detector quiet in real mode.
//
// Where rt cannot say what the model says, the code works around it:
//
//   - The model's signal labels name the waiter woken ("wakes io-thread");
//     rt's Cond.Signal and Broadcast return it under the controlled
//     runtime.
//   - Spurious wake-ups (spurious=1, and if-not-while): a thread waits
//     with rt's Cond.WaitSpurious while it still has its one spurious
//     wake-up, whose step is labelled as the model's; whether it was
//     woken by nobody is known from the signals and broadcasts, which
//     record whom they woke (thr.wait).
//   - exit_request is a sync/atomic word, not an rt word: qemu_cpu_kick
//     stores it in the step of its broadcast of halt_cond, as the model
//     does, and a step of its own reads or clears it after an Env.Yield.
//   - rt has no "done while asleep": a vCPU that the model counts as done
//     because it sleeps on halt_cond with nothing left to come takes the
//     same step (the wait's release of its lock) and exits (vcpuThread).
//   - A guest that never halts (tbs=0) runs for ever: the vCPU that sees
//     every work item completed and every vCPU gone on since ends the run
//     with rt.Env.End, and a run cut before that is judged by the progress
//     obligation it owes, not by having run long (impl_progress.go).

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// implVariants are the model variants the code implements. no-smp-mb is
// left out: its bug needs x86-TSO store buffers, and the
// code's atomics are sequentially consistent (newImpl refuses it).
var implVariants = []string{
	"upstream",
	"cpu-lock",
	"cpu-lock-broadcast",
	"if-not-while",
	"bql-held",
	"finish-safe-work",
	"non-recursive",
	"exclusive-from-exec",
	"end-decrements-always",
	"end-signals-resume",
	"no-kick",
	"cpu-lock-no-idle",
	"safe-work-no-kick",
	"cpu-lock-pause-recheck",
}

// Impl is the real implementation of Protocol.
var Impl = &rt.Impl{Variants: implVariants, New: newImpl}

func newImpl(variant string, p model.Params) (rt.Body, error) {
	// The real code runs on Go's memory model, whose atomics are
	// sequentially consistent: the model's store buffers (memory=1) and
	// no-smp-mb, whose bug needs them, have no counterpart here.
	if p["drop-mb"] != 0 {
		return nil, fmt.Errorf("exclusive: the real implementation keeps every smp_mb() (Go's atomics are sequentially consistent); drop-mb=%d exists only in the model", p["drop-mb"])
	}
	if p["memory"] != 0 || variant == "no-smp-mb" {
		return nil, fmt.Errorf("exclusive: the real implementation runs on sequentially consistent atomics; memory=%d and the variant no-smp-mb (always x86-TSO) exist only in the model", p["memory"])
	}
	// The mechanisms the code does not run yet (doc.go says why).
	if p["hotplug-thread"] != 0 {
		return nil, fmt.Errorf("exclusive: the real implementation has no thread for the hot-plugged CPU yet: hotplug-thread=%d exists only in the model", p["hotplug-thread"])
	}
	supported := false
	for _, v := range implVariants {
		supported = supported || v == variant
	}
	if !supported {
		return nil, fmt.Errorf("exclusive: the real implementation has no variant %q (it has %v)", variant, implVariants)
	}
	var f flags
	for _, v := range variants {
		if v.Name == variant {
			f = v.f
		}
	}
	// The machine gives the sizes and the names (threads, work items,
	// which vCPU each item goes to), so code and model cannot disagree on
	// them; none of its state is used.
	m, err := newMachine(f, p)
	if err != nil {
		return nil, err
	}
	return func(e *rt.Env) func() *model.Violation {
		w := newWorld(e, m)
		for t := 0; t < m.nvcpus; t++ {
			th := &thr{w: w, t: t}
			e.Go(m.threads[t], th.vcpuThread)
		}
		io := &thr{w: w, t: m.io}
		e.Go(m.threads[m.io], io.ioThread)
		return w.finalCheck
	}, nil
}

// world is one execution: QEMU's shared state and the observers.
type world struct {
	e   *rt.Env
	m   *machine
	v   flags
	ctl bool // controlled: labels are completed, signals name whom they woke

	listLock *rt.Mutex   // qemu_cpu_list_lock
	bql      *rt.Mutex   // the BQL
	cpuLock  []*rt.Mutex // cpu->work_mutex (upstream) / cpu->lock (seed 001)

	exclusiveCond *rt.Cond   // exclusive_cond (upstream), with qemu_cpu_list_lock
	resumeCond    *rt.Cond   // exclusive_resume, with qemu_cpu_list_lock
	workCond      *rt.Cond   // qemu_work_cond (upstream), with the BQL
	cpuCond       []*rt.Cond // cpu->cond (seed 001), with cpu->lock
	haltCond      []*rt.Cond // cpu->halt_cond, with the lock the vCPU thread holds

	// Upstream's words read without a lock.
	// pending_cpus, 64 bits wide as the model's memory words, so that
	// an underflow (if-not-while) reads 2^64-1 in both.
	pending *rt.Word64
	running []*rt.Word8 // cpu->running
	// wi.done of the run_on_cpu items (indexed by item; nil for safe work).
	done []*rt.Word8
	// cpu->exit_request, read and cleared by the vCPU's thread, set by
	// qemu_cpu_kick from any thread.
	exitReq []atomic.Uint32

	// Under qemu_cpu_list_lock.
	pendingL    uint64 // pending_cpus as its writers, all holding the lock, left it
	hasWaiter   []bool // cpu->has_waiter (upstream)
	workOngoing bool   // exclusive_work_ongoing (seed 001)
	// inList is the cpus list, written under qemu_cpu_list_lock and read
	// without it by seed 001's walks (an RCU list in QEMU).
	inList []atomic.Bool

	// Under cpu->lock (seed 001).
	runningL         []bool
	exclusiveWaiter  []bool
	exclusiveOngoing []bool

	// Under cpu->work_mutex / cpu->lock, and upstream also under the BQL,
	// which every thread that queues on another vCPU holds: the work lists,
	// how many items other threads have queued on each CPU so far, and
	// wi.done as its writer left it.
	queue    [][]int
	incoming []atomic.Int32
	doneL    []bool
	// qlen[c] is len(queue[c]), written under the list's lock: upstream's
	// cpu_thread_is_idle reads it with the BQL only
	// (QSIMPLEQ_EMPTY_ATOMIC), which a vCPU queueing on another without
	// the BQL does not hold (cross-work).
	qlen []atomic.Int32

	// incomingFor[c] is how many items other threads queue on CPU c in all.
	incomingFor []int

	// wokenBy[t]: a signal or broadcast has woken thread t since it last
	// began to wait (controlled runs only: rt says whom it woke).
	wokenBy []bool

	obs observers

	prog progress // tbs=0: when the run is complete (impl_progress.go)

	rs runState // vm_stop and vm_start (pause=1, impl_pause.go)
}

// observers is the model's bookkeeping for the properties (state.go's
// observers), checked at the steps where the model's invariants can first
// fail. Atomics, so that real mode checks them without races and without
// adding scheduling points.
type observers struct {
	inExec []atomic.Bool  // between cpu_exec_start's return and cpu_exec_end
	active []atomic.Bool  // between start_exclusive's return and end_exclusive
	gen    atomic.Int32   // bumped by every exclusive section's work
	ran    []atomic.Int32 // times each work item's func ran
}

func newWorld(e *rt.Env, m *machine) *world {
	w := &world{e: e, m: m, v: m.v, ctl: e.IsControlled()}
	w.listLock = e.Mutex("qemu_cpu_list_lock")
	w.bql = e.Mutex("bql")
	w.resumeCond = e.Cond("exclusive_resume", w.listLock)
	if !w.v.cpuLock {
		w.exclusiveCond = e.Cond("exclusive_cond", w.listLock)
		w.workCond = e.Cond("qemu_work_cond", w.bql)
		w.pending = e.Word64("pending_cpus")
	}
	n := m.ncpus
	w.cpuLock = make([]*rt.Mutex, n)
	w.cpuCond = make([]*rt.Cond, n)
	w.haltCond = make([]*rt.Cond, n)
	w.running = make([]*rt.Word8, n)
	w.exitReq = make([]atomic.Uint32, n)
	w.hasWaiter = make([]bool, n)
	w.inList = make([]atomic.Bool, n)
	w.runningL = make([]bool, n)
	w.exclusiveWaiter = make([]bool, n)
	w.exclusiveOngoing = make([]bool, n)
	w.queue = make([][]int, n)
	w.incoming = make([]atomic.Int32, n)
	w.qlen = make([]atomic.Int32, n)
	w.incomingFor = make([]int, n)
	w.wokenBy = make([]bool, len(m.threads))
	for c := 0; c < n; c++ {
		w.cpuLock[c] = e.Mutex(m.lockNames[c])
		if w.v.cpuLock {
			w.cpuCond[c] = e.Cond(m.condNames[c], w.cpuLock[c])
			w.haltCond[c] = e.Cond(m.haltNames[c], w.cpuLock[c])
		} else {
			w.haltCond[c] = e.Cond(m.haltNames[c], w.bql)
			w.running[c] = e.Word8(fmt.Sprintf("cpu%d->running", c))
		}
	}
	for c := 0; c < m.nvcpus; c++ {
		w.inList[c].Store(true)
	}
	w.done = make([]*rt.Word8, m.nitems)
	w.doneL = make([]bool, m.nitems)
	for i := 0; i < m.nitems; i++ {
		if !m.safe(i) {
			w.done[i] = e.Word8(fmt.Sprintf("wi%d.done", i))
		}
		if it := m.items[i]; it.queuer != it.cpu {
			w.incomingFor[it.cpu]++
		}
	}
	w.obs.inExec = make([]atomic.Bool, n)
	w.obs.active = make([]atomic.Bool, len(m.threads))
	w.obs.ran = make([]atomic.Int32, m.nitems)
	w.initProgress()
	w.initRunState()
	return w
}

// thr is one thread's locals.
type thr struct {
	w *world
	t int // thread index: vcpuN is N, the I/O thread is machine.io
	// depth is current_cpu->exclusive_context_count (upstream).
	depth int
	// The vCPU's guest: TBs run (counted when tbs > 0), safe work items
	// queued from its TBs, cpu->halted, and whether exclusive-from-exec's
	// TB has run.
	round   int
	queued  int
	halted  bool
	ptwDone bool
	// atomicDone: the guest's one atomic instruction (step-atomic) has
	// run in cpu_exec_step_atomic.
	atomicDone bool
	// spurUsed: the thread has had its one spurious wake-up.
	spurUsed bool
}

func (th *thr) name() string { return th.w.m.threads[th.t] }

// Signals and broadcasts. The model's label names the threads a wake-up
// woke, which rt's Signal and Broadcast return under control (Note is a
// no-op in real mode, where nobody reads labels).

func (w *world) signal(cv *rt.Cond, label string) {
	if woken := cv.Signal(label); woken >= 0 {
		w.wokenBy[woken] = true
		w.e.Note(" wakes " + w.m.threads[woken])
	} else {
		w.e.Note(" wakes nobody")
	}
}

func (w *world) broadcast(cv *rt.Cond, label string) {
	woken := cv.Broadcast(label)
	if !w.ctl {
		return
	}
	if len(woken) == 0 {
		w.e.Note(" wakes nobody")
		return
	}
	names := make([]string, len(woken))
	for i, t := range woken {
		w.wokenBy[t] = true
		names[i] = w.m.threads[t]
	}
	w.e.Note(" wakes " + strings.Join(names, " "))
}

// kick is qemu_cpu_kick(cpu c) in one step (run.kick): the broadcast of
// halt_cond, then cpu_exit's store of exit_request; prefix is what the
// step did before.
func (w *world) kick(c int, prefix string) {
	w.broadcast(w.haltCond[c], fmt.Sprintf("%sqemu_cpu_kick(cpu%d): qemu_cond_broadcast(cpu%d->halt_cond)", prefix, c, c))
	w.exitReq[c].Store(1)
	w.e.Notef("; cpu_exit(cpu%d): %s(&cpu%d->exit_request, 1)", c, w.m.atomicSet, c)
}

// wait is one iteration of a while loop around qemu_cond_wait: the wait
// step (label), and the re-acquire once woken (relock). While the thread
// still has its spurious wake-up (spurious=1), it may instead be woken by
// nobody, a step labelled "fn: spurious wake-up from qemu_cond_wait(cv)"
// as in the model (run.wokenRelock).
func (th *thr) wait(cv *rt.Cond, label, fn, relock string) {
	w := th.w
	if !w.m.spurious || th.spurUsed {
		cv.WaitAs(label, relock)
		return
	}
	w.wokenBy[th.t] = false
	cv.WaitSpurious(label, fn+": spurious wake-up from qemu_cond_wait("+cv.Name()+")", relock)
	if !w.wokenBy[th.t] {
		th.spurUsed = true
	}
}

// Observers, at the steps where the model updates them (run.go): the
// code calls each right after the primitive of that step.

// enterExec: cpu c is in cpu_exec from now on.
func (th *thr) enterExec(c int) {
	w := th.w
	w.obs.inExec[c].Store(true)
	w.e.Call(c, execOp{CPU: c, Gen: int(w.obs.gen.Load())})
	w.checkExclusion()
}

// leaveExec: cpu c leaves cpu_exec.
func (th *thr) leaveExec(c int) {
	w := th.w
	w.obs.inExec[c].Store(false)
	w.e.Return(c, int(w.obs.gen.Load()))
}

func (th *thr) sectionStart() {
	w := th.w
	w.obs.active[th.t].Store(true)
	w.e.Call(clientExclusive+th.t, exclusiveOp{Thread: th.name(), Gen: int(w.obs.gen.Load())})
	w.checkExclusion()
}

func (th *thr) sectionEnd() {
	w := th.w
	w.obs.active[th.t].Store(false)
	w.e.Return(clientExclusive+th.t, int(w.obs.gen.Load()))
}

// checkExclusion is the model's mutual-exclusion and single-exclusive
// invariants (properties.go), in that order and with the same messages.
// They can only start to fail when a CPU enters cpu_exec or a section
// starts, which is where it is called. Each side stores its own flag
// before reading the others' (seq-cst), so in real mode two overlapping
// entries cannot both miss each other.
func (w *world) checkExclusion() {
	var in []string
	for t := range w.obs.active {
		if !w.obs.active[t].Load() {
			continue
		}
		in = append(in, w.m.threads[t])
		if len(in) > 1 {
			continue
		}
		for c := range w.obs.inExec {
			if w.obs.inExec[c].Load() {
				w.e.Failf(PropMutualExclusion, "cpu%d (%s) is inside cpu_exec while %s's exclusive section runs",
					c, w.m.runnerOf(c), w.m.threads[t])
				return
			}
		}
	}
	if len(in) > 1 {
		w.e.Fail(PropSingleExclusive, "exclusive sections of "+strings.Join(in, " and ")+" run at the same time")
	}
}

// runWork: a work item's func runs; a second run is work-once's failure.
func (th *thr) runWork(i int) {
	w := th.w
	if w.obs.ran[i].Add(1) != 1 {
		w.e.Failf(PropWorkOnce, "%s runs %s a second time", th.name(), w.m.itemName(i))
	}
}

// finalCheck is the model's work-once invariant once every thread has
// finished: every queued item ran exactly once.
func (w *world) finalCheck() *model.Violation {
	for i := 0; i < w.m.nitems; i++ {
		if n := w.obs.ran[i].Load(); n != 1 {
			return model.Violationf(PropWorkOnce, "every thread has finished but %s's func ran %d times", w.m.itemName(i), n)
		}
	}
	return nil
}
