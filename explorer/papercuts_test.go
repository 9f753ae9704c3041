package explorer_test

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/examples/peterson"
	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// An option the chosen strategy would ignore is an error, as on the
// command line: a run never looks as if it did what it did not.
func TestOptionsIgnoredByAStrategyAreRefused(t *testing.T) {
	for _, c := range []struct {
		opts explorer.Options
		want string
	}{
		{explorer.Options{Seed: 1}, "option Seed does not apply to strategy bfs"},
		{explorer.Options{Strategy: explorer.DFS, Workers: 2}, "option Workers does not apply to strategy dfs"},
		{explorer.Options{Strategy: explorer.Random, Fingerprint: true}, "option Fingerprint does not apply to strategy random"},
		{explorer.Options{Strategy: explorer.BFS, Preemptions: 2}, "option Preemptions does not apply to strategy bfs"},
		{explorer.Options{Strategy: explorer.Random, Depth: 2}, "option Depth does not apply to strategy random"},
		{explorer.Options{Strategy: explorer.Paths, Fairness: explorer.FairnessNone}, "option Fairness does not apply to strategy paths"},
		{explorer.Options{Strategy: explorer.DFS, Runs: 3}, "option Runs does not apply to strategy dfs"},
		{explorer.Options{Fairness: "sometimes"}, `fairness must be "weak", "strong" or "none"`},
		{explorer.Options{Strategy: ""}, ""},
	} {
		_, err := explorer.Explore(counter(false), c.opts)
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.opts, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error containing %q", c.opts, err, c.want)
		}
	}
}

// dfs reports the longest execution it followed, as bfs reports its
// deepest level: on the counter both are 2 (atomic) and 4 (racy).
func TestDFSDepthCountsTheLastStep(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		b, err := explorer.Explore(counter(atomic), explorer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := explorer.Explore(counter(atomic), explorer.Options{Strategy: explorer.DFS})
		if err != nil {
			t.Fatal(err)
		}
		if b.Stats.Depth != d.Stats.Depth {
			t.Errorf("atomic=%v: bfs depth %d, dfs depth %d", atomic, b.Stats.Depth, d.Stats.Depth)
		}
	}
}

// paths counts an execution cut at max-steps toward its bound on
// executions, so a spin loop cannot make it run past the bound.
func TestPathsBoundCountsCutExecutions(t *testing.T) {
	spin := model.MustNew(model.Def[struct{ N uint8 }]{
		Threads: []string{"A", "B"},
		Init:    func(*struct{ N uint8 }) {},
		Step: func(s *struct{ N uint8 }, t int, x *model.Exec) {
			x.Touch("spin", true)
			x.Label("spin")
			s.N = (s.N + 1) % 3
		},
	})
	r, err := explorer.Explore(spin, explorer.Options{Strategy: explorer.Paths, Runs: 10, MaxSteps: 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stats.Executions != 10 || r.Stats.States > 1000 {
		t.Errorf("paths with Runs=10: %d executions, %d states; want 10 executions and no more work than they need", r.Stats.Executions, r.Stats.States)
	}
}

// Progress is not claimed where it was not checked: under symmetry, by a
// cut search, or by a strategy that keeps no graph, each property is
// listed in Result.Unchecked with the reason, and the verdict is not ok.
// Skipped on request (NoProgress), it is listed in Result.Skipped.
func TestProgressUncheckedSaysWhy(t *testing.T) {
	m := peterson.Lock(false, false, false)
	for _, c := range []struct {
		opts    explorer.Options
		want    string
		verdict explorer.Verdict
	}{
		{explorer.Options{MaxStates: 10}, "not checked when the search was cut", explorer.Bounded},
		{explorer.Options{Strategy: explorer.DFS}, "checked by bfs only", explorer.Partial},
		{explorer.Options{Strategy: explorer.Random, Runs: 3, MaxSteps: 50}, "checked by bfs only", explorer.Bounded},
	} {
		r, err := explorer.Explore(m, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Unchecked) != 1 || !strings.Contains(r.Unchecked[0], "P0-enters") || !strings.Contains(r.Unchecked[0], c.want) {
			t.Errorf("%+v: unchecked %q, want P0-enters with %q", c.opts, r.Unchecked, c.want)
		}
		if r.Verdict != c.verdict || r.OK() {
			t.Errorf("%+v: %s, want %s and not OK", c.opts, r, c.verdict)
		}
	}
	r, err := explorer.Explore(m, explorer.Options{NoProgress: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Unchecked) != 0 || len(r.Skipped) != 1 || !strings.Contains(r.Skipped[0], "P0-enters") || !strings.Contains(r.Skipped[0], "skipped") || !r.OK() {
		t.Errorf("NoProgress: %s, skipped %q; want ok with P0-enters skipped", r, r.Skipped)
	}
	if r, _ := explorer.Explore(m, explorer.Options{}); len(r.Unchecked) != 0 || !r.OK() || r.Fairness != explorer.FairnessWeak {
		t.Errorf("a complete bfs: %s, fairness %q", r, r.Fairness)
	}
}
