package exclusive

import "fmt"

// start_exclusive, end_exclusive, cpu_exec_start and cpu_exec_end of the
// real implementation, in both schemes (upstream.go and cpulock.go in the
// model). Each wait loop is QEMU's while loop; the model's re-acquire step
// ("...: woken from X, re-acquires L") is the second step of rt's
// Cond.WaitAs, labelled as the model labels it.

func (th *thr) startExclusive() {
	in := &th.w.prog.inStart[th.t]
	in.Store(true)
	if th.w.v.cpuLock {
		th.startExclusiveCPULock()
	} else {
		th.startExclusiveUpstream()
	}
	in.Store(false)
}

func (th *thr) endExclusive() {
	if th.w.v.cpuLock {
		th.endExclusiveCPULock()
		return
	}
	th.endExclusiveUpstream()
}

func (th *thr) cpuExecStart(c int) {
	in := &th.w.prog.inExecSt[c]
	in.Store(true)
	if th.w.v.cpuLock {
		th.cpuExecStartCPULock(c)
	} else {
		th.cpuExecStartUpstream(c)
	}
	in.Store(false)
}

func (th *thr) cpuExecEnd(c int) {
	if th.w.v.cpuLock {
		th.cpuExecEndCPULock(c)
		return
	}
	th.cpuExecEndUpstream(c)
}

// Upstream (cpu-common.c @18530e7c). pending_cpus is written only by
// holders of qemu_cpu_list_lock, which write pendingL with it: a holder
// reads pendingL without a scheduling point, as the model folds that read
// into the neighbouring step; the lock-free reads of the fast paths are
// loads of the word, steps of their own.

func (w *world) setPending(label string, v uint64) {
	w.pending.Store(label, v)
	w.pendingL = v
}

func (th *thr) startExclusiveUpstream() {
	w := th.w
	if w.m.hasCounter() && th.depth > 0 {
		th.depth++
		w.e.Yield(fmt.Sprintf("start_exclusive: nested: exclusive_context_count++ = %d", th.depth))
		return
	}
	L := w.listLock
	L.Lock("start_exclusive: qemu_mutex_lock(qemu_cpu_list_lock)")
	// exclusive_idle()
	for w.pendingL != 0 {
		th.wait(w.resumeCond, fmt.Sprintf("start_exclusive: exclusive_idle: pending_cpus = %d: qemu_cond_wait(exclusive_resume)", w.pendingL),
			"start_exclusive: exclusive_idle", "start_exclusive: exclusive_idle: woken, re-acquires qemu_cpu_list_lock")
	}
	w.setPending("start_exclusive: atomic_set(pending_cpus, 1); smp_mb()", 1)
	runningCPUs := uint64(0)
	for o := 0; o < w.m.ncpus; o++ {
		if !w.inList[o].Load() { // the cpus list is read under qemu_cpu_list_lock
			continue
		}
		if w.running[o].Load(fmt.Sprintf("start_exclusive: atomic_read(cpu%d->running) = ", o)) == 0 {
			w.e.Note("false")
			continue
		}
		w.hasWaiter[o] = true
		runningCPUs++
		if w.v.noKick {
			// V-A6: counted, but nothing makes the vCPU leave cpu_exec.
			w.e.Note("true: has_waiter = true; running_cpus++ (no qemu_cpu_kick)")
			continue
		}
		w.e.Note("true: has_waiter = true; running_cpus++")
		w.kick(o, "start_exclusive: ")
	}
	w.setPending(fmt.Sprintf("start_exclusive: atomic_set(pending_cpus, running_cpus + 1 = %d)", runningCPUs+1), runningCPUs+1)
	if w.v.ifNotWhile {
		// H1 (old linux-user/main.c): if instead of while, so a spurious
		// wake-up of the wait (a step of the waiter, as in the model)
		// starts the section with pending_cpus > 1.
		if w.pendingL > 1 {
			th.wait(w.exclusiveCond, fmt.Sprintf("start_exclusive: if (pending_cpus = %d > 1) qemu_cond_wait(exclusive_cond)", w.pendingL),
				"start_exclusive", "start_exclusive: woken from exclusive_cond, re-acquires qemu_cpu_list_lock")
			L.Unlock("start_exclusive: qemu_mutex_unlock(qemu_cpu_list_lock) without re-checking pending_cpus; the exclusive section starts")
		} else {
			L.Unlock("start_exclusive: pending_cpus = 1: qemu_mutex_unlock(qemu_cpu_list_lock); the exclusive section starts")
		}
		th.depth = 1
		th.sectionStart()
		return
	}
	for w.pendingL > 1 {
		th.wait(w.exclusiveCond, fmt.Sprintf("start_exclusive: while (pending_cpus = %d > 1) qemu_cond_wait(exclusive_cond)", w.pendingL),
			"start_exclusive", "start_exclusive: woken from exclusive_cond, re-acquires qemu_cpu_list_lock")
	}
	L.Unlock("start_exclusive: pending_cpus = 1: qemu_mutex_unlock(qemu_cpu_list_lock); the exclusive section starts")
	th.depth = 1
	th.sectionStart()
}

