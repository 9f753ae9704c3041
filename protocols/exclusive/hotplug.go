package exclusive

import "fmt"

// The hot-plugged CPU's own vCPU thread (hotplug-thread=1) and the run state of
// the CPUs it needs (cpu->stop, cpu->stopped, cpu->unplug, cpu->created),
// which pause_all_vcpus (pause=1) uses too.
//
// Upstream (QEMU >= 4.2): device_add realizes the CPU in the main loop
// with the BQL: cpu_exec_realizefn's cpu_list_add, then qemu_init_vcpu
// (system/cpus.c @05927e9d): cpu->stopped = true, the thread created
// (mttcg_start_vcpu_thread), while (!cpu->created)
// qemu_cond_wait(&qemu_cpu_cond, &bql); then cpu_common_realizefn (hw/core/cpu-common.c
// @06b40d25): dev->hotplugged: cpu_resume(cpu): cpu->stop = false;
// cpu->stopped = false; qemu_cpu_kick(cpu). The thread
// (mttcg_cpu_thread_fn @017b2e73) takes the BQL, signals
// cpu_thread_signal_created, and enters the vCPU loop: cpu_can_run is
// false while the CPU is stopped, so it clears exit_request and sleeps
// in qemu_wait_io_event until cpu_resume's kick; then cpu_exec_start,
// which is where seed 001's exclusive_idle() in cpu_list_add matters: a
// CPU added while a section runs must not enter cpu_exec inside it.
// device_del: cpu_remove_sync: cpu->stop = cpu->unplug = true;
// qemu_cpu_kick; bql_unlock; qemu_thread_join; bql_lock; then
// cpu_exec_unrealizefn's cpu_list_remove. The thread, kicked out of
// cpu_exec, stops (qemu_wait_io_event_common: qemu_cpu_stop) and leaves
// its loop (!cpu->unplug || cpu_can_run is false): tcg_cpus_destroy
// (cpu_thread_signal_destroyed: created = false, qemu_cond_signal) and
// bql_unlock.
//
// Seed 001's base, the per-CPU-lock branch (cota/qemu cpus.c @031cfd04):
// qemu_tcg_init_vcpu drops the BQL and waits for cpu->created on
// cpu->cond with cpu->lock; qemu_tcg_cpu_thread_fn takes cpu->lock,
// sets created and qemu_cond_signal(&cpu->cond); cpu_resume takes
// cpu->lock around its stores and kick; cpu_remove_sync drops the BQL,
// takes cpu->lock, sets stop and unplug, kicks, and waits on cpu->cond
// while cpu->created; the thread, at the top of its loop, finds
// !cpu_can_run and cpu->unplug, destroys the vCPU, clears created,
// signals cpu->cond and drops cpu->lock. Its stop path in
// qemu_wait_io_event_common broadcasts cpu->cond (where upstream
// broadcasts qemu_pause_cond).
//
// The thread's own store cpu->exit_request = 1 ("process any pending
// work") is not modelled: the thread clears it (qatomic_set_mb) before
// reading it, and other threads only ever store 1 there.

// canRun is cpu_can_run(cpu c): !cpu->stop and !cpu_is_stopped (neither
// cpu->stopped nor a paused VM).
func (r *run) canRun(c int) bool {
	return r.s.ctl[c]&(cStop|cStopped) == 0 && !r.s.paused
}

