package batchunmap

import "github.com/protocheck/protocheck/model"

// Variant names.
const (
	Immediate        = "immediate"
	Generation       = "generation"
	NoPendingFlush   = "no-pending-flush"
	BoolFlag         = "bool-flag"
	NoOverflowReset  = "no-overflow-reset"
	NestedReset      = "nested-reset"
	NoFlushDirty     = "no-flush-dirty"
	RiscvStickyMask  = "riscv-sticky-mask"
	RiscvASIDClear   = "riscv-asid-clear"
	MadviseRetake    = "madvise-retake"
	X86              = "x86"
	X86V414          = "x86-v4.14"
	X86V420          = "x86-v4.20"
	X86V60           = "x86-v6.0"
	X86NoCatchUp     = "x86-no-catch-up"
	X86GenZero       = "x86-gen-zero"
	PutbackEarly     = "putback-before-flush"
	NoNestedFlush    = "no-nested-flush"
	MremapLateFlush  = "mremap-late-flush"
	ARM64Migrate     = "arm64-migrate"
	ARM64SwitchNoDSB = "arm64-switch-no-dsb"
	ARM64            = "arm64"
	ARM64DSBOnly     = "arm64-dsb-only"
)

// variantNames lists the variants in Protocol's order.
var variantNames = []string{Immediate, Generation, NoPendingFlush, BoolFlag, NoOverflowReset, NestedReset, NoFlushDirty, RiscvStickyMask,
	RiscvASIDClear, MadviseRetake, X86, ARM64, ARM64DSBOnly, X86V414, X86V420, X86V60, X86NoCatchUp, X86GenZero, PutbackEarly, ARM64Migrate, ARM64SwitchNoDSB, NoNestedFlush, MremapLateFlush}

// Property names (P1-P5, and the progress property L1-L2:
// every call the syscall thread makes returns).
const (
	NoUseAfterFree       = "no-use-after-free"
	NoLostWrite          = "no-lost-write"
	SyscallPostcondition = "syscall-postcondition"
	FlushBeforeFree      = "flush-before-free"
	CounterSound         = "counter-sound"
	SyscallReturns       = "syscall-returns"
)

