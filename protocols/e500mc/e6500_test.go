package e500mc

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// TestThreadSpecificLPIDsChangeNothing: on e6500 (threads=2) the two
// threads of a core share its TLB, and get_thread_specific_lpid gives each
// thread tags the other never uses, so the shared TLB is two private
// ones: per-lpid explores exactly the states and transitions it has with
// one thread per core, and the labels carry the thread's LPID (2l | t).
// With one LPID per VM (e6500-one-lpid) a vCPU hits the entry its
// sibling thread's vCPU installed.
func TestThreadSpecificLPIDsChangeNothing(t *testing.T) {
	small := model.Params{"cycles": 0}
	one := explore(t, machineFor(t, "per-lpid", small), explorer.Options{Workers: 2})
	two := explore(t, machineFor(t, "per-lpid", model.Params{"cycles": 0, "threads": 2}), explorer.Options{Workers: 2})
	if !one.OK() || !two.OK() || one.Stats.States != 229589 || two.Stats.States != one.Stats.States || two.Stats.Transitions != one.Stats.Transitions {
		t.Fatalf("threads=1: %s (%d transitions); threads=2: %s (%d); want both ok with 229589 states and the same transitions",
			one, one.Stats.Transitions, two, two.Stats.Transitions)
	}
	labels := reachableLabels(t, machineFor(t, "per-lpid", model.Params{"cycles": 0, "unmaps": 0, "threads": 2, "loads": 2, "ops": 1}))
	for _, want := range []string{"on CPU0, tlbilxlpid 2 (", "on CPU1, tlbilxlpid 3 ("} {
		if !containsAny(labels, want) {
			t.Errorf("no load labelled %q: the thread's LPID is 2l | (cpu & 1)", want)
		}
	}
	r := explore(t, machineFor(t, "e6500-one-lpid", small), explorer.Options{Workers: 2})
	if r.Violation == nil || r.Violation.Property != NoPollution || len(r.Schedule) != 8 ||
		!strings.Contains(r.Violation.Message, "that vCPU A of the same VM installed") {
		t.Fatalf("e6500-one-lpid cycles=0: %s in %d steps, want no-pollution in 8", r, len(r.Schedule))
	}
}

// TestTLBIVAXChangesNothing: the guest's tlbivax, emulated on the
// executing vCPU only (its gtlb entry, then kvmppc_core_flush_tlb on the
// current CPU), is the guest-TLB effect of a tlbilx and the host effect
// of the KVM_REQ_TLB_FLUSH handling: at cycles=0 it adds transitions and
// no state to per-lpid, and leaves every buggy variant's shortest
// counterexample as it was.
func TestTLBIVAXChangesNothing(t *testing.T) {
	base := explore(t, machineFor(t, "per-lpid", model.Params{"cycles": 0}), explorer.Options{Workers: 2})
	ivax := explore(t, machineFor(t, "per-lpid", model.Params{"cycles": 0, "tlbivax": 1}), explorer.Options{Workers: 2})
	if !ivax.OK() || ivax.Stats.States != base.Stats.States || ivax.Stats.Transitions != 643864 || base.Stats.Transitions != 626990 {
		t.Fatalf("tlbivax=1: %s (%d transitions); without: %s (%d); want ok with 229589 states, 643864 and 626990 transitions",
			ivax, ivax.Stats.Transitions, base, base.Stats.Transitions)
	}
	labels := reachableLabels(t, machineFor(t, "per-lpid", model.Params{"cycles": 0, "unmaps": 0, "tlbivax": 1, "loads": 2, "ops": 2}))
	if !containsAny(labels, "kvmppc_e500_emul_tlbivax: vCPU A invalidates EA 0 (page 1) in its gtlb; kvmppc_core_flush_tlb: tlbilxlpid 1 on CPU") {
		t.Error("no tlbivax of a mapped EA 0 reached")
	}
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		plain := defaultResult(t, v.Name)
		r := explore(t, machineFor(t, v.Name, model.Params{"tlbivax": 1}), explorer.Options{Workers: 2})
		if r.Violation == nil || r.Violation.Property != plain.Violation.Property || len(r.Schedule) != len(plain.Schedule) {
			t.Errorf("%s tlbivax=1: %s in %d steps, without tlbivax %s in %d", v.Name, r, len(r.Schedule), plain.Violation.Property, len(plain.Schedule))
		}
	}
}

// reachableLabels is the set of labels of every step from every state
// reachable in m.
func reachableLabels(t *testing.T, m model.Machine) map[string]bool {
	t.Helper()
	x := newExec(m)
	x.SetModes(true, false)
	out := map[string]bool{}
	for _, s := range reachable(m, 0) {
		for _, c := range explorer.Enabled(m, s) {
			successor(m, s, c, x)
			out[x.StepLabel()] = true
		}
	}
	return out
}

func containsAny(labels map[string]bool, sub string) bool {
	for l := range labels {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}
