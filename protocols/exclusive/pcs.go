package exclusive

// Program counters. Each function of the modelled code is a flat range of
// pcs; a call pushes the return pc on the thread's small stack. Most pcs
// are steps (one atomic action each); the ones marked "decision" only
// branch on data the thread may read without racing (its own locals, or a
// field protected by a lock it holds) and are resolved by settle right
// after the step that reached them, so they never appear in a schedule.
const (
	pcDone uint8 = iota

	// vCPU thread loop (mttcg_cpu_thread_fn / qemu_tcg_cpu_thread_fn).
	pcVStart      // bql_lock (upstream) / cpu_mutex_lock (seed 001)
	pcVBottom     // qatomic_set_mb(&cpu->exit_request, 0)
	pcVIdle       // decision: cpu_thread_is_idle?
	pcVHalt       // qemu_cond_wait(halt_cond)
	pcVHaltWoken  // re-acquire after halt_cond
	pcVTop        // decision: after qemu_wait_io_event, the next cpu_exec
	pcVExecUnlock // tcg_cpus_exec: drop the BQL / cpu->lock
	pcVExec       // decision: cpu_exec's cpu_handle_halt
	pcVHI         // cpu_handle_interrupt: read exit_request
	pcVHIClear    // cpu_handle_interrupt: clear exit_request, cpu_exec returns
	pcVTB         // decision: which TB the guest runs next
	pcVTBRun      // cpu_tb_exec: a guest TB (the environment's choice)
	pcVWFI        // cpu_tb_exec: the guest halts (WFI)
	pcVMMIOLock   // io_writex: bql_lock
	pcVMMIOUnlock // io_writex: dispatch, bql_unlock
	pcVTBExclBody // cpu_exec: ptw_setl_slow's update inside start/end_exclusive (H6)
	// cpu_exec_step_atomic (step-atomic >= 1).
	pcVAtomicExit   // cpu_tb_exec: cpu_loop_exit_atomic, cpu_exec returns EXCP_ATOMIC
	pcVAtomicUnlock // thread_fn: EXCP_ATOMIC: drop the BQL / cpu->lock
	pcVAtomicTB     // cpu_exec_step_atomic: the serial TB, inside start/end_exclusive
	pcVAtomicRelock // thread_fn: retake the BQL / cpu->lock after cpu_exec_step_atomic
	pcVStop         // qemu_wait_io_event_common: cpu->stop: qemu_cpu_stop (hotplug-thread=1, pause)
	// The hot-plugged CPU's own vCPU thread (hotplug-thread=1): its start and end.
	pcHVCreated    // cpu_thread_signal_created
	pcHVDestroy    // tcg_cpus_destroy: cpu_thread_signal_destroyed
	pcHVExitUnlock // the thread drops its lock and returns
	pcVRelock      // tcg_cpus_exec: retake the BQL / cpu->lock

	// queue_work_on_cpu for async_safe_run_on_cpu, from a vCPU's TB or
	// the I/O thread.
	pcQLock   // lock work_mutex / cpu->lock
	pcQAppend // upstream: append, unlock work_mutex; seed 001: append, kick
	pcQKick   // upstream: qemu_cpu_kick after the unlock
	pcQUnlock // seed 001: cpu_mutex_unlock after the kick

	// process_queued_cpu_work.
	pcPEntry         // decision
	pcPLock          // upstream: qemu_mutex_lock(work_mutex)
	pcPPop           // pop wi; unlock (or, upstream, list empty: unlock and return)
	pcPSafeBQLUnlock // bql_unlock before exclusive work
	pcPSafeFunc      // wi->func of a safe work item
	pcPNestedEnd     // decision: the safe func's nested end_exclusive
	pcPOuterEnd      // decision: the outer end_exclusive
	pcPSynicLock     // async_synic_update: bql_lock (H3)
	pcPSynicUnlock   // async_synic_update: bql_unlock (H3)
	pcPSafeDone      // decision: after end_exclusive
	pcPSafeBQLLock   // bql_lock after exclusive work
	pcPFuncBQL       // seed 001: wi->bql, qemu_mutex_lock_iothread
	pcPFunc          // wi->func of a run_on_cpu item
	pcPRelock        // lock work_mutex / cpu->lock again
	pcPDone          // store wi->done
	pcPNext          // decision (seed 001) or step (upstream)
	pcPBcast         // broadcast qemu_work_cond / cpu->cond

	// Upstream start_exclusive / end_exclusive (A.1).
	pcSXEntry // decision: nested?
	pcSXNested
	pcSXLock
	pcSXIdle
	pcSXIdleWoken
	pcSXScan
	pcSXKick
	pcSXSet
	pcSXWait
	pcSXWoken
	pcSXUnlock
	pcEXEntry // decision: nested?
	pcEXNested
	pcEXLock
	pcEXClear
	pcEXWake
	pcEXUnlock

	// Upstream cpu_exec_start / cpu_exec_end.
	pcXSSet
	pcXSRead
	pcXSLock
	pcXSCheck
	pcXSIdle
	pcXSIdleWoken
	pcXSUnlock
	pcXESet
	pcXERead
	pcXELock
	pcXECheck
	pcXESignal
	pcXEUnlock

	// Seed 001 start_exclusive / end_exclusive (A.3).
	pcCSLock
	pcCSIdle
	pcCSIdleWoken
	pcCSMarkLock
	pcCSKick
	pcCSMarkUnlock
	pcCSWaitLock
	pcCSWait
	pcCSWaitWoken
	pcCELock
	pcCEWake
	pcCEUnlock
	pcCEListLock
	pcCEListWake
	pcCEListUnlock

	// Seed 001 cpu_exec_start / cpu_exec_end / cpu_exec_exclusive_locked.
	pcCXSLock
	pcCXSRun
	pcCXELock
	pcCXEUnlock
	pcR1 // decision
	pcR1Signal
	pcR2 // decision
	pcR2Wait
	pcR2Woken

	// I/O thread.
	pcIOStart
	pcIONext // decision
	pcIOEnd
	pcHPLock
	pcHPIdle
	pcHPIdleWoken
	pcHPInsert
	pcHPEnd // decision: finish_safe_work's cpu_exec_end
	pcHRLock
	pcHRIdle
	pcHRIdleWoken
	pcHRRemove
	// hotplug-thread=1: qemu_init_vcpu and cpu_resume after cpu_list_add,
	// cpu_remove_sync before cpu_list_remove.
	pcHCCreate
	pcHCUnlockBQL // seed 001's branch: qemu_tcg_init_vcpu drops the BQL
	pcHCLock      // seed 001's branch: cpu_mutex_lock
	pcHCWait      // while (!cpu->created) qemu_cond_wait
	pcHCWoken
	pcHCUnlock    // seed 001's branch: cpu_mutex_unlock
	pcHCRelockBQL // seed 001's branch: qemu_mutex_lock_iothread
	pcHCResumeLock
	pcHCResume
	pcHCResumeUnlock
	pcHXUnlockBQL // cpu_remove_sync
	pcHXLock
	pcHXStop
	pcHXJoin // upstream: qemu_thread_join; seed 001's branch: while (cpu->created) wait
	pcHXWoken
	pcHXUnlock
	pcHXRelockBQL
	// pause=1: vm_stop's pause_all_vcpus and vm_start's resume_all_vcpus.
	pcPSPause
	pcPSCheck
	pcPSWoken
	pcPSKick
	pcPSUnlock
	pcPSRelock
	pcPSResume
	// pause=1 on seed 001's branch (cota/qemu cpus.c @031cfd04).
	pcCPUnlockBQL
	pcCPStopLock
	pcCPStop
	pcCPStopUnlock
	pcCPKick
	pcCPWaitLock
	pcCPWait
	pcCPWoken
	pcCPUnlock
	pcCPRelockBQL
	pcCPRunstate
	pcCPStart
	pcCPResumeLock
	pcCPResume
	pcCPResumeUnlock
	pcCPV9Wait      // v9: qemu_cond_wait(&cpu->cond) after its stop and kick
	pcCPCheckLock   // v9: after the BQL, cpu_mutex_lock(cpu) to read cpu->stopped
	pcCPCheckUnlock // v9: read cpu->stopped, cpu_mutex_unlock(cpu)
	pcRQLock
	pcRQAppend
	pcRKick
	pcRWait
	pcRWoken
	pcRCUnlockBQL
	pcRCLock
	pcRCQueue
	pcRCWait
	pcRCWoken
	pcRCLockBQL

	numPCs
)

