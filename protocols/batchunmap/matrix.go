package batchunmap

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// The verification matrix: the configurations besides the default in
// which every variant's verdict is checked, chosen so that each mechanism
// happens at least twice somewhere (a drain that overlaps two deferrals,
// two reclaimers, two migrations and a migration during a batch, every
// syscall kind, two user CPUs, two mms, four deferrals between drains,
// contended folios, nested gathers, MADV_COLD/PAGEOUT, mremap).
// x86 runs where it takes seconds: its per-CPU flush handlers and ASID
// generations make it about ten times larger than the others, and the rows
// without it take it past a minute on one core (pages=3 width=3: 19 048 655
// states, about 55 s, before lazy TLB was modelled). The x86 eras before
// v6.14 run where what they change happens twice: migrations=2 (CPUs
// leaving and coming back, their bits cleared and set, lazy or not) and
// mms=2 (a flush handler finding another mm loaded); at users=2 x86-v4.20
// is past 95 million states. A verdict that differs from the variant's
// default says why.
var matrix = []model.Config{
	{Params: model.Params{"pages": 3, "width": 3},
		Why:      "three pages: while a drain holds PTL1, reclaimer0 defers both of its pages under PTL0, so one drain overlaps two deferrals, and its batch holds two pages; 3-bit generations keep the overflow reset from cycling inside a drain",
		Variants: allBut(heavy),
		Expect: map[string]string{
			// Its wrap needs 2^3 deferrals with no drain: three pages have 3.
			NoOverflowReset: model.ExpectOK,
		}},
	{Params: model.Params{"pages": 3, "width": 2},
		Why:      "the same overlap with 2-bit generations: the drain's atomic_cmpxchg succeeds after two deferrals (2 -> reset to 1) bring tlb_flush_batched back to the value it read, and the newer deferral is lost; Linux's 15-bit fields need 16384 deferrals inside one drain",
		Variants: []string{Generation, RiscvStickyMask, ARM64},
		Expect: map[string]string{
			Generation:      SyscallPostcondition,
			RiscvStickyMask: SyscallPostcondition,
			ARM64:           SyscallPostcondition,
		}},
	{Params: model.Params{"pages": 4, "reclaimers": 1, "width": 2},
		Why:      "one reclaimer deferring four pages between drains with 2-bit generations: no-overflow-reset's wrap at the width generation runs at by default (one reclaimer blocks on a drainer's PTL after one deferral under the other lock, so generation's reset does not cycle)",
		Variants: allBut(x86Eras),
		Expect: map[string]string{
			// No other reclaimer to take the folio put back early: the
			// second pass follows its own flush.
			PutbackEarly: model.ExpectOK,
		}},
	{Params: model.Params{"migrations": 2},
		Why:      "user0 scheduled out and in twice: mm_cpumask bits cleared (riscv before 82dd33fde026) and set again, migrations before, during and after each reclaimer's batch",
		Variants: allBut(heavy)},
	{Params: model.Params{"migrations": 2, "reclaimers": 1},
		Why: "two migrations with one reclaimer, the size at which x86 fits: ASIDs left behind on two CPUs, caught up through tlb_gen, bits trimmed by flush IPIs (v6.14 on) or cleared at switch_mm (before), CPUs lazy twice",
		Expect: map[string]string{
			PutbackEarly: model.ExpectOK, // one reclaimer: see pages=4 reclaimers=1
		}},
	{Params: model.Params{"syscalls": 4},
		Why:      "every call of the program: mprotect, MADV_FREE on the large folio, munmap, and MADV_DONTNEED",
		Variants: allBut([]string{MremapLateFlush}, x86Eras)},
	{Params: model.Params{"users": 2},
		Why:      "two user tasks of mm0 on two CPUs: flushes with two targets caching the same page",
		Variants: allBut(heavy)},
	{Params: model.Params{"mms": 2, "users": 2},
		Why:      "two mms, a page and a user task each: a reclaimer's batch spans both (riscv flushes every ASID of its cpumask; an x86 handler finds the other mm loaded), and each mm has its own tlb_flush_batched (x86-v6.0 explores the same states as x86-v4.20 here)",
		Variants: allBut([]string{X86V60}),
		Expect: map[string]string{
			// Each mm's counter sees one deferral: no wrap.
			NoOverflowReset: model.ExpectOK,
			// mm0 has one page under one PTL: no race across two locks.
			BoolFlag: model.ExpectOK,
			// The program's MADV_FREE is on mm0's only page, which its
			// mprotect made read-only first: no writable dirty entry is
			// left for a missed flush to keep.
			MadviseRetake: model.ExpectOK,
		}},
	{Params: model.Params{"contend": 1},
		Why:      "the reclaimers contend for folios: a folio kept under writeback goes back on the LRU after its reclaimer's flush and is freed by either reclaimer's second pass (with the other's flush, which owes it nothing); reclaim's folio_trylock fails while madvise splits, and madvise's while reclaim holds the folio",
		Variants: allBut(heavy)},
	{Params: model.Params{"nested": 1, "syscall": 3, "syscalls": 1},
		Why:      "two syscall threads zap va0 with MADV_DONTNEED, their mmu_gathers nesting: the one that finds the PTE gone flushes the whole mm at tlb_finish_mmu (mm_tlb_flush_nested) while the other's flush is still to come (x86 is left out: 21 880 830 states, x86-v4.14 10 533 048)",
		Variants: allBut([]string{MremapLateFlush}, heavy),
		Expect: map[string]string{
			// One call per thread, both on va0 under PTL0: no race
			// across two locks, no MADV_FREE.
			BoolFlag:      model.ExpectOK,
			MadviseRetake: model.ExpectOK,
		}},
	{Params: model.Params{"syscall": 6},
		Why:      "MADV_PAGEOUT only (MADV_COLD's walk, with every folio isolated by its reclaimer): madvise_cold_or_pageout_pte_range drains, splits the large folio with the PTL dropped and re-takes it; it promises nothing a stale entry can break, so the drain bugs are ok",
		Variants: allBut([]string{PutbackEarly}, fixedSyscall, heavy),
		Expect:   coldOK},
	{Params: model.Params{"syscall": 5, "contend": 1},
		Why:      "MADV_COLD with contended folios: it clears the young bit and flushes a folio put back on the LRU, skips one a reclaimer has isolated, and its folio_trylock of the large folio meets reclaim's",
		Variants: allBut(fixedSyscall, heavy),
		Expect:   coldOK},
	{Params: model.Params{"syscall": 7},
		Why:      "mremap in the program's mix (mprotect, MADV_FREE, mremap of va0): move_ptes drains under both PTLs and flushes the old address before dropping them, and reclaim finds the page at its new address",
		Variants: allBut(fixedSyscall, heavy)},
	{Params: model.Params{"syscall": 8, "syscalls": 1},
		Why:      "mremap alone, x86 included: the drain under both PTLs is what it needs from reclaim (no-pending-flush), the flush under them what it needs against reclaim at the new address (mremap-late-flush); bool-flag and madvise-retake ok (one PTL, no MADV_FREE)",
		Variants: allBut([]string{NoNestedFlush, X86V420, X86V60}),
		Expect: map[string]string{
			BoolFlag:      model.ExpectOK,
			MadviseRetake: model.ExpectOK,
		}},
	{Params: model.Params{"contend": 1, "syscalls": 1},
		Why:      "contended folios where x86 fits (at contend=1 alone mainline x86 has 18 780 959 states; here one mprotect, no madvise split): a reclaimer frees a folio the other unmapped, its flush sent to a batch cpumask of its own, while the user task leaves its CPU and comes back (x86-v6.0 differs from x86-v4.20 only in flush_tlb_func's early return)",
		Variants: []string{X86, X86V414, X86V420}},
	{Params: armRow(weakNone), Variants: []string{ARM64},
		Why: "arm64 under ARMv8 memory (memory=2): reclaimer0 defers va0's flush under PTL0 (ptep_get_and_clear, tlbi in flight, atomic_inc of tlb_flush_batched, spin_unlock's release) while mprotect takes PTL0 (spin_lock's acquire) and drains; reclaimer1 defers va1 under PTL1, racing the drain's atomic_cmpxchg on the same word without a common lock; safety and deadlock only (syscall-returns is not checked under ARMv8)"},
	{Params: armRow(weakLock), Variants: []string{ARM64},
		Why:    "the same with spin_lock's acquire taken away (weaken=2): mprotect's atomic_read of tlb_flush_batched may read the value from before the deferral whose PTE clear it sees",
		Expect: map[string]string{ARM64: SyscallPostcondition}},
}