func (th *thr) endExclusiveUpstream() {
	w := th.w
	if w.m.hasCounter() && th.depth > 1 {
		th.depth--
		w.e.Yield(fmt.Sprintf("end_exclusive: nested: exclusive_context_count-- = %d", th.depth))
		return
	}
	th.depth = 0
	L := w.listLock
	L.Lock("end_exclusive: qemu_mutex_lock(qemu_cpu_list_lock)")
	th.sectionEnd()
	w.setPending("end_exclusive: atomic_set(pending_cpus, 0)", 0)
	if w.v.endSignalsResume {
		// V-A5: one waiter wakes, the others sleep with a true predicate.
		w.signal(w.resumeCond, "end_exclusive: qemu_cond_signal(exclusive_resume)")
	} else {
		w.broadcast(w.resumeCond, "end_exclusive: qemu_cond_broadcast(exclusive_resume)")
	}
	L.Unlock("end_exclusive: qemu_mutex_unlock(qemu_cpu_list_lock)")
}

func (th *thr) cpuExecStartUpstream(c int) {
	w := th.w
	w.running[c].Store(fmt.Sprintf("cpu_exec_start: atomic_set(cpu%d->running, true)", c), 1)
	// smp_mb(): every rt word operation is sequentially consistent.
	p := w.pending.Load("cpu_exec_start: smp_mb(); atomic_read(pending_cpus) = ")
	if p == 0 {
		w.e.Notef("0: fast path, cpu%d enters cpu_exec", c)
		th.enterExec(c)
		return
	}
	w.e.Notef("%d", p)
	L := w.listLock
	L.Lock("cpu_exec_start: qemu_mutex_lock(qemu_cpu_list_lock)")
	if w.hasWaiter[c] {
		// start_exclusive counted this CPU: it will wait for
		// cpu_exec_end, so the CPU may run.
		L.Unlock(fmt.Sprintf("cpu_exec_start: cpu%d->has_waiter (counted): qemu_mutex_unlock(qemu_cpu_list_lock); cpu%d enters cpu_exec", c, c))
		th.enterExec(c)
		return
	}
	w.running[c].Store(fmt.Sprintf("cpu_exec_start: !cpu%d->has_waiter: atomic_set(cpu%d->running, false)", c, c), 0)
	for w.pendingL != 0 {
		th.wait(w.resumeCond, fmt.Sprintf("cpu_exec_start: exclusive_idle: pending_cpus = %d: qemu_cond_wait(exclusive_resume)", w.pendingL),
			"cpu_exec_start: exclusive_idle", "cpu_exec_start: exclusive_idle: woken, re-acquires qemu_cpu_list_lock")
	}
	w.running[c].Store(fmt.Sprintf("cpu_exec_start: exclusive_idle: pending_cpus = 0; atomic_set(cpu%d->running, true)", c), 1)
	L.Unlock(fmt.Sprintf("cpu_exec_start: qemu_mutex_unlock(qemu_cpu_list_lock); cpu%d enters cpu_exec", c))
	th.enterExec(c)
}

