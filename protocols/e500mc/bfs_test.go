package e500mc

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

func machineFor(t *testing.T, variant string, p model.Params) model.Machine {
	t.Helper()
	m, _, err := Protocol.Instantiate(variant, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func explore(t *testing.T, m model.Machine, opts explorer.Options) *explorer.Result {
	t.Helper()
	r, err := explorer.Explore(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// defaultResults caches the bfs result of each variant at the default
// size, which several tests look at (tests here do not run in parallel).
var defaultResults = map[string]*explorer.Result{}

func defaultResult(t *testing.T, variant string) *explorer.Result {
	t.Helper()
	if r, ok := defaultResults[variant]; ok {
		return r
	}
	r := explore(t, machineFor(t, variant, nil), explorer.Options{Strategy: explorer.BFS, Metrics: true})
	defaultResults[variant] = r
	return r
}

// TestBFSDefault checks every variant exhaustively at the default size:
// correct ones are clean with an exact state count, buggy ones are found
// with the property the variant table expects and a shortest
// counterexample of a known length.
func TestBFSDefault(t *testing.T) {
	want := map[string]struct {
		states int64 // correct variants
		steps  int   // buggy variants: counterexample length
		words  []string
	}{
		"per-lpid":       {states: 137030},
		"per-cpu":        {states: 143934},
		"oldpir-only":    {steps: 7, words: []string{"vCPU A of VM1", "that vCPU B of the same VM installed", "pollution"}},
		"no-oldpir":      {steps: 8, words: []string{"vCPU A of VM1", "its own stale TLB entry", "another CPU"}},
		"oldpir-zero":    {steps: 8, words: []string{"vCPU D of VM3", "vCPU A of VM1 installed", "reuses LPID 1", "cross-VM leak"}},
		"never-flush":    {steps: 5, words: []string{"vCPU B of VM1", "that vCPU A of the same VM installed"}},
		"preempt-window": {steps: 10, words: []string{"vCPU B of VM1", "on CPU0", "that vCPU A of the same VM installed"}},
	}
	if len(want) != len(Protocol.Variants) {
		t.Fatalf("test covers %d variants, protocol has %d", len(want), len(Protocol.Variants))
	}
	for _, v := range Protocol.Variants {
		t.Run(v.Name, func(t *testing.T) {
			w := want[v.Name]
			r := defaultResult(t, v.Name)
			if v.Expect == model.ExpectOK {
				if r.Verdict != explorer.OK || r.Stats.States != w.states {
					t.Fatalf("got %s, want ok with %d states", r, w.states)
				}
				return
			}
			if r.Verdict != explorer.Violation || r.Violation.Property != v.Expect || len(r.Schedule) != w.steps {
				t.Fatalf("got %s in %d steps, want %s in %d steps", r, len(r.Schedule), v.Expect, w.steps)
			}
			for _, word := range w.words {
				if !strings.Contains(r.Violation.Message, word) {
					t.Errorf("message %q does not say %q", r.Violation.Message, word)
				}
			}
		})
	}
}

// TestLoadIsTheOnlyDifference pins the shortest counterexamples' key
// step: the load that skips the flush, and why.
func TestLoadIsTheOnlyDifference(t *testing.T) {
	for variant, skip := range map[string]string{
		"oldpir-only":    "no flush (oldpir == PIR 0)",
		"no-oldpir":      "no flush (last_vcpu_of_lpid[1] == A)",
		"oldpir-zero":    "no flush (oldpir == PIR 0, last_vcpu_of_lpid[1] == D)",
		"never-flush":    "no flush (this variant never flushes)",
		"preempt-window": "enters the guest without a flush (decided before it was preempted)",
	} {
		r := defaultResult(t, variant)
		load := r.Labels[len(r.Labels)-2]
		if !strings.HasPrefix(load, "kvmppc_core_vcpu_load_e500mc:") || !strings.HasSuffix(load, skip) {
			t.Errorf("%s: the step before the hit is %q, want a load ending %q", variant, load, skip)
		}
	}
}

// TestWholeExplorationFlushes compares the flush metric over every
// execution of the default configuration: per-lpid never needs more
// flushes than per-cpu on the same schedule, and fewer on average.
func TestWholeExplorationFlushes(t *testing.T) {
	get := func(variant string) explorer.Metric {
		r := defaultResult(t, variant)
		for _, mt := range r.Metrics {
			if mt.Name == Flushes {
				if mt.Executions == 0 {
					t.Fatalf("%s: no executions measured", variant)
				}
				return mt
			}
		}
		t.Fatalf("%s: no %s metric", variant, Flushes)
		return explorer.Metric{}
	}
	lp, pc := get("per-lpid"), get("per-cpu")
	if lp.Executions != pc.Executions {
		t.Fatalf("the variants differ in executions: %v vs %v", lp.Executions, pc.Executions)
	}
	if lp.Min != 1 || lp.Max != 3 || pc.Min != 1 || pc.Max != 3 {
		t.Errorf("flushes per execution: per-lpid %d..%d, per-cpu %d..%d, want 1..3 for both", lp.Min, lp.Max, pc.Min, pc.Max)
	}
	if !(lp.Mean < pc.Mean) {
		t.Errorf("mean flushes per execution: per-lpid %.4f, per-cpu %.4f; want per-lpid lower", lp.Mean, pc.Mean)
	}
}
