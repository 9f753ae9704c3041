package pvflush

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// Protocol is the KVM paravirtual remote TLB flush.
var Protocol = &model.Protocol{
	Name:        "pvflush",
	Description: "KVM paravirtual remote TLB flush: the guest defers flushes of preempted vCPUs to the host through steal_time.preempted",
	Source:      seed + "; arch/x86/kernel/kvm.c kvm_flush_tlb_others; arch/x86/kvm/x86.c record_steal_time, kvm_steal_time_set_preempted",
	Variants:    variantList,
	Params: []model.Param{
		{Name: "vcpus", Default: 3, Min: 2, Max: maxVCPUs,
			Description: "vCPUs: the initiators are vCPU0 (and vCPU1), every other vCPU is a target"},
		{Name: "initiators", Default: 1, Min: 1, Max: maxInitiators,
			Description: "vCPUs that unmap a page of their own and flush it concurrently (vCPU0, vCPU1); with 2, each is also the other's target and can be preempted"},
		{Name: "flushes", Default: 1, Min: 1, Max: 4,
			Description: "unmap-and-flush rounds per initiator (round r unmaps frame r of its page, a later round maps a fresh frame first)"},
		{Name: "preemptions", Default: 2, Min: 0, Max: 8,
			Description: "host preemptions (kvm_sched_out) of vCPUs, in total"},
		{Name: "accesses", Default: 2, Min: 0, Max: 6,
			Description: "accesses per vCPU (through the TLB, emulated by KVM, or get_user_pages_fast in the walker variants); an initiator accesses only the other initiator's page, through the TLB"},
		{Name: "memory", Default: 0, Min: 0, Max: 1,
			Description: "memory model: 0 sequentially consistent, 1 x86-TSO (per-vCPU store buffers; commits are steps of a \"store buffers\" thread)"},
		{Name: "pte-clear", Default: 0, Min: 0, Max: 2,
			Description: "how an initiator clears the PTE before flushing: 0 ptep_get_and_clear (locked xchg) then flush_tlb_mm_range's inc_mm_tlb_gen, as munmap; 2 a plain store then inc_mm_tlb_gen, as exit teardown; 1 HYPOTHETICAL, no caller in Linux: a plain store and no barrier at all before the PV flush"},
		{Name: "user-exits", Default: 0, Min: 0, Max: 4,
			Description: "returns of KVM_RUN to userspace (an MMIO exit with an emulated access in flight, or an exit from guest mode), in total; what the put then reports depends on the host (54aa83c90198)"},
		{Name: "host", Default: 0, Min: 0, Max: 1,
			Description: "the host: 0 fixed (mainline: 8c6de56a42e0, b043138246a4, 6cd88243c7e0), 1 the 2017 host merged with the guest (f38a7b75267f: host copy, three write-backs, no guard, no boundary gate)"},
	},
	Matrix: matrix,
	Claims: claims,
	New: func(name string, p model.Params) (model.Machine, error) {
		v, ok := variants[name]
		if !ok {
			return nil, fmt.Errorf("unknown variant %q", name)
		}
		m, err := newMachine(v, p)
		if err != nil {
			return nil, err
		}
		if m.tso {
			return model.WithTSO(m, memOf), nil
		}
		return m, nil
	},
}

// correct lists the variants expected to be correct at the default size.
var correct = []string{"fixed", "ignore-cmpxchg", "native", "busy-wait", "pt-free-rcu", "pt-free-native"}

// every maps each variant to the same verdict.
func every(verdict string) map[string]string {
	out := map[string]string{}
	for _, v := range variantList {
		out[v.Name] = verdict
	}
	return out
}

