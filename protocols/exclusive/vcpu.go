package exclusive

import "github.com/protocheck/protocheck/model"

// The vCPU thread (A.2): mttcg_cpu_thread_fn upstream, which holds the BQL
// outside cpu_exec; qemu_tcg_cpu_thread_fn in the per-CPU-lock series,
// which holds cpu->lock instead (cota/qemu cpus.c @031cfd04). Its loop:
//
//	do {
//	    unlock; cpu_exec_start; cpu_exec; cpu_exec_end; lock;
//	    qatomic_set_mb(&cpu->exit_request, 0);
//	    qemu_wait_io_event: while (cpu_thread_is_idle) wait(halt_cond);
//	                       process_queued_cpu_work;
//	} while (1);
//
// The model starts it at the qatomic_set_mb: QEMU's thread sets
// exit_request = 1 before its first cpu_exec ("process any pending work"),
// so that cpu_exec returns at its first cpu_handle_interrupt, and the
// paths it takes recur in the iterations that follow.
//
// cpu_exec runs TBs until it sees exit_request (cpu_handle_interrupt,
// before each TB entered from the loop); what each TB does is the guest's,
// so the environment's choice: it runs from RAM, or it makes an MMIO
// access, which takes the BQL (io_readx/io_writex, mr->global_locking).
// A guest that has run the tbs parameter's TBs executes WFI and halts
// (tbs=0: it never halts). A halted vCPU's cpu_exec returns at
// cpu_handle_halt without running a TB, and qemu_wait_io_event puts the
// thread to sleep on halt_cond while its work list is empty: a kick wakes
// it.
//
// Chained TBs, which jump to each other without going back to
// cpu_handle_interrupt and check icount_decr.u16.high in their prologue
// instead, are not modelled: cpu_exit stores exit_request before
// icount_decr.u16.high (smp_wmb), and a chained TB that sees the latter
// leaves to cpu_handle_interrupt, which clears it and reads exit_request
// = 1 (the qatomic_mb_set orders the two). A chain is then a run of TBs
// between two cpu_handle_interrupt calls, the same as a run of unchained
// TBs that each read exit_request = 0.

func (m *machine) execStart() uint8 {
	if m.v.cpuLock {
		return pcCXSLock
	}
	return pcXSSet
}

func (m *machine) execEnd() uint8 {
	if m.v.cpuLock {
		return pcCXELock
	}
	return pcXESet
}

func (r *run) callStartExclusive(ret uint8) {
	r.th.iter = 0
	if r.m.v.cpuLock {
		r.call(pcCSLock, ret)
		return
	}
	r.call(pcSXEntry, ret)
}

func (r *run) callEndExclusive(ret uint8) {
	r.th.iter = 0
	if r.m.v.cpuLock {
		r.call(pcCELock, ret)
		return
	}
	r.call(pcEXEntry, ret)
}

// threadLock is the lock a vCPU thread holds outside cpu_exec.
func (r *run) threadLock() (*model.Mutex, string) {
	if r.m.v.cpuLock {
		return &r.s.cpuLock[r.t], r.cpuLockName(r.t)
	}
	return &r.s.bql, "bql"
}