// armRow is the configuration arm64 is checked at under ARMv8, with the
// ordering weaken takes away: two reclaimers with a page each under two
// PTLs, one mprotect, a user task that caches va0 and writes it after
// mprotect returned, no migration, no large folio, no reuse. ARMv8
// multiplies its 11 607 states under SC by about 18; the default size
// does not finish in minutes.
func armRow(weaken int) model.Params {
	p := model.Params{"memory": 2, "migrations": 0, "large": 0, "reuse": 0, "syscall": 1, "syscalls": 1}
	if weaken != weakNone {
		p["weaken"] = weaken
	}
	return p
}

// x86Eras are the correct x86 variants before v6.14; x86Correct adds
// mainline's.
var (
	x86Eras    = []string{X86V414, X86V420, X86V60}
	x86Correct = append([]string{X86}, x86Eras...)
	// heavy are the correct variants left out of the rows where they pass
	// three million states: x86's and arm64-migrate (pages=3 width=3:
	// 3 340 968, users=2: 5 599 406, contend=1: 3 132 928).
	heavy = append([]string{ARM64Migrate}, x86Correct...)
	// fixedSyscall are the variants defined with a program of their own.
	fixedSyscall = []string{NoNestedFlush, MremapLateFlush}
)

// coldOK: with only MADV_COLD or MADV_PAGEOUT calls, which promise
// nothing a stale entry can break, the bugs of the drain are harmless.
var coldOK = map[string]string{
	NoPendingFlush:  model.ExpectOK,
	BoolFlag:        model.ExpectOK,
	NoOverflowReset: model.ExpectOK,
	MadviseRetake:   model.ExpectOK,
	ARM64DSBOnly:    model.ExpectOK,
}

