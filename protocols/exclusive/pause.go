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

// nextListed is CPU_FOREACH's next CPU from index c on, or ncpus.
func (r *run) nextListed(c int) uint8 {
	for c < r.m.ncpus && !r.s.inList[c] {
		c++
	}
	return uint8(c)
}

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
		if th.iter = r.nextListed(c + 1); int(th.iter) == r.m.ncpus {
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
		th.iter = r.nextListed(0)
		th.pc = pcPSKick
	case pcPSKick:
		if k := r.kick(c); r.labelling() {
			r.label("pause_all_vcpus: " + k)
		}
		if th.iter = r.nextListed(c + 1); int(th.iter) == r.m.ncpus {
			th.pc = pcPSCheck
		}
	case pcPSRelock:
		if !r.lock(&s.bql, "bql") {
			return
		}
		r.label("pause_all_vcpus: bql_lock(); vm_stop returns")
		th.iter = r.nextListed(0)
		th.pc = pcPSResume
	case pcPSResume:
		first := s.paused
		s.paused = false
		pre := ""
		if first && r.labelling() {
			pre = "vm_start: runstate_set(RUN_STATE_RUNNING); resume_all_vcpus: "
		}
		r.resume(c, pre)
		if th.iter = r.nextListed(c + 1); int(th.iter) == r.m.ncpus {
			th.pc = pcIONext
		}
	}
}
