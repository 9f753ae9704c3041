package exclusive

// Seed 001's exclusive sections (A.3 (c)): exclusive_work_ongoing under
// qemu_cpu_list_lock; running, exclusive_waiter and exclusive_ongoing are
// plain fields under cpu->lock; every waiter sleeps on its CPU's cpu->cond,
// which run_on_cpu callers share.
//
// Folding rule used below: a write to a field protected by a lock the
// thread holds is invisible to every other thread until the unlock, and a
// read of it cannot race; such accesses share the step of the next
// lock, wait, signal or unlock. Those remain one step each.

func (r *run) condName(c int) string { return r.m.condNames[c] }

// wakeCPU is qemu_cond_signal(cpu->cond) in the seed, or
// qemu_cond_broadcast in cpu-lock-broadcast. It returns the label's text
// when labelling, else "".
func (r *run) wakeCPU(c int) string {
	if r.m.v.broadcast {
		ws := r.broadcast(&r.s.cpuCond[c], r.condName(c))
		if !r.labelling() {
			return ""
		}
		return "qemu_cond_broadcast(" + r.condName(c) + ") " + r.wakesAll(ws)
	}
	w := r.signal(&r.s.cpuCond[c], r.condName(c))
	if !r.labelling() {
		return ""
	}
	return "qemu_cond_signal(" + r.condName(c) + ") " + r.wakes(w)
}

