package pvflush

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

func random(t *testing.T, m model.Machine, seed int64, runs int) *explorer.Result {
	t.Helper()
	r, err := explorer.Explore(m, explorer.Options{Strategy: explorer.Random, Seed: seed, Runs: runs})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRandomWalksLinearizable: seeded random walks of the correct
// variants give linearizable histories of the PTE registers, with one and
// with two initiators.
func TestRandomWalksLinearizable(t *testing.T) {
	for _, c := range []struct {
		v string
		p model.Params
	}{
		{"fixed", model.Params{"flushes": 2}}, {"native", model.Params{"flushes": 2}}, {"ignore-cmpxchg", model.Params{"flushes": 2}},
		{"fixed", model.Params{"initiators": 2, "flushes": 2}}, {"pt-free-rcu", model.Params{"flushes": 2}},
	} {
		r := random(t, instantiate(t, c.v, c.p), 1, 1000)
		if r.Verdict != explorer.Bounded || r.Violation != nil || r.Stats.Executions != 1000 {
			t.Errorf("%s %v: %s (%d executions)", c.v, c.p, r, r.Stats.Executions)
		}
	}
}

// TestSpecCatchesPosted: with the stale-tlb observer switched off (a
// test-only seam), the spec alone catches the seed as posted: a guest
// access reads P0 after the unmap-and-flush write of X returned.
func TestSpecCatchesPosted(t *testing.T) {
	m := instantiate(t, "posted", nil)
	m.staleSeam = true
	r := random(t, m, 1, 2000)
	if r.Violation == nil || r.Violation.Property != model.Linearizability {
		t.Fatalf("random: got %s, want a linearizability violation", r)
	}
	// The same seam on the correct variant stays clean: the spec agrees
	// with the observer, it is not stricter.
	f := instantiate(t, "fixed", nil)
	f.staleSeam = true
	if r := random(t, f, 1, 2000); r.Violation != nil {
		t.Fatalf("fixed with the seam: %s", r)
	}
}

// TestSpecAcceptsPending: an unmap-and-flush still in flight at the end of
// an execution gets a Pending output, which the spec accepts.
func TestSpecAcceptsPending(t *testing.T) {
	m := instantiate(t, "fixed", nil)
	ex, err := explorer.Execute(m, []model.Choice{{Thread: 1}, {Thread: 0}, {Thread: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Violation != nil {
		t.Fatalf("%v\n%v", ex.Violation, ex.Steps)
	}
	ok, _ := pteSpec.Model.Step(pteRegs{1, 1}, pteOp{}, model.Pending{})
	if !ok {
		t.Fatal("a pending read is rejected")
	}
}
