package cputlb

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// The verification matrix: the configurations besides the default
// (cpus=2 accesses=1 sources=1 migration=1 commit=1, where both foreign
// paths run beside the broadcast invalidate, a tlb_reset_dirty may fall
// inside a flush, and each vCPU's TLB is flushed twice: by the page flush
// and by tcg_commit's tlb_flush) in which every variant's verdict is
// checked, chosen so that each mechanism happens at least twice somewhere:
// two dirty syncs, two targets counted by start_exclusive, two sources
// whose synced flushes and exclusive sections interleave. Each foreign
// path also runs alone, which is where the seed's era is clean or not for
// one reason at a time. A verdict that differs from the variant's default
// says why.
var matrix = []model.Config{
	{Params: model.Params{"migration": 0, "commit": 0},
		Why: "the broadcast invalidate alone, with no thread but the vCPUs touching a TLB",
		Expect: map[string]string{
			// The bugs of the seed's era are on the foreign paths.
			"synced": model.ExpectOK, "synced-no-bql": model.ExpectOK,
			"sync-no-reset": model.ExpectOK, "is-clean-unlocked": model.ExpectOK, "commit-direct": model.ExpectOK,
			"dispatch-uncached": model.ExpectOK, "master": model.ExpectOK,
		}},
	{Params: model.Params{"commit": 0},
		Why: "the migration thread alone: a dirty sync, tlb_reset_dirty of every vCPU under its tlb.c.lock, run_on_cpu on every vCPU, the send",
		Expect: map[string]string{
			"synced": DirtyTracking, "synced-no-bql": DirtyTracking,
			"commit-direct": model.ExpectOK,
			// Its race needs a store that misses D (the entry dropped by
			// the main loop's flush and filled again) or a second sync
			// (the entry reset to TLB_NOTDIRTY by the first, made
			// writable by notdirty_write across the second).
			"is-clean-unlocked": model.ExpectOK, "dispatch-uncached": model.ExpectOK, "master": model.ExpectOK,
		}},
	{Params: model.Params{"migration": 0},
		Why: "the main loop alone: tcg_commit queues a tlb_flush on every vCPU, whose TLB the source's page flush also flushes",
		Expect: map[string]string{
			"sync-no-reset": model.ExpectOK, "is-clean-unlocked": model.ExpectOK,
			// Master's race is the RFC's, which needs the migration thread.
			"master": model.ExpectOK,
		}},
	{Params: model.Params{"migration": 2, "commit": 0},
		Why: "two dirty syncs: the second meets the entry the first reset to TLB_NOTDIRTY and the stores in between made writable again",
		Expect: map[string]string{
			"synced": DirtyTracking, "synced-no-bql": DirtyTracking,
			"commit-direct": model.ExpectOK,
			// QEMU since 10.1 has the RFC's race in its two-sync form.
			"dispatch-uncached": DirtyTracking, "master": DirtyTracking,
		}},
	{Params: model.Params{"cpus": 3, "accesses": 2, "migration": 0, "commit": 0},
		Why: "two targets with two loads each: two remote flush jobs, start_exclusive counting two running vCPUs",
		Expect: map[string]string{
			"synced": model.ExpectOK, "synced-no-bql": model.ExpectOK,
			"sync-no-reset": model.ExpectOK, "is-clean-unlocked": model.ExpectOK, "commit-direct": model.ExpectOK,
			"dispatch-uncached": model.ExpectOK, "master": model.ExpectOK,
		}},
	{Params: model.Params{"rcu": 1, "migration": 0},
		Why:    "the main loop alone, its old map freed through RCU: read sections around cpu_exec, the call_rcu thread's grace period and free, an interrupt delivered before exit_request is tested",
		Expect: rcuExpect},
	{Params: model.Params{"rcu": 1},
		Why:    "every path, the old map freed through RCU",
		Expect: rcuExpect},
	{Params: model.Params{"vcpu-commit": 1, "commit": 0, "migration": 0},
		Why:    "a commit from the first target's own MMIO write to a BAR, in an instruction whose second access uses what mmu_lookup found before it (0d58c660689f's race (2))",
		Expect: vcpuCommitExpect},
	{Params: model.Params{"vcpu-commit": 1, "commit": 0, "migration": 0, "rcu": 1},
		Why:    "the vCPU's own commit with the old map freed through RCU (in v5.0, cpu_reloading_memory_map splits its read section)",
		Expect: vcpuCommitExpect},
	{Params: model.Params{"vcpu-commit": 1, "commit": 0},
		Why:    "the vCPU's own commit beside the migration thread",
		Expect: map[string]string{"master": DirtyTracking}},
	{Params: model.Params{"iommu": 1, "commit": 0, "migration": 0},
		Why: "the IOMMU notifier's tlb_flush of the first target, from the notifying thread since 30933c4fb4f3, beside the target's inline TLB lookups",
		Expect: map[string]string{
			"synced": model.ExpectOK, "synced-no-bql": model.ExpectOK, "commit-direct": model.ExpectOK,
			"sync-no-reset": model.ExpectOK, "is-clean-unlocked": model.ExpectOK,
			"dispatch-uncached": TLBOwnerOnly, "master": TLBOwnerOnly, "master-rfc": TLBOwnerOnly,
		}},
	{Params: model.Params{"sources": 2, "cpus": 3, "migration": 0, "commit": 0},
		Why: "two sources issuing synced flushes at once: each queues a flush on the other and safe work on itself, and their exclusive sections interleave",
		// The variants that differ only on the foreign paths explore the
		// same states as these here.
		Variants: []string{"synced", "synced-no-bql", "non-synced", "synced-no-tb-end", "no-kick"},
		Expect: map[string]string{
			"synced": model.ExpectOK, "synced-no-bql": model.ExpectOK,
		}},
}

