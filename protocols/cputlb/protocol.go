package cputlb

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// config is a variant as data: the switches that distinguish the variants
// in one model.
type config struct {
	synced    bool // tlb_flush_page_by_mmuidx_all_cpus_synced (else the non-synced _all_cpus)
	noBQL     bool // remote flush jobs via async_run_on_cpu_no_bql (seed 000)
	endTB     bool // the helper ends the TB (cpu_loop_exit) after queueing
	kickQueue bool // flush_all_helper's queue_work_on_cpu kicks the target

	// The later fixes of the paths that touch a vCPU's TLB from another
	// thread (all three off: the code of the seed's era).
	dirtyReset     bool // 03bfc2188f: the 64-page sync resets the TLBs (tlb_reset_dirty_range_all)
	dirtyLocked    bool // RFC <20240220041922.373029-2-npiggin@gmail.com>: is_clean read under tlb.c.lock
	commitDeferred bool // 0d58c660689f: tcg_commit queues tcg_commit_cpu, the vCPU switches its dispatch

	// QEMU since 10.1.
	uncached       bool // 2865bf1c5795: no cpuas->memory_dispatch; tlb_fill and iotlb_to_section read the address space's current map, tcg_commit_cpu only flushes
	sectionInEntry bool // master: tlb_set_page_full keeps the section in the full TLB entry (full->section), so the access does not look it up again
	notifyDirect   bool // 30933c4fb4f3: tlb_flush of another vCPU (the IOMMU notifier's) runs on the caller's thread
	mapGen         bool // a fix for master: the entry also keeps its map's generation, and io_prepare refills an entry of an older map instead of using its section
}

// fixed is the environment with every later fix.
func (c config) fixed() config {
	c.dirtyReset, c.dirtyLocked, c.commitDeferred = true, true, true
	return c
}

var (
	synced2020  = config{synced: true, endTB: true, kickQueue: true}
	noBQL2020   = config{synced: true, noBQL: true, endTB: true, kickQueue: true}
	syncedFixed = synced2020.fixed()
	noBQLFixed  = noBQL2020.fixed()

	// dispatchUncached is QEMU from 10.1 on: every vCPU's work items take
	// the BQL (seed 000 was not merged), the dirty sync resets the TLBs,
	// tcg_commit defers the flush to the vCPU, is_clean is still read
	// before tlb.c.lock (the RFC was not merged) and, since 2865bf1c5795,
	// no vCPU caches a dispatch. masterCfg also keeps the section in the
	// full TLB entry.
	dispatchUncached = config{synced: true, endTB: true, kickQueue: true, dirtyReset: true, commitDeferred: true, uncached: true, notifyDirect: true}
	masterCfg        = without(dispatchUncached, func(c *config) { c.sectionInEntry = true })
)

func without(c config, f func(*config)) config {
	f(&c)
	return c
}

const (
	fixesSource = "03bfc2188f (physmem: Fix migration dirty bitmap coherency with TCG memory access, 2024); " +
		"RFC <20240220041922.373029-2-npiggin@gmail.com> (accel/tcg: Fix TCG TLB coherency race with physical dirty bit clearing, 2024, not merged); " +
		"0d58c660689f (softmmu: Use async_run_on_cpu in tcg_commit, 2023)"
	uncachedSource = "2865bf1c5795 (system/physmem: fix use-after-free with dispatch, QEMU 10.1, gitlab #3040): address_space_translate_for_iotlb and iotlb_to_section " +
		"read address_space_to_dispatch(cpuas->as), tcg_commit_cpu only calls tlb_flush; qemu-devel \"Record AS in full tlb\" (December 2025)"
	masterSource = "QEMU accel/tcg/cputlb.c at 0039e5fd2234 (tlb_set_page_full: full->section = section; io_prepare: section = full->section) " +
		"and system/physmem.c at 02825d1e5577 (no iotlb_to_section; tcg_commit_cpu: tlb_flush); " +
		"the section kept in the entry follows \"accel/tcg: Store section pointer in CPUTLBEntryFull\" <20250415081231.21186-2-jim.shu@sifive.com>"
	eraSource = "QEMU accel/tcg/cputlb.c at 570ef3093b5e (v5.0, the base of seed 000), exec.c and include/exec/ram_addr.h of that era"
)