var pcNames = [numPCs]string{
	pcDone: "done",

	pcVStart: "thread_fn:start", pcVBottom: "thread_fn:clear_exit_request", pcVIdle: "qemu_wait_io_event",
	pcVHalt: "qemu_wait_io_event:wait", pcVHaltWoken: "qemu_wait_io_event:woken", pcVTop: "loop",
	pcVExecUnlock: "tcg_cpus_exec:unlock", pcVExec: "cpu_exec", pcVHI: "cpu_handle_interrupt",
	pcVHIClear: "cpu_handle_interrupt:clear", pcVTB: "tb_find", pcVTBRun: "cpu_tb_exec", pcVWFI: "cpu_tb_exec:wfi", pcVMMIOLock: "io_writex:bql_lock",
	pcVMMIOUnlock: "io_writex:bql_unlock", pcVTBExclBody: "cpu_exec:ptw_setl_slow",
	pcVRelock: "tcg_cpus_exec:relock", pcVAtomicExit: "cpu_tb_exec:exit_atomic",
	pcVAtomicUnlock: "thread_fn:excp_atomic:unlock", pcVAtomicTB: "cpu_exec_step_atomic",
	pcVAtomicRelock: "thread_fn:excp_atomic:relock", pcVStop: "qemu_wait_io_event_common:stop",
	pcHVCreated: "cpu_thread_signal_created", pcHVDestroy: "tcg_cpus_destroy", pcHVExitUnlock: "thread_fn:exit",

	pcQLock: "queue_work_on_cpu:lock", pcQAppend: "queue_work_on_cpu:append", pcQKick: "queue_work_on_cpu:kick",
	pcQUnlock: "queue_work_on_cpu:unlock",

	pcPEntry: "pqcw", pcPLock: "pqcw:lock", pcPPop: "pqcw:pop", pcPSafeBQLUnlock: "pqcw:bql_unlock",
	pcPSafeFunc: "pqcw:safe_func", pcPNestedEnd: "pqcw:nested_end", pcPOuterEnd: "pqcw:outer_end",
	pcPSynicLock: "async_synic_update:bql_lock", pcPSynicUnlock: "async_synic_update:bql_unlock",
	pcPSafeDone: "pqcw:safe_done", pcPSafeBQLLock: "pqcw:bql_lock", pcPFuncBQL: "pqcw:func_bql",
	pcPFunc: "pqcw:func", pcPRelock: "pqcw:relock", pcPDone: "pqcw:done", pcPNext: "pqcw:next",
	pcPBcast: "pqcw:broadcast",

	pcSXEntry: "start_exclusive", pcSXNested: "start_exclusive:nested", pcSXLock: "start_exclusive:lock",
	pcSXIdle: "start_exclusive:exclusive_idle", pcSXIdleWoken: "start_exclusive:exclusive_idle:woken",
	pcSXScan: "start_exclusive:scan", pcSXKick: "start_exclusive:kick", pcSXSet: "start_exclusive:set_pending",
	pcSXWait: "start_exclusive:wait", pcSXWoken: "start_exclusive:woken", pcSXUnlock: "start_exclusive:unlock",
	pcEXEntry: "end_exclusive", pcEXNested: "end_exclusive:nested", pcEXLock: "end_exclusive:lock",
	pcEXClear: "end_exclusive:clear", pcEXWake: "end_exclusive:wake", pcEXUnlock: "end_exclusive:unlock",

	pcXSSet: "cpu_exec_start:set_running", pcXSRead: "cpu_exec_start:read_pending", pcXSLock: "cpu_exec_start:lock",
	pcXSCheck: "cpu_exec_start:has_waiter", pcXSIdle: "cpu_exec_start:exclusive_idle",
	pcXSIdleWoken: "cpu_exec_start:exclusive_idle:woken", pcXSUnlock: "cpu_exec_start:unlock",
	pcXESet: "cpu_exec_end:clear_running", pcXERead: "cpu_exec_end:read_pending", pcXELock: "cpu_exec_end:lock",
	pcXECheck: "cpu_exec_end:has_waiter", pcXESignal: "cpu_exec_end:signal", pcXEUnlock: "cpu_exec_end:unlock",

	pcCSLock: "start_exclusive:lock", pcCSIdle: "start_exclusive:exclusive_idle",
	pcCSIdleWoken: "start_exclusive:exclusive_idle:woken", pcCSMarkLock: "start_exclusive:mark:lock",
	pcCSKick: "start_exclusive:mark:kick", pcCSMarkUnlock: "start_exclusive:mark:unlock",
	pcCSWaitLock: "start_exclusive:wait:lock", pcCSWait: "start_exclusive:wait",
	pcCSWaitWoken: "start_exclusive:wait:woken", pcCELock: "end_exclusive:lock", pcCEWake: "end_exclusive:wake",
	pcCEUnlock: "end_exclusive:unlock", pcCEListLock: "end_exclusive:list_lock",
	pcCEListWake: "end_exclusive:broadcast", pcCEListUnlock: "end_exclusive:list_unlock",

	pcCXSLock: "cpu_exec_start:lock", pcCXSRun: "cpu_exec_start:run", pcCXELock: "cpu_exec_end:lock",
	pcCXEUnlock: "cpu_exec_end:unlock", pcR1: "cpu_exec_exclusive_locked", pcR1Signal: "cpu_exec_exclusive_locked:signal",
	pcR2: "cpu_exec_exclusive_locked:check", pcR2Wait: "cpu_exec_exclusive_locked:wait",
	pcR2Woken: "cpu_exec_exclusive_locked:woken",

	pcIOStart: "main_loop:start", pcIONext: "main_loop", pcIOEnd: "main_loop:end",
	pcHPLock: "cpu_list_add:lock", pcHPIdle: "cpu_list_add:exclusive_idle", pcHPIdleWoken: "cpu_list_add:exclusive_idle:woken",
	pcHPInsert: "cpu_list_add:insert", pcHPEnd: "finish_safe_work",
	pcHRLock: "cpu_list_remove:lock", pcHRIdle: "cpu_list_remove:exclusive_idle",
	pcHRIdleWoken: "cpu_list_remove:exclusive_idle:woken", pcHRRemove: "cpu_list_remove:remove",
	pcHCCreate: "qemu_init_vcpu:create", pcHCUnlockBQL: "qemu_init_vcpu:bql_unlock", pcHCLock: "qemu_init_vcpu:lock",
	pcHCWait: "qemu_init_vcpu:wait", pcHCWoken: "qemu_init_vcpu:woken", pcHCUnlock: "qemu_init_vcpu:unlock",
	pcHCRelockBQL: "qemu_init_vcpu:bql_lock", pcHCResumeLock: "cpu_resume:lock", pcHCResume: "cpu_resume",
	pcHCResumeUnlock: "cpu_resume:unlock", pcHXUnlockBQL: "cpu_remove_sync:bql_unlock", pcHXLock: "cpu_remove_sync:lock",
	pcHXStop: "cpu_remove_sync:stop", pcHXJoin: "cpu_remove_sync:join", pcHXWoken: "cpu_remove_sync:woken",
	pcHXUnlock: "cpu_remove_sync:unlock", pcHXRelockBQL: "cpu_remove_sync:bql_lock",
	pcPSPause: "pause_all_vcpus:cpu_pause", pcPSCheck: "pause_all_vcpus:wait", pcPSWoken: "pause_all_vcpus:woken",
	pcPSKick: "pause_all_vcpus:kick", pcPSUnlock: "pause_all_vcpus:bql_unlock", pcPSRelock: "pause_all_vcpus:bql_lock",
	pcPSResume:    "resume_all_vcpus:cpu_resume",
	pcCPUnlockBQL: "pause_all_vcpus:unlock_iothread", pcCPStopLock: "pause_all_vcpus:stop:lock",
	pcCPStop: "pause_all_vcpus:stop", pcCPStopUnlock: "pause_all_vcpus:stop:unlock",
	pcCPKick: "pause_all_vcpus:kick", pcCPWaitLock: "pause_all_vcpus:wait:lock", pcCPWait: "pause_all_vcpus:wait",
	pcCPWoken: "pause_all_vcpus:woken", pcCPUnlock: "pause_all_vcpus:wait:unlock", pcCPRelockBQL: "pause_all_vcpus:lock_iothread",
	pcCPRunstate: "do_vm_stop:runstate_set", pcCPStart: "vm_start:runstate_set", pcCPResumeLock: "cpu_resume:lock",
	pcCPResume: "cpu_resume", pcCPResumeUnlock: "cpu_resume:unlock",
	pcCPV9Wait: "pause_all_vcpus:wait_cond", pcCPCheckLock: "pause_all_vcpus:recheck:lock", pcCPCheckUnlock: "pause_all_vcpus:recheck:unlock",
	pcRQLock: "run_on_cpu:lock", pcRQAppend: "run_on_cpu:append", pcRKick: "run_on_cpu:kick",
	pcRWait: "run_on_cpu:wait", pcRWoken: "run_on_cpu:woken", pcRCUnlockBQL: "run_on_cpu:bql_unlock",
	pcRCLock: "run_on_cpu:lock", pcRCQueue: "run_on_cpu:queue", pcRCWait: "run_on_cpu:wait",
	pcRCWoken: "run_on_cpu:woken", pcRCLockBQL: "run_on_cpu:bql_lock",
}

func pcName(pc uint8) string {
	if int(pc) < len(pcNames) && pcNames[pc] != "" {
		return pcNames[pc]
	}
	return "?"
}

// decision reports whether pc is resolved by settle rather than stepped.
func decision(pc uint8) bool {
	switch pc {
	case pcVIdle, pcVTop, pcVExec, pcVTB, pcPEntry, pcPNestedEnd, pcPOuterEnd, pcPSafeDone,
		pcSXEntry, pcEXEntry, pcR1, pcR2, pcIONext, pcHPEnd:
		return true
	}
	return false
}
