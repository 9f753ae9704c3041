package cputlb

// The real implementation of the broadcast TLB invalidate, written against
// explorer/rt: one goroutine per vCPU running mttcg's loop of the
// per-CPU-lock branch (qemu_tcg_cpu_thread_fn: cpu_exec_start, cpu_exec,
// cpu_exec_end, atomic_mb_set(exit_request, 0), qemu_tcg_wait_io_event,
// process_queued_cpu_work), cpu0 executing the guest TLB invalidate whose
// helper calls tlb_flush_page_by_mmuidx_all_cpus_synced (flush_all_helper
// with async_run_on_cpu or async_run_on_cpu_no_bql and qemu_cpu_kick, then
// async_safe_run_on_cpu for its own flush and cpu_loop_exit), and the
// targets loading from page X through their softmmu TLB.
//
// It mirrors the code the model mirrors (doc.go): seed 000_b36807347ebe5ed1;
// QEMU accel/tcg/cputlb.c of the v5.0 era and at 0039e5fd2234; cpus-common.c
// and cpus.c of the per-CPU-lock branch, cota/qemu 09addeed1581 and
// 031cfd0447ef; ba3186c4e473 (the _synced contract); 4ddc104689b and
// 82676f1fc4b1 (the non-synced flush and the TB that is not ended);
// /work/shared/protocols/qemu.md A.1, A.2, A.4, A.5.
//
// # Steps
//
// Every model step is exactly one rt scheduling point, with the model's
// label (the static part given to the primitive, the values the step read
// appended with Env.Note). A primitive's kind (a wait, an unlock, a
// yield) must be known before the scheduling point is reached, so where a
// step's primitive depends on shared state, that state is read with a
// lock held that its writers need, at the end of the previous step:
//
//   - cpu->lock is an rt.Mutex in both modes, and halt_cond an rt.Cond on
//     it. The vCPU takes cpu->lock with atomic_mb_set(exit_request, 0)
//     and keeps it into qemu_tcg_wait_io_event, as the branch does; the
//     idle test is done with the lock held, so the next step is known:
//     qemu_cond_wait(halt_cond) (Cond.WaitAs, whose wake-up step has the
//     model's label) or, not idle, the unlock after the pop.
//     queue_work_on_cpu takes the target's cpu->lock as a step, appends,
//     kicks (qemu_cond_broadcast(halt_cond), which rt says whom it woke;
//     a halted vCPU is enabled only once kicked, as in the model) and
//     unlocks, three steps as in the model (work.go).
//   - Sections the model folds into one step because nobody else can
//     hold the lock then (process_queued_cpu_work's g_free(wi) and next
//     pop, the source queueing on its own cpu->lock) have one anchor
//     primitive (Env.Yield) and do the rest as local computation right
//     after it: under control only one goroutine runs, so they take no
//     lock; in real mode they take cpu->lock inside the step (lockCPU).
//   - The shared words that folded steps touch (pending_cpus, running,
//     has_waiter, exit_request) are plain sync/atomic words: a folded step
//     reads and writes them after its anchor, which an rt.Word could not
//     do without a scheduling point of its own. pte(X) is only ever
//     accessed by one-access steps and is an rt.Word8.
//   - Under qemu_cpu_list_lock, values written only under that lock
//     (pending_cpus, has_waiter, the caller's running) are read at the end
//     of the previous step when the next step's primitive depends on them
//     (a Cond wait or not): the lock is held in between, so nobody can
//     change them, and the label (which carries the value) is known before
//     the primitive. exclusive_cond and exclusive_resume are rt.Conds on
//     qemu_cpu_list_lock, waited on with Cond.WaitAs: the wake-up step is
//     the model's re-acquire step, its label completed with Env.Note once
//     the predicate is re-tested; waiting again is a step of its own in
//     both.
//
// rt has no "done" state for a goroutine parked forever (the model's vCPU
// asleep on halt_cond with nothing left to do, whose step says Done): a run
// whose goroutines all wait is a deadlock. A vCPU whose guest has halted,
// whose work list is empty and to which nothing can be queued any more
// (cpu0 after its own flush; a target whose flush item was queued, which it
// then ran) releases cpu->lock in the model's wait step, as the wait does,
// and exits instead of waiting. Nothing could wake it: flush items are
// queued once, and start_exclusive only kicks vCPUs it saw running, which
// cannot reach qemu_tcg_wait_io_event before the kick (they block on
// qemu_cpu_list_lock in cpu_exec_start or cpu_exec_end). A vCPU that sleeps
// and is never kicked (no-kick) is the deadlock the model reports.