var variants = []struct {
	model.Variant
	cfg config
}{
	{model.Variant{Name: "synced", Expect: DispatchCoherent, AlsoViolates: []string{DirtyTracking},
		Description: "the code of seed 000's base: tlb_flush_page_by_mmuidx_all_cpus_synced with remote jobs via async_run_on_cpu (the worker takes the BQL), TB ended; " +
			"the migration thread syncs the dirty bitmap (64-page fast path without tlb_reset_dirty), resets TLBs and waits with run_on_cpu; " +
			"the main loop's tcg_commit stores the new dispatch and queues tlb_flush with async_run_on_cpu",
		Source: eraSource + "; ba3186c4e473 introduced _all_cpus_synced"},
		synced2020},
	{model.Variant{Name: "synced-no-bql", Expect: DispatchCoherent, AlsoViolates: []string{DirtyTracking},
		Description: "seed 000 on the same code: remote flush jobs and tcg_commit's tlb_flush via async_run_on_cpu_no_bql (the worker runs them without the BQL)",
		Source:      "seed 000_b36807347ebe5ed1 (cputlb: queue async flush jobs without the BQL) on " + eraSource},
		noBQL2020},
	{model.Variant{Name: "synced-fixed", Expect: model.ExpectOK,
		Description: "synced with the later fixes of the paths that touch a vCPU's TLB from another thread: the dirty sync resets the TLBs (03bfc2188f), " +
			"is_clean is read under tlb.c.lock (RFC), tcg_commit defers the dispatch switch and the flush to the vCPU (0d58c660689f)",
		Source: fixesSource},
		syncedFixed},
	{model.Variant{Name: "synced-no-bql-fixed", Expect: model.ExpectOK,
		Description: "seed 000 on the fixed code: synced-fixed with remote flush jobs via async_run_on_cpu_no_bql",
		Source:      "seed 000_b36807347ebe5ed1 on " + fixesSource},
		noBQLFixed},
	{model.Variant{Name: "sync-no-reset", Expect: DirtyTracking,
		Description: "synced-no-bql-fixed without 03bfc2188f: the 64-page dirty sync clears the bits and resets no TLB (aa8dc044772 until 2024)",
		Source:      "aa8dc044772 (migration: synchronize memory bitmap 64bits at a time); fixed by 03bfc2188f"},
		without(noBQLFixed, func(c *config) { c.dirtyReset = false })},
	{model.Variant{Name: "is-clean-unlocked", Expect: DirtyTracking,
		Description: "synced-no-bql-fixed without the RFC: tlb_set_page and notdirty_write read cpu_physical_memory_is_clean before taking tlb.c.lock (QEMU master still does)",
		Source:      "RFC <20240220041922.373029-2-npiggin@gmail.com>; accel/tcg/cputlb.c at 0039e5fd2234 (tlb_set_page_full, notdirty_write)"},
		without(noBQLFixed, func(c *config) { c.dirtyLocked = false })},
	{model.Variant{Name: "commit-direct", Expect: DispatchCoherent,
		Description: "synced-no-bql-fixed without 0d58c660689f: tcg_commit stores the new memory_dispatch at once and only the flush is queued",
		Source:      "0d58c660689f (softmmu: Use async_run_on_cpu in tcg_commit): gitlab #1826, #1834, #1846"},
		without(noBQLFixed, func(c *config) { c.commitDeferred = false })},
	{model.Variant{Name: "dispatch-uncached", Expect: DispatchCoherent, AlsoViolates: []string{DirtyTracking},
		Description: "QEMU 10.1 (2865bf1c5795) until the section was kept in the TLB entry: no cached cpuas->memory_dispatch; " +
			"tlb_fill and iotlb_to_section read the address space's current map, and tcg_commit_cpu, queued on each vCPU, only flushes its TLB",
		Source: uncachedSource},
		dispatchUncached},
	{model.Variant{Name: "master", Expect: DirtyTracking,
		Description: "QEMU master: dispatch-uncached, with tlb_set_page_full keeping the section it resolved in the full TLB entry (full->section), " +
			"which io_prepare uses, so no access resolves an index in another map; is_clean is still read before tlb.c.lock (the RFC was not merged)",
		Source: masterSource},
		masterCfg},
	{model.Variant{Name: "master-rfc", Expect: model.ExpectOK,
		Description: "a fix for master: master with the RFC's is_clean read under tlb.c.lock in tlb_set_page_full and notdirty_write",
		Source:      masterSource + "; RFC <20240220041922.373029-2-npiggin@gmail.com>"},
		without(masterCfg, func(c *config) { c.dirtyLocked = true })},
	{model.Variant{Name: "master-map-gen", Expect: model.ExpectOK,
		Description: "a fix for master's use of a freed section: the full TLB entry also keeps the generation of the map it was filled from, and io_prepare, " +
			"before it touches full->section, compares it with the current map's and fills the entry again if they differ; with the RFC, and with the IOMMU notifier's tlb_flush queued on the vCPU (async_run_on_cpu) as before 30933c4fb4f3",
		Source: masterSource + "; the fix is this model's candidate (a generation, not a pointer, so a reused address cannot match); RFC <20240220041922.373029-2-npiggin@gmail.com>"},
		without(masterCfg, func(c *config) { c.dirtyLocked, c.mapGen, c.notifyDirect = true, true, false })},
	{model.Variant{Name: "non-synced", Expect: NoStaleTranslation,
		Description: "tlb_flush_page_by_mmuidx_all_cpus: remote jobs queued, own TLB flushed at once, the source continues (ppc tlbie before 2024, H9); fixed environment",
		Source:      "82676f1fc4b1 target/ppc: Fix broadcast tlbie synchronisation"},
		config{synced: false, noBQL: true, endTB: false, kickQueue: true}.fixed()},
	{model.Variant{Name: "synced-no-tb-end", Expect: NoStaleTranslation,
		Description: "synced flush, but the TB is not ended: the source runs the next instruction before its safe work (H10); fixed environment",
		Source:      "4ddc104689b target/ppc: Fix tlbie; 82676f1fc4b1 (arm, riscv, s390x noted)"},
		without(noBQLFixed, func(c *config) { c.endTB = false })},
	{model.Variant{Name: "no-kick", Expect: NoStaleTranslation, AlsoViolates: []string{model.Deadlock},
		Description: "synced flush whose remote jobs are queued without qemu_cpu_kick of the target (mutation V-A6); fixed environment",
		Source:      "mutation V-A6"},
		without(noBQLFixed, func(c *config) { c.kickQueue = false })},
}