func (r *run) vcpuStep() {
	s, th, t := r.s, r.th, r.t
	up := !r.m.v.cpuLock
	mu, mname := r.threadLock()
	switch th.pc {
	case pcVStart:
		if !r.lock(mu, mname) {
			return
		}
		if up {
			r.label("mttcg_cpu_thread_fn: bql_lock()")
		} else if r.labelling() {
			r.labelf("qemu_tcg_cpu_thread_fn: cpu_mutex_lock(cpu%d)", t)
		}
		if r.m.isHot(t) {
			th.pc = pcHVCreated
			return
		}
		th.pc = pcVBottom
	case pcHVCreated, pcHVDestroy, pcHVExitUnlock, pcVStop:
		r.hotThreadStep()
	case pcVIdle:
		// cross-work, upstream: cpu_work_list_empty() is
		// QSIMPLEQ_EMPTY_ATOMIC, read with the BQL only, while a vCPU
		// appends under work_mutex without the BQL: the read is a step.
		empty := s.qlen[t] == 0
		r.idleCheck()
		if r.labelling() {
			r.labelf("qemu_wait_io_event: cpu_thread_is_idle(): cpu_work_list_empty(cpu%d) = %v", t, empty)
		}
	case pcVBottom:
		// qatomic_set_mb: the store, then a full barrier, so that the
		// work list is read after exit_request is clear (A.2:
		// "enqueue then kick" against "clear exit_request, then drain").
		r.x.Store(s.mem, r.m.aExit[t], 0)
		nomb := ""
		if r.m.mb(dropExitRequest) {
			r.x.Fence(s.mem)
		} else {
			nomb = " (no smp_mb())"
		}
		if up {
			if r.labelling() {
				r.labelf("mttcg_cpu_thread_fn: qatomic_set_mb(&cpu%d->exit_request, 0)%s", t, nomb)
			}
		} else if r.labelling() {
			r.labelf("qemu_tcg_cpu_thread_fn: atomic_mb_set(&cpu%d->exit_request, 0)%s", t, nomb)
		}
		th.pc = pcVIdle
	case pcVHalt:
		r.wait(&s.haltCond[t], r.haltName(t), mu, mname)
		if r.labelling() {
			r.labelf("qemu_wait_io_event: cpu_thread_is_idle(): qemu_cond_wait(cpu%d->halt_cond, %s)", t, mname)
		}
		th.pc = pcVHaltWoken
	case pcVHaltWoken:
		if !r.wokenRelock(&s.haltCond[t], r.haltName(t), mu, mname, "qemu_wait_io_event") {
			return
		}
		if r.labelling() {
			r.labelf("qemu_wait_io_event: woken from cpu%d->halt_cond, re-acquires %s", t, mname)
		}
		th.pc = pcVIdle
	case pcVExecUnlock:
		r.unlock(mu, mname)
		if up {
			r.label("mttcg_cpu_thread_fn: bql_unlock() before tcg_cpus_exec")
		} else if r.labelling() {
			r.labelf("tcg_cpu_exec: cpu_mutex_unlock(cpu%d)", t)
		}
		th.arg = uint8(t)
		r.call(r.m.execStart(), pcVExec)
	case pcVHI:
		if r.x.Load(s.mem, r.m.aExit[t]) != 0 {
			if r.labelling() {
				r.labelf("cpu_handle_interrupt: %s(&cpu%d->exit_request) = 1", r.m.atomicRead, t)
			}
			th.pc = pcVHIClear
			return
		}
		if r.labelling() {
			r.labelf("cpu_handle_interrupt: %s(&cpu%d->exit_request) = 0", r.m.atomicRead, t)
		}
		th.pc = pcVTB
	case pcVHIClear:
		r.x.Store(s.mem, r.m.aExit[t], 0)
		if r.labelling() {
			r.labelf("cpu_handle_interrupt: %s(&cpu%d->exit_request, 0); cpu_exec returns EXCP_INTERRUPT", r.m.atomicSet, t)
		}
		r.call(r.m.execEnd(), pcVRelock)
	case pcVTBRun:
		r.checkGuestStopped()
		mmio := 0
		if r.m.mmio {
			mmio = r.x.Choose(2)
		}
		if r.m.tbs > 0 {
			th.round++
		}
		if mmio == 0 {
			r.label("cpu_tb_exec: the guest's TB runs, touching RAM only")
			th.pc = pcVHI
			return
		}
		r.label("cpu_tb_exec: the guest's TB makes an MMIO access")
		th.pc = pcVMMIOLock
	case pcVMMIOLock:
		// Guest code that touches a device takes the BQL inside
		// cpu_exec: the other half of H2's AB-BA.
		if !r.lock(&s.bql, "bql") {
			return
		}
		r.label("io_writex: qemu_mutex_lock_iothread()")
		th.pc = pcVMMIOUnlock
	case pcVMMIOUnlock:
		r.unlock(&s.bql, "bql")
		if th.flags&tAtomic != 0 {
			// The serial TB of cpu_exec_step_atomic ends with this
			// access; cpu->running = false as in pcVAtomicTB.
			if up {
				r.label("io_writex: memory_region_dispatch_write(); qemu_mutex_unlock_iothread(); cpu_exec_step_atomic: cpu->running = false")
			} else {
				r.label("io_writex: memory_region_dispatch_write(); qemu_mutex_unlock_iothread()")
			}
			r.callEndExclusive(pcVAtomicRelock)
			return
		}
		r.label("io_writex: memory_region_dispatch_write(); qemu_mutex_unlock_iothread()")
		th.pc = pcVHI
	case pcVWFI:
		th.flags |= tHalted
		r.label("helper_wfi: cpu->halted = 1; cpu_loop_exit(EXCP_HLT): cpu_exec returns")
		r.call(r.m.execEnd(), pcVRelock)
	case pcVTBExclBody:
		s.gen++
		r.label("cpu_exec: ptw_setl_slow: page-table update inside start_exclusive()")
		r.callEndExclusive(pcVHI)
	case pcVRelock:
		if !r.lock(mu, mname) {
			return
		}
		if up {
			r.label("mttcg_cpu_thread_fn: bql_lock() after tcg_cpus_exec")
		} else if r.labelling() {
			r.labelf("tcg_cpu_exec: cpu_mutex_lock(cpu%d)", t)
		}
		if th.flags&tAtomic != 0 {
			th.pc = pcVAtomicUnlock // switch (r): case EXCP_ATOMIC
			return
		}
		th.pc = pcVBottom

	// cpu_exec_step_atomic (step-atomic): the guest's atomic instruction
	// needs a serial context. mttcg_cpu_thread_fn @017b2e73: case
	// EXCP_ATOMIC: bql_unlock(); cpu_exec_step_atomic(cpu); bql_lock();
	// the per-CPU-lock series' qemu_tcg_cpu_thread_fn (cota/qemu cpus.c
	// @031cfd04) drops and retakes cpu->lock instead.
	case pcVAtomicExit:
		th.flags |= tAtomic | tAtomicDone
		r.label("cpu_tb_exec: the guest's atomic instruction cannot run in parallel: cpu_loop_exit_atomic(): cpu_exec returns EXCP_ATOMIC")
		r.call(r.m.execEnd(), pcVRelock)
	case pcVAtomicUnlock:
		r.unlock(mu, mname)
		if up {
			r.label("mttcg_cpu_thread_fn: EXCP_ATOMIC: bql_unlock(); cpu_exec_step_atomic()")
		} else if r.labelling() {
			r.labelf("qemu_tcg_cpu_thread_fn: EXCP_ATOMIC: cpu_mutex_unlock(cpu%d); cpu_exec_step_atomic()", t)
		}
		r.callStartExclusive(pcVAtomicTB)
	case pcVAtomicTB:
		// Inside its own exclusive section: the lookup or generation of
		// the one-instruction TB and its execution. Upstream also sets
		// cpu->running = true after start_exclusive and false before
		// end_exclusive; no other thread reads cpu->running while the
		// section is active (start_exclusive reads it only once
		// pending_cpus is back to 0, under qemu_cpu_list_lock, after this
		// thread's end_exclusive), and the two stores leave it as it
		// was, so they share this step and the word is not written. An
		// atomic access to MMIO is what sends a vCPU here too
		// (cputlb's atomic_mmu_lookup, TLB_MMIO: stop the world), and it
		// takes the BQL in io_writex: the environment's choice, as for
		// any TB.
		s.gen++
		mmio := 0
		if r.m.mmio {
			mmio = r.x.Choose(2)
		}
		run := "cpu_exec_step_atomic: "
		if up {
			run += "cpu->running = true; "
		}
		run += "cpu_tb_exec: the atomic instruction runs alone"
		if mmio == 0 {
			if up {
				r.label(run + ", touching RAM only; cpu->running = false")
			} else {
				r.label(run + ", touching RAM only")
			}
			r.callEndExclusive(pcVAtomicRelock)
			return
		}
		r.label(run + " and makes an MMIO access")
		th.pc = pcVMMIOLock
	case pcVAtomicRelock:
		if !r.lock(mu, mname) {
			return
		}
		th.flags &^= tAtomic
		if up {
			r.label("mttcg_cpu_thread_fn: bql_lock() after cpu_exec_step_atomic")
		} else if r.labelling() {
			r.labelf("qemu_tcg_cpu_thread_fn: cpu_mutex_lock(cpu%d) after cpu_exec_step_atomic", t)
		}
		th.pc = pcVBottom
	}
}

