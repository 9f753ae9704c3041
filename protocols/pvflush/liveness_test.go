package pvflush

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// busyWaitTrace is the lasso of busy-wait without fairness.
const busyWaitTrace = "../../testdata/pvflush/busy-wait-unfair.trace.json"

// flush-returns under weak fairness and without it. The blocked-await
// variants have acyclic state graphs (every step uses up a bound or moves
// a program on), so the property holds with or without fairness. The
// busy-wait variant spins in csd_lock_wait: without fairness the spin
// repeats forever while the target never runs; with weak fairness a
// target whose step is enabled throughout must take it, and the flush
// returns.
func TestFlushReturns(t *testing.T) {
	for _, c := range []struct {
		variant  string
		p        model.Params
		fairness string
		states   int64
		cycle    int // 0: the property holds
	}{
		{"fixed", nil, explorer.FairnessNone, 35191, 0},
		{"native", model.Params{"initiators": 2, "vcpus": 2}, explorer.FairnessNone, 25920, 0},
		{"pt-free-rcu", nil, explorer.FairnessNone, 155653, 0},
		{"busy-wait", nil, explorer.FairnessWeak, 35191, 0},
		{"busy-wait", nil, explorer.FairnessNone, 35191, 1},
		{"busy-wait", model.Params{"initiators": 2, "vcpus": 2}, explorer.FairnessWeak, 49823, 0},
		{"busy-wait", model.Params{"initiators": 2, "vcpus": 2}, explorer.FairnessNone, 49823, 1},
	} {
		r := exploreWith(t, instantiate(t, c.variant, c.p), explorer.Options{Fairness: c.fairness, Workers: 2})
		if r.Stats.States != c.states {
			t.Errorf("%s %v fairness=%s: %d states, want %d", c.variant, c.p, c.fairness, r.Stats.States, c.states)
		}
		if c.cycle == 0 {
			if r.Verdict != explorer.OK {
				t.Errorf("%s %v fairness=%s: %s", c.variant, c.p, c.fairness, r)
			}
			continue
		}
		if r.Violation == nil || r.Violation.Property != FlushReturns || r.Cycle != c.cycle {
			t.Errorf("%s %v fairness=%s: %s, cycle %d; want flush-returns with a cycle of %d", c.variant, c.p, c.fairness, r, r.Cycle, c.cycle)
			continue
		}
		if last := r.Labels[len(r.Labels)-1]; !strings.HasPrefix(last, "native_flush_tlb_others: csd_lock_wait: no ack from vCPU") {
			t.Errorf("%s %v: the cycle is %q, not the spin", c.variant, c.p, last)
		}
	}
}

// The lasso of busy-wait without fairness is kept as a trace (version 2)
// that replays; the same lasso is refused as a counterexample under weak
// fairness.
func TestBusyWaitLasso(t *testing.T) {
	m := instantiate(t, "busy-wait", nil)
	r := exploreWith(t, m, explorer.Options{Fairness: explorer.FairnessNone})
	tr, err := traces.RecordProgress(Protocol, "busy-wait", nil, r.Schedule, r.Cycle, r.Violation, explorer.FairnessNone)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := traces.Save(busyWaitTrace, tr); err != nil {
			t.Fatal(err)
		}
	}
	saved, err := traces.Load(busyWaitTrace)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Version != 2 || saved.Cycle != 1 || saved.Fairness != explorer.FairnessNone {
		t.Fatalf("the trace is version %d, cycle %d, fairness %q", saved.Version, saved.Cycle, saved.Fairness)
	}
	got, _ := traces.Encode(tr)
	want, _ := traces.Encode(saved)
	if string(got) != string(want) {
		t.Fatalf("bfs finds another lasso than the kept one (go test -update rewrites it):\n%s", got)
	}
	if _, err := traces.Replay(Protocol, saved); err != nil {
		t.Fatal(err)
	}
	if _, err := explorer.CheckLasso(m, saved.Schedule, saved.Cycle, FlushReturns, explorer.FairnessWeak); err == nil {
		t.Fatal("the unfair lasso is accepted under weak fairness")
	}
	// A target that stays scheduled out: vCPU1 is read as running, gets
	// the IPI, is preempted before taking it and is never scheduled in
	// again while vCPU0 spins. A lasso without fairness; under weak
	// fairness vCPU1's kvm_sched_in, enabled throughout, must be taken.
	sched := []model.Choice{
		{Thread: 0},         // ptep_get_and_clear
		{Thread: 0},         // inc_mm_tlb_gen
		{Thread: 0},         // read st[1] = 0
		{Thread: 0},         // read st[2] = 0
		{Thread: 0},         // IPI to vCPU1
		{Thread: 0},         // IPI to vCPU2
		{Thread: 1, Alt: 3}, // vCPU1 preempted with the IPI pending
		{Thread: 0},         // spin: vCPU1 scheduled out
	}
	ex, err := explorer.CheckLasso(m, sched, 1, FlushReturns, explorer.FairnessNone)
	if err != nil {
		t.Fatal(err)
	}
	if got := ex.Steps[7].Label; got != "native_flush_tlb_others: csd_lock_wait: no ack from vCPU1 yet, cpu_relax (vCPU1 is scheduled out by the host)" {
		t.Errorf("the cycle: %q", got)
	}
	if _, err := explorer.CheckLasso(m, sched, 1, FlushReturns, explorer.FairnessWeak); err == nil {
		t.Error("a lasso that starves vCPU1's kvm_sched_in is accepted under weak fairness")
	}
}