// Protocol is the cputlb protocol family.
var Protocol = &model.Protocol{
	Name:        "cputlb",
	Description: "QEMU broadcast TLB invalidate with every path that touches a vCPU's TLB from another thread: remote flush jobs, safe work under start_exclusive, tlb_reset_dirty from the migration thread, tcg_commit's flush from the main loop",
	Source:      "seed 000_b36807347ebe5ed1; QEMU accel/tcg/cputlb.c, exec.c, cpus-common.c (cota/qemu per-CPU-lock branch 09addeed)",
	Variants:    variantList(),
	Params: []model.Param{
		{Name: "cpus", Default: 2, Min: 2, Max: maxCPUs,
			Description: "vCPUs: cpu0 (and cpu1 with sources=2) execute a broadcast invalidate, the others run guest code that uses the pages"},
		{Name: "accesses", Default: 1, Min: 1, Max: 3,
			Description: "guest loads from the sources' pages by each target vCPU before its guest halts"},
		{Name: "sources", Default: 1, Min: 1, Max: maxSources,
			Description: "vCPUs that issue a synced flush of their own page at once"},
		{Name: "migration", Default: 1, Min: 0, Max: 2,
			Description: "dirty-bitmap syncs (and sends of D) by the migration thread, which resets TLBs from another thread and waits with run_on_cpu; 0: no migration thread"},
		{Name: "commit", Default: 1, Min: 0, Max: 1,
			Description: "memory transactions committed by the main loop (tcg_commit: tlb_flush of every vCPU); 0: no main-loop thread"},
		{Name: "vcpu-commit", Default: 0, Min: 0, Max: 1,
			Description: "1: the first target's guest programs a device's BAR in an instruction that then loads from M: the MMIO store commits the transaction " +
				"on the vCPU's own thread with the BQL, and the load uses what mmu_lookup found before the store; needs commit=0"},
		{Name: "iommu", Default: 0, Min: 0, Max: 1,
			Description: "1: an IOMMU thread, with the BQL, unmaps a translation the first target caches, and tcg_iommu_unmap_notify flushes that vCPU's TLB " +
				"(on the notifying thread since 30933c4fb4f3, queued before); the first target's loads then read the comparator and the addend in two steps; needs commit=0 migration=0"},
		{Name: "rcu", Default: 0, Min: 0, Max: 1,
			Description: "1: the committed transaction's old map is freed through RCU (the vCPUs' read sections around cpu_exec, the call_rcu thread's grace period and address_space_dispatch_free), " +
				"and a device interrupt pending on the first target is delivered before cpu_exec tests exit_request, reading its vector table through a TLB fill; needs commit=1 or vcpu-commit=1"},
	},
	New:    newMachine,
	Matrix: matrix,
	Claims: claims,
}

