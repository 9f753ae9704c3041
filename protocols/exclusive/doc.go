// Package exclusive models QEMU's exclusive sections: start_exclusive and
// end_exclusive, which stop every vCPU from executing guest code while one
// thread runs "safe" work, together with the vCPU loop around them
// (cpu_exec_start, cpu_exec running TBs until it is kicked, cpu_exec_end,
// qemu_wait_io_event, process_queued_cpu_work), work queued while the
// vCPUs run (async_safe_run_on_cpu from a vCPU's own TB and from the I/O
// thread, run_on_cpu from the I/O thread), CPU hot-plug
// (cpu_list_add/cpu_list_remove) and the BQL.
//
// Two protocols are modelled, following the real code:
//
//   - upstream (A.1, A.2): the lock-free pending_cpus / has_waiter scheme
//     of "cpus-common: lock-free fast path for cpu_exec_start/end"
//     (c265e976) as in cpu-common.c @18530e7c, with its smp_mb pairs under
//     sequential consistency, the exclusive_context_count nesting counter
//     (2023), qemu_work_cond for run_on_cpu waiters, cpu_list_add/remove
//     under qemu_cpu_list_lock only (cpus-common.c @d6ea4236), and the
//     MTTCG vCPU thread (tcg-accel-ops-mttcg.c @017b2e73) holding the BQL
//     outside cpu_exec;
//   - cpu-lock (A.3): seed 001, "[RFC v4 71/71] cpus-common: wait on the
//     CPU lock for exclusive work completion" (Emilio G. Cota,
//     qemu-devel), where each waiter
//     sleeps on its CPU's cpu->cond, which the per-CPU-lock series also
//     uses for run_on_cpu's wi.done (cota/qemu cpus-common.c @09addeed,
//     cpus.c @031cfd04: the vCPU thread holds cpu->lock, not the BQL), and
//     whose cpu_list_add/cpu_list_remove wait in exclusive_idle().
//
// Each variant of Protocol is one switch in the model (machine.go flags);
// the buggy ones are found by the explorer, never declared.
//
// Threads are vcpu0..vcpuN-1 and io-thread. Who queues what is fixed by
// the parameters (machine.planWork): the even safe work items are queued
// by their vCPU from one of its own TBs (tb_flush, a synced TLB flush),
// the odd ones by the I/O thread while the target runs, and the I/O
// thread makes the run_on_cpu calls; with hotplug=1 it first hot-plugs a
// CPU and unplugs it at the end. The default size has three vCPUs:
// end-signals-resume's lost wake-up needs two sleepers on
// exclusive_resume besides the initiator.
//
// The guest. cpu_exec runs TBs until cpu_handle_interrupt reads
// exit_request = 1, which qemu_cpu_kick's cpu_exit sets; each TB is the
// environment's choice (a branch of the explorer): it touches RAM only, or
// it makes an MMIO access, which takes the BQL (io_writex; mmio=0 leaves
// this out). With tbs=0 (the default) a guest never halts: a vCPU that is
// never kicked runs TBs for ever, which the state graph holds as a cycle,
// and a forgotten kick is a progress violation. With tbs=N each guest
// halts (WFI) after N TBs, its vCPU sleeping on halt_cond until work
// queued on it kicks it; the state graph is then acyclic, which the
// metrics need to be summarised per execution.
//
// Granularity (the rule of package model): one step per lock acquire or release, condition
// variable wait, wake-up re-acquisition, signal or broadcast, and per
// access to a word read without a lock (pending_cpus, cpu->running,
// cpu->exit_request, wi.done, which go through model.Mem). Accesses to
// fields protected by a lock the thread holds share the step of the
// neighbouring lock operation: no other thread can observe them in between
// (upstream.go, cpulock.go and work.go say so where it happens). Coarser
// steps and their reasons: qemu_cpu_kick's broadcast of halt_cond and its
// store of exit_request are one step (run.kick); chained TBs are not
// modelled (vcpu.go); seed 001's walks over the CPU list read the next
// pointer in the step that leaves the previous CPU (cpulock.go nextCPU);
// QEMU's first cpu_exec, which returns at once, is skipped (vcpu.go).
//
// Sections started by an atomic instruction (step-atomic=N: the last N
// vCPUs' guests each execute one atomic instruction that cannot run in
// parallel). cpu_loop_exit_atomic makes cpu_exec return EXCP_ATOMIC; the
// thread function (mttcg_cpu_thread_fn @017b2e73, and the per-CPU-lock
// series' qemu_tcg_cpu_thread_fn, cota/qemu cpus.c @031cfd04, with
// cpu->lock for the BQL) retakes its lock after cpu_exec_end, then drops
// it and calls cpu_exec_step_atomic, which runs the one-instruction TB
// between start_exclusive and end_exclusive (accel/tcg/cpu-exec.c
// @886cc689, where start_exclusive comes before the TB lookup since the
// fix for Launchpad bug 1863025), and retakes the lock. The instruction
// may touch MMIO (an atomic access to an MMIO page is one way to get
// there: atomic_mmu_lookup stops the world), taking the BQL inside the
// section: the environment's choice, as for any TB. The cpu->running =
// true / false that later upstream code sets around the TB are not
// written: no thread reads cpu->running while the section is active
// (vcpu.go, pcVAtomicTB). The real implementation has the same path
// (impl_threads.go, stepAtomic), checked against the model by
// TestImplConformanceStepAtomic.
//
// The hot-plugged CPU's own vCPU thread (hotplug-thread=1, with
// hotplug=1): thread vcpuN for CPU N, the one after the vCPUs, and the
// I/O thread comes after it. After cpu_list_add the I/O thread runs
// qemu_init_vcpu (cpu->stopped = true, the thread created, wait for
// cpu->created) and cpu_common_realizefn's cpu_resume (system/cpus.c
// @05927e9d, hw/core/cpu-common.c @06b40d25); the thread (mttcg_cpu_thread_fn
// @017b2e73) signals cpu->created, sleeps on halt_cond while stopped, and
// once resumed runs the vCPU loop from cpu_exec_start: what seed 001's
// exclusive_idle() in cpu_list_add protects. Before cpu_list_remove the
// I/O thread runs cpu_remove_sync (stop, unplug, kick, join); the thread
// stops in qemu_wait_io_event_common, leaves its loop and returns. Seed
// 001's base does the same on cpu->lock and cpu->cond (cota/qemu cpus.c
// @031cfd04: qemu_tcg_init_vcpu and cpu_remove_sync wait on cpu->cond for
// cpu->created). hotplug.go has the steps. The run state this needs
// (stop, stopped, unplug, created) is appended to the state encoding only
// at these configurations. Model-only for now: the real implementation
// refuses hotplug-thread=1. Its goroutines are created at the start in
// the model's thread order, which rt numbers them by, and this thread,
// which the model places before the I/O thread, is created by the I/O
// thread in the middle of a run: the code would need it started at once
// and held until qemu_thread_create.
//
// vm_stop and vm_start (pause=1): after queuing its safe work the I/O
// thread sets the run state paused and runs pause_all_vcpus (cpu_pause on
// every listed CPU, then waits on qemu_pause_cond until every
// cpu->stopped, kicking them all after each wake-up), drops and retakes
// the BQL, and resumes every CPU (system/cpus.c @05927e9d; pause.go). The
// vCPU loop follows cpu_can_run, cpu_thread_is_idle and
// qemu_wait_io_event_common's qemu_cpu_stop, so a stopped vCPU still runs
// work queued on it, safe work included. Seed 001's branch has its own
// pause_all_vcpus (cota/qemu cpus.c @031cfd04): without the BQL, a stop
// and kick of each CPU under cpu->lock, then for each CPU a kick of every
// CPU and one if (!cpu->stopped) qemu_cond_wait(&cpu->cond); the run
// state is set after it. That wait shares cpu->cond with the series'
// exclusive waiters and run_on_cpu callers, and the explorer finds it
// returning before a CPU has stopped (vm-stop-stops); the series' v9
// re-reads cpu->stopped (cpu-lock-pause-recheck, ok). No guest TB runs in
// the stopped window in either scheme (no-guest-while-stopped). The real
// implementation has all three (impl_pause.go), checked against the model
// by TestImplConformance's pause=1 size, and the kept trace of the early
// return replays on it.
//
// One vCPU queueing work on another without the BQL (cross-work=1): the
// last vCPU, from one of its TBs, queues an async_run_on_cpu item on
// vcpu0, as tlb_flush_page_by_mmuidx_all_cpus_synced's flush_all_helper
// does on every other CPU
// (queue_work_on_cpu: work_mutex, append, qemu_cpu_kick, cpus-common.c
// @d6ea4236). Upstream's halted vCPU reads its work list in
// cpu_thread_is_idle with the BQL only (cpu_work_list_empty,
// QSIMPLEQ_EMPTY_ATOMIC, system/cpus.c @05927e9d) and then waits on
// halt_cond: that read becomes a step of its own (machine.racyIdle), and
// the explorer finds the kick's broadcast falling between the two, vcpu0
// asleep with the item queued (a deadlock here, where nothing else ever
// kicks it; in QEMU the item waits for the CPU's next interrupt). Seed
// 001's branch reads the list under cpu->lock, which the queuer holds
// while it appends and kicks. The item's func runs with the BQL, as a
// run_on_cpu item's; safe-work-runs covers it. The real implementation
// has it too: the list's length is an atomic that upstream's idle test
// reads as a step of its own, published in the step of the queuer's
// unlock (world.unlockPublish); the conformance test runs a cross-work
// size and the kept trace of the lost wake-up replays on the code.
//
// Spurious wake-ups: with spurious=1 (and always in if-not-while) every
// thread may wake once from any qemu_cond_wait without being signalled, as
// a step of its own, and then re-checks its predicate. Once per thread
// keeps the state space finite and the state graph acyclic where it was;
// a progress verdict with spurious=1 holds for executions with at most one
// spurious wake-up per thread. An idle vCPU's sleep on halt_cond is not
// offered one (machine.idle).
//
// Memory model: sequentially consistent by default (memory=0); memory=1
// runs the machine under x86-TSO (model.WithTSO: one store buffer per
// thread, commits as steps of a "store buffers" thread). The words of
// model.Mem are then stored into the buffer and may be passed by the
// thread's later loads; smp_mb() and qatomic_set_mb drain it
// (x.Fence(s.mem)), and so does every mutex operation, lock, unlock and
// the release and re-acquire of a condition variable wait, because
// QemuMutex on x86 (glibc) takes and releases with locked instructions
// (run.go says why that is also the sound choice for the model). Under
// TSO upstream stays correct and every other variant keeps its verdict and
// its shortest counterexample (tso_test.go). no-smp-mb is V-A1:
// upstream without the smp_mb() of cpu_exec_start and start_exclusive. It
// is defined on x86-TSO, where the barrier matters, and so runs with store
// buffers whatever memory says (without them it explores exactly
// upstream's states). memory=2 runs it on an arm64 host's memory
// (model.WithARMv8NoPromises: ARMv8 with each thread's writes in program
// order, safety and deadlock only): qatomic_read/qatomic_set are plain LDR/STR, smp_mb() is
// DMB ISH, and each mutex has a lock word (machine.lockWord) taken with an
// acquire CAS and released with a release store, as glibc does on arm64,
// which is what orders one holder's critical section after the last.
// drop-mb=N leaves one smp_mb() out (dropStartExclusive ...): under ARMv8
// each of the handshake's three is found (matrix.go's arm64 rows). The
// real implementation runs on Go's sequentially consistent atomics and
// refuses memory=1 and 2.
//
// Properties: mutual-exclusion (A1-S1: no CPU inside cpu_exec while an
// exclusive section runs), single-exclusive (A1-S2), work-once (A2-S1:
// each work item runs once; run_on_cpu returns only after its item ran),
// the seed's own g_assert(!exclusive_waiter) and g_assert(exclusive_ongoing),
// qemu_mutex's own checks ("mutex"), deadlock, whose report names what
// each thread sleeps on and whether its predicate already holds (a lost
// wake-up), and three progress properties checked by bfs under weak
// fairness: start-exclusive-proceeds (A1-L1: a thread in start_exclusive
// eventually returns from it), cpu-exec-start-proceeds (A1-L2: a
// thread in cpu_exec_start eventually enters cpu_exec) and safe-work-runs
// (A2-L2: a safe work item queued by async_safe_run_on_cpu eventually
// runs; it is not judged in a state where a guest MMIO access holds the
// BQL, because weak fairness would let such a guest starve every thread
// that waits for the BQL, properties.go says why that gives nothing up).
// The spec (spec.go)
// checks histories of exclusive sections, stays in cpu_exec and
// run_on_cpu calls against a generation counter.
//
// Metrics: wakeups (threads woken by a signal or broadcast), lock-handoffs
// (a woken thread re-acquiring its mutex), list-lock-acquisitions
// (acquisitions of the one global qemu_cpu_list_lock, the contention the
// seed set out to remove). The verification matrix and the seed's claims
// are in matrix.go.
//
// Ids (the tests, the variants' Sources and the README use them). Parts
// of the protocols: A.1 is upstream's exclusive sections
// (start_exclusive/end_exclusive, cpu_exec_start/cpu_exec_end in
// cpu-common.c), A.1 (c) their steps; A.2 is the work queues, the kick and
// the vCPU loop (queue_work_on_cpu, do_run_on_cpu,
// process_queued_cpu_work, mttcg_cpu_thread_fn), A.2 (c) their steps; A.3
// is seed 001's per-CPU-lock exclusive sections, A.3 (c) their steps, and
// A.3 (d') the analysis of its lost wake-ups: cpu->cond carries three
// predicates (!exclusive_waiter for the initiator, !exclusive_ongoing for
// the vCPU, wi.done for run_on_cpu callers), so a qemu_cond_signal meant
// for one waiter can wake another whose predicate is still false; with one
// waiter per predicate the signal would be safe, and qemu_cond_broadcast
// (cpu-lock-broadcast) is the proposed fix. Properties: A1-S1, A1-S2,
// A2-S1, A1-L1 and A1-L2 as above. Known bugs and mutations:
//
//   - H1: start_exclusive waits with if instead of while (the old
//     linux-user/main.c): if-not-while.
//   - H2: an exclusive section entered with the BQL held, which the
//     comment in process_queued_cpu_work forbids: bql-held.
//   - H3: cpu_list_add runs finish_safe_work (cpu_exec_start/end) under
//     the BQL (added by ab129972, removed by Roman Kagan's "cpus-common:
//     nuke finish_safe_work", QEMU 4.2): finish-safe-work.
//   - H5: one thread calls start_exclusive twice without the nesting
//     counter (fixed by Ilya Leoshkevich's "cpus: Make
//     {start,end}_exclusive() recursive", 2023): non-recursive.
//   - H6: start_exclusive called from inside cpu_exec counts the caller
//     itself (QEMU issue #2566, fixed by 7ba055b49b74 "target/i386: fix
//     hang when using slow path for ptw_setl"): exclusive-from-exec.
//   - LW-1, LW-2: seed 001's lost wake-ups on cpu->cond (cpu-lock). LW-1:
//     end_exclusive's signal meant for the vCPU sleeping in
//     cpu_exec_start wakes a run_on_cpu waiter instead. LW-2:
//     cpu_exec_exclusive_locked's signal meant for start_exclusive wakes
//     a run_on_cpu waiter instead.
//   - V-A1: mutation: the smp_mb() of cpu_exec_start and start_exclusive
//     dropped: no-smp-mb.
//   - V-A4: mutation: cpu_exec_end decrements pending_cpus whenever it is
//     > 1, without checking has_waiter: end-decrements-always.
//   - V-A5: mutation: end_exclusive signals exclusive_resume instead of
//     broadcasting it: end-signals-resume.
//   - V-A6: mutation: the kick missing in start_exclusive: no-kick; the
//     kick missing in async_safe_run_on_cpu's queue_work_on_cpu:
//     safe-work-no-kick, which only safe-work-runs catches (the vCPU runs
//     TBs on with the item queued, and no thread waits for it).
package exclusive