// Protocol is the batched-unmap protocol family: reclaim's deferred TLB
// flush against the syscalls that must drain it.
var Protocol = &model.Protocol{
	Name:        "batchunmap",
	Description: "batched TLB flush during reclaim (try_to_unmap_one / try_to_unmap_flush) racing mprotect, munmap and madvise's flush_tlb_batched_pending, with moving mm_cpumasks",
	Source:      "seed 004 (riscv: Add support for BATCHED_UNMAP_TLB_FLUSH, 54d7431af73e); mm/rmap.c 72b252aed506, d950c9477d51, b385d21f27d8, 3ea277194daa, 5ee2fa2f0636; mm/madvise.c 383c4613c67c; riscv 3951f6add519, 82dd33fde026; arm64 43b3dfdd0455, 4b634918384c; x86 209954cbc7d0",
	Variants: []model.Variant{
		{Name: Immediate, Expect: model.ExpectOK,
			Description: "no batching: try_to_unmap_one flushes each PTE with flush_tlb_range under the page-table lock (riscv)",
			Source:      "mm/rmap.c before 72b252aed506 (v4.3); mainline when should_defer_flush is false"},
		{Name: Generation, Expect: model.ExpectOK,
			Description: "mainline on riscv, the seed's architecture: deferred flush, tlb_flush_batched as pending/flushed generations with the overflow reset, madvise draining after every PTL re-take, and switch_mm keeping every CPU's mm_cpumask bit",
			Source:      "5ee2fa2f0636 mm/rmap: fix potential batched TLB flush race (2022); 383c4613c67c (2025); 82dd33fde026 riscv: asid: Fixup stale TLB entry cause application crash (2023); seed 004 54d7431af73e with 3951f6add519"},
		{Name: NoPendingFlush, Expect: SyscallPostcondition,
			Description: "deferred flush without flush_tlb_batched_pending: a syscall trusts a PTE that reclaim cleared",
			Source:      "72b252aed506 (2015); race found by Nadav Amit, fixed by 3ea277194daa (2017)"},
		{Name: BoolFlag, Expect: SyscallPostcondition,
			Description: "tlb_flush_batched as a bool cleared after flush_tlb_mm: loses a deferral made under another page-table lock",
			Source:      "3ea277194daa (2017-2022); fixed by 5ee2fa2f0636"},
		{Name: NoOverflowReset, Expect: SyscallPostcondition,
			Description: "pending/flushed generations without the PENDING_LARGE reset: pending wraps onto flushed",
			Source:      "5ee2fa2f0636 v2 review (Nadav Amit: what happens on an overflow?)"},
		{Name: NestedReset, Expect: NoUseAfterFree,
			Description: "nested reclaim in pageout's allocation runs init_tlb_ubc and clears flush_required",
			Source:      "72b252aed506; fixed by b385d21f27d8 mm: delete unnecessary and unsafe init_tlb_ubc() (2016)"},
		{Name: NoFlushDirty, Expect: NoLostWrite,
			Description: "pageout starts without try_to_unmap_flush_dirty while a writable dirty entry is cached",
			Source:      "designed against by d950c9477d51 mm: defer flush of writable TLB entries (2015)"},
		{Name: RiscvStickyMask, Expect: model.ExpectOK,
			Description: "riscv arch_tlbbatch_flush never clears the batch cpumask: safe, but flush targets accumulate",
			Source:      "seed 004 54d7431af73e; fixed by 3951f6add519 riscv: Fix arch_tlbbatch_flush() by clearing the batch cpumask"},
		{Name: RiscvASIDClear, Expect: SyscallPostcondition,
			// The batched analog (D-bug8): the reclaimer's
			// batch cpumask misses the CPU, which then reads a freed page or
			// writes one under writeback; random walks meet those first.
			AlsoViolates: []string{NoUseAfterFree, NoLostWrite},
			Description:  "riscv with the ASID allocator, before the fix: switch_mm clears the old CPU's mm_cpumask bit without flushing, so flushes sent to mm_cpumask (mprotect's, the reclaimer's batch) miss a CPU that still caches the mm",
			Source:       "65d4b9c53017 RISC-V: Implement ASID allocator; fixed by 82dd33fde026 riscv: asid: Fixup stale TLB entry cause application crash (2023)"},
		{Name: MadviseRetake, Expect: SyscallPostcondition,
			Description: "madvise(MADV_FREE) drops the PTL to split a large folio and re-takes it without calling flush_tlb_batched_pending again",
			Source:      "3ea277194daa and 9c276cc65a58 mm: introduce MADV_COLD; fixed by 383c4613c67c mm: close theoretical race where stale TLB entries could linger (2025)"},
		{Name: X86, Expect: model.ExpectOK,
			Description: "mainline x86 (v6.14 on): generations, mm_cpumask bits kept at switch_mm and trimmed by flush IPIs to CPUs that no longer run the mm, lazy TLB CPUs skipped, stale ASIDs caught up through tlb_gen at the next switch_mm; flush rounds a step per target CPU",
			Source:      "5ee2fa2f0636; 209954cbc7d0 x86/mm/tlb: Update mm_cpumask lazily and 6db2526c1d69 (v6.14); arch/x86/mm/tlb.c switch_mm_irqs_off, should_flush_tlb, flush_tlb_func, arch_tlbbatch_flush"},
		{Name: ARM64, Expect: model.ExpectOK,
			Description: "arm64: broadcast TLBIs issued at unmap time and completed by the reclaimer's own dsb(ish); flush_tlb_batched_pending flushes the mm",
			Source:      "43b3dfdd0455 arm64: support batched/deferred tlb shootdown during page reclamation/migration (2023); fixed by 4b634918384c arm64/mm: Close theoretical race where stale TLB entry remains valid (2025)"},
		{Name: ARM64DSBOnly, Expect: SyscallPostcondition,
			Description: "arm64 v6.5-v6.15: flush_tlb_batched_pending executes dsb(ish) on its own CPU, which does not complete TLBIs a reclaimer issued on another",
			Source:      "db6c1f6f236d mm/tlbbatch: introduce arch_flush_tlb_batched_pending() with 43b3dfdd0455; fixed by 4b634918384c (2025)"},
		{Name: X86V414, Expect: model.ExpectOK,
			Description: "x86 v4.14-v4.19: switch_mm clears the old mm's mm_cpumask bit and keeps its PCID; a flush misses a CPU that left the mm, which catches up at its next switch_mm: choose_new_asid flushes an ASID whose tlb_gen is behind; every CPU of the mask gets the IPI (with PCID no CPU is lazy)",
			Source:      "10af6235e0d3 x86/mm: Implement PCID based optimization (v4.14); arch/x86/mm/tlb.c of v4.14-v4.19: switch_mm_irqs_off, choose_new_asid, flush_tlb_func_common, native_flush_tlb_others"},
		{Name: X86V420, Expect: model.ExpectOK,
			Description: "x86 v4.20-v5.19: v4.14's switch_mm plus lazy TLB: a kernel thread keeps the mm loaded with its bit set, flush IPIs skip lazy CPUs unless page tables are freed (tlb_is_not_lazy), a lazy CPU that gets one switches to init_mm, and switch_mm back from lazy flushes if tlb_gen moved",
			Source:      "Rik van Riel's lazy TLB series (v4.20: reverted from v4.19-rc as 95b0e6357d3e, 64482aafe55f, ac0315896970, merged again); arch/x86/mm/tlb.c of v5.10: switch_mm_irqs_off (was_lazy), tlb_is_not_lazy, flush_tlb_func_common"},
		{Name: X86V60, Expect: model.ExpectOK,
			Description: "x86 v6.0-v6.13: v4.20's code plus flush_tlb_func's early return when f->new_tlb_gen <= the local tlb_gen, skipped for the batch flush's TLB_GENERATION_INVALID",
			Source:      "aa44284960d5 x86/mm/tlb: Avoid reading mm_tlb_gen when possible with 8f1d56f64f8d x86/mm/tlb: Ignore f->new_tlb_gen when zero (v6.0); arch/x86/mm/tlb.c before 209954cbc7d0 (v6.14)"},
		{Name: X86NoCatchUp, Expect: SyscallPostcondition,
			AlsoViolates: []string{NoUseAfterFree, NoLostWrite},
			Description:  "mutation of x86-v4.14: switch_mm clears the bit, and choose_new_asid uses the ASID it finds without comparing its tlb_gen, so a CPU that missed a flush while away runs its stale entries",
			Source:       "mutation: choose_new_asid without *need_flush = (ctxs[asid].tlb_gen < next_tlb_gen) (10af6235e0d3)"},
		{Name: X86GenZero, Expect: NoLostWrite,
			AlsoViolates: []string{NoUseAfterFree, SyscallPostcondition},
			Description:  "x86 v6.0-rc (July 2022, linux-next): flush_tlb_func's early return compares arch_tlbbatch_flush's f->new_tlb_gen, 0, with the local tlb_gen and returns, so try_to_unmap_flush flushes nothing",
			Source:       "aa44284960d5 x86/mm/tlb: Avoid reading mm_tlb_gen when possible; reported by Hugh Dickins, fixed by 8f1d56f64f8d x86/mm/tlb: Ignore f->new_tlb_gen when zero (2022)"},
		{Name: PutbackEarly, Expect: NoUseAfterFree,
			AlsoViolates: []string{NoLostWrite, SyscallPostcondition},
			Description:  "mutation, with contended folios: shrink_folio_list puts a folio it kept (writeback started) back on the LRU at once, before its try_to_unmap_flush, so the other reclaimer can isolate it, find it clean and unmapped, and free it after its own flush, which owes that folio nothing",
			Source:       "mutation of mm/vmscan.c: move_folios_to_lru of shrink_folio_list's ret_folios runs after try_to_unmap_flush (shrink_inactive_list, reclaim_folio_list)",
			Fixed:        model.Params{"contend": 1}},
		{Name: NoNestedFlush, Expect: SyscallPostcondition,
			AlsoViolates: []string{NoLostWrite},
			Description:  "two syscall threads' madvise calls on one va (nested=1) before 99baac21e458: tlb_finish_mmu does not check mm_tlb_flush_nested, so the call that found the PTE already zapped returns while the other's flush is still to come",
			Source:       "99baac21e458 mm: fix MADV_[FREE|DONTNEED] TLB flush miss problem (Minchan Kim, 2017): tlb_gather_mmu/tlb_finish_mmu count mm->tlb_flush_pending, and a nested gather flushes the whole mm",
			Fixed:        model.Params{"nested": 1, "syscall": 3}},
		{Name: MremapLateFlush, Expect: NoLostWrite,
			AlsoViolates: []string{NoUseAfterFree, SyscallPostcondition},
			Description:  "mremap before eb66ae030829 (CVE-2018-18281), with reclaim that does not batch (as on arm64 before v6.5 and riscv before v6.8): move_ptes flushes the old address after dropping both PTLs, so reclaim can take the new address's PTL, unmap the page there, flush only the new address and free it while a CPU still maps the old one",
			Source:       "eb66ae030829 mremap: properly flush TLB before releasing the page (Linus Torvalds, 2018; Jann Horn's CVE-2018-18281)",
			Fixed:        model.Params{"syscall": 8, "syscalls": 1}},
		{Name: ARM64Migrate, Expect: model.ExpectOK,
			Description: "arm64 with reclaimers that may be preempted and migrate to another CPU after deferring a page (tlbi issued, not completed) and before arch_tlbbatch_flush's dsb(ish) on the new CPU: __switch_to's dsb(ish) on the old CPU completes its TLBIs",
			Source:      "arch/arm64/kernel/process.c __switch_to: \"Complete any pending TLB or cache maintenance on this CPU in case the thread migrates to a different CPU\"; 43b3dfdd0455 relies on it (Ryan Roberts, 4b634918384c's discussion)"},
		{Name: ARM64SwitchNoDSB, Expect: NoLostWrite,
			AlsoViolates: []string{NoUseAfterFree, SyscallPostcondition},
			Description:  "mutation of arm64-migrate: __switch_to without its dsb(ish), so a reclaimer that migrated leaves its TLBIs in flight on the old CPU, and arch_tlbbatch_flush's dsb(ish) on the new one does not complete them",
			Source:       "mutation of arch/arm64/kernel/process.c __switch_to"},
	},
	Params: []model.Param{
		{Name: "pages", Default: 2, Min: 1, Max: maxPages,
			Description: "pages the reclaimers unmap; page i is mapped at va i of mm i%mms and reclaimed by reclaimer i%reclaimers"},
		{Name: "batch", Default: 2, Min: 1, Max: maxPages,
			Description: "folio_batch capacity: a reclaimer flushes and frees after this many of its pages"},
		{Name: "ptls", Default: 2, Min: 1, Max: maxPages,
			Description: "page-table locks; va i is under PTL i%ptls (at most pages; must equal pages when mms > 1)"},
		{Name: "mms", Default: 1, Min: 1, Max: maxMMs,
			Description: "address spaces whose pages are reclaimed (the syscall thread belongs to mm0)"},
		{Name: "users", Default: 1, Min: 0, Max: maxUsers,
			Description: "user tasks, each starting on a CPU of its own, running mm u%mms"},
		{Name: "accesses", Default: 2, Min: 0, Max: 4,
			Description: "memory accesses (read or write of any va of its mm) per user task"},
		{Name: "reclaimers", Default: 2, Min: 1, Max: maxReclaimers,
			Description: "reclaiming tasks, each on a CPU of its own with its own batch (tlb_ubc), on disjoint pages"},
		{Name: "migrations", Default: 1, Min: 0, Max: 4,
			Description: "times the user tasks together are scheduled out (their CPU switches to another process) and back in on a CPU running another process (a spare CPU is added when > 0)"},
		{Name: "syscall", Default: 0, Min: 0, Max: len(programs) - 1, Sentinel: true,
			Description: "the syscall thread's program: 0 mprotect, madvise(MADV_FREE), munmap, madvise(MADV_DONTNEED) in turn; 1 mprotect(PROT_READ) only; 2 munmap only; 3 MADV_DONTNEED only; 4 MADV_FREE only; 5 MADV_COLD only; 6 MADV_PAGEOUT only; 7 as 0 with mremap(va → a new address) in munmap's place; 8 one mremap(va0 → a new address)"},
		{Name: "syscalls", Default: 3, Min: 0, Max: maxSyscalls,
			Description: "calls of the syscall thread, on mm0's vas in turn"},
		{Name: "large", Default: 1, Min: 0, Max: 1,
			Description: "1: the va of the first MADV_FREE call is mapped by part of a large folio, which madvise splits after dropping the PTL"},
		{Name: "width", Default: 0, Min: 0, Max: 4, Sentinel: true,
			Description: "bits of the pending and flushed fields of tlb_flush_batched (15 in Linux); a wrap needs 2^width deferrals. 0: the variant's own, 1 for no-overflow-reset (its wrap then fits the default size), 2 for the others (the overflow reset then cannot cycle inside one drain at the default size)"},
		{Name: "reuse", Default: 1, Min: 0, Max: 1,
			Description: "1: a freed page is handed to a new owner, who overwrites it"},
		{Name: "contend", Default: 0, Min: 0, Max: 1,
			Description: "1: the reclaimers contend for folios: each starts with its pages (i%reclaimers) isolated, takes folio_trylock, keeps a folio whose writeback pageout started (the keep path unlocks it before try_to_unmap_flush) and puts it back on the LRU after the flush; a second pass isolates whatever is on the LRU, the other's folios too, and frees those whose writeback is done; madvise's split takes the folio lock too"},
		{Name: "nested", Default: 0, Min: 0, Max: 1,
			Description: "1: a second syscall thread of mm0 (syscall2, on CPU1 too) calls madvise(va0, MADV_DONTNEED) beside the first, whose program must then be madvise only (syscall=3 or 4): their mmu_gathers nest through mm->tlb_flush_pending (tlb_gather_mmu, mm_tlb_flush_nested, tlb_finish_mmu)"},
		{Name: "memory", Default: 0, Min: 0, Max: 2,
			Description: "memory model: 0 sequentially consistent; 2 ARMv8 with each thread's writes in program order (model.WithARMv8NoPromises), arm64 variants only: tlb_flush_batched and each PTL's lock word (taken with queued_spin_lock's acquire cmpxchg, released with queued_spin_unlock's release store) are ARMv8 words, the PTEs stay sequentially consistent; syscall-returns is not checked. 1 (x86-TSO) is not modelled"},
		{Name: "weaken", Default: 0, Min: 0, Max: weakMax,
			Description: "with memory=2, a mutation that takes one ordering of the arm64 code away: 1 spin_unlock's release (a plain store of the locked byte), 2 spin_lock's acquire (a relaxed cmpxchg), 3 flush_tlb_batched_pending's fully ordered atomic_cmpxchg (relaxed)"},
		{Name: "bookkeeping", Default: 0, Min: 0, Max: 1,
			Description: "1: also check flush-before-free and counter-sound, which fire where the bookkeeping is lost rather than at the harm"},
	},
	New:    newMachine,
	Matrix: matrix,
	Claims: claims,
}