func variantList() []model.Variant {
	out := make([]model.Variant, len(variants))
	for i, v := range variants {
		out[i] = v.Variant
	}
	return out
}

// shape is the size of an instance.
type shape struct {
	cpus, accesses, sources, migration, commit, rcu, vcpuCommit, iommu int
}

func newMachine(variant string, p model.Params) (model.Machine, error) {
	for _, v := range variants {
		if v.Name != variant {
			continue
		}
		sh := shape{cpus: p["cpus"], accesses: p["accesses"], sources: p["sources"], migration: p["migration"], commit: p["commit"], rcu: p["rcu"], vcpuCommit: p["vcpu-commit"], iommu: p["iommu"]}
		if sh.cpus < 2 || sh.cpus > maxCPUs || sh.accesses < 1 || sh.accesses > 3 || sh.sources < 1 || sh.sources > maxSources ||
			sh.migration < 0 || sh.migration > 2 || sh.commit < 0 || sh.commit > 1 {
			return nil, fmt.Errorf("cpus=%d accesses=%d sources=%d migration=%d commit=%d out of range", sh.cpus, sh.accesses, sh.sources, sh.migration, sh.commit)
		}
		if sh.rcu < 0 || sh.rcu > 1 {
			return nil, fmt.Errorf("rcu=%d out of range: 0 or 1", sh.rcu)
		}
		if sh.iommu < 0 || sh.iommu > 1 {
			return nil, fmt.Errorf("iommu=%d out of range: 0 or 1", sh.iommu)
		}
		if sh.iommu == 1 && (sh.commit > 0 || sh.migration > 0 || sh.vcpuCommit > 0) {
			// Only the loads of X_s read the comparator and the addend in
			// two steps; M's and D's accesses fold their lookup into the
			// use, which is sound only while no other thread flushes the
			// vCPU's TLB.
			return nil, fmt.Errorf("iommu=1 needs commit=0, vcpu-commit=0 and migration=0: the model splits only the loads' TLB lookup, and M's and D's accesses would need it too")
		}
		if sh.vcpuCommit < 0 || sh.vcpuCommit > 1 {
			return nil, fmt.Errorf("vcpu-commit=%d out of range: 0 or 1", sh.vcpuCommit)
		}
		if sh.vcpuCommit == 1 && sh.commit == 1 {
			return nil, fmt.Errorf("vcpu-commit=1 needs commit=0: the model has one transaction, committed by the main loop or by the vCPU")
		}
		if sh.rcu == 1 && sh.commit+sh.vcpuCommit == 0 {
			return nil, fmt.Errorf("rcu=1 needs commit=1 or vcpu-commit=1: only a committed transaction gives the call_rcu thread a map to free")
		}
		if sh.sources >= sh.cpus {
			return nil, fmt.Errorf("sources=%d needs cpus > %d: a target vCPU runs the guest code that uses the pages", sh.sources, sh.sources)
		}
		return newMachineOf(v.cfg, sh), nil
	}
	return nil, fmt.Errorf("unknown variant %q", variant)
}