import (
	"fmt"
	"sync/atomic"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// Impl is the real implementation of every cputlb variant: each is a code
// change (which flush function, which async_run_on_cpu, whether the TB is
// ended, whether queue_work_on_cpu kicks).
var Impl = &rt.Impl{
	Variants: []string{"synced", "synced-no-bql", "non-synced", "synced-no-tb-end", "no-kick"},
	New:      newImpl,
}

func newImpl(variant string, p model.Params) (rt.Body, error) {
	mm, err := newMachine(variant, p)
	if err != nil {
		return nil, err
	}
	m := mm.(*machine)
	return func(e *rt.Env) func() *model.Violation {
		r := newRun(e, m)
		for c := 0; c < m.n; c++ {
			c := c
			e.Go(cpuName(c), func() { r.vcpu(c) })
		}
		return r.finalCheck
	}, nil
}

// rcpu is the shared part of one vCPU: what other threads read or write.
type rcpu struct {
	running   atomic.Uint32
	hasWaiter atomic.Uint32 // written only under qemu_cpu_list_lock
	exitReq   atomic.Uint32

	// cpu->lock protects the work list, the work-once observers and
	// queued; halt_cond waits with it.
	lock     *rt.Mutex
	haltCond *rt.Cond
	queue    []item

	posted, ran, freedD, freedW int  // work-once observers
	queued                      bool // the invalidate's flush item for this vCPU has been queued
}

// run is one execution: the shared objects of the machine.
type run struct {
	e        *rt.Env
	m        *machine
	ctl      bool
	pte      *rt.Word8
	pending  atomic.Uint32 // pending_cpus, written only under qemu_cpu_list_lock
	listLock *rt.Mutex
	bql      *rt.Mutex
	exclCond *rt.Cond // exclusive_cond
	resume   *rt.Cond // exclusive_resume
	cpu      []*rcpu
	// resumed is the observer of no-stale-translation: cpu0 has executed
	// the guest instruction after the invalidate.
	resumed atomic.Bool
}

func newRun(e *rt.Env, m *machine) *run {
	r := &run{e: e, m: m, ctl: e.IsControlled()}
	r.pte = e.Word8("pte(X)")
	r.pte.Store("init: pte(X) -> P", 1)
	r.listLock = e.Mutex(listLock)
	r.bql = e.Mutex("bql")
	r.exclCond = e.Cond("exclusive_cond", r.listLock)
	r.resume = e.Cond("exclusive_resume", r.listLock)
	r.cpu = make([]*rcpu, m.n)
	for c := range r.cpu {
		rc := &rcpu{lock: e.Mutex(cpuLockName(c))}
		rc.haltCond = e.Cond(cpuName(c)+"->halt_cond", rc.lock)
		r.cpu[c] = rc
	}
	return r
}

// lockCPU and unlockCPU bracket a cpu->lock section that the model folds
// into one step because nobody else can hold the lock then: a real lock in
// real mode, nothing under control (one goroutine runs, and the section
// has no scheduling point).
func (r *run) lockCPU(c int) {
	if !r.ctl {
		r.cpu[c].lock.Lock("qemu_mutex_lock(cpu->lock)")
	}
}

func (r *run) unlockCPU(c int) {
	if !r.ctl {
		r.cpu[c].lock.Unlock("qemu_mutex_unlock(cpu->lock)")
	}
}

// vc is a vCPU thread's own state: where it is in its guest program, its
// softmmu TLB entry for page X, and the work item it runs.
type vc struct {
	r      *run
	t      int
	name   string
	guest  uint8
	halted bool
	tlb    bool // X->P cached before the invalidate
	cur    item
	open   bool // real mode: an access's call is recorded, its return not yet
}

// vcpu is qemu_tcg_cpu_thread_fn: it returns when the vCPU would sleep on
// halt_cond for good (see the file comment).
func (r *run) vcpu(t int) {
	v := &vc{r: r, t: t, name: cpuName(t), tlb: true}
	for {
		v.execStart()
		v.exec()
		v.execEnd()
		if !v.waitIOEvent() {
			return
		}
		v.processWork()
	}
}

// ---- cpu_exec_start (exec.go) ----

func (v *vc) execStart() {
	r, rc, name := v.r, v.r.cpu[v.t], v.name
	r.e.Yield("cpu_exec_start(" + name + "): atomic_set(running, true)")
	rc.running.Store(1)

	r.e.Yield("cpu_exec_start(" + name + "): smp_mb; pending_cpus == ")
	if p := r.pending.Load(); p != 0 {
		r.e.Notef("%d, slow path", p)
	} else {
		r.e.Note("0, enter cpu_exec")
		return
	}

	r.listLock.Lock("cpu_exec_start(" + name + "): qemu_mutex_lock(qemu_cpu_list_lock)")
	// One step for the test under the lock (the model's pcStartWaiter):
	// has_waiter and pending_cpus are written only under the lock, which
	// this thread holds since the previous step.
	if rc.hasWaiter.Load() != 0 {
		r.e.Yield("cpu_exec_start(" + name + "): has_waiter: counted in pending_cpus, run until kicked")
	} else {
		prefix := "cpu_exec_start(" + name + "): not counted: atomic_set(running, false); "
		if p := r.pending.Load(); p != 0 {
			// running = false before the wait: it is read only under the
			// lock (start_exclusive's scan), which this thread holds.
			rc.running.Store(0)
			v.exclusiveIdle(fmt.Sprintf("%sexclusive_idle: pending_cpus == %d, qemu_cond_wait(exclusive_resume)", prefix, p))
		} else {
			r.e.Yield(prefix + "exclusive_idle: pending_cpus == 0; atomic_set(running, true)")
			rc.running.Store(0)
			rc.running.Store(1)
		}
	}
	r.listLock.Unlock("cpu_exec_start(" + name + "): qemu_mutex_unlock(qemu_cpu_list_lock), enter cpu_exec")
}

// exclusiveIdle is cpu_exec_start's exclusive_idle once pending_cpus was
// found set: wait on exclusive_resume (the step labelled wait) until
// pending_cpus is 0, then running = true. Each wake-up is the model's
// re-acquire step, completed with what the re-test found.
func (v *vc) exclusiveIdle(wait string) {
	r, rc := v.r, v.r.cpu[v.t]
	woken := "cpu_exec_start(" + v.name + "): woken, re-acquires qemu_cpu_list_lock; "
	for {
		r.resume.WaitAs(wait, woken)
		p := r.pending.Load()
		if p == 0 {
			rc.running.Store(1)
			r.e.Note("exclusive_idle: pending_cpus == 0; atomic_set(running, true)")
			return
		}
		r.e.Notef("exclusive_idle: pending_cpus == %d", p)
		wait = "cpu_exec_start(" + v.name + "): exclusive_idle: qemu_cond_wait(exclusive_resume) again"
	}
}

// ---- cpu_exec and the guest programs (guest.go) ----

// exec is cpu_exec: the exit request is tested before each TB.
func (v *vc) exec() {
	r, rc, name := v.r, v.r.cpu[v.t], v.name
	for {
		if v.halted {
			r.e.Yield("cpu_exec(" + name + "): cpu->halted, return EXCP_HALTED")
			return
		}
		r.e.Yield("cpu_exec(" + name + "): exit_request ")
		switch {
		case rc.exitReq.Load() != 0:
			r.e.Note("set, leave cpu_exec")
			return
		case v.programDone():
			v.halted = true
			r.e.Note("clear; the guest waits for an interrupt, cpu->halted = 1, EXCP_HLT")
			return
		}
		r.e.Note("clear, run the next TB")
		if v.t == src {
			if v.sourceTB() {
				return
			}
			continue
		}
		v.targetTB()
	}
}

func (v *vc) programDone() bool {
	if v.t == src {
		return v.guest == gSrcDone
	}
	return v.guest == v.r.m.accesses
}

// targetTB is one guest access to page X: a TLB hit, or tlb_fill (which
// fills the TLB, the use being the next step, or faults).
func (v *vc) targetTB() {
	r, name := v.r, v.name
	for {
		if v.tlb {
			// Read the observer before the translation: an access that
			// starts after cpu0 resumed must not use the old entry (in
			// real mode the two reads are not one instant).
			resumed := r.resumed.Load()
			v.callRealMode()
			r.e.Yield("cpu_exec(" + name + "): guest load from page X hits the softmmu TLB entry X->P")
			v.callControlled()
			r.e.Return(v.t, mapped)
			if resumed || r.resumed.Load() {
				r.e.Fail(NoStaleTranslation, fmt.Sprintf("%s translates page X with the TLB entry X->P cached before cpu0 cleared the PTE, "+
					"after cpu0 executed the instruction following %s: %s's flush item has not run (%s)",
					name, r.m.flushName(), name, v.staleCause()))
			}
			v.guest++
			return
		}
		v.callRealMode()
		if r.pte.Load("tlb_fill("+name+"): page walk finds pte(X)") != 0 {
			r.e.Note(" -> P, fill the TLB")
			v.tlb = true
			continue
		}
		r.e.Note(" clear: guest page fault")
		v.callControlled()
		r.e.Return(v.t, fault)
		v.guest++
		return
	}
}

// A guest access is one step, and the model records its call and return
// in that step; under control the code does the same. In real mode there
// are no steps, and the call must be recorded before the access and the
// return after it for the history to mean real time. A page walk that
// fills the TLB is not an access of its own (the use is the next step), so
// in real mode the call recorded before the walk stays open for the use.
func (v *vc) callRealMode() {
	if !v.r.ctl && !v.open {
		v.r.e.Call(v.t, access{})
		v.open = true
	}
}

func (v *vc) callControlled() {
	if v.r.ctl {
		v.r.e.Call(v.t, access{})
	}
	v.open = false
}

// staleCause says where the target's flush item is, as the model does.
func (v *vc) staleCause() string {
	r, rc := v.r, v.r.cpu[v.t]
	r.lockCPU(v.t)
	qlen, posted := len(rc.queue), rc.posted
	r.unlockCPU(v.t)
	switch {
	case qlen > 0 && rc.exitReq.Load() == 0:
		return "it sits on the work list and exit_request is clear, so cpu_exec keeps running TBs"
	case qlen > 0:
		return "it sits on the work list; exit_request is set but the TB runs before the next check"
	case posted == 0:
		return "it has not even been queued"
	}
	return "it is being run"
}

// sourceTB runs cpu0's TB up to its end; it reports whether cpu_exec is
// left (cpu_loop_exit), else the TB has ended with the guest instruction
// after the invalidate and cpu_exec goes on.
func (v *vc) sourceTB() bool {
	r, m := v.r, v.r.m
	fn := m.flushName()
	if v.guest == gNext {
		v.nextInstruction("")
		return false
	}
	r.pte.Store("cpu_exec(cpu0): guest clears pte(X) (*pte = 0; ptesync), then executes the broadcast invalidate", 0)
	r.e.Call(src, clearPTE{})
	r.e.Return(src, done)
	r.e.Call(src, invalidate{})

	// flush_all_helper: one flush job per target.
	for c := 1; c < m.n; c++ {
		r.queueRemote(c)
	}

	if m.cfg.synced {
		r.queueOwn(fmt.Sprintf("%s: async_safe_run_on_cpu(cpu0, %s), qemu_cpu_kick(cpu0)", fn, flushFn))
	} else {
		// tlb_flush_page_by_mmuidx_async_0: the source's own TLB at once.
		r.e.Yield(fmt.Sprintf("%s: tlb_flush_page_by_mmuidx_async_0(cpu0): flush page X from cpu0's TLB at once", fn))
		v.tlb = false
	}

	if m.cfg.endTB {
		r.e.Yield("cpu_loop_exit(cpu0): the helper ends the TB, leave cpu_exec")
		v.guest = gNext
		return true
	}
	v.nextInstruction("the TB goes on: ")
	return false
}

// nextInstruction is cpu0's guest instruction after the invalidate
// (*memP = 1): from here on no vCPU may use the old translation.
func (v *vc) nextInstruction(how string) {
	r := v.r
	r.e.Yield("cpu_exec(cpu0): " + how + "guest executes the instruction after the invalidate (*memP = 1): the flush must be complete")
	r.e.Return(src, done)
	r.resumed.Store(true)
	v.guest = gSrcDone
}

// queueRemote is flush_all_helper's queue_work_on_cpu on target c, three
// steps as in the model (work.go): lock c's cpu->lock and append the item;
// qemu_cpu_kick (queue_work_on_cpu_locked kicks under the lock, so a vCPU
// between its idle test and its wait, which holds the lock, cannot miss
// it); unlock. Without the kick (no-kick) it is two.
func (r *run) queueRemote(c int) {
	m, rc := r.m, r.cpu[c]
	it := itemRemoteBQL
	if m.cfg.noBQL {
		it = itemRemoteNoBQL
	}
	call := m.queueCall(c, false)
	rc.lock.Lock(fmt.Sprintf("%s: qemu_mutex_lock(%s), append to %s", m.queueCall(c, true), cpuLockName(c), workList(c)))
	r.appendWork(c, it)
	if !m.cfg.kickQueue {
		rc.lock.Unlock(fmt.Sprintf("%s: qemu_mutex_unlock(%s) without a kick", call, cpuLockName(c)))
		return
	}
	r.kick(c, fmt.Sprintf("%s: qemu_cpu_kick(%s): qemu_cond_broadcast(%s->halt_cond), cpu_exit", call, cpuName(c), cpuName(c)))
	rc.lock.Unlock(fmt.Sprintf("%s: qemu_mutex_unlock(%s)", call, cpuLockName(c)))
}

// queueOwn is async_safe_run_on_cpu on the source itself: one step, as in
// the model, since only the source takes its own cpu->lock and it does not
// hold it while running guest code. Under control the kick's broadcast is
// left out: nobody can wait on cpu0's halt_cond while cpu0 runs this, and
// a broadcast would be a scheduling point of its own.
func (r *run) queueOwn(label string) {
	rc := r.cpu[src]
	r.e.Yield(label)
	r.lockCPU(src)
	r.appendWork(src, itemSafe)
	rc.exitReq.Store(1)
	if !r.ctl {
		rc.haltCond.Broadcast("qemu_cond_broadcast(halt_cond)")
	}
	r.unlockCPU(src)
}

// appendWork appends a work item to c's list, with c's cpu->lock held.
func (r *run) appendWork(c int, it item) {
	rc := r.cpu[c]
	if len(rc.queue) == 2 {
		r.e.Fail(WorkOnce, fmt.Sprintf("model error: %s's work list is full", cpuName(c)))
		return
	}
	rc.queue = append(rc.queue, it)
	rc.posted++
	rc.queued = true
}

// kick is qemu_cpu_kick under MTTCG, one step: qemu_cond_broadcast of
// halt_cond, which is the step's primitive, then cpu_exit
// (exit_request = 1).
func (r *run) kick(c int, label string) {
	rc := r.cpu[c]
	rc.haltCond.Broadcast(label)
	rc.exitReq.Store(1)
}

// ---- cpu_exec_end (exec.go) ----

func (v *vc) execEnd() {
	r, rc, name := v.r, v.r.cpu[v.t], v.name
	r.e.Yield("cpu_exec_end(" + name + "): atomic_set(running, false)")
	rc.running.Store(0)

	r.e.Yield("cpu_exec_end(" + name + "): smp_mb; pending_cpus == ")
	if p := r.pending.Load(); p != 0 {
		r.e.Notef("%d, slow path", p)
	} else {
		r.e.Note("0")
		return
	}

	r.listLock.Lock("cpu_exec_end(" + name + "): qemu_mutex_lock(qemu_cpu_list_lock)")
	// The test, the clear and the decrement: one step, as has_waiter and
	// pending_cpus are written only under the lock.
	r.e.Yield("cpu_exec_end(" + name + "): ")
	if rc.hasWaiter.Load() == 0 {
		r.e.Note("no has_waiter: not counted, pending_cpus untouched")
	} else {
		rc.hasWaiter.Store(0)
		p := r.pending.Load() - 1
		r.pending.Store(p)
		r.e.Notef("has_waiter = false; atomic_set(pending_cpus, %d)", p)
		if p == 1 {
			if w := r.exclCond.Signal("cpu_exec_end(" + name + "): qemu_cond_signal(exclusive_cond)"); w >= 0 {
				r.e.Note(" wakes " + cpuName(w))
			} else {
				r.e.Note(", nobody waits")
			}
		}
	}
	r.listLock.Unlock("cpu_exec_end(" + name + "): qemu_mutex_unlock(qemu_cpu_list_lock)")
}

// ---- the bottom of mttcg's loop (work.go) ----

// waitIOEvent is the bottom of mttcg's loop: take cpu->lock and clear
// exit_request, then qemu_tcg_wait_io_event: while cpu_thread_is_idle,
// wait on halt_cond; then pop the first work item (v.cur, itemNone if the
// list is empty) and drop the lock. It reports false when the vCPU would
// sleep for good (see the file comment).
func (v *vc) waitIOEvent() bool {
	rc, name := v.r.cpu[v.t], v.name
	rc.lock.Lock("qemu_tcg_cpu_thread_fn(" + name + "): qemu_mutex_lock(" + cpuLockName(v.t) + "); atomic_mb_set(exit_request, 0)")
	rc.exitReq.Store(0)
	for {
		// cpu->lock is held since the previous step, and queuers need
		// it: the test decides the next step, and nothing can change
		// the work list before it.
		if !(v.halted && len(rc.queue) == 0) {
			// Not idle: the test and the pop are one step with the unlock.
			label := "qemu_tcg_wait_io_event(" + name + "): not idle; process_queued_cpu_work: " + v.popNext()
			rc.lock.Unlock(label)
			return true
		}
		wait := "qemu_tcg_wait_io_event(" + name + "): cpu_thread_is_idle (halted, work list empty), qemu_cond_wait(halt_cond)"
		if v.t == src || rc.queued {
			// Nothing can be queued on this vCPU any more: the model's
			// vCPU sleeps here for good (its step says Done). The wait's
			// release of the lock, then exit.
			rc.lock.Unlock(wait)
			return false
		}
		rc.haltCond.WaitAs(wait, "qemu_tcg_wait_io_event("+name+"): woken, re-acquires "+cpuLockName(v.t))
	}
}

// popNext is process_queued_cpu_work's loop head, under cpu->lock: pop the
// next item into v.cur, or itemNone when the list is empty. It returns the
// rest of the step's label.
func (v *vc) popNext() string {
	rc := v.r.cpu[v.t]
	if len(rc.queue) == 0 {
		v.cur = itemNone
		return "work list empty"
	}
	v.cur = rc.queue[0]
	rc.queue = rc.queue[1:]
	switch v.cur {
	case itemRemoteBQL:
		return "pop " + flushFn + " (wi->bql)"
	case itemRemoteNoBQL:
		return "pop " + flushFn + " (no BQL)"
	}
	return "pop " + flushFn + " (wi->exclusive)"
}

// processWork runs the popped items until the work list is empty.
func (v *vc) processWork() {
	r, rc, name := v.r, v.r.cpu[v.t], v.name
	for v.cur != itemNone {
		switch v.cur {
		case itemRemoteBQL:
			r.bql.Lock("process_queued_cpu_work(" + name + "): wi->bql: qemu_mutex_lock_iothread")
			v.flushOwnTLB(fmt.Sprintf("%s(%s): flush page X from %s's softmmu TLB, g_free(d)", flushFn, name, name))
			r.bql.Unlock("process_queued_cpu_work(" + name + "): qemu_mutex_unlock_iothread")
		case itemRemoteNoBQL:
			v.flushOwnTLB(fmt.Sprintf("%s(%s): flush page X from %s's softmmu TLB, g_free(d)", flushFn, name, name))
		case itemSafe:
			v.safeWork()
		}
		// Lock, g_free(wi), pop the next item or find the list empty,
		// unlock: one step (work.go; nobody else holds the lock now).
		r.e.Yield("process_queued_cpu_work(" + name + "): g_free(wi); ")
		r.lockCPU(v.t)
		rc.freedW++
		if rc.freedW > rc.ran {
			r.e.Fail(WorkOnce, fmt.Sprintf("%s frees a work item whose flush did not run (freed %d, ran %d)", name, rc.freedW, rc.ran))
		}
		r.e.Note(v.popNext())
		r.unlockCPU(v.t)
	}
}

// flushOwnTLB is a flush worker on the vCPU's own thread: one step that
// drops page X from its TLB and frees the per-destination data.
func (v *vc) flushOwnTLB(label string) {
	r, rc := v.r, v.r.cpu[v.t]
	r.e.Yield(label)
	v.tlb = false
	r.lockCPU(v.t)
	rc.ran++
	rc.freedD++
	ran, freedD, posted := rc.ran, rc.freedD, rc.posted
	r.unlockCPU(v.t)
	if ran > posted {
		r.e.Fail(WorkOnce, fmt.Sprintf("%s runs a flush item %d times, but %d was queued", v.name, ran, posted))
	} else if freedD > posted {
		r.e.Fail(WorkOnce, fmt.Sprintf("%s frees TLBFlushPageByMMUIdxData twice", v.name))
	}
}

// ---- safe work: start_exclusive, the flush, end_exclusive (exclusive.go) ----

func (v *vc) safeWork() {
	r, name, m := v.r, v.name, v.r.m
	prefix := "start_exclusive(" + name + "): "
	woken := prefix + "woken, re-acquires qemu_cpu_list_lock; "
	r.listLock.Lock(prefix + "qemu_mutex_lock(qemu_cpu_list_lock)")
	// exclusive_idle and pending_cpus = 1: one step (pending_cpus is
	// written only under the lock this thread holds).
	if p := r.pending.Load(); p != 0 {
		wait := fmt.Sprintf("%sexclusive_idle: pending_cpus == %d, qemu_cond_wait(exclusive_resume)", prefix, p)
		for {
			r.resume.WaitAs(wait, woken)
			if p = r.pending.Load(); p == 0 {
				break
			}
			r.e.Notef("exclusive_idle: pending_cpus == %d", p)
			wait = prefix + "exclusive_idle: qemu_cond_wait(exclusive_resume) again"
		}
		r.e.Note("exclusive_idle: pending_cpus == 0; atomic_set(pending_cpus, 1)")
	} else {
		r.e.Yield(prefix + "exclusive_idle: pending_cpus == 0; atomic_set(pending_cpus, 1)")
	}
	r.pending.Store(1)

	// CPU_FOREACH: the caller's own running is false and is skipped.
	count := uint32(0)
	for o := m.nextOther(v.t, 0); o < m.n; o = m.nextOther(v.t, o+1) {
		r.e.Yield(fmt.Sprintf("%ssmp_mb; atomic_read(%s->running) == ", prefix, cpuName(o)))
		if r.cpu[o].running.Load() == 0 {
			r.e.Note("false")
			continue
		}
		r.cpu[o].hasWaiter.Store(1)
		count++
		r.e.Notef("true: has_waiter = true, running_cpus = %d", count)
		r.kick(o, fmt.Sprintf("%sqemu_cpu_kick(%s)", prefix, cpuName(o)))
	}
	p := count + 1
	r.e.Yield(fmt.Sprintf("%satomic_set(pending_cpus, %d)", prefix, p))
	r.pending.Store(p)
	if p > 1 {
		wait := prefix + "pending_cpus > 1, qemu_cond_wait(exclusive_cond)"
		for {
			r.exclCond.WaitAs(wait, woken+"pending_cpus == ")
			q := r.pending.Load()
			r.e.Notef("%d", q)
			if q <= 1 {
				break
			}
			r.e.Note(" > 1")
			wait = prefix + "pending_cpus > 1, qemu_cond_wait(exclusive_cond) again"
		}
	}
	r.listLock.Unlock(prefix + "qemu_mutex_unlock(qemu_cpu_list_lock): exclusive section begins")

	v.flushOwnTLB(fmt.Sprintf("%s(%s): safe work flushes page X from %s's TLB, g_free(d)", flushFn, name, name))

	r.listLock.Lock("end_exclusive(" + name + "): qemu_mutex_lock(qemu_cpu_list_lock)")
	// The store and the broadcast: one step, as the waiters re-test
	// pending_cpus only after re-acquiring the lock.
	r.resume.Broadcast("end_exclusive(" + name + "): atomic_set(pending_cpus, 0); qemu_cond_broadcast(exclusive_resume)")
	r.pending.Store(0)
	r.listLock.Unlock("end_exclusive(" + name + "): qemu_mutex_unlock(qemu_cpu_list_lock)")
}

// finalCheck is work-once at the end, when every vCPU is done: each flush
// item ran exactly once and its data and work item were freed once.
func (r *run) finalCheck() *model.Violation {
	for c, rc := range r.cpu {
		want := 1
		if c == src && !r.m.cfg.synced {
			want = 0
		}
		if rc.posted != want || rc.ran != want || rc.freedD != want || rc.freedW != want {
			return model.Violationf(WorkOnce, "every vCPU is idle, but %s's flush items: queued %d, run %d, data freed %d, work items freed %d (want %d each)",
				cpuName(c), rc.posted, rc.ran, rc.freedD, rc.freedW, want)
		}
	}
	return nil
}
