package cputlb

// pc is where a vCPU thread is in mttcg's loop (qemu_tcg_cpu_thread_fn of
// the per-CPU-lock branch that seed 000 applies to). Each value is the next
// step the thread takes.
type pc uint8

const (
	// tcg_cpu_exec -> cpu_exec_start (upstream lock-free protocol, A1).
	pcStart       pc = iota // XS1: atomic_set(running, true)
	pcStartCheck            // XS2-3: smp_mb; atomic_read(pending_cpus)
	pcStartLock             // XS4: lock qemu_cpu_list_lock
	pcStartWaiter           // XS5: has_waiter? else running=false + exclusive_idle
	pcStartRelock           // exclusive_idle: waiting on exclusive_resume / re-acquire
	pcStartUnlock           // XS6: unlock qemu_cpu_list_lock

	// cpu_exec: the TB loop.
	pcExec  // halted? exit_request? then the next TB
	pcGuest // inside a TB: the guest program's next step (guest.go, softmmu.go)

	// cpu_exec_end.
	pcEnd       // XE1: atomic_set(running, false)
	pcEndCheck  // XE2-3: smp_mb; atomic_read(pending_cpus)
	pcEndLock   // XE4: lock qemu_cpu_list_lock
	pcEndWaiter // XE5: has_waiter -> pending_cpus--
	pcEndSignal // qemu_cond_signal(exclusive_cond)
	pcEndUnlock // XE6: unlock

	// The rest of mttcg's loop.
	pcClearExit  // qemu_mutex_lock(cpu->lock); atomic_mb_set(exit_request, 0)
	pcIdle       // qemu_tcg_wait_io_event, cpu->lock held: cpu_thread_is_idle -> wait(halt_cond), else pop and unlock
	pcHaltRelock // waiting on halt_cond / re-acquire cpu->lock
	pcItemBQL    // wi->bql: qemu_mutex_lock_iothread
	pcItemRun    // wi->func, one step per shared access (v.sub)
	pcItemUnBQL  // wi->bql: qemu_mutex_unlock_iothread
	pcItemDone   // cpu_mutex_lock(cpu); g_free(wi) or atomic_mb_set(&wi->done, true)
	pcItemPop    // cpu->lock held: pop the next item and unlock, or broadcast cpu->cond
	pcItemUnlock // cpu->lock held, list drained and cpu->cond broadcast: unlock

	// A safe item: start_exclusive; func; end_exclusive (exclusive.go).
	pcExclLock       // SX1: lock qemu_cpu_list_lock
	pcExclIdle       // SX2-3: exclusive_idle; pending_cpus = 1
	pcExclIdleRelock // exclusive_idle: waiting on exclusive_resume / re-acquire
	pcExclScan       // SX4-5: smp_mb; atomic_read(other->running)
	pcExclKick       // SX5: qemu_cpu_kick(other)
	pcExclPending    // SX6: pending_cpus = running_cpus + 1
	pcExclWait       // SX7: qemu_cond_wait(exclusive_cond)
	pcExclRelock     // SX7: waiting / re-acquire, re-test pending_cpus
	pcExclUnlock     // SX8: unlock
	pcSafeRun        // wi->func inside the exclusive section (v.sub)
	pcEndExclLock    // EX1: lock
	pcEndExclStore   // EX1: pending_cpus = 0; broadcast exclusive_resume
	pcEndExclUnlock  // EX1: unlock

	// Waiting again after a wake-up: the re-acquire step re-tests, and
	// the wait that follows is a step of its own (one step per cond op,
	// the granularity rule of package model). With one source a waiter is woken only once
	// its predicate holds for good; with two sources the second section
	// can make it wait again.
	pcStartRewait    // exclusive_idle: qemu_cond_wait(exclusive_resume) again
	pcExclIdleRewait // start_exclusive's exclusive_idle: wait again
	pcExclRewait     // SX7: qemu_cond_wait(exclusive_cond) again

	// With rcu=1 (rcu.go): cpu_exec's read section, and the install of
	// the vector table's entry while an interrupt is delivered.
	pcRCULock    // cpu_exec: cpu_handle_halt, then RCU_READ_LOCK_GUARD's rcu_read_lock
	pcRCUUnlock  // cpu_exec returns: rcu_read_unlock
	pcIRQInstall // cpu_handle_interrupt: tlb_set_page of the vector table, then the delivery

	numPCs
)

var pcNames = [numPCs]string{
	"cpu_exec_start", "cpu_exec_start(check pending)", "cpu_exec_start(lock)", "cpu_exec_start(has_waiter)",
	"cpu_exec_start(exclusive_idle)", "cpu_exec_start(unlock)",
	"cpu_exec", "cpu_exec(TB)",
	"cpu_exec_end", "cpu_exec_end(check pending)", "cpu_exec_end(lock)", "cpu_exec_end(has_waiter)",
	"cpu_exec_end(signal)", "cpu_exec_end(unlock)",
	"clear exit_request", "qemu_tcg_wait_io_event", "halted",
	"work(bql_lock)", "work(func)", "work(bql_unlock)", "work(free)", "work(pop)", "work(unlock)",
	"start_exclusive(lock)", "start_exclusive(exclusive_idle)", "start_exclusive(exclusive_idle wait)",
	"start_exclusive(scan)", "start_exclusive(kick)", "start_exclusive(set pending)", "start_exclusive(wait)",
	"start_exclusive(wait exclusive_cond)", "start_exclusive(unlock)", "safe work(func)",
	"end_exclusive(lock)", "end_exclusive(pending=0)", "end_exclusive(unlock)",
	"cpu_exec_start(exclusive_idle wait again)", "start_exclusive(exclusive_idle wait again)",
	"start_exclusive(wait exclusive_cond again)",
	"cpu_exec(rcu_read_lock)", "cpu_exec(rcu_read_unlock)", "cpu_exec(deliver interrupt)",
}

func (p pc) String() string { return pcNames[p] }
