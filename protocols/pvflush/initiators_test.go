package pvflush

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// Two initiators: vCPU0 and vCPU1 each unmap a page of their own and
// flush it, each a target of the other. The default size (vcpus=3,
// accesses=2: 6 268 634 states) is a matrix configuration; here smaller
// ones.
func TestTwoInitiators(t *testing.T) {
	for _, c := range []struct {
		variant string
		p       model.Params
		states  int64
		steps   int
	}{
		{"fixed", model.Params{"initiators": 2, "accesses": 1}, 1139110, 0},
		{"ignore-cmpxchg", model.Params{"initiators": 2, "vcpus": 2}, 49823, 0},
		{"native", model.Params{"initiators": 2, "vcpus": 2}, 25920, 0},
		{"fixed", model.Params{"initiators": 2, "vcpus": 2}, 49823, 0},
		// The seed as posted with no pure target: vCPU1 defers its flush
		// to preempted vCPU0 with the wrong bit.
		{"posted", model.Params{"initiators": 2, "vcpus": 2}, 0, 11},
	} {
		r := bfs(t, instantiate(t, c.variant, c.p))
		if c.steps == 0 {
			if r.Verdict != explorer.OK || r.Stats.States != c.states {
				t.Errorf("%s %v: %s, want ok with %d states", c.variant, c.p, r, c.states)
			}
			continue
		}
		if r.Violation == nil || r.Violation.Property != StaleTLB || len(r.Schedule) != c.steps {
			t.Errorf("%s %v: %s in %d steps, want stale-tlb in %d", c.variant, c.p, r, len(r.Schedule), c.steps)
		}
	}
}

// Each initiator is preempted, takes the other's IPI inside its own flush
// and is cmpxchg'd by the other; and a cmpxchg finds the byte at 3 that
// the other initiator set (fixed keeps the target and sends it an IPI,
// ignore-cmpxchg skips it, which the exploration above proves safe).
func TestTwoInitiatorsMechanisms(t *testing.T) {
	small := model.Params{"initiators": 2, "vcpus": 3, "accesses": 0, "preemptions": 1}
	for _, c := range []struct {
		variant string
		want    []string
	}{
		{"fixed", []string{
			"kvm_flush_tlb_others: cmpxchg st[2].preempted 1->3 failed (found 3), keep vCPU2 in flushmask",
			"kvm_flush_tlb_others: cmpxchg st[0].preempted 1->3 ok, skip vCPU0 (flush deferred to the host)",
			"kvm_flush_tlb_others: cmpxchg st[1].preempted 1->3 ok, skip vCPU1 (flush deferred to the host)",
			"flush_tlb_func: call-function IPI from vCPU1 taken, flush TLB entry of X1",
			"flush_tlb_func: call-function IPI from vCPU0 taken, flush TLB entry of X0",
			"VM exit on host timer interrupt (at_instruction_boundary = true); kvm_sched_out -> kvm_arch_vcpu_put -> kvm_steal_time_set_preempted: store st[0].preempted = 1",
		}},
		{"ignore-cmpxchg", []string{
			"kvm_flush_tlb_others: cmpxchg st[2].preempted 1->3 failed (found 3), skip vCPU2 (flush deferred to the host)",
		}},
	} {
		labels := reachableLabels(instantiate(t, c.variant, small))
		for _, l := range c.want {
			if !labels[l] {
				t.Errorf("%s %v: %q not reached; cmpxchg labels: %s", c.variant, small, l, strings.Join(filter(labels, "cmpxchg"), "\n"))
			}
		}
	}
	// An initiator takes the other's IPI while it waits for its own acks.
	m := instantiate(t, "fixed", model.Params{"initiators": 2, "vcpus": 2, "accesses": 0, "preemptions": 0})
	sched := []model.Choice{
		{Thread: 0}, {Thread: 0}, // vCPU0: clear X0, inc_mm_tlb_gen
		{Thread: 1}, {Thread: 1}, // vCPU1: clear X1, inc_mm_tlb_gen
		{Thread: 0}, {Thread: 0}, // vCPU0: read st[1] = 0, send the IPI
		{Thread: 1}, {Thread: 1}, // vCPU1: read st[0] = 0, send the IPI
		{Thread: 0}, {Thread: 0}, // vCPU0, waiting: take vCPU1's IPI, ack
		{Thread: 1, Alt: 1}, {Thread: 1}, // vCPU1, acked already: take vCPU0's IPI first (alt 0 would finish its wait), ack
		{Thread: 0}, {Thread: 0}, // vCPU0: acked, return
		{Thread: 1}, {Thread: 1}, // vCPU1: acked, return
	}
	ex, err := explorer.Execute(m, sched)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Violation != nil || !ex.Terminal {
		t.Fatalf("violation %v, terminal %v", ex.Violation, ex.Terminal)
	}
	if got := ex.Steps[8].Label; got != "flush_tlb_func: call-function IPI from vCPU1 taken, flush TLB entry of X1" {
		t.Errorf("step 9: %s", got)
	}
}
