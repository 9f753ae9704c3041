package exclusive

// Upstream's exclusive sections (A.1 (c), cpu-common.c @18530e7c):
// pending_cpus and cpu->running are read without a lock and go through the
// memory layer; has_waiter is only touched under qemu_cpu_list_lock.
//
// Folding rule used below: pending_cpus is written only by a holder of
// qemu_cpu_list_lock, so a holder of that lock reading it cannot race and
// the read shares the step of the action that depends on it. The same
// holds for has_waiter. The lock-free reads of cpu_exec_start/end's fast
// paths and of start_exclusive's scan are steps of their own.
//
// Memory model: sequentially consistent by default; under x86-TSO
// (memory=1, and always in no-smp-mb) the atomic_set()s are plain stores
// that enter the thread's store buffer, the atomic_read()s may pass them,
// and the smp_mb()s (x.Fence(s.mem)) drain the buffer, as do the mutex
// operations (run.go). The two Dekker pairs of A.1 are thus
// exercised: cpu_exec_start's store of cpu->running against
// start_exclusive's load of it, start_exclusive's store of pending_cpus
// against cpu_exec_start's load of it (and the same with cpu_exec_end).
// no-smp-mb (V-A1) drops the barrier of cpu_exec_start and of
// start_exclusive; cpu_exec_end keeps its own.

func (r *run) pending() uint64 { return r.x.Load(r.s.mem, r.m.aPending) }

func (r *run) setPending(v uint64) { r.x.Store(r.s.mem, r.m.aPending, v) }

