package exclusive

// vm_stop and vm_start by the I/O thread (pause=1), upstream's
// (system/cpus.c @05927e9d), with the BQL held:
//
//	do_vm_stop: runstate_set(RUN_STATE_PAUSED); pause_all_vcpus():
//	    CPU_FOREACH(cpu) cpu_pause(cpu);      // cpu->stop = true; qemu_cpu_kick(cpu)
//	    while (!all_vcpus_paused()) {         // some cpu->stopped is false
//	        qemu_cond_wait(&qemu_pause_cond, &bql);
//	        CPU_FOREACH(cpu) qemu_cpu_kick(cpu);
//	    }
//	    bql_unlock(); replay_mutex_lock(); bql_lock();
//	vm_start: runstate_set(RUN_STATE_RUNNING); resume_all_vcpus():
//	    CPU_FOREACH(cpu) cpu_resume(cpu);     // stop = stopped = false; qemu_cpu_kick(cpu)
//
// A vCPU thread sees the paused run state and cpu->stop under the BQL: it
// leaves cpu_exec when kicked, finds cpu_can_run false, stops in
// qemu_wait_io_event_common (cpu->stopped = true; qemu_cond_broadcast
// (&qemu_pause_cond)) and sleeps on halt_cond while stopped, unless work
// is queued on it (cpu_thread_is_idle), which it then runs: a safe item
// queued before the stop still runs its exclusive section while the VM is
// paused. The stores of cpu->stop and of the run state are plain
// accesses under the BQL and share the step of the kick beside them. The
// replay mutex (record/replay only) is not modelled. A hot-plugged CPU
// without its own thread (hotplug=1, hotplug-thread=0) counts as stopped:
// qemu_init_vcpu creates it so.

// stopped is cpu->stopped of CPU c for all_vcpus_paused.
func (r *run) stopped(c int) bool {
	if c == r.m.hotCPU() && !r.m.hotThread {
		return true
	}
	return r.s.ctl[c]&cStopped != 0
}

// running is the first listed CPU that has not stopped, or -1.
func (r *run) running() int {
	for c := 0; c < r.m.ncpus; c++ {
		if r.s.inList[c] && !r.stopped(c) {
			return c
		}
	}
	return -1
}

func (r *run) pauseStep() {
	s, th := r.s, r.th
	c := int(th.iter)
	switch th.pc {
	case pcPSPause:
		first := !s.paused
		s.paused = true
		s.ctl[c] |= cStop
		if k := r.kick(c); r.labelling() {
			pre := ""
			if first {
				pre = "vm_stop: runstate_set(RUN_STATE_PAUSED); pause_all_vcpus: "
			}
			r.labelf("%scpu_pause(cpu%d): cpu->stop = true; %s", pre, c, k)
		}
		if th.iter = r.nextCPU(c + 1); int(th.iter) == r.m.ncpus {
			th.pc = pcPSCheck
		}
	case pcPSCheck:
		if o := r.running(); o >= 0 {
			r.wait(&s.qemuPauseCond, "qemu_pause_cond", &s.bql, "bql")
			if r.labelling() {
				r.labelf("pause_all_vcpus: !all_vcpus_paused() (cpu%d->stopped = false): qemu_cond_wait(&qemu_pause_cond, &bql)", o)
			}
			th.pc = pcPSWoken
			return
		}
		r.unlock(&s.bql, "bql")
		r.label("pause_all_vcpus: all_vcpus_paused(); bql_unlock(); replay_mutex_lock()")
		th.pc = pcPSRelock
	case pcPSWoken:
		if !r.wokenRelock(&s.qemuPauseCond, "qemu_pause_cond", &s.bql, "bql", "pause_all_vcpus") {
			return
		}
		r.label("pause_all_vcpus: woken from qemu_pause_cond, re-acquires bql")
		th.iter = r.nextCPU(0)
		th.pc = pcPSKick
	case pcPSKick:
		if k := r.kick(c); r.labelling() {
			r.label("pause_all_vcpus: " + k)
		}
		if th.iter = r.nextCPU(c + 1); int(th.iter) == r.m.ncpus {
			th.pc = pcPSCheck
		}
	case pcPSRelock:
		if !r.lock(&s.bql, "bql") {
			return
		}
		r.label("pause_all_vcpus: bql_lock(); vm_stop returns")
		r.checkStopped()
		th.iter = r.nextCPU(0)
		th.pc = pcPSResume
	case pcPSResume:
		first := s.paused
		s.paused = false
		pre := ""
		if first && r.labelling() {
			pre = "vm_start: runstate_set(RUN_STATE_RUNNING); resume_all_vcpus: "
		}
		r.resume(c, pre)
		if th.iter = r.nextCPU(c + 1); int(th.iter) == r.m.ncpus {
			th.pc = pcIONext
		}
	}
}