// allBut lists every variant but those of the given lists.
func allBut(lists ...[]string) []string {
	var out []string
	for _, v := range variantNames {
		keep := true
		for _, except := range lists {
			for _, e := range except {
				keep = keep && v != e
			}
		}
		if keep {
			out = append(out, v)
		}
	}
	return out
}

// claimParams is the seed's workload shape: one reclaimer (the
// MADV_PAGEOUT caller) unmapping four pages in one folio batch while a
// user task of the mm runs on another CPU, and no syscall racing it, so
// that every execution unmaps all four pages.
var claimParams = model.Params{"pages": 4, "batch": 4, "reclaimers": 1, "syscalls": 0, "migrations": 0}

// claims are seed 004's performance claim and its cost side, as counts.
var claims = []model.Claim{
	{
		Name: "fewer-remote-flushes-per-page",
		Text: "seed 004 (54d7431af73e): deferring the flush \"allows to reduce the numbers of IPI and the number of sfence.vma\": on the seed's workload shape " +
			"(one reclaimer unmapping four pages of a batch while a user task of the mm runs on another CPU, no syscall) generation sends fewer remote flushes per unmapped page than immediate in every execution",
		Metric: "remote-flushes",
		A:      Generation,
		B:      Immediate,
		Params: claimParams,
		Holds: perPage(4, func(a, b model.MetricSummary) bool {
			return a.Executions > 0 && b.Executions > 0 && a.Max < b.Min
		}),
	},
	{
		Name:   "drains-cost-more-than-one-page-batches-save",
		Text:   "the cost side, at the default size (two reclaimers with one page each, three syscalls that drain): batching saves nothing on one-page batches, and each flush_tlb_batched_pending that finds a deferral flushes the whole mm, so generation sends more remote flushes than immediate, on average and at worst",
		Metric: "remote-flushes",
		A:      Generation,
		B:      Immediate,
		Holds: func(a, b model.MetricSummary) (bool, string) {
			found := fmt.Sprintf("per execution: generation %d..%d (mean %.3f), immediate %d..%d (mean %.3f)", a.Min, a.Max, a.Mean, b.Min, b.Max, b.Mean)
			return a.Executions > 0 && b.Executions > 0 && a.Mean > b.Mean && a.Max > b.Max, found
		},
	},
}

// perPage judges a claim on a metric divided by the pages every execution
// unmaps.
func perPage(pages int, rel func(a, b model.MetricSummary) bool) func(a, b model.MetricSummary) (bool, string) {
	return func(a, b model.MetricSummary) (bool, string) {
		n := float64(pages)
		found := fmt.Sprintf("per unmapped page: generation %.3g..%.3g (mean %.4f), immediate %.3g..%.3g (mean %.4f)",
			float64(a.Min)/n, float64(a.Max)/n, a.Mean/n, float64(b.Min)/n, float64(b.Max)/n, b.Mean/n)
		return rel(a, b), found
	}
}
