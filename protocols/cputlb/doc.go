// Package cputlb models QEMU's broadcast TLB invalidate under MTTCG: a
// source vCPU executes a guest TLB-invalidate instruction whose helper calls
// tlb_flush_page_by_mmuidx_all_cpus_synced (or, in the buggy variant, the
// non-synced tlb_flush_page_by_mmuidx_all_cpus), and target vCPUs keep
// executing guest code through their softmmu TLB until they leave cpu_exec
// and drain their work list.
//
// What is modelled, one atomic step per shared access, lock operation,
// condition-variable operation, work-list operation, kick and TLB
// fill/use/flush (folded critical sections say why in a comment):
//
//   - The source (cpu0): clears the PTE of page X, queues one flush job per
//     target through flush_all_helper (async_run_on_cpu, or
//     async_run_on_cpu_no_bql after seed 000) with qemu_cpu_kick, queues its
//     own flush as safe work (async_safe_run_on_cpu) and ends the TB
//     (cpu_loop_exit); its next guest instruction is the synchronisation
//     point of the property.
//   - Every vCPU runs mttcg's loop of the per-CPU-lock branch that seed 000
//     applies to: cpu_exec_start, cpu_exec (exit_request tested before
//     each TB), cpu_exec_end, atomic_mb_set(exit_request, 0),
//     qemu_tcg_wait_io_event (sleep on halt_cond while halted and idle) and
//     process_queued_cpu_work, which takes the BQL only around wi->bql
//     items and runs exclusive items under start_exclusive/end_exclusive.
//     In that branch the loop itself holds cpu->lock, not the BQL, which is
//     why a flush job queued with async_run_on_cpu costs a BQL acquisition
//     and one queued with async_run_on_cpu_no_bql does not.
//   - The exclusive protocol is upstream's lock-free pending_cpus/has_waiter
//     protocol with its smp_mb pairs, under sequential consistency, with the
//     source as its only initiator (protocols/exclusive covers the rest).
//   - TLBs are abstract: one page X, mapped to frame P until the source
//     clears its PTE; each vCPU's TLB either holds X->P or not. Every vCPU
//     starts with X->P cached, its work list drained, about to enter
//     cpu_exec. A target's guest performs `accesses` loads from X (TLB hit,
//     or tlb_fill that finds the PTE clear and faults), then halts.
//
// Properties: no-stale-translation (qemu.md A4-S1: once the source has
// executed the instruction after the invalidate, no vCPU uses a translation
// of X cached before it; the observer is in the state), work-once (A4-S2:
// each flush item runs exactly once on its target and its data and work
// item are freed exactly once), deadlock (found by the explorer; a
// blocked step's label names the condition variable or lock the vCPU
// waits for), and
// linearizability against a register specification of X's mapping
// (spec.go). Metrics: bql-acquisitions and kicks.
//
// Not modelled: spurious wake-ups (every wait in this code re-tests its
// predicate in a loop), several initiators, the non-TCG accelerators, the
// jump cache and tlb.c.lock (only the owner thread touches its TLB here),
// and weak memory.
//
// Sources: seed 000_b36807347ebe5ed1 ("[PATCH v8 74/74] cputlb: queue async
// flush jobs without the BQL", Emilio G. Cota); QEMU accel/tcg/cputlb.c of
// the v5.0 era (the seed's context) and at 0039e5fd22344fec664c980d7a27443568834264;
// cpus-common.c and cpus.c of the per-CPU-lock branch, cota/qemu
// 09addeed1581c6b073f6e4c3f5a78953681c8f19 and 031cfd0447efaafb1759f0f7f1808144ef1c4cf1;
// ba3186c4e473963ba83b5792f3d02d4ac0a76ba5 (the _synced API and its
// contract); 4ddc104689b and 82676f1fc4b1511a5fe32256aaec885d200ffbf6
// (target/ppc tlbie fixes: the non-synced flush and the TB that is not
// ended); /work/shared/protocols/qemu.md, sections A.1, A.2, A.4 and A.5.
package cputlb
