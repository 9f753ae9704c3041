// Package exclusive models QEMU's exclusive sections: start_exclusive and
// end_exclusive, which stop every vCPU from executing guest code while one
// thread runs "safe" work, together with the vCPU loop around them
// (cpu_exec_start, a guest TB, cpu_exec_end, process_queued_cpu_work),
// safe work queued with async_safe_run_on_cpu, and synchronous run_on_cpu
// calls from the I/O thread.
//
// Two protocols are modelled, following /work/shared/protocols/qemu.md
// (Part A) and the real code:
//
//   - upstream (A.1, A.2): the lock-free pending_cpus / has_waiter scheme
//     of "cpus-common: lock-free fast path for cpu_exec_start/end"
//     (c265e976) as in cpu-common.c @18530e7c, with its smp_mb pairs under
//     sequential consistency, the exclusive_context_count nesting counter
//     (2023), qemu_work_cond for run_on_cpu waiters, and the BQL held by
//     the vCPU thread outside cpu_exec;
//   - cpu-lock (A.3): seed 001, "[RFC v4 71/71] cpus-common: wait on the
//     CPU lock for exclusive work completion" (Emilio G. Cota,
//     /work/shared/seeds/001_82edb6f67d33326f.txt), where each waiter
//     sleeps on its CPU's cpu->cond, which the per-CPU-lock series also
//     uses for run_on_cpu's wi.done (cota/qemu cpus-common.c @09addeed,
//     cpus.c @031cfd04: the vCPU thread holds cpu->lock, not the BQL).
//
// Each variant of Protocol is one switch in the model (machine.go flags);
// the buggy ones are found by the explorer, never declared. The shortest
// counterexample of cpu-lock is qemu.md's schedule LW-2: a vCPU leaving
// cpu_exec clears exclusive_waiter and signals cpu->cond, the signal wakes
// the I/O thread waiting there for wi.done instead of start_exclusive,
// and the three threads then sleep on the same condition variable for
// ever.
//
// Threads are vcpu0..vcpuN-1 and io-thread. vcpu0 runs the first safe work
// item, so it is the exclusive initiator; the I/O thread's run_on_cpu
// calls aim at the last vCPU. The default size has three vCPUs: qemu.md's
// note that 2 vCPUs and the I/O thread reach every counterexample does not
// hold for end-signals-resume (V-A5), whose lost wake-up needs two threads
// asleep on exclusive_resume besides the initiator, and end-decrements-always
// (V-A4) then needs a vCPU to run two TBs (see the tests).
//
// Granularity (DESIGN.md): one step per lock acquire or release, condition
// variable wait, wake-up re-acquisition, signal or broadcast, and per
// access to a word read without a lock (pending_cpus, cpu->running,
// wi.done, which go through model.Mem). Accesses to fields protected by a
// lock the thread holds share the step of the neighbouring lock operation:
// no other thread can observe them in between (upstream.go, cpulock.go say
// so where it happens). qemu_cpu_kick's exit_request is not modelled: a
// guest TB always ends after one step, so a kick only matters through its
// broadcast of halt_cond, which wakes a halted vCPU.
//
// Memory model: sequentially consistent by default (memory=0); memory=1
// runs the machine under x86-TSO (model.WithTSO: one store buffer per
// thread, commits as steps of a "store buffers" thread). The words of
// model.Mem (pending_cpus, cpu->running, wi.done) are then stored into the
// buffer and may be passed by the thread's later loads; smp_mb() drains
// it (x.Fence(s.mem)), and so does every mutex operation, lock, unlock and
// the release and re-acquire of a condition variable wait, because
// QemuMutex on x86 (glibc) takes and releases with locked instructions
// (run.go says why that is also the sound choice for the model). Under
// TSO upstream stays correct and every other variant keeps its verdict and
// its shortest counterexample (tso_test.go). no-smp-mb is qemu.md's V-A1:
// upstream without the smp_mb() of cpu_exec_start and start_exclusive. It
// is defined on x86-TSO, where the barrier matters, and so runs with store
// buffers whatever memory says (without them it explores exactly
// upstream's states). Its shortest counterexample (17 steps, no commit
// step) keeps both stores buffered: start_exclusive stores pending_cpus = 1
// and reads cpu1->running = false, vcpu1 stores running = true and reads
// pending_cpus = 0, and vcpu1 executes guest code in the section. The
// other Dekker pair breaks too (random walks find it first): a counted
// vCPU's cpu_exec_end reads pending_cpus = 0 and leaves by the fast path,
// and start_exclusive waits for it for ever. The real implementation runs
// on Go's sequentially consistent atomics and refuses both.
//
// Properties: mutual-exclusion (A1-S1: no CPU inside cpu_exec while an
// exclusive section runs), single-exclusive (A1-S2), work-once (A2-S1:
// each work item runs once; run_on_cpu returns only after its item ran),
// the seed's own g_assert(!exclusive_waiter) and g_assert(exclusive_ongoing),
// qemu_mutex's own checks ("mutex"), and deadlock, whose report names what
// each thread sleeps on and whether its predicate already holds (a lost
// wake-up). The spec (spec.go) checks histories of exclusive sections,
// stays in cpu_exec and run_on_cpu calls against a generation counter.
//
// Metrics: wakeups (threads woken by a signal or broadcast), lock-handoffs
// (a woken thread re-acquiring its mutex), list-lock-acquisitions
// (acquisitions of the one global qemu_cpu_list_lock, the contention the
// seed set out to remove).
package exclusive