// idleCheck is qemu_wait_io_event's while (cpu_thread_is_idle(cpu)):
// halted (or stopped, or the VM paused) and nothing queued: sleep on
// halt_cond; cpu->stop set: qemu_wait_io_event_common stops the CPU;
// else process_queued_cpu_work. The work list is read with the thread's
// lock held, which every thread that queues on another vCPU holds too
// (the BQL upstream, the I/O thread being the only one; cpu->lock in
// seed 001), and a vCPU queues on itself only from its own TBs: the read
// cannot race, and shares the step that reached it. With cross-work a
// vCPU queues on another without the BQL, and upstream's read is a step
// of its own (machine.racyIdle). With hotplug-thread=1 or pause=1 also:
// not idle while cpu->stop is set, idle while cpu->stopped or the VM is
// paused (cpu_is_stopped); these are written under the thread's lock.
func (r *run) idleCheck() {
	th, t := r.th, r.t
	ctl := r.s.ctl[t]
	switch {
	case ctl&cStop == 0 && r.s.qlen[t] == 0 && (th.flags&tHalted != 0 || ctl&cStopped != 0 || r.s.paused):
		th.pc = pcVHalt
	case ctl&cStop != 0:
		th.pc = pcVStop // qemu_wait_io_event_common: qemu_cpu_stop
	default:
		r.call(pcPEntry, pcVTop)
	}
}