func (th *thr) cpuExecEndUpstream(c int) {
	w := th.w
	// The model leaves cpu_exec in the step of the store. Under control
	// the observer changes right after it, in that step; under the Go
	// scheduler it must change before the store, or a start_exclusive that
	// sees running == false could start its section while the observer
	// still has the CPU inside.
	if !w.ctl {
		th.leaveExec(c)
	}
	w.running[c].Store(fmt.Sprintf("cpu_exec_end: atomic_set(cpu%d->running, false)", c), 0)
	if w.ctl {
		th.leaveExec(c)
	}
	p0 := w.pending.Load("cpu_exec_end: smp_mb(); atomic_read(pending_cpus) = ")
	if p0 == 0 {
		w.e.Note("0: fast path")
		return
	}
	w.e.Notef("%d", p0)
	L := w.listLock
	L.Lock("cpu_exec_end: qemu_mutex_lock(qemu_cpu_list_lock)")
	var dec bool
	if w.v.endDecrementsAlways {
		// V-A4: the pre-2016 rule, without has_waiter.
		dec = w.pendingL > 1
	} else if dec = w.hasWaiter[c]; dec {
		w.hasWaiter[c] = false
	}
	if !dec {
		if w.v.endDecrementsAlways {
			L.Unlock("cpu_exec_end: pending_cpus <= 1: qemu_mutex_unlock(qemu_cpu_list_lock)")
		} else {
			L.Unlock(fmt.Sprintf("cpu_exec_end: !cpu%d->has_waiter: qemu_mutex_unlock(qemu_cpu_list_lock)", c))
		}
		return
	}
	p := w.pendingL - 1
	if w.v.endDecrementsAlways {
		w.setPending(fmt.Sprintf("cpu_exec_end: pending_cpus > 1: atomic_set(pending_cpus, %d)", p), p)
	} else {
		w.setPending(fmt.Sprintf("cpu_exec_end: cpu%d->has_waiter: has_waiter = false; atomic_set(pending_cpus, %d)", c, p), p)
	}
	if p == 1 {
		w.signal(w.exclusiveCond, "cpu_exec_end: qemu_cond_signal(exclusive_cond)")
	}
	L.Unlock("cpu_exec_end: qemu_mutex_unlock(qemu_cpu_list_lock)")
}

// Seed 001. running, exclusive_waiter and exclusive_ongoing are plain
// fields under cpu->lock, exclusive_work_ongoing under
// qemu_cpu_list_lock; every waiter sleeps on its CPU's cpu->cond.

// wakeCPU is qemu_cond_signal(cpu->cond) in the seed, or
// qemu_cond_broadcast in cpu-lock-broadcast; prefix is what the same step
// did before it.
func (w *world) wakeCPU(c int, prefix string) {
	if w.v.broadcast {
		w.broadcast(w.cpuCond[c], fmt.Sprintf("%sqemu_cond_broadcast(cpu%d->cond)", prefix, c))
		return
	}
	w.signal(w.cpuCond[c], fmt.Sprintf("%sqemu_cond_signal(cpu%d->cond)", prefix, c))
}

func (th *thr) startExclusiveCPULock() {
	w := th.w
	L := w.listLock
	L.Lock("start_exclusive: qemu_mutex_lock(qemu_cpu_list_lock)")
	for w.workOngoing {
		th.wait(w.resumeCond, "start_exclusive: exclusive_idle: exclusive_work_ongoing: qemu_cond_wait(exclusive_resume)",
			"start_exclusive: exclusive_idle", "start_exclusive: exclusive_idle: woken, re-acquires qemu_cpu_list_lock")
	}
	w.workOngoing = true
	L.Unlock("start_exclusive: exclusive_work_ongoing = true; qemu_mutex_unlock(qemu_cpu_list_lock)")
	for o := w.nextCPU(0); o < w.m.ncpus; o = w.nextCPU(o + 1) {
		w.cpuLock[o].Lock(fmt.Sprintf("start_exclusive: cpu_mutex_lock(cpu%d)", o))
		if w.runningL[o] {
			stale := w.exclusiveWaiter[o]
			w.exclusiveWaiter[o] = true
			w.kick(o, fmt.Sprintf("start_exclusive: cpu%d->running: exclusive_waiter = true; ", o))
			if stale {
				w.e.Failf(PropAssertNoWaiter, "%s: start_exclusive finds cpu%d->exclusive_waiter already set", th.name(), o)
			}
		}
		w.exclusiveOngoing[o] = true
		w.cpuLock[o].Unlock(fmt.Sprintf("start_exclusive: cpu%d->exclusive_ongoing = true; cpu_mutex_unlock(cpu%d)", o, o))
	}
	for o := w.nextCPU(0); o < w.m.ncpus; {
		w.cpuLock[o].Lock(fmt.Sprintf("start_exclusive: cpu_mutex_lock(cpu%d) to wait for it", o))
		for w.exclusiveWaiter[o] {
			th.wait(w.cpuCond[o], fmt.Sprintf("start_exclusive: while (cpu%d->exclusive_waiter) qemu_cond_wait(cpu%d->cond)", o, o),
				"start_exclusive", fmt.Sprintf("start_exclusive: woken from cpu%d->cond, re-acquires cpu%d->lock", o, o))
		}
		w.cpuLock[o].Unlock(fmt.Sprintf("start_exclusive: !cpu%d->exclusive_waiter: cpu_mutex_unlock(cpu%d)", o, o))
		// The walk reads the next CPU in the unlock's step (nextCPU).
		if o = w.nextCPU(o + 1); o == w.m.ncpus {
			w.e.Note("; the exclusive section starts")
		}
	}
	th.sectionStart()
}