func (r *run) cpuLockStep() {
	s, th := r.s, r.th
	L := &s.listLock
	const Ln = "qemu_cpu_list_lock"
	o := int(th.iter)
	c := int(th.arg)
	switch th.pc {
	// start_exclusive
	case pcCSLock:
		if !r.lock(L, Ln) {
			return
		}
		r.label("start_exclusive: qemu_mutex_lock(qemu_cpu_list_lock)")
		th.pc = pcCSIdle
	case pcCSIdle:
		if s.workOngoing {
			r.wait(&s.resumeCond, "exclusive_resume", L, Ln)
			r.label("start_exclusive: exclusive_idle: exclusive_work_ongoing: qemu_cond_wait(exclusive_resume)")
			th.pc = pcCSIdleWoken
			return
		}
		s.workOngoing = true
		r.unlock(L, Ln)
		r.label("start_exclusive: exclusive_work_ongoing = true; qemu_mutex_unlock(qemu_cpu_list_lock)")
		th.iter = r.nextCPU(0)
		th.pc = pcCSMarkLock
	case pcCSIdleWoken:
		if !r.wokenRelock(&s.resumeCond, "exclusive_resume", L, Ln, "start_exclusive: exclusive_idle") {
			return
		}
		r.label("start_exclusive: exclusive_idle: woken, re-acquires qemu_cpu_list_lock")
		th.pc = pcCSIdle
	case pcCSMarkLock:
		if !r.lock(&s.cpuLock[o], r.cpuLockName(o)) {
			return
		}
		if r.labelling() {
			r.labelf("start_exclusive: cpu_mutex_lock(cpu%d)", o)
		}
		// running is read under cpu->lock, which the thread now holds.
		if s.running[o] {
			th.pc = pcCSKick
		} else {
			th.pc = pcCSMarkUnlock
		}
	case pcCSKick:
		if s.exclusiveWaiter[o] {
			r.x.Fail(PropAssertNoWaiter, "%s: start_exclusive finds cpu%d->exclusive_waiter already set", r.name(r.t), o)
		}
		s.exclusiveWaiter[o] = true
		if k := r.kick(o); r.labelling() {
			r.labelf("start_exclusive: cpu%d->running: exclusive_waiter = true; %s", o, k)
		}
		th.pc = pcCSMarkUnlock
	case pcCSMarkUnlock:
		s.exclusiveOngoing[o] = true
		r.unlock(&s.cpuLock[o], r.cpuLockName(o))
		if r.labelling() {
			r.labelf("start_exclusive: cpu%d->exclusive_ongoing = true; cpu_mutex_unlock(cpu%d)", o, o)
		}
		// CPU_FOREACH: the next CPU in the list (see nextCPU).
		if th.iter = r.nextCPU(o + 1); int(th.iter) == r.m.ncpus {
			th.iter = r.nextCPU(0)
			th.pc = pcCSWaitLock
		} else {
			th.pc = pcCSMarkLock
		}
	case pcCSWaitLock:
		if !r.lock(&s.cpuLock[o], r.cpuLockName(o)) {
			return
		}
		if r.labelling() {
			r.labelf("start_exclusive: cpu_mutex_lock(cpu%d) to wait for it", o)
		}
		th.pc = pcCSWait
	case pcCSWait:
		if s.exclusiveWaiter[o] {
			r.wait(&s.cpuCond[o], r.condName(o), &s.cpuLock[o], r.cpuLockName(o))
			if r.labelling() {
				r.labelf("start_exclusive: while (cpu%d->exclusive_waiter) qemu_cond_wait(cpu%d->cond)", o, o)
			}
			th.pc = pcCSWaitWoken
			return
		}
		r.unlock(&s.cpuLock[o], r.cpuLockName(o))
		if th.iter = r.nextCPU(o + 1); int(th.iter) < r.m.ncpus {
			if r.labelling() {
				r.labelf("start_exclusive: !cpu%d->exclusive_waiter: cpu_mutex_unlock(cpu%d)", o, o)
			}
			th.pc = pcCSWaitLock
			return
		}
		if r.labelling() {
			r.labelf("start_exclusive: !cpu%d->exclusive_waiter: cpu_mutex_unlock(cpu%d); the exclusive section starts", o, o)
		}
		r.sectionStart()
		r.ret()
	case pcCSWaitWoken:
		if !r.wokenRelock(&s.cpuCond[o], r.condName(o), &s.cpuLock[o], r.cpuLockName(o), "start_exclusive") {
			return
		}
		if r.labelling() {
			r.labelf("start_exclusive: woken from cpu%d->cond, re-acquires cpu%d->lock", o, o)
		}
		th.pc = pcCSWait

	// end_exclusive
	case pcCELock:
		if !r.lock(&s.cpuLock[o], r.cpuLockName(o)) {
			return
		}
		if o == 0 {
			r.sectionEnd()
		}
		if r.labelling() {
			r.labelf("end_exclusive: cpu_mutex_lock(cpu%d)", o)
		}
		th.pc = pcCEWake
	case pcCEWake:
		if s.exclusiveWaiter[o] {
			r.x.Fail(PropAssertNoWaiter, "%s: end_exclusive finds cpu%d->exclusive_waiter set", r.name(r.t), o)
		} else if !s.exclusiveOngoing[o] {
			r.x.Fail(PropAssertOngoing, "%s: end_exclusive finds cpu%d->exclusive_ongoing clear", r.name(r.t), o)
		}
		s.exclusiveOngoing[o] = false
		if w := r.wakeCPU(o); r.labelling() {
			r.label("end_exclusive: exclusive_ongoing = false; " + w)
		}
		th.pc = pcCEUnlock
	case pcCEUnlock:
		r.unlock(&s.cpuLock[o], r.cpuLockName(o))
		if r.labelling() {
			r.labelf("end_exclusive: cpu_mutex_unlock(cpu%d)", o)
		}
		if th.iter = r.nextCPU(o + 1); int(th.iter) == r.m.ncpus {
			th.pc = pcCEListLock
		} else {
			th.pc = pcCELock
		}
	case pcCEListLock:
		if !r.lock(L, Ln) {
			return
		}
		r.label("end_exclusive: qemu_mutex_lock(qemu_cpu_list_lock)")
		th.pc = pcCEListWake
	case pcCEListWake:
		s.workOngoing = false
		if ws := r.broadcast(&s.resumeCond, "exclusive_resume"); r.labelling() {
			r.label("end_exclusive: exclusive_work_ongoing = false; qemu_cond_broadcast(exclusive_resume) " + r.wakesAll(ws))
		}
		th.pc = pcCEListUnlock
	case pcCEListUnlock:
		r.unlock(L, Ln)
		r.label("end_exclusive: qemu_mutex_unlock(qemu_cpu_list_lock)")
		r.ret()

	// cpu_exec_start / cpu_exec_end / cpu_exec_exclusive_locked
	case pcCXSLock:
		if !r.lock(&s.cpuLock[c], r.cpuLockName(c)) {
			return
		}
		if r.labelling() {
			r.labelf("cpu_exec_start: cpu_mutex_lock(cpu%d)", c)
		}
		r.call(pcR1, pcCXSRun)
	case pcCXSRun:
		s.running[c] = true
		r.unlock(&s.cpuLock[c], r.cpuLockName(c))
		if r.labelling() {
			r.labelf("cpu_exec_start: running = true; cpu_mutex_unlock(cpu%d); cpu%d enters cpu_exec", c, c)
		}
		r.enterExec(c)
		r.ret()
	case pcCXELock:
		if !r.lock(&s.cpuLock[c], r.cpuLockName(c)) {
			return
		}
		r.leaveExec(c)
		s.running[c] = false
		if r.labelling() {
			r.labelf("cpu_exec_end: cpu_mutex_lock(cpu%d); running = false", c)
		}
		r.call(pcR1, pcCXEUnlock)
	case pcCXEUnlock:
		r.unlock(&s.cpuLock[c], r.cpuLockName(c))
		if r.labelling() {
			r.labelf("cpu_exec_end: cpu_mutex_unlock(cpu%d)", c)
		}
		r.ret()
	case pcR1Signal:
		s.exclusiveWaiter[c] = false
		if w := r.wakeCPU(c); r.labelling() {
			r.label("cpu_exec_exclusive_locked: exclusive_waiter = false; " + w)
		}
		th.pc = pcR2
	case pcR2Wait:
		r.wait(&s.cpuCond[c], r.condName(c), &s.cpuLock[c], r.cpuLockName(c))
		if r.labelling() {
			r.labelf("cpu_exec_exclusive_locked: while (cpu%d->exclusive_ongoing) qemu_cond_wait(cpu%d->cond)", c, c)
		}
		th.pc = pcR2Woken
	case pcR2Woken:
		if !r.wokenRelock(&s.cpuCond[c], r.condName(c), &s.cpuLock[c], r.cpuLockName(c), "cpu_exec_exclusive_locked") {
			return
		}
		if r.labelling() {
			r.labelf("cpu_exec_exclusive_locked: woken from cpu%d->cond, re-acquires cpu%d->lock", c, c)
		}
		th.pc = pcR2
	}
}