func (r *run) haltName(c int) string { return r.m.haltNames[c] }

func (r *run) vcpuDecide() {
	th, t := r.th, r.t
	switch th.pc {
	case pcVIdle:
		r.idleCheck()
	case pcVTop:
		// The loop's condition and cpu_can_run (both read under the
		// thread's lock): while (!cpu->unplug || cpu_can_run(cpu)) { if
		// (cpu_can_run(cpu)) tcg_cpus_exec ... }.
		switch {
		case r.canRun(t):
			th.pc = pcVExecUnlock
		case r.s.ctl[t]&cUnplug != 0:
			th.pc = pcHVDestroy
		default:
			th.pc = pcVBottom
		}
	case pcVExec:
		// cpu_handle_halt: a halted vCPU's cpu_exec returns EXCP_HALTED
		// before its first TB (cpu->halted is the thread's own).
		if th.flags&tHalted != 0 {
			r.call(r.m.execEnd(), pcVRelock)
		} else {
			th.pc = pcVHI
		}
	case pcVTB:
		switch {
		case r.m.v.fromExec && t == 0 && th.flags&tPtwDone == 0:
			// H6: ptw_setl_slow calls start_exclusive from inside cpu_exec.
			th.flags |= tPtwDone
			r.callStartExclusive(pcVTBExclBody)
		case int(th.queued) < len(r.m.own[t]):
			// The TB's helper queues safe work on its own CPU (tb_flush,
			// a synced TLB flush), whose kick sets exit_request, and
			// ends the TB (cpu_loop_exit).
			th.item = r.m.own[t][th.queued]
			th.queued++
			r.call(pcQLock, pcVHI)
		case r.m.atomic[t] && th.flags&tAtomicDone == 0:
			th.pc = pcVAtomicExit
		case r.m.tbs > 0 && int(th.round) >= r.m.tbs:
			th.pc = pcVWFI
		default:
			th.pc = pcVTBRun
		}
	}
}