// hotThreadStep: the steps of a vCPU thread that only hotplug-thread=1 and
// pause=1 reach.
func (r *run) hotThreadStep() {
	s, th, t := r.s, r.th, r.t
	up := !r.m.v.cpuLock
	mu, mname := r.threadLock()
	switch th.pc {
	case pcHVCreated:
		s.ctl[t] |= cCreated
		if up {
			if w := r.signal(&s.qemuCPUCond, "qemu_cpu_cond"); r.labelling() {
				r.labelf("cpu_thread_signal_created(cpu%d): cpu->created = true; qemu_cond_signal(&qemu_cpu_cond) %s", t, r.wakes(w))
			}
		} else if w := r.signal(&s.cpuCond[t], r.condName(t)); r.labelling() {
			r.labelf("qemu_tcg_cpu_thread_fn: cpu%d->created = true; qemu_cond_signal(cpu%d->cond) %s", t, t, r.wakes(w))
		}
		th.pc = pcVTop // do { if (cpu_can_run(cpu)) ...
	case pcVStop:
		// qemu_cpu_stop(cpu, false): cpu->stop = false; cpu->stopped =
		// true (under the thread's lock, folded into the broadcast).
		s.ctl[t] = s.ctl[t]&^cStop | cStopped
		if up {
			if ws := r.broadcast(&s.qemuPauseCond, "qemu_pause_cond"); r.labelling() {
				r.labelf("qemu_wait_io_event_common: cpu%d->stop: qemu_cpu_stop(): cpu->stopped = true; qemu_cond_broadcast(&qemu_pause_cond) %s", t, r.wakesAll(ws))
			}
		} else if ws := r.broadcast(&s.cpuCond[t], r.condName(t)); r.labelling() {
			r.labelf("qemu_wait_io_event_common: cpu%d->stop: cpu->stop = false; cpu->stopped = true; qemu_cond_broadcast(cpu%d->cond) %s", t, t, r.wakesAll(ws))
		}
		r.call(pcPEntry, pcVTop)
	case pcHVDestroy:
		s.ctl[t] &^= cCreated
		if up {
			if w := r.signal(&s.qemuCPUCond, "qemu_cpu_cond"); r.labelling() {
				r.labelf("mttcg_cpu_thread_fn: cpu->unplug && !cpu_can_run: tcg_cpus_destroy(cpu%d): cpu->created = false; qemu_cond_signal(&qemu_cpu_cond) %s", t, r.wakes(w))
			}
		} else if w := r.signal(&s.cpuCond[t], r.condName(t)); r.labelling() {
			r.labelf("qemu_tcg_cpu_thread_fn: cpu->unplug: qemu_tcg_destroy_vcpu(cpu%d); cpu->created = false; qemu_cond_signal(cpu%d->cond) %s", t, t, r.wakes(w))
		}
		th.pc = pcHVExitUnlock
	case pcHVExitUnlock:
		r.unlock(mu, mname)
		r.x.ExitMem(r.s.mem)
		if up {
			r.label("mttcg_cpu_thread_fn: bql_unlock(); the thread returns")
		} else if r.labelling() {
			r.labelf("qemu_tcg_cpu_thread_fn: cpu_mutex_unlock(cpu%d); the thread returns", t)
		}
		th.pc = pcDone
	}
}

// afterListAdd: where the I/O thread goes once cpu_list_add (and, where
// the code has it, finish_safe_work) is done: qemu_init_vcpu with
// hotplug-thread=1, else the next action of its script.
func (r *run) afterListAdd() uint8 {
	if r.m.hotThread {
		return pcHCCreate
	}
	return pcIONext
}

