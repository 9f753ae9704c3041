package batchunmap

import "github.com/protocheck/protocheck/model"

// Variant names.
const (
	Immediate       = "immediate"
	Generation      = "generation"
	NoPendingFlush  = "no-pending-flush"
	BoolFlag        = "bool-flag"
	NoOverflowReset = "no-overflow-reset"
	NestedReset     = "nested-reset"
	NoFlushDirty    = "no-flush-dirty"
	RiscvStickyMask = "riscv-sticky-mask"
)

// Property names (batchunmap.md P1-P5).
const (
	NoUseAfterFree       = "no-use-after-free"
	NoLostWrite          = "no-lost-write"
	SyscallPostcondition = "syscall-postcondition"
	FlushBeforeFree      = "flush-before-free"
	CounterSound         = "counter-sound"
)

// Protocol is the batched-unmap protocol family: reclaim's deferred TLB
// flush against mprotect's flush_tlb_batched_pending.
var Protocol = &model.Protocol{
	Name:        "batchunmap",
	Description: "batched TLB flush during reclaim (try_to_unmap_one / try_to_unmap_flush) racing mprotect's flush_tlb_batched_pending",
	Source:      "seed 004 (riscv: Add support for BATCHED_UNMAP_TLB_FLUSH, 54d7431af73e); mm/rmap.c 72b252aed506, d950c9477d51, b385d21f27d8, 3ea277194daa, 5ee2fa2f0636; riscv 3951f6add519",
	Variants: []model.Variant{
		{Name: Immediate, Expect: model.ExpectOK,
			Description: "no batching: try_to_unmap_one flushes each PTE with flush_tlb_range under the page-table lock",
			Source:      "mm/rmap.c before 72b252aed506 (v4.3); mainline when should_defer_flush is false"},
		{Name: Generation, Expect: model.ExpectOK,
			Description: "mainline: deferred flush, tlb_flush_batched as pending/flushed generations with the overflow reset",
			Source:      "5ee2fa2f0636 mm/rmap: fix potential batched TLB flush race (2022)"},
		{Name: NoPendingFlush, Expect: SyscallPostcondition,
			Description: "deferred flush without flush_tlb_batched_pending: mprotect trusts a PTE that reclaim cleared",
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
	},
	Params: []model.Param{
		{Name: "pages", Default: 4, Min: 1, Max: maxPages,
			Description: "pages the reclaimer unmaps; page i is mapped at va i of mm i%mms"},
		{Name: "batch", Default: 4, Min: 1, Max: maxPages,
			Description: "folio_batch capacity: the reclaimer flushes and frees after this many pages"},
		{Name: "ptls", Default: 2, Min: 1, Max: maxPages,
			Description: "page-table locks; va i is under PTL i%ptls (at most pages; must equal pages when mms > 1)"},
		{Name: "mms", Default: 1, Min: 1, Max: maxMMs,
			Description: "address spaces whose pages the reclaimer unmaps (the syscall thread belongs to mm0)"},
		{Name: "users", Default: 1, Min: 0, Max: maxUsers,
			Description: "user threads, each on its own CPU, running mm u%mms"},
		{Name: "accesses", Default: 2, Min: 0, Max: 4,
			Description: "memory accesses (read or write of any va of its mm) per user thread"},
		{Name: "syscalls", Default: 4, Min: 0, Max: 4,
			Description: "mprotect(PROT_READ) calls of the syscall thread, on mm0's vas in order"},
		{Name: "width", Default: 2, Min: 1, Max: 4,
			Description: "bits of the pending and flushed fields of tlb_flush_batched (15 in Linux); a wrap needs 2^width deferrals"},
		{Name: "reuse", Default: 1, Min: 0, Max: 1,
			Description: "1: an allocator hands each freed page to a new owner, who overwrites it"},
		{Name: "bookkeeping", Default: 0, Min: 0, Max: 1,
			Description: "1: also check flush-before-free and counter-sound, which fire where the bookkeeping is lost rather than at the harm"},
	},
	New: newMachine,
}
