// Package batchunmap models the batched TLB flush of page reclaim
// (ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH) and the syscalls that must drain it.
//
// Reclaim (shrink_folio_list → try_to_unmap_one) clears a PTE under its
// page-table lock (PTL) and, instead of flushing at once, records the flush
// in its per-task batch (set_tlb_ubc_flush_pending: the batch cpumask,
// flush_required, writable) and in mm->tlb_flush_batched. It flushes the
// batch before pageout of a dirty page (try_to_unmap_flush_dirty) and before
// freeing (try_to_unmap_flush). Meanwhile a remote CPU may still use the old
// translation. A syscall that inspects PTEs under a PTL and trusts "PTE
// none ⇒ not cached" must first drain reclaim's pending flushes with
// flush_tlb_batched_pending, which reads tlb_flush_batched.
//
// The model: one or two reclaimers (kswapd on CPU0, a second on CPU2),
// each with its own batch, reclaim disjoint pages (page i is mapped at va
// i of mm i%mms, under PTL i%ptls, reclaimed by reclaimer i%reclaimers),
// or with contend=1 start with those and contend for the folios they keep
// under writeback and put back on the LRU (folio_trylock, the keep path,
// move_folios_to_lru after the flush, a second pass of isolate_lru_folios); a
// syscall thread of mm0 on CPU1 runs a program of mprotect(PROT_READ),
// madvise(MADV_FREE) (dropping and re-taking the PTL to split a large
// folio), munmap and madvise(MADV_DONTNEED), or of MADV_COLD or
// MADV_PAGEOUT (madvise_cold_or_pageout_pte_range), or with mremap of va0
// to a new address (move_ptes, under both PTLs), each flushing through its
// mmu_gather after it drops the PTL, as tlb_finish_mmu does; user tasks
// read and write through their CPUs' TLBs (a miss walks the page table, a
// write through a clean entry writes the dirty bit through, as
// try_to_unmap_one's comment requires) and are scheduled out and in on
// other CPUs through switch_mm, so mm_cpumask changes; an allocator hands
// freed pages to new owners. The architecture decides how mm_cpumask
// changes and how a flush completes: riscv (the seed's: bits kept by
// switch_mm since 82dd33fde026, cleared without a flush before it), x86
// (tlb_gen, a flush handler step per target CPU, in four eras: v4.14's
// switch_mm clearing the old mm's bit and choose_new_asid catching a stale
// ASID up; v4.20's lazy TLB, whose kernel threads keep the mm loaded and
// are skipped by flush IPIs, and whose return to the mm compares tlb_gen;
// v6.0's early return on f->new_tlb_gen; v6.14's lazy mm_cpumask), arm64
// (broadcast TLBIs issued at unmap time, completed only by the issuing
// CPU's DSB). PTEs, tlb_flush_batched, mm_cpumask and x86's
// context.tlb_gen are memory-layer words; the PTLs are model.Mutex; TLB
// contents, page states and contents, in-flight TLBIs and the notes that
// explain a violation are bookkeeping outside the layer. tlb_flush_batched
// has pending and flushed fields of `width` bits with a guard bit between
// them, laid out as in 5ee2fa2f0636 but narrow, so that a wrap is reachable.
//
// Properties: no-use-after-free (P1: no access
// through a stale entry to a freed or reused page), no-lost-write (P2: no
// write after pageout's snapshot), syscall-postcondition (P3: no write
// through an entry older than a returned mprotect or MADV_FREE, no access
// through one older than a returned munmap or MADV_DONTNEED), all checked
// at the access that does the harm; flush-before-free (P4) and
// counter-sound (P5) check the bookkeeping and fail where a flush is lost,
// before any harm, when the parameter bookkeeping=1; syscall-returns
// (progress, under weak fairness): every call of the syscall thread
// returns. The process's memory is also a porcupine spec (memorySpec): a
// stale write after mprotect returned, or a stale read of a reused page,
// makes the history non-linearizable.
//
// Memory: sequentially consistent by default. With memory=2 an arm64
// variant runs under ARMv8 with each thread's writes in program order
// (model.WithARMv8NoPromises): tlb_flush_batched and a lock word per PTL
// move into an ARMv8 Mem (state.wm) shared by the reclaimers and the
// syscall threads, with the orderings of the real code (queued_spin_lock's
// acquire cmpxchg, queued_spin_unlock's release store, atomic_read and
// atomic_inc relaxed, atomic_cmpxchg fully ordered); the PTEs stay
// sequentially consistent, since every access to one is made under its
// PTL or by a page-table walker. syscall-returns is not checked there.
// weaken=N takes one of those orderings away (1 the unlock's release, 2
// the lock's acquire, 3 the drain's cmpxchg's full ordering);
// docs/batchunmap.md gives what the explorer finds for each and why.
//
// Metrics count reclaim's flushing: flush rounds, remote invalidations per
// target CPU (IPIs or SBI remote fences), drains by flush_tlb_batched_pending,
// unmapped pages, the CPUs in the batch cpumask at each batch flush
// (which grows with the number of mms under riscv-sticky-mask), and arm64's
// TLBIs and DSBs.
//
// Sources: seed 004 (Alexandre Ghiti, "riscv: Add support for
// BATCHED_UNMAP_TLB_FLUSH", 54d7431af73e) and its fix 3951f6add519
// ("riscv: Fix arch_tlbbatch_flush() by clearing the batch cpumask");
// mm/rmap.c: 72b252aed506 (batched unmap flush, 2015), d950c9477d51
// (writable and try_to_unmap_flush_dirty), b385d21f27d8 (delete
// init_tlb_ubc, the nested reset), 3ea277194daa (bool tlb_flush_batched and
// flush_tlb_batched_pending), 5ee2fa2f0636 (pending/flushed generations
// with the overflow reset); mm/madvise.c 383c4613c67c (drain again after
// re-taking the PTL); riscv 82dd33fde026 (keep mm_cpumask bits with
// ASIDs); arm64 43b3dfdd0455 and 4b634918384c (the drain flushes the mm,
// not only a local DSB); x86 209954cbc7d0 (lazy mm_cpumask).
//
// Known variants and bugs, by id (the tests and the README use them; the
// property ids P1-P5 are above, and L1-L2 stands for the progress property
// syscall-returns):
//
//   - D-v1: tlb_flush_batched as a bool with flush_tlb_batched_pending
//     (3ea277194daa, 2017-2022): correct while every race goes through one
//     PTL, buggy across two (D-bug2).
//   - D-bug1: batching without flush_tlb_batched_pending (72b252aed506,
//     fixed by 3ea277194daa): no-pending-flush.
//   - D-bug2: the bool cleared after the drain's flush while another
//     reclaim set it under another PTL (fixed by 5ee2fa2f0636): bool-flag.
//   - D-bug2c: pending/flushed generations without the PENDING_LARGE
//     reset, so pending wraps onto flushed: no-overflow-reset.
//   - D-bug3: nested reclaim's init_tlb_ubc clears flush_required (fixed by
//     b385d21f27d8): nested-reset.
//   - D-bug4: pageout of a dirty page without try_to_unmap_flush_dirty
//     (designed against by d950c9477d51): no-flush-dirty.
//   - D-bug5: madvise re-takes the PTL after split_folio without draining
//     again (fixed by 383c4613c67c): madvise-retake.
//   - D-bug6: arm64's drain is a dsb(ish) on the syscall's own CPU, which
//     does not complete another CPU's TLBIs (43b3dfdd0455, fixed by
//     4b634918384c): arm64-dsb-only.
//   - D-bug6b: arm64 again: must try_to_unmap_flush complete the TLBIs
//     another reclaimer issued (the question dbug6b_test.go settles, on
//     every architecture, with reclaimers contending for folios:
//     contend=1, and the putback-before-flush mutation), and a reclaimer
//     migrating between arch_tlbbatch_add_pending and arch_tlbbatch_flush,
//     which relies on __switch_to's dsb(ish).
//   - D-bug8: riscv with ASIDs, switch_mm clears the old CPU's mm_cpumask
//     bit without a flush (65d4b9c53017, fixed by 82dd33fde026; Guo Ren's
//     schedule is a stale read after a COW flush sent to the mask):
//     riscv-asid-clear.
//   - D-bug9: x86 INVLPGB, broadcast ASIDs flushed through the cpumask
//     only (not modelled).
//   - mremap-late-flush: move_ptes flushes the old address after
//     dropping both PTLs (before eb66ae030829, CVE-2018-18281), with
//     reclaim that does not batch: reclaim unmaps the page at the new
//     address, flushes that address only, and frees it.
//   - no-nested-flush: two madvise(MADV_DONTNEED) calls whose
//     mmu_gathers nest (nested=1), before 99baac21e458: tlb_finish_mmu
//     does not flush the mm when mm_tlb_flush_nested.
//   - arm64-switch-no-dsb (a mutation of arm64-migrate): a reclaimer
//     migrates after deferring a page, and __switch_to lacks the dsb(ish)
//     that completes the TLBIs it issued on the CPU it leaves.
//   - x86-no-catch-up (a mutation of v4.14-v4.19): switch_mm clears the
//     old mm's bit, so flushes skip the CPU, and choose_new_asid reuses
//     the ASID without comparing its tlb_gen.
//   - x86-gen-zero: aa44284960d5 (v6.0-rc, linux-next, July 2022) before
//     8f1d56f64f8d: flush_tlb_func compares the batch flush's
//     f->new_tlb_gen 0 with the local tlb_gen and returns (Hugh Dickins:
//     try_to_unmap_one would not perform any TLB flushes).
//   - D-bug10: set_tlb_ubc_flush_pending's pte_accessible skip without
//     the pending-flush check (not modelled).
//
// Finding: the generation variant (mainline) is not correct at every
// size. flush_tlb_batched_pending's cmpxchg can succeed after 2^(width-1)
// deferrals under other PTLs bring tlb_flush_batched back to the value it
// read (the overflow reset cycles pending through 1..LARGE+1), and the
// newest deferral is lost (TestGenerationABA). The default size does not
// reach it; in Linux it takes 16384 deferrals under other PTLs while one
// drainer sits between its atomic_read and its atomic_cmpxchg: improbable,
// not impossible (a drainer preempted there under a sleeping PTL on
// PREEMPT_RT, or a descheduled guest vCPU).
//
// Simplifications, each with its reason at the code: a TLB fill and the
// access it serves are one step; a riscv or arm64 flush round (all IPIs
// and their acks, or a TLBI and its DSB) is one step, an x86 round a step
// per target CPU; split_folio is one step; writeback completes at once
// (with contend=1, by the folio's next pass); a fault on a swapped-out
// page ends the access (swap-in is not modelled, and the spec accepts any
// outcome for it); a reclaimer stays on its CPU, but in arm64-migrate,
// where it may move once, after unlocking a PTL with a TLBI in flight;
// mm->tlb_flush_pending only with nested=1 (syscall.go says why); riscv's
// ASID rollover is not modelled (it clears no mm_cpumask bit and only
// adds flushes: docs/batchunmap.md).
// x86: PCID is on (v4.14 without PCID makes every switch_mm to another mm
// flush the whole TLB and sends flush IPIs to lazy CPUs, strictly more
// flushing than with it); an ASID slot is never taken by another process
// (choose_new_asid flushes a slot it hands over, and a 64-bit ctx_id never
// repeats, so eviction only adds flushes); init_mm stands as "another
// process's mm" (neither holds a tracked entry); a lazy CPU is left only
// by user0 coming back or by a flush IPI, not by switching to another
// process (whose switch_mm is the same as from the mm itself).
package batchunmap