func (r *run) upstreamStep() {
	s, th := r.s, r.th
	L := &s.listLock
	const Ln = "qemu_cpu_list_lock"
	c := int(th.arg)
	switch th.pc {
	// start_exclusive
	case pcSXNested:
		th.depth++
		if r.labelling() {
			r.labelf("start_exclusive: nested: exclusive_context_count++ = %d", th.depth)
		}
		r.ret()
	case pcSXLock:
		if !r.lock(L, Ln) {
			return
		}
		r.label("start_exclusive: qemu_mutex_lock(qemu_cpu_list_lock)")
		th.pc = pcSXIdle
	case pcSXIdle:
		if p := r.pending(); p != 0 {
			r.wait(&s.resumeCond, "exclusive_resume", L, Ln)
			if r.labelling() {
				r.labelf("start_exclusive: exclusive_idle: pending_cpus = %d: qemu_cond_wait(exclusive_resume)", p)
			}
			th.pc = pcSXIdleWoken
			return
		}
		r.setPending(1)
		if r.m.v.noSmpMb || !r.m.mb(dropStartExclusive) {
			r.label("start_exclusive: atomic_set(pending_cpus, 1) (no smp_mb())")
		} else {
			r.x.Fence(s.mem)
			r.label("start_exclusive: atomic_set(pending_cpus, 1); smp_mb()")
		}
		th.iter, th.runningCPUs = 0, 0
		r.nextScan()
	case pcSXIdleWoken:
		if !r.wokenRelock(&s.resumeCond, "exclusive_resume", L, Ln, "start_exclusive: exclusive_idle") {
			return
		}
		r.label("start_exclusive: exclusive_idle: woken, re-acquires qemu_cpu_list_lock")
		th.pc = pcSXIdle
	case pcSXScan:
		o := int(th.iter)
		if r.x.Load(s.mem, r.m.aRunning[o]) != 0 {
			s.hasWaiter[o] = true
			th.runningCPUs++
			if r.m.v.noKick {
				// V-A6: counted, but nothing makes the vCPU leave cpu_exec.
				if r.labelling() {
					r.labelf("start_exclusive: atomic_read(cpu%d->running) = true: has_waiter = true; running_cpus++ (no qemu_cpu_kick)", o)
				}
				th.iter++
				r.nextScan()
				return
			}
			if r.labelling() {
				r.labelf("start_exclusive: atomic_read(cpu%d->running) = true: has_waiter = true; running_cpus++", o)
			}
			th.pc = pcSXKick
			return
		}
		if r.labelling() {
			r.labelf("start_exclusive: atomic_read(cpu%d->running) = false", o)
		}
		th.iter++
		r.nextScan()
	case pcSXKick:
		if k := r.kick(int(th.iter)); r.labelling() {
			r.label("start_exclusive: " + k)
		}
		th.iter++
		r.nextScan()
	case pcSXSet:
		r.setPending(uint64(th.runningCPUs) + 1)
		if r.labelling() {
			r.labelf("start_exclusive: atomic_set(pending_cpus, running_cpus + 1 = %d)", th.runningCPUs+1)
		}
		th.pc = pcSXWait
	case pcSXWait:
		if p := r.pending(); p > 1 {
			r.wait(&s.exclusiveCond, "exclusive_cond", L, Ln)
			if r.labelling() {
				if r.m.v.ifNotWhile {
					r.labelf("start_exclusive: if (pending_cpus = %d > 1) qemu_cond_wait(exclusive_cond)", p)
				} else {
					r.labelf("start_exclusive: while (pending_cpus = %d > 1) qemu_cond_wait(exclusive_cond)", p)
				}
			}
			th.pc = pcSXWoken
			return
		}
		r.unlock(L, Ln)
		r.label("start_exclusive: pending_cpus = 1: qemu_mutex_unlock(qemu_cpu_list_lock); the exclusive section starts")
		r.enterSection()
	case pcSXWoken:
		// if-not-while (H1) is defined with spurious wake-ups, which its
		// missing re-check needs.
		if !r.wokenRelock(&s.exclusiveCond, "exclusive_cond", L, Ln, "start_exclusive") {
			return
		}
		r.label("start_exclusive: woken from exclusive_cond, re-acquires qemu_cpu_list_lock")
		if r.m.v.ifNotWhile {
			th.pc = pcSXUnlock // H1: no re-check after the wait
		} else {
			th.pc = pcSXWait
		}
	case pcSXUnlock:
		r.unlock(L, Ln)
		r.label("start_exclusive: qemu_mutex_unlock(qemu_cpu_list_lock) without re-checking pending_cpus; the exclusive section starts")
		r.enterSection()

	// end_exclusive
	case pcEXNested:
		th.depth--
		if r.labelling() {
			r.labelf("end_exclusive: nested: exclusive_context_count-- = %d", th.depth)
		}
		r.ret()
	case pcEXLock:
		if !r.lock(L, Ln) {
			return
		}
		th.depth = 0 // thread-local
		r.sectionEnd()
		r.label("end_exclusive: qemu_mutex_lock(qemu_cpu_list_lock)")
		th.pc = pcEXClear
	case pcEXClear:
		r.setPending(0)
		r.label("end_exclusive: atomic_set(pending_cpus, 0)")
		th.pc = pcEXWake
	case pcEXWake:
		if r.m.v.endSignalsResume {
			if w := r.signal(&s.resumeCond, "exclusive_resume"); r.labelling() {
				r.label("end_exclusive: qemu_cond_signal(exclusive_resume) " + r.wakes(w))
			}
		} else if ws := r.broadcast(&s.resumeCond, "exclusive_resume"); r.labelling() {
			r.label("end_exclusive: qemu_cond_broadcast(exclusive_resume) " + r.wakesAll(ws))
		}
		th.pc = pcEXUnlock
	case pcEXUnlock:
		r.unlock(L, Ln)
		r.label("end_exclusive: qemu_mutex_unlock(qemu_cpu_list_lock)")
		r.ret()

	// cpu_exec_start
	case pcXSSet:
		r.x.Store(s.mem, r.m.aRunning[c], 1)
		if r.labelling() {
			r.labelf("cpu_exec_start: atomic_set(cpu%d->running, true)", c)
		}
		th.pc = pcXSRead
	case pcXSRead:
		mb := "smp_mb(); "
		if r.m.v.noSmpMb || !r.m.mb(dropExecStart) {
			mb = "(no smp_mb()) "
		} else {
			r.x.Fence(s.mem)
		}
		p := r.pending()
		if p == 0 {
			if r.labelling() {
				r.labelf("cpu_exec_start: %satomic_read(pending_cpus) = 0: fast path, cpu%d enters cpu_exec", mb, c)
			}
			r.enterExec(c)
			r.ret()
			return
		}
		if r.labelling() {
			r.labelf("cpu_exec_start: %satomic_read(pending_cpus) = %d", mb, p)
		}
		th.pc = pcXSLock
	case pcXSLock:
		if !r.lock(L, Ln) {
			return
		}
		r.label("cpu_exec_start: qemu_mutex_lock(qemu_cpu_list_lock)")
		th.pc = pcXSCheck
	case pcXSCheck:
		if !s.hasWaiter[c] {
			r.x.Store(s.mem, r.m.aRunning[c], 0)
			if r.labelling() {
				r.labelf("cpu_exec_start: !cpu%d->has_waiter: atomic_set(cpu%d->running, false)", c, c)
			}
			th.pc = pcXSIdle
			return
		}
		r.unlock(L, Ln)
		if r.labelling() {
			r.labelf("cpu_exec_start: cpu%d->has_waiter (counted): qemu_mutex_unlock(qemu_cpu_list_lock); cpu%d enters cpu_exec", c, c)
		}
		r.enterExec(c)
		r.ret()
	case pcXSIdle:
		if p := r.pending(); p != 0 {
			r.wait(&s.resumeCond, "exclusive_resume", L, Ln)
			if r.labelling() {
				r.labelf("cpu_exec_start: exclusive_idle: pending_cpus = %d: qemu_cond_wait(exclusive_resume)", p)
			}
			th.pc = pcXSIdleWoken
			return
		}
		r.x.Store(s.mem, r.m.aRunning[c], 1)
		if r.labelling() {
			r.labelf("cpu_exec_start: exclusive_idle: pending_cpus = 0; atomic_set(cpu%d->running, true)", c)
		}
		th.pc = pcXSUnlock
	case pcXSIdleWoken:
		if !r.wokenRelock(&s.resumeCond, "exclusive_resume", L, Ln, "cpu_exec_start: exclusive_idle") {
			return
		}
		r.label("cpu_exec_start: exclusive_idle: woken, re-acquires qemu_cpu_list_lock")
		th.pc = pcXSIdle
	case pcXSUnlock:
		r.unlock(L, Ln)
		if r.labelling() {
			r.labelf("cpu_exec_start: qemu_mutex_unlock(qemu_cpu_list_lock); cpu%d enters cpu_exec", c)
		}
		r.enterExec(c)
		r.ret()

	// cpu_exec_end
	case pcXESet:
		r.leaveExec(c)
		r.x.Store(s.mem, r.m.aRunning[c], 0)
		if r.labelling() {
			r.labelf("cpu_exec_end: atomic_set(cpu%d->running, false)", c)
		}
		th.pc = pcXERead
	case pcXERead:
		mb := "smp_mb(); "
		if r.m.mb(dropExecEnd) {
			r.x.Fence(s.mem)
		} else {
			mb = "(no smp_mb()) "
		}
		p := r.pending()
		if p == 0 {
			if r.labelling() {
				r.label("cpu_exec_end: " + mb + "atomic_read(pending_cpus) = 0: fast path")
			}
			r.ret()
			return
		}
		if r.labelling() {
			r.labelf("cpu_exec_end: %satomic_read(pending_cpus) = %d", mb, p)
		}
		th.pc = pcXELock
	case pcXELock:
		if !r.lock(L, Ln) {
			return
		}
		r.label("cpu_exec_end: qemu_mutex_lock(qemu_cpu_list_lock)")
		th.pc = pcXECheck
	case pcXECheck:
		r.execEndCheck(c)
	case pcXESignal:
		if w := r.signal(&s.exclusiveCond, "exclusive_cond"); r.labelling() {
			r.label("cpu_exec_end: qemu_cond_signal(exclusive_cond) " + r.wakes(w))
		}
		th.pc = pcXEUnlock
	case pcXEUnlock:
		r.unlock(L, Ln)
		r.label("cpu_exec_end: qemu_mutex_unlock(qemu_cpu_list_lock)")
		r.ret()
	}
}