// checkStopped is PropVMStopped, in the step where pause_all_vcpus
// returns.
func (r *run) checkStopped() {
	if o := r.running(); o >= 0 {
		r.x.Fail(PropVMStopped, "%s: pause_all_vcpus returns while cpu%d has not stopped (cpu->stopped = false)", r.name(r.t), o)
	}
}

// vmStopped: vm_stop has returned and vm_start has not resumed a CPU
// yet, the window in which vm_stop's callers (migration's device and CPU
// state saving, savevm, the gdbstub) rely on no vCPU running.
func (r *run) vmStopped() bool {
	switch io := &r.s.th[r.m.io]; io.pc {
	case pcCPRunstate, pcCPStart:
		return true
	case pcPSResume:
		return r.s.paused
	}
	return false
}

// checkGuestStopped is PropGuestWhileStopped, in the step of a guest TB.
func (r *run) checkGuestStopped() {
	if r.vmStopped() {
		r.x.Fail(PropGuestWhileStopped, "%s: the guest runs a TB after vm_stop returned and before vm_start", r.name(r.t))
	}
}

// Seed 001's branch (pause=1 with the cpu-lock variants): vm_stop and
// vm_start as the per-CPU-lock series has them (cota/qemu cpus.c
// @031cfd04, where qemu_pause_cond is gone and cpu->stopped is under
// cpu->lock):
//
//	do_vm_stop: cpu_disable_ticks(); pause_all_vcpus(); runstate_set(state)
//	pause_all_vcpus:
//	    qemu_mutex_unlock_iothread();
//	    CPU_FOREACH(cpu) { cpu_mutex_lock(cpu); cpu->stop = true; qemu_cpu_kick(cpu); cpu_mutex_unlock(cpu); }
//	    CPU_FOREACH(cpu) {
//	        CPU_FOREACH(cs) qemu_cpu_kick(cs);       /* "is this paranoid?" */
//	        cpu_mutex_lock(cpu);
//	        if (!cpu->stopped)
//	            qemu_cond_wait(&cpu->cond, &cpu->lock);
//	        cpu_mutex_unlock(cpu);
//	    }
//	    qemu_mutex_lock_iothread();
//	vm_start: vm_prepare_start: runstate_set(RUN_STATE_RUNNING); resume_all_vcpus:
//	    CPU_FOREACH(cpu) { cpu_mutex_lock(cpu); cpu->stop = cpu->stopped = false; qemu_cpu_kick(cpu); cpu_mutex_unlock(cpu); }
//
// The wait is an if, not a while, on cpu->cond: the condition variable
// that seed 001 also has exclusive waiters and run_on_cpu callers sleep
// on, and that end_exclusive, process_queued_cpu_work and the vCPU's stop
// path wake. The vCPU's side (qemu_wait_io_event_common: cpu->stop:
// cpu->stopped = true; qemu_cond_broadcast(&cpu->cond)) is hotplug.go's
// pcVStop. The store of cpu->stop is under cpu->lock, which every reader
// holds, and shares the step of the kick beside it. The run state is
// written under the BQL and read by the vCPUs under cpu->lock
// (cpu_is_stopped): each runstate_set is a step. The replay mutex and the
// clocks are not modelled. Robert Foley's v9 of the series (2020, patch
// 71/74) re-reads every cpu->stopped after retaking the BQL and starts
// again if one is false; the variant cpu-lock-pause-recheck has that
// pause_all_vcpus (its first loop with the BQL held; in its wait loop,
// for a CPU not yet stopped: cpu->stop = true; qemu_cpu_kick; one
// qemu_cond_wait; no kicks of every CPU).
func (r *run) seedPauseStep() {
	s, th := r.s, r.th
	c := int(th.iter)
	switch th.pc {
	case pcCPUnlockBQL:
		r.unlock(&s.bql, "bql")
		th.iter = r.nextCPU(0)
		if r.m.v.pauseRecheck {
			// drop_locks_and_stop_all_vcpus: (the replay mutex is not
			// modelled), then the wait loop.
			r.label("pause_all_vcpus: drop_locks_and_stop_all_vcpus: qemu_mutex_unlock_iothread()")
			th.pc = pcCPWaitLock
			return
		}
		r.label("do_vm_stop: pause_all_vcpus: qemu_mutex_unlock_iothread()")
		th.pc = pcCPStopLock
	case pcCPStopLock:
		if !r.lock(&s.cpuLock[c], r.cpuLockName(c)) {
			return
		}
		if r.labelling() {
			r.labelf("pause_all_vcpus: cpu_mutex_lock(cpu%d)", c)
		}
		th.pc = pcCPStop
	case pcCPStop:
		s.ctl[c] |= cStop
		if k := r.kick(c); r.labelling() {
			r.labelf("pause_all_vcpus: cpu%d->stop = true; %s", c, k)
		}
		th.pc = pcCPStopUnlock
	case pcCPStopUnlock:
		r.unlock(&s.cpuLock[c], r.cpuLockName(c))
		if r.labelling() {
			r.labelf("pause_all_vcpus: cpu_mutex_unlock(cpu%d)", c)
		}
		if th.iter = r.nextCPU(c + 1); int(th.iter) < r.m.ncpus {
			th.pc = pcCPStopLock
			return
		}
		if r.m.v.pauseRecheck {
			th.pc = pcCPUnlockBQL
			return
		}
		th.iter = r.nextCPU(0)
		th.runningCPUs = r.nextCPU(0)
		th.pc = pcCPKick
	case pcCPKick:
		k := int(th.runningCPUs)
		if ks := r.kick(k); r.labelling() {
			r.labelf("pause_all_vcpus: waiting for cpu%d: CPU_FOREACH(cs) %s", c, ks)
		}
		if th.runningCPUs = r.nextCPU(k + 1); int(th.runningCPUs) == r.m.ncpus {
			th.pc = pcCPWaitLock
		}
	case pcCPWaitLock:
		if !r.lock(&s.cpuLock[c], r.cpuLockName(c)) {
			return
		}
		if r.labelling() {
			r.labelf("pause_all_vcpus: cpu_mutex_lock(cpu%d)", c)
		}
		th.pc = pcCPWait
	case pcCPWait:
		// cpu->stopped is read under cpu->lock, held since the last step.
		if !r.stopped(c) && r.m.v.pauseRecheck {
			// v9: cpu->stop = true; qemu_cpu_kick(cpu); then the wait.
			s.ctl[c] |= cStop
			if k := r.kick(c); r.labelling() {
				r.labelf("pause_all_vcpus: !cpu%d->stopped: cpu->stop = true; %s", c, k)
			}
			th.pc = pcCPV9Wait
			return
		}
		if !r.stopped(c) {
			r.wait(&s.cpuCond[c], r.condName(c), &s.cpuLock[c], r.cpuLockName(c))
			if r.labelling() {
				r.labelf("pause_all_vcpus: if (!cpu%d->stopped) qemu_cond_wait(%s, %s)", c, r.condName(c), r.cpuLockName(c))
			}
			th.pc = pcCPWoken
			return
		}
		r.seedPauseNext(fmtIf(r, "pause_all_vcpus: cpu%d->stopped: ", c))
	case pcCPV9Wait:
		r.wait(&s.cpuCond[c], r.condName(c), &s.cpuLock[c], r.cpuLockName(c))
		if r.labelling() {
			r.labelf("pause_all_vcpus: qemu_cond_wait(%s, %s)", r.condName(c), r.cpuLockName(c))
		}
		th.pc = pcCPWoken
	case pcCPWoken:
		if !r.wokenRelock(&s.cpuCond[c], r.condName(c), &s.cpuLock[c], r.cpuLockName(c), "pause_all_vcpus") {
			return
		}
		if r.labelling() {
			r.labelf("pause_all_vcpus: woken from %s, re-acquires %s", r.condName(c), r.cpuLockName(c))
		}
		th.pc = pcCPUnlock
	case pcCPUnlock:
		r.seedPauseNext("pause_all_vcpus: ")
	case pcCPRelockBQL:
		if !r.lock(&s.bql, "bql") {
			return
		}
		if r.m.v.pauseRecheck {
			r.label("pause_all_vcpus: qemu_mutex_lock_iothread()")
			th.iter = r.nextCPU(0)
			th.pc = pcCPCheckLock
			return
		}
		r.label("pause_all_vcpus: qemu_mutex_lock_iothread(); pause_all_vcpus returns")
		r.checkStopped()
		th.pc = pcCPRunstate
	case pcCPCheckLock:
		if !r.lock(&s.cpuLock[c], r.cpuLockName(c)) {
			return
		}
		if r.labelling() {
			r.labelf("pause_all_vcpus: a CPU might have been hot-plugged: cpu_mutex_lock(cpu%d)", c)
		}
		th.pc = pcCPCheckUnlock
	case pcCPCheckUnlock:
		// cpu->stopped is read under cpu->lock, held since the last step.
		stopped := r.stopped(c)
		r.unlock(&s.cpuLock[c], r.cpuLockName(c))
		switch th.iter = r.nextCPU(c + 1); {
		case !stopped:
			if r.labelling() {
				r.labelf("pause_all_vcpus: stopped = cpu%d->stopped = false; cpu_mutex_unlock(cpu%d); goto drop_locks_and_stop_all_vcpus", c, c)
			}
			th.pc = pcCPUnlockBQL
		case int(th.iter) < r.m.ncpus:
			if r.labelling() {
				r.labelf("pause_all_vcpus: stopped = cpu%d->stopped = true; cpu_mutex_unlock(cpu%d)", c, c)
			}
			th.pc = pcCPCheckLock
		default:
			if r.labelling() {
				r.labelf("pause_all_vcpus: stopped = cpu%d->stopped = true; cpu_mutex_unlock(cpu%d); pause_all_vcpus returns", c, c)
			}
			r.checkStopped()
			th.pc = pcCPRunstate
		}
	case pcCPRunstate:
		s.paused = true
		r.label("do_vm_stop: runstate_set(RUN_STATE_PAUSED); vm_stop returns")
		th.pc = pcCPStart
	case pcCPStart:
		s.paused = false
		r.label("vm_start: vm_prepare_start: runstate_set(RUN_STATE_RUNNING)")
		th.iter = r.nextCPU(0)
		th.pc = pcCPResumeLock
	case pcCPResumeLock:
		if !r.lock(&s.cpuLock[c], r.cpuLockName(c)) {
			return
		}
		if r.labelling() {
			r.labelf("resume_all_vcpus: cpu_resume(cpu%d): cpu_mutex_lock(cpu%d)", c, c)
		}
		th.pc = pcCPResume
	case pcCPResume:
		r.resume(c, "")
		th.pc = pcCPResumeUnlock
	case pcCPResumeUnlock:
		r.unlock(&s.cpuLock[c], r.cpuLockName(c))
		if r.labelling() {
			r.labelf("cpu_resume(cpu%d): cpu_mutex_unlock(cpu%d)", c, c)
		}
		if th.iter = r.nextCPU(c + 1); int(th.iter) == r.m.ncpus {
			th.runningCPUs = 0
			th.pc = pcIONext
			return
		}
		th.pc = pcCPResumeLock
	}
}

// seedPauseNext: pause_all_vcpus's cpu_mutex_unlock(cpu) at the end of
// its wait for one CPU, then the next CPU's kicks, or the BQL.
func (r *run) seedPauseNext(prefix string) {
	th := r.th
	c := int(th.iter)
	r.unlock(&r.s.cpuLock[c], r.cpuLockName(c))
	if r.labelling() {
		r.labelf("%scpu_mutex_unlock(cpu%d)", prefix, c)
	}
	switch th.iter = r.nextCPU(c + 1); {
	case int(th.iter) == r.m.ncpus:
		th.pc = pcCPRelockBQL
	case r.m.v.pauseRecheck:
		th.pc = pcCPWaitLock
	default:
		th.runningCPUs = r.nextCPU(0)
		th.pc = pcCPKick
	}
}
