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
	// The correct variants are explored with CPU symmetry, which halves
	// their 1.6 million states at two CPUs (the plain counts are in the
	// README); TestSymmetryAgreesWithBFS shows it changes no verdict.
	v, _ := Protocol.Variant(variant)
	r := explore(t, machineFor(t, variant, nil), explorer.Options{Strategy: explorer.BFS, Workers: 2, Symmetry: v.Expect == model.ExpectOK})
	defaultResults[variant] = r
	return r
}

// TestBFSDefault checks every variant exhaustively at the default size:
// correct ones are clean with an exact state count (up to CPU symmetry),
// buggy ones are found with the property the variant table expects and a
// shortest counterexample of a known length.
func TestBFSDefault(t *testing.T) {
	want := map[string]struct {
		states int64 // correct variants
		steps  int   // buggy variants: counterexample length
		words  []string
	}{
		"per-lpid":       {states: 785556},
		"per-cpu":        {states: 830680},
		"oldpir-only":    {steps: 11, words: []string{"vCPU A of VM1", "that vCPU B of the same VM installed", "pollution"}},
		"no-oldpir":      {steps: 12, words: []string{"vCPU A of VM1 runs guest code on CPU0", "host page of generation 0", "freed"}},
		"oldpir-zero":    {steps: 12, words: []string{"vCPU D of VM3", "vCPU A of VM1 installed", "reuses LPID 1", "cross-VM leak"}},
		"never-flush":    {steps: 9, words: []string{"vCPU B of VM1", "that vCPU A of the same VM installed"}},
		"preempt-window": {steps: 14, words: []string{"vCPU A of VM1", "on CPU0", "that vCPU B of the same VM installed"}},
		"ignore-request": {steps: 7, words: []string{"vCPU A of VM1 runs guest code on CPU0", "freed"}},
		"e6500-one-lpid": {steps: 8, words: []string{"vCPU B of VM1 (LPID 1) on CPU1", "that vCPU A of the same VM installed", "pollution"}},
	}
	if len(want) != len(Protocol.Variants) {
		t.Fatalf("test covers %d variants, protocol has %d", len(want), len(Protocol.Variants))
	}
	for _, v := range Protocol.Variants {
		t.Run(v.Name, func(t *testing.T) {
			w := want[v.Name]
			r := defaultResult(t, v.Name)
			if v.Expect == model.ExpectOK {
				// With symmetry: every property but host-flush-returns,
				// which symmetry reduction does not check (partial).
				if r.Verdict != explorer.Partial || !r.CleanExcept(HostFlushReturns) || r.Stats.States != w.states {
					t.Fatalf("got %s, want partial (all but %s) with %d states", r, HostFlushReturns, w.states)
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
// step: the last vCPU load before the violation, which skips the flush,
// and why.
func TestLoadIsTheOnlyDifference(t *testing.T) {
	for variant, skip := range map[string]string{
		"oldpir-only":    "no flush (oldpir == PIR 0)",
		"no-oldpir":      "no flush (last_vcpu_of_lpid[1] == A)",
		"oldpir-zero":    "no flush (oldpir == PIR 0, last_vcpu_of_lpid[1] == D)",
		"never-flush":    "no flush (this variant never flushes)",
		"preempt-window": "enters the guest without a flush (decided before it was preempted)",
	} {
		r := defaultResult(t, variant)
		load := ""
		for _, l := range r.Labels {
			if strings.HasPrefix(l, "kvmppc_core_vcpu_load_e500mc:") {
				load = l
			}
		}
		if !strings.HasSuffix(load, skip) {
			t.Errorf("%s: the last load is %q, want one ending %q", variant, load, skip)
		}
	}
}

// TestIgnoredRequestIsTheDifference: ignore-request's counterexample
// loads with a flush (the load-time check works) and enters the guest
// with the host's KVM_REQ_TLB_FLUSH pending and ignored.
func TestIgnoredRequestIsTheDifference(t *testing.T) {
	r := defaultResult(t, "ignore-request")
	last := r.Labels[len(r.Labels)-1]
	if !strings.HasPrefix(last, "kvmppc_prepare_to_enter:") || !strings.Contains(last, "KVM_REQ_TLB_FLUSH pending, ignored by this variant") {
		t.Errorf("the last step is %q, want a guest entry with the request ignored", last)
	}
}

// TestNoOldpirWithoutTLBInstructions settles the prediction that,
// without the oldpir term, host-freed pages become reachable with no
// guest TLB instruction at all. With tlb-ops=0
// the guests only load (every vCPU boots with EA 0 mapped), one vCPU per
// VM and no VMM, so neither pollution nor a cross-VM leak is possible:
// bfs finds host-memory-safety, in the predicted schedule (install on CPU0,
// migrate, the host's flush handled on CPU1, back to CPU0 without a
// flush), and the merged condition is clean at that size.
func TestNoOldpirWithoutTLBInstructions(t *testing.T) {
	p := model.Params{"tlb-ops": 0, "vm1-vcpus": 1, "vm2-vcpus": 1, "cycles": 0}
	r := explore(t, machineFor(t, "no-oldpir", p), explorer.Options{})
	if r.Verdict != explorer.Violation || r.Violation.Property != HostMemorySafety || len(r.Schedule) != 12 {
		t.Fatalf("got %s in %d steps, want host-memory-safety in 12", r, len(r.Schedule))
	}
	for _, l := range r.Labels {
		if strings.Contains(l, "tlbwe") || strings.Contains(l, "tlbilx:") {
			t.Errorf("the counterexample executes a guest TLB instruction: %q", l)
		}
	}
	ok := explore(t, machineFor(t, "per-lpid", p), explorer.Options{})
	if ok.Verdict != explorer.OK {
		t.Fatalf("per-lpid at the same size: %s", ok)
	}
}

// TestNoOldpirStaleness: without host unmaps, no-oldpir's shortest
// counterexample is C-bug-a, the guest's own stale entry
// after a tlbwe and local tlbilx done on another CPU (no-pollution).
func TestNoOldpirStaleness(t *testing.T) {
	r := explore(t, machineFor(t, "no-oldpir", model.Params{"unmaps": 0, "cycles": 0, "ops": 3}), explorer.Options{})
	if r.Verdict != explorer.Violation || r.Violation.Property != NoPollution || !strings.Contains(r.Violation.Message, "its own stale TLB entry") {
		t.Fatalf("got %s, want the stale-entry no-pollution", r)
	}
}