// execEndCheck is cpu_exec_end's slow path under qemu_cpu_list_lock: the
// real code checks and clears has_waiter; V-A4 grafts the pre-2016 rule
// (decrement whenever pending_cpus > 1) onto it instead.
func (r *run) execEndCheck(c int) {
	s, th := r.s, r.th
	var dec bool
	if r.m.v.endDecrementsAlways {
		dec = r.pending() > 1
	} else if dec = s.hasWaiter[c]; dec {
		s.hasWaiter[c] = false
	}
	if !dec {
		r.unlock(&s.listLock, "qemu_cpu_list_lock")
		if r.m.v.endDecrementsAlways {
			r.label("cpu_exec_end: pending_cpus <= 1: qemu_mutex_unlock(qemu_cpu_list_lock)")
		} else if r.labelling() {
			r.labelf("cpu_exec_end: !cpu%d->has_waiter: qemu_mutex_unlock(qemu_cpu_list_lock)", c)
		}
		r.ret()
		return
	}
	p := r.pending() - 1
	r.setPending(p)
	if r.labelling() {
		if r.m.v.endDecrementsAlways {
			r.labelf("cpu_exec_end: pending_cpus > 1: atomic_set(pending_cpus, %d)", p)
		} else {
			r.labelf("cpu_exec_end: cpu%d->has_waiter: has_waiter = false; atomic_set(pending_cpus, %d)", c, p)
		}
	}
	if p == 1 {
		th.pc = pcXESignal
	} else {
		th.pc = pcXEUnlock
	}
}

// nextScan moves start_exclusive's CPU_FOREACH to the next listed CPU, or
// on to setting pending_cpus. The list is read under qemu_cpu_list_lock.
func (r *run) nextScan() {
	th := r.th
	for int(th.iter) < r.m.ncpus && !r.s.inList[th.iter] {
		th.iter++
	}
	if int(th.iter) < r.m.ncpus {
		th.pc = pcSXScan
	} else {
		th.pc = pcSXSet
	}
}

// enterSection: start_exclusive returns to its caller.
func (r *run) enterSection() {
	r.th.depth = 1
	r.sectionStart()
	r.ret()
}

func (r *run) upstreamDecide() {
	th := r.th
	switch th.pc {
	case pcSXEntry:
		if r.m.hasCounter() && th.depth > 0 {
			th.pc = pcSXNested
		} else {
			th.pc = pcSXLock
		}
	case pcEXEntry:
		if r.m.hasCounter() && th.depth > 1 {
			th.pc = pcEXNested
		} else {
			th.pc = pcEXLock
		}
	}
}