// hotIOStep: the I/O thread's qemu_init_vcpu and cpu_resume after
// cpu_list_add, and cpu_remove_sync before cpu_list_remove (hotplug-thread=1).
func (r *run) hotIOStep() {
	s, th := r.s, r.th
	n := r.m.hotCPU()
	up := !r.m.v.cpuLock
	cl, cln := &s.cpuLock[n], r.cpuLockName(n)
	// The condition variable the I/O thread waits on for cpu->created,
	// and its mutex.
	cond, condn, cmu, cmun := &s.qemuCPUCond, "qemu_cpu_cond", &s.bql, "bql"
	if !up {
		cond, condn, cmu, cmun = &s.cpuCond[n], r.condName(n), cl, cln
	}
	switch th.pc {
	// qemu_init_vcpu
	case pcHCCreate:
		s.ctl[n] |= cStopped | cStarted
		if up {
			if r.labelling() {
				r.labelf("qemu_init_vcpu(cpu%d): cpu->stopped = true; mttcg_start_vcpu_thread: qemu_thread_create(vcpu%d, mttcg_cpu_thread_fn)", n, n)
			}
			th.pc = pcHCWait
		} else {
			if r.labelling() {
				r.labelf("qemu_init_vcpu(cpu%d): cpu->stopped = true; qemu_tcg_init_vcpu: qemu_thread_create(vcpu%d, qemu_tcg_cpu_thread_fn)", n, n)
			}
			th.pc = pcHCUnlockBQL
		}
	case pcHCUnlockBQL:
		r.unlock(&s.bql, "bql")
		r.label("qemu_tcg_init_vcpu: qemu_mutex_unlock_iothread()")
		th.pc = pcHCLock
	case pcHCLock:
		if !r.lock(cl, cln) {
			return
		}
		if r.labelling() {
			r.labelf("qemu_tcg_init_vcpu: cpu_mutex_lock(cpu%d)", n)
		}
		th.pc = pcHCWait
	case pcHCWait:
		if s.ctl[n]&cCreated == 0 {
			r.wait(cond, condn, cmu, cmun)
			if r.labelling() {
				r.labelf("qemu_init_vcpu: while (!cpu%d->created) qemu_cond_wait(%s, %s)", n, condn, cmun)
			}
			th.pc = pcHCWoken
			return
		}
		if up {
			// cpu_resume follows at once, with the BQL held throughout:
			// the test of created shares its step.
			r.resume(n, fmtIf(r, "qemu_init_vcpu: cpu%d->created; cpu_common_realizefn: dev->hotplugged: ", n))
			th.pc = pcIONext
			return
		}
		r.unlock(cl, cln)
		if r.labelling() {
			r.labelf("qemu_tcg_init_vcpu: cpu%d->created: cpu_mutex_unlock(cpu%d)", n, n)
		}
		th.pc = pcHCRelockBQL
	case pcHCWoken:
		if !r.wokenRelock(cond, condn, cmu, cmun, "qemu_init_vcpu") {
			return
		}
		if r.labelling() {
			r.labelf("qemu_init_vcpu: woken from %s, re-acquires %s", condn, cmun)
		}
		th.pc = pcHCWait
	case pcHCRelockBQL:
		if !r.lock(&s.bql, "bql") {
			return
		}
		r.label("qemu_tcg_init_vcpu: qemu_mutex_lock_iothread()")
		th.pc = pcHCResumeLock
	case pcHCResumeLock:
		if !r.lock(cl, cln) {
			return
		}
		if r.labelling() {
			r.labelf("cpu_common_realizefn: dev->hotplugged: cpu_resume(cpu%d): cpu_mutex_lock(cpu%d)", n, n)
		}
		th.pc = pcHCResume
	case pcHCResume:
		r.resume(n, "")
		th.pc = pcHCResumeUnlock
	case pcHCResumeUnlock:
		r.unlock(cl, cln)
		if r.labelling() {
			r.labelf("cpu_resume(cpu%d): cpu_mutex_unlock(cpu%d)", n, n)
		}
		th.pc = pcIONext

	// cpu_remove_sync
	case pcHXStop:
		s.ctl[n] |= cStop | cUnplug
		k := r.kick(n)
		if r.labelling() {
			if up {
				r.labelf("cpu_remove_sync(cpu%d): cpu->stop = true; cpu->unplug = true; %s", n, k)
			} else {
				r.labelf("cpu_remove_sync: cpu_remove(cpu%d): cpu->stop = true; cpu->unplug = true; %s", n, k)
			}
		}
		if up {
			th.pc = pcHXUnlockBQL
		} else {
			th.pc = pcHXJoin
		}
	case pcHXUnlockBQL:
		r.unlock(&s.bql, "bql")
		if up {
			r.label("cpu_remove_sync: bql_unlock()")
			th.pc = pcHXJoin
		} else {
			r.label("cpu_remove_sync: qemu_mutex_unlock_iothread()")
			th.pc = pcHXLock
		}
	case pcHXLock:
		if !r.lock(cl, cln) {
			return
		}
		if r.labelling() {
			r.labelf("cpu_remove_sync: cpu_mutex_lock(cpu%d)", n)
		}
		th.pc = pcHXStop
	case pcHXJoin:
		if up {
			if s.th[n].pc != pcDone {
				if r.labelling() {
					r.labelf("qemu_thread_join(vcpu%d): vcpu%d has not returned yet", n, n)
				}
				r.x.Block()
				return
			}
			if r.labelling() {
				r.labelf("cpu_remove_sync: qemu_thread_join(vcpu%d) returns", n)
			}
			th.pc = pcHXRelockBQL
			return
		}
		if s.ctl[n]&cCreated != 0 {
			r.wait(cond, condn, cmu, cmun)
			if r.labelling() {
				r.labelf("cpu_remove_sync: while (cpu%d->created) qemu_cond_wait(%s, %s)", n, condn, cmun)
			}
			th.pc = pcHXWoken
			return
		}
		r.unlock(cl, cln)
		if r.labelling() {
			r.labelf("cpu_remove_sync: !cpu%d->created: cpu_mutex_unlock(cpu%d)", n, n)
		}
		th.pc = pcHXRelockBQL
	case pcHXWoken:
		if !r.wokenRelock(cond, condn, cmu, cmun, "cpu_remove_sync") {
			return
		}
		if r.labelling() {
			r.labelf("cpu_remove_sync: woken from %s, re-acquires %s", condn, cmun)
		}
		th.pc = pcHXJoin
	case pcHXRelockBQL:
		if !r.lock(&s.bql, "bql") {
			return
		}
		if up {
			r.label("cpu_remove_sync: bql_lock()")
		} else {
			r.label("cpu_remove_sync: qemu_mutex_lock_iothread()")
		}
		th.pc = pcHRLock // cpu_common_unrealizefn: cpu_list_remove
	}
}

// resume is cpu_resume(cpu c): cpu->stop = false; cpu->stopped = false;
// qemu_cpu_kick(cpu), one step: the stores are under the lock the caller
// holds, which the vCPU's thread needs to read them.
func (r *run) resume(c int, prefix string) {
	r.s.ctl[c] &^= cStop | cStopped
	if k := r.kick(c); r.labelling() {
		r.labelf("%scpu_resume(cpu%d): cpu->stop = false; cpu->stopped = false; %s", prefix, c, k)
	}
}

func fmtIf(r *run, format string, c int) string {
	if !r.labelling() {
		return ""
	}
	return fmt.Sprintf(format, c)
}