// nextCPU is CPU_FOREACH's next CPU from index from on (cpulock.go): the
// first in the list, or ncpus at the end.
func (w *world) nextCPU(from int) int {
	for from < w.m.ncpus && !w.inList[from].Load() {
		from++
	}
	return from
}

func (th *thr) endExclusiveCPULock() {
	w := th.w
	L := w.listLock
	for o := w.nextCPU(0); o < w.m.ncpus; o = w.nextCPU(o + 1) {
		w.cpuLock[o].Lock(fmt.Sprintf("end_exclusive: cpu_mutex_lock(cpu%d)", o))
		if o == 0 {
			th.sectionEnd()
		}
		// The seed's g_assert(!exclusive_waiter) and
		// g_assert(exclusive_ongoing), in that order.
		prop, msg := "", ""
		switch {
		case w.exclusiveWaiter[o]:
			prop, msg = PropAssertNoWaiter, fmt.Sprintf("%s: end_exclusive finds cpu%d->exclusive_waiter set", th.name(), o)
		case !w.exclusiveOngoing[o]:
			prop, msg = PropAssertOngoing, fmt.Sprintf("%s: end_exclusive finds cpu%d->exclusive_ongoing clear", th.name(), o)
		}
		w.exclusiveOngoing[o] = false
		w.wakeCPU(o, "end_exclusive: exclusive_ongoing = false; ")
		if prop != "" {
			w.e.Fail(prop, msg)
		}
		w.cpuLock[o].Unlock(fmt.Sprintf("end_exclusive: cpu_mutex_unlock(cpu%d)", o))
	}
	L.Lock("end_exclusive: qemu_mutex_lock(qemu_cpu_list_lock)")
	w.workOngoing = false
	w.broadcast(w.resumeCond, "end_exclusive: exclusive_work_ongoing = false; qemu_cond_broadcast(exclusive_resume)")
	L.Unlock("end_exclusive: qemu_mutex_unlock(qemu_cpu_list_lock)")
}

func (th *thr) cpuExecStartCPULock(c int) {
	w := th.w
	w.cpuLock[c].Lock(fmt.Sprintf("cpu_exec_start: cpu_mutex_lock(cpu%d)", c))
	th.exclusiveLocked(c)
	w.runningL[c] = true
	w.cpuLock[c].Unlock(fmt.Sprintf("cpu_exec_start: running = true; cpu_mutex_unlock(cpu%d); cpu%d enters cpu_exec", c, c))
	th.enterExec(c)
}

func (th *thr) cpuExecEndCPULock(c int) {
	w := th.w
	w.cpuLock[c].Lock(fmt.Sprintf("cpu_exec_end: cpu_mutex_lock(cpu%d); running = false", c))
	// Leaving under cpu->lock with running still true is safe in real
	// mode too: start_exclusive reads running under the same lock.
	th.leaveExec(c)
	w.runningL[c] = false
	th.exclusiveLocked(c)
	w.cpuLock[c].Unlock(fmt.Sprintf("cpu_exec_end: cpu_mutex_unlock(cpu%d)", c))
}

// exclusiveLocked is cpu_exec_exclusive_locked, with cpu->lock held: R1
// wakes a start_exclusive waiting for this CPU, R2 waits for the
// exclusive section to end.
func (th *thr) exclusiveLocked(c int) {
	w := th.w
	if w.exclusiveWaiter[c] {
		w.exclusiveWaiter[c] = false
		w.wakeCPU(c, "cpu_exec_exclusive_locked: exclusive_waiter = false; ")
	}
	for w.exclusiveOngoing[c] {
		th.wait(w.cpuCond[c], fmt.Sprintf("cpu_exec_exclusive_locked: while (cpu%d->exclusive_ongoing) qemu_cond_wait(cpu%d->cond)", c, c),
			"cpu_exec_exclusive_locked", fmt.Sprintf("cpu_exec_exclusive_locked: woken from cpu%d->cond, re-acquires cpu%d->lock", c, c))
	}
}