// rcuExpect: with the old map freed through RCU, every variant that keeps
// a pointer into a dispatch across read sections uses it after the free:
// the cached cpuas->memory_dispatch of 0d58c660689f to 10.0 (gitlab
// #3040; the fixed code and the mutations of the flush built on it), and
// master's full->section. The v5.0 code, which switches the cached
// dispatch in tcg_commit itself, and dispatch-uncached, which reads the
// current map, fail dispatch-coherent first and hold dispatch-live
// (TestDispatchLiveEras).
var rcuExpect = map[string]string{
	"synced-fixed": DispatchLive, "synced-no-bql-fixed": DispatchLive, "sync-no-reset": DispatchLive, "is-clean-unlocked": DispatchLive,
	"master": DispatchLive, "master-rfc": DispatchLive, "synced-no-tb-end": DispatchLive, "no-kick": DispatchLive,
}

// vcpuCommitExpect: a vCPU's own commit breaks only the code that switches
// the dispatch an instruction's second access resolves in: v5.0, which
// switches the writer's cached dispatch in tcg_commit, and 10.1, which
// reads the current map (both dispatch-coherent, their default). From
// 0d58c660689f the writer keeps its cached dispatch until tcg_commit_cpu,
// and master keeps the section; the variants whose bug needs the
// migration thread are clean without it.
var vcpuCommitExpect = map[string]string{
	"sync-no-reset": model.ExpectOK, "is-clean-unlocked": model.ExpectOK, "master": model.ExpectOK,
}

// The seed's claim is that flush jobs no longer take the BQL (its
// measurements are speed-ups of a kernel build); as counts, over every
// complete execution of an exhaustive search.
var claims = []model.Claim{
	{
		Name: "no-bql-per-flush",
		Text: "seed 000: \"queue async flush jobs without the BQL\": with the broadcast invalidate alone, synced takes the BQL exactly once " +
			"per remote flush job in every execution (once with two vCPUs) and synced-no-bql never",
		Metric: "bql-acquisitions",
		A:      "synced-no-bql",
		B:      "synced",
		Params: model.Params{"migration": 0, "commit": 0},
		Holds:  exactly(0, 1),
	},
	{
		Name: "no-bql-only-the-flush",
		Text: "with the migration thread, whose sync, run_on_cpu and do_nothing items take the BQL in both, the seed (on the fixed code) " +
			"removes exactly the remote flush job's BQL acquisition in every execution and no other",
		Metric: "bql-acquisitions",
		A:      "synced-no-bql-fixed",
		B:      "synced-fixed",
		Params: model.Params{"commit": 0},
		Holds:  fewerBy(1),
	},
}

// exactly holds when the metric is a in every execution of A and b in
// every execution of B.
func exactly(a, b int64) func(model.MetricSummary, model.MetricSummary) (bool, string) {
	return func(sa, sb model.MetricSummary) (bool, string) {
		found := fmt.Sprintf("A %d..%d (mean %.3g), B %d..%d (mean %.3g) over %.3g and %.3g executions",
			sa.Min, sa.Max, sa.Mean, sb.Min, sb.Max, sb.Mean, sa.Executions, sb.Executions)
		if sa.Executions == 0 || sb.Executions == 0 {
			return false, "no complete execution measured: " + found
		}
		return sa.Min == a && sa.Max == a && sb.Min == b && sb.Max == b, found
	}
}

// fewerBy holds when the metric is one constant in every execution of A,
// another in every execution of B, and A's is d less.
func fewerBy(d int64) func(model.MetricSummary, model.MetricSummary) (bool, string) {
	return func(sa, sb model.MetricSummary) (bool, string) {
		found := fmt.Sprintf("A %d..%d, B %d..%d over %.3g and %.3g executions", sa.Min, sa.Max, sb.Min, sb.Max, sa.Executions, sb.Executions)
		if sa.Executions == 0 || sb.Executions == 0 {
			return false, "no complete execution measured: " + found
		}
		return sa.Min == sa.Max && sb.Min == sb.Max && sb.Min-sa.Min == d, found
	}
}