// nextCPU is CPU_FOREACH's next CPU from index from on: the first one in
// the list, or ncpus at the end. Seed 001's start_exclusive and
// end_exclusive walk the RCU list without qemu_cpu_list_lock; a CPU is
// only ever inserted at the tail or removed (the hot-plugged one, after
// the vCPUs), so a walk sees the CPU if it is in the list when the walk
// moves past the CPU before it. That read of the next pointer shares the
// step that leaves the previous CPU (its cpu_mutex_unlock): it commutes
// with every other action but the insertion and the removal, which take
// no lock the walker holds, so the reads it could see later it can also
// see at that step.
func (r *run) nextCPU(from int) uint8 {
	for from < r.m.ncpus && !r.s.inList[from] {
		from++
	}
	return uint8(from)
}

// cpuLockDecide: cpu_exec_exclusive_locked's tests of fields under
// cpu->lock, which the thread holds.
func (r *run) cpuLockDecide() {
	th := r.th
	c := int(th.arg)
	switch th.pc {
	case pcR1:
		if r.s.exclusiveWaiter[c] {
			th.pc = pcR1Signal
		} else {
			th.pc = pcR2
		}
	case pcR2:
		if r.s.exclusiveOngoing[c] {
			th.pc = pcR2Wait
		} else {
			r.ret()
		}
	}
}
