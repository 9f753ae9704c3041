// Package batchunmap models the batched TLB flush of page reclaim
// (ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH) and the syscalls that must drain it.
//
// Reclaim (shrink_folio_list → try_to_unmap_one) clears a PTE under its
// page-table lock (PTL) and, instead of flushing at once, records the flush
// in its per-task batch (set_tlb_ubc_flush_pending: the batch cpumask,
// flush_required, writable) and in mm->tlb_flush_batched. It flushes the
// batch before pageout of a dirty page (try_to_unmap_flush_dirty) and before
// freeing (try_to_unmap_flush). Meanwhile a remote CPU may still use the old
// translation. A syscall that inspects PTEs under a PTL (mprotect here) and
// trusts "PTE none ⇒ not cached" must first drain reclaim's pending flushes
// with flush_tlb_batched_pending, which reads tlb_flush_batched.
//
// The model: kswapd reclaims pages 0..pages-1 on CPU0 (page i is mapped at
// va i of mm i%mms, under PTL i%ptls); a syscall thread of mm0 on CPU1
// calls mprotect(PROT_READ) on mm0's vas; user threads on CPUs 2.. read
// and write through their TLBs (a miss walks the page table, a write
// through a clean entry writes the dirty bit through, as try_to_unmap_one's
// comment requires); an allocator hands freed pages to new owners. PTEs,
// tlb_flush_batched and mm_cpumask are memory-layer words; the PTLs are
// model.Mutex; TLB contents, page states and contents, and the notes that
// explain a violation are bookkeeping outside the layer. tlb_flush_batched
// has pending and flushed fields of `width` bits with a guard bit between
// them, laid out as in 5ee2fa2f0636 but narrow, so that a wrap is reachable.
//
// Properties (protocols/batchunmap.md): no-use-after-free (P1: no access
// through a stale entry to a freed or reused page), no-lost-write (P2: no
// write after pageout's snapshot), syscall-postcondition (P3: no write
// through an old writable entry after mprotect returned), all checked at
// the access that does the harm; flush-before-free (P4) and counter-sound
// (P5) check the bookkeeping and fail where a flush is lost, before any
// harm, when the parameter bookkeeping=1. The process's memory is also a
// porcupine spec (memorySpec): a stale write after mprotect returned, or a
// stale read of a reused page, makes the history non-linearizable.
//
// Metrics count reclaim's flushing: flush rounds, remote invalidations per
// target CPU (IPIs or SBI remote fences), drains by flush_tlb_batched_pending,
// unmapped pages, and the CPUs in the batch cpumask at each batch flush
// (which grows with the number of mms under riscv-sticky-mask).
//
// Sources: seed 004 (Alexandre Ghiti, "riscv: Add support for
// BATCHED_UNMAP_TLB_FLUSH", 54d7431af73e) and its fix 3951f6add519
// ("riscv: Fix arch_tlbbatch_flush() by clearing the batch cpumask");
// mm/rmap.c: 72b252aed506 (batched unmap flush, 2015), d950c9477d51
// (writable and try_to_unmap_flush_dirty), b385d21f27d8 (delete
// init_tlb_ubc, the nested reset), 3ea277194daa (bool tlb_flush_batched and
// flush_tlb_batched_pending), 5ee2fa2f0636 (pending/flushed generations
// with the overflow reset). The reference is /work/shared/protocols/batchunmap.md.
//
// Finding: the generation variant (mainline) is not correct at every
// size. flush_tlb_batched_pending's cmpxchg can succeed after 2^(width-1)
// deferrals under other PTLs bring tlb_flush_batched back to the value it
// read (the overflow reset cycles pending through 1..LARGE+1), and the
// newest deferral is lost (TestGenerationABA). The default size does not
// reach it; in Linux it takes 16384 deferrals inside one drain.
//
// Simplifications, each with its reason at the code: a TLB fill and the
// access it serves are one step; a flush round (all IPIs and their acks) is
// one step; mprotect's PTE update and its range flush run under the PTL;
// writeback completes at once; a fault on a swapped-out page ends the access
// (swap-in is not modelled, and the spec accepts any outcome for it).
package batchunmap