// matrix is what verification runs besides the defaults (pvflush_test.go
// pins the verdicts and state counts of the small ones, matrix_test.go
// runs all of them). Each mechanism happens at least twice in some
// configuration: two flush rounds, two preemptions of one target, two
// initiators.
var matrix = []model.Config{
	{Params: model.Params{"flushes": 2},
		Why: "two flush rounds per initiator: the second maps a fresh page and meets what the first left in steal_time (a byte at 3, a deferred flush still pending)"},
	{Params: model.Params{"vcpus": 2, "flushes": 2, "preemptions": 3},
		Why: "one target, so every preemption is of the same vCPU: it is preempted two or three times across two flush rounds"},
	{Params: model.Params{"initiators": 2, "vcpus": 2},
		Why:      "two initiators and no other vCPU: each flushes its own page, is the other's target, takes the other's IPI while it waits and can be preempted (initiators access through the TLB only, so the emulated-access bug needs a third vCPU)",
		Expect:   map[string]string{"mid-instruction": model.ExpectOK},
		Variants: []string{"posted", "shift-bug", "ignore-cmpxchg", "fixed", "native", "busy-wait", "host-clobber", "host-copy", "mid-instruction", "always-skip", "early-entry", "guest-plain-store"}},
	{Params: model.Params{"initiators": 2, "accesses": 1},
		Why:      "two initiators and a target both cmpxchg, so a cmpxchg can find the 3 the other initiator set; one access per vCPU, where no guest-side stale use is possible (it needs two accesses of one vCPU)",
		Variants: append([]string{"pt-free-page", "mid-instruction", "early-entry", "guest-plain-store"}, correct...)},
	{Params: model.Params{"initiators": 2},
		Why:      "two initiators at the default size: 6 268 634 states for fixed, 3 136 597 with the swap of the two initiators (symmetry.go), which the default bound of 5 000 000 needs",
		Variants: []string{"fixed", "posted"},
		Options:  []string{"symmetry"}},
	{Params: model.Params{"host": 1},
		Why:    "the 2017 host the seed was merged with (f38a7b75267f): every guest, the correct one included, has a vCPU reported preempted in the middle of an emulated instruction (B5), and without B-S1 the flush is lost in the host copy's write-back (B4)",
		Expect: every(PreemptedNotRunning)},
	{Params: model.Params{"host": 1, "preemptions": 0, "user-exits": 1},
		Why:    "the 2017 host with no host preemption at all: the put at the return of KVM_RUN to userspace reported PREEMPTED until 54aa83c90198, so one MMIO exit with an emulated access in flight has every guest reported preempted mid-instruction (B5); without B-S1 the flush is lost (testdata/pvflush/host2017-user-exit.trace.json), and without emulation too, through the host copy (B4, host2017_test.go)",
		Expect: every(PreemptedNotRunning)},
	{Params: model.Params{"user-exits": 1},
		Why: "the fixed host with a return to userspace besides two preemptions: since 54aa83c90198 kvm_arch_vcpu_put reports only a preempted vCPU, so the return changes no verdict (mid-instruction, whose host predates 54aa83c90198, is still caught by B-S1)"},
	{Params: model.Params{"preemptions": 0, "user-exits": 2},
		Why:    "returns to userspace and no preemption: the fixed host reports none of them and every variant whose bug needs a report is clean; mid-instruction (the host before 54aa83c90198 and 6cd88243c7e0) is reported preempted at the MMIO exit (testdata/pvflush/mid-instruction-user-exit.trace.json)",
		Expect: userExitsOnly()},
	{Params: model.Params{"memory": 1},
		Why: "x86-TSO with Linux's barriers: ptep_get_and_clear and inc_mm_tlb_gen before the steal_time reads, smp_mb before VM entry"},
	{Params: model.Params{"memory": 1, "pte-clear": 2},
		Why: "x86-TSO with a plain PTE clear (as exit teardown): inc_mm_tlb_gen alone orders it before the steal_time reads"},
	{Params: model.Params{"vcpus": 2, "flushes": 2, "memory": 1, "pte-clear": 1},
		Why:    "HYPOTHETICAL, no caller in Linux: a plain PTE clear and no barrier before the PV flush; only here does the uncompared cmpxchg (B2(a)) drop a running vCPU",
		Expect: map[string]string{"ignore-cmpxchg": StaleTLB}},
	{Params: model.Params{"vcpus": 4},
		Why:      "three targets (the benchmark's size)",
		Variants: []string{"fixed", "ignore-cmpxchg", "native", "busy-wait", "posted"}},
}

// userExitsOnly is the verdicts with returns to userspace and no
// preemption: only mid-instruction's host reports one.
func userExitsOnly() map[string]string {
	out := every(model.ExpectOK)
	out["mid-instruction"] = PreemptedNotRunning
	return out
}

// summary says a metric's mean and range in words.
func summary(s model.MetricSummary) string {
	return fmt.Sprintf("mean %.4f, min %d, max %d over %.0f executions", s.Mean, s.Min, s.Max, s.Executions)
}

// claims are the seed's performance claims ("PV TLB flush avoids touching
// vCPUs which are not scheduled and avoid the wait on the main CPU"),
// each as the relation the checker finds.
var claims = []model.Claim{
	{Name: "fixed-fewer-ipis", Metric: IPIs, A: "fixed", B: "native",
		Text: "fixed sends fewer IPIs than native, on average and at best: it defers the flush of a vCPU it reads as preempted to the host (seed 003)",
		Holds: func(a, b model.MetricSummary) (bool, string) {
			return a.Mean < b.Mean && a.Min < b.Min, "fixed " + summary(a) + "; native " + summary(b)
		}},
	{Name: "fixed-waits-less", Metric: WaitSteps, A: "fixed", B: "native",
		Text: "fixed busy-waits on scheduled-out vCPUs less than native on average (seed 003: \"avoid the wait on the main CPU\"); the mean counts every execution once, not by its likelihood, and it is lower still with the deferral deleted, so it holds without measuring the deferral (matrix_test.go)",
		Holds: func(a, b model.MetricSummary) (bool, string) {
			return a.Mean < b.Mean, "fixed " + summary(a) + "; native " + summary(b)
		}},
	{Name: "fixed-same-worst-wait", Metric: WaitSteps, A: "fixed", B: "native",
		Text: "fixed's worst case busy-waits as long as native's: a vCPU read as running and preempted before it takes the IPI is waited for all the same",
		Holds: func(a, b model.MetricSummary) (bool, string) {
			return a.Max == b.Max, "fixed " + summary(a) + "; native " + summary(b)
		}},
	{Name: "two-initiators-fewer-ipis", Metric: IPIs, A: "fixed", B: "native", Params: model.Params{"initiators": 2, "accesses": 1},
		Text: "with two initiators, fixed still sends fewer IPIs than native on average (a cmpxchg that finds the other initiator's 3 keeps its target and sends it an IPI)",
		Holds: func(a, b model.MetricSummary) (bool, string) {
			return a.Mean < b.Mean, "fixed " + summary(a) + "; native " + summary(b)
		}},
}
