// Package cputlb models QEMU's broadcast TLB invalidate under MTTCG
// together with every other path that touches a vCPU's softmmu TLB from
// another thread: one or two source vCPUs execute a guest TLB-invalidate
// instruction whose helper calls tlb_flush_page_by_mmuidx_all_cpus_synced
// (or, in the buggy variant, the non-synced _all_cpus); target vCPUs keep
// executing guest code through their TLB until they leave cpu_exec and
// drain their work list; the migration thread syncs the dirty bitmap,
// resets every vCPU's TLB entries (tlb_reset_dirty, the one cross-thread
// writer of a TLB) and waits for every vCPU with run_on_cpu; the main loop
// commits a memory transaction whose tcg_commit flushes every vCPU's TLB
// with async_run_on_cpu. Seed 000 moves the flush jobs off the BQL; the
// model is there to say whether anything the BQL protected breaks.
//
// What is modelled, one atomic step per shared access, lock operation,
// condition-variable operation, atomic read-modify-write, kick and TLB
// fill/use/flush (folded critical sections say why in a comment):
//
//   - A source: clears the PTE of its page X_s, queues one flush job per
//     other vCPU through flush_all_helper (tlb_flush_page_by_mmuidx_async_1
//     via async_run_on_cpu, or async_run_on_cpu_no_bql after seed 000)
//     with qemu_cpu_kick, queues its own flush as safe work
//     (async_safe_run_on_cpu) and ends the TB (cpu_loop_exit); its next
//     guest instruction is the synchronisation point of the property.
//   - Every vCPU runs mttcg's loop of the per-CPU-lock branch that seed 000
//     applies to: cpu_exec_start, cpu_exec (exit_request tested before
//     each TB), cpu_exec_end, atomic_mb_set(exit_request, 0),
//     qemu_tcg_wait_io_event (sleep on halt_cond while halted and idle) and
//     process_queued_cpu_work, which takes the BQL only around wi->bql
//     items, runs exclusive items under start_exclusive/end_exclusive,
//     frees each item or sets its wi->done, and broadcasts cpu->cond once
//     the list is drained. The loop holds cpu->lock, not the BQL, which is
//     why a job queued with async_run_on_cpu costs a BQL acquisition and
//     one queued with async_run_on_cpu_no_bql does not.
//   - The exclusive protocol is upstream's lock-free pending_cpus/has_waiter
//     protocol with its smp_mb pairs, under sequential consistency
//     (protocols/exclusive covers its own bugs).
//   - The softmmu TLB (softmmu.go): a target's guest loads from the
//     sources' pages (hit, or tlb_fill's page walk and tlb_set_page); the
//     first target also reads an MMIO page M (io_readx resolves the
//     entry's section index with iotlb_to_section against the vCPU's
//     memory_dispatch) and stores twice to a RAM page D (store_helper:
//     the lock-free comparator read, notdirty_write with its dirty-bit
//     update, is_clean check and tlb_set_dirty, tlb_fill with its is_clean
//     check, the store). tlb.c.lock protects every write of a TLB entry;
//     each critical section on it is one step (Lipton), so the lock is
//     never held between steps and the model keeps no state for it.
//   - The migration thread (dirty.go): with the BQL,
//     cpu_physical_memory_sync_dirty_bitmap's atomic_xchg of D's word,
//     then (since 03bfc2188f) tlb_reset_dirty of every vCPU, then
//     tcg_log_global_after_sync's run_on_cpu(cpu, do_nothing) on every
//     vCPU (drop the BQL, queue under cpu->lock, kick, wait on cpu->cond
//     until wi->done, take the BQL again); then the send of D.
//   - The main loop (commit.go): with the BQL, the switch to the new map,
//     then each vCPU's tcg_commit: the v5.0 code stores the new
//     memory_dispatch and queues tlb_flush (async_run_on_cpu, _no_bql after
//     the seed); since 0d58c660689f it queues tcg_commit_cpu, which
//     switches the dispatch and flushes on the vCPU itself; since
//     2865bf1c5795 (QEMU 10.1) there is no cached dispatch: tlb_fill and
//     iotlb_to_section read the address space's current map and
//     tcg_commit_cpu only flushes; in master, tlb_set_page_full keeps the
//     section it resolved in the full TLB entry and io_prepare uses it.
//   - With rcu=1 (rcu.go), the old map's lifetime: the vCPUs' RCU read
//     sections around cpu_exec, call_rcu(flatview_destroy) when the map
//     is switched, the call_rcu thread's synchronize_rcu and, with the
//     BQL, address_space_dispatch_free; and a device interrupt pending on
//     the first target, which cpu_exec delivers before it tests
//     exit_request, reading the vector table through a TLB fill.
//   - With vcpu-commit=1 (vcpucommit.go), the transaction is committed by
//     the first target itself: an instruction stores to a device's BAR
//     (the MMIO write commits, with the BQL, on the vCPU's thread) and
//     then loads from M with what mmu_lookup found before the store; in
//     v5.0 tcg_commit flushes the writer's own TLB at once and
//     cpu_reloading_memory_map splits its read section.
//   - With iommu=1 (iommu.go), an IOMMU thread with the BQL unmaps a
//     translation the first target caches, and tcg_iommu_unmap_notify's
//     tlb_flush flushes that vCPU's TLB: on the notifying thread since
//     30933c4fb4f3, queued on the vCPU before; the first target's TLB
//     loads then read the comparator and the addend in two steps, as the
//     TCG-generated inline lookup does (so iommu=1 needs commit=0 and
//     migration=0: M's and D's accesses fold their lookup into the use,
//     which is sound only while no other thread writes the vCPU's TLB).
//
// Every vCPU starts with X_s->P cached, its work list drained, about to
// enter cpu_exec; the first target has stored to D since the migration
// stream last carried it, so D's dirty bit is set and its TLB entry of D
// is writable, and its TLB holds M (filled under dispatch generation 0).
//
// Properties: no-stale-translation (A4-S1: once source s has
// executed the instruction after its invalidate, no vCPU uses a
// translation of X_s cached before it), work-once (each work item runs
// exactly once and is freed, or marked done, exactly once), dirty-tracking
// (the migration dirty bitmap covers every store since D was last sent),
// dispatch-coherent (io_readx never resolves a section index against a
// dispatch other than the one its entry was filled from), tlb-owner-only
// (with iommu=1: no thread but a vCPU's own flushes its TLB between the
// comparator and the addend of one of its lookups), dispatch-live
// (with rcu=1: no access reads a dispatch, or a section of one, that the
// call_rcu thread has freed), deadlock, one
// progress property per source ("the source's next instruction
// eventually runs", checked by bfs under weak fairness), and
// linearizability against a register specification of each page's
// mapping (spec.go). Metrics: bql-acquisitions, flush-bql-acquisitions,
// kicks, tlb-lock-acquisitions.
//
// Variants: the code of the seed's era with and without the seed
// (synced, synced-no-bql), the same with the later fixes of the foreign
// paths (synced-fixed, synced-no-bql-fixed: for the dispatch, QEMU 8.2 to
// 10.0), the fixed code without each fix (sync-no-reset,
// is-clean-unlocked, commit-direct), QEMU since 10.1 (dispatch-uncached,
// until the section was kept in the entry; master) with two fixes for
// master (master-rfc: the RFC alone; master-map-gen: the entry also keeps
// its map's generation, and an access refills an entry of an older map
// instead of using its section), and the flush's own bugs (non-synced,
// synced-no-tb-end, no-kick). The verification matrix and the seed's
// claims are in matrix.go.
//
// What the eras of the dispatch come to (docs/findings/qemu-dispatch.md
// has the traces): v5.0 to 8.1 resolve an old entry's index in the new
// map (gitlab #1826); 0d58c660689f's deferral closes that and, with
// rcu=1, uses the freed dispatch through the cached pointer (gitlab
// #3040, 17 steps); 2865bf1c5795 closes that and reopens the first
// window (7 steps); master's full->section closes it again and, with
// rcu=1, uses a freed section (22 steps) when a vCPU enters its read
// section after the grace period began and before tcg_commit kicks it.
//
// Ids of the flush's bugs (the variants, the tests and protocols/exclusive
// use them): H9, a broadcast invalidate through the non-synced
// tlb_flush_*_all_cpus, so the source goes on while remote vCPUs still
// translate with stale entries (ppc tlbie, fixed by 82676f1fc4b1
// "target/ppc: Fix broadcast tlbie synchronisation"): non-synced; H10, a
// synced flush without ending the TB (4ddc104689b "target/ppc: Fix
// tlbie"): synced-no-tb-end; V-A6, a mutation, a flush job queued without
// kicking its target: no-kick.
//
// Not modelled: tlb_protect_code (the same tlb_reset_dirty, from a vCPU
// thread holding no BQL, so it cannot tell the seed's two flavours apart;
// the migration thread, which holds the BQL, is the case that could),
// the VGA refresh as a thread of its own (the same code as the migration
// sync, in the main loop), CPU reset's tlb_flush (vCPUs paused), the victim
// TLB and the jump cache, TLB resizing, spurious wake-ups (every wait
// here re-tests its predicate in a loop), the non-TCG accelerators and weak
// memory; the call_rcu thread's batching sleep (a heuristic, not a
// synchronisation, so the model lets it take any time); TLB resizing in
// a flush from another thread (tlb_mmu_resize_locked frees the table the
// owner may be reading); cpu_exec_step_atomic (which runs without a read
// section); a commit by the main loop and one by a vCPU in the same run;
// and, in the real implementation, rcu=1 (it refuses it: the call_rcu
// thread's waits need a wait-until primitive that explorer/rt does not
// have yet).
//
// Sources: seed 000_b36807347ebe5ed1 ("[PATCH v8 74/74] cputlb: queue async
// flush jobs without the BQL", Emilio G. Cota); QEMU accel/tcg/cputlb.c at
// 570ef3093b5ed327249397ad0295cf01c67d9db4 (v5.0, the seed's base) and at
// 0039e5fd22344fec664c980d7a27443568834264 (master); exec.c and
// include/exec/ram_addr.h of the v5.0 era; cpus-common.c and cpus.c of the
// per-CPU-lock branch, cota/qemu 09addeed1581c6b073f6e4c3f5a78953681c8f19
// and 031cfd0447efaafb1759f0f7f1808144ef1c4cf1; 9458a9a1df1a (run_on_cpu
// after the dirty sync); aa8dc044772 and its fix
// 03bfc2188f061aa8381403f9280555f4e22c35a2; Nicholas Piggin's RFC
// <20240220041922.373029-2-npiggin@gmail.com>; 0d58c660689f6da1e3feff8a997014003d928b3b;
// ba3186c4e473963ba83b5792f3d02d4ac0a76ba5 (the _synced API);
// 4ddc104689b and 82676f1fc4b1511a5fe32256aaec885d200ffbf6 (target/ppc
// tlbie fixes); 2865bf1c579 (<20250724161142.2803091-1-pierrick.bouvier@linaro.org>,
// gitlab #3040); QEMU accel/tcg/cputlb.c at 0039e5fd2234 and
// system/physmem.c at 02825d1e5577 (master: full->section, no
// iotlb_to_section); the qemu-devel thread "Record AS in full tlb"
// (December 2025, <0d3b4338-2c31-4e42-8a8e-319f3ad4029f@linaro.org>);
// accel/tcg/cputlb.c's mmu_lookup and do_st_mmio_leN/do_ld_mmio_beN;
// tcg_iommu_unmap_notify (system/physmem.c at 02825d1e5577) and
// tlb_flush_by_mmuidx (cputlb.c at 0039e5fd2234), 30933c4fb4f3
// (<20240523230747.45703-6-npiggin@gmail.com>);
// util/rcu.c and system/memory.c (call_rcu, synchronize_rcu,
// flatview_unref, flatview_destroy); QEMU cpu-common.c at
// 18530e7c57dec3d82d02ed17038661e2005162c1 (the upstream exclusive
// protocol and the work queues).
package cputlb
