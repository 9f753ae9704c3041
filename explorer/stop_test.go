package explorer_test

import (
	"fmt"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// steps is a clean machine of n threads that each take k steps touching
// nothing shared: (k+1)^n states, every one reachable.
type steps struct{ n, k int }

type stepsState struct{ pc []byte }

func (s *stepsState) Clone() model.State        { return &stepsState{append([]byte(nil), s.pc...)} }
func (s *stepsState) AppendKey(b []byte) []byte { return append(b, s.pc...) }
func (s *stepsState) Vars() []model.Var         { return []model.Var{{Name: "pc", Value: fmt.Sprint(s.pc)}} }

func (m steps) Threads() []string {
	out := make([]string, m.n)
	for i := range out {
		out[i] = fmt.Sprint("T", i)
	}
	return out
}
func (m steps) Init() model.State             { return &stepsState{make([]byte, m.n)} }
func (m steps) Metrics() []string             { return nil }
func (m steps) Spec() *model.Spec             { return nil }
func (m steps) Invariants() []model.Invariant { return nil }
func (m steps) Status(s model.State, t int) model.Status {
	return model.Status{Done: int(s.(*stepsState).pc[t]) == m.k}
}
func (m steps) Enabled(s model.State, buf []model.Choice) []model.Choice {
	for t, pc := range s.(*stepsState).pc {
		if int(pc) < m.k {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}
func (m steps) Step(s model.State, c model.Choice, x *model.Exec) model.State {
	n := s.Clone().(*stepsState)
	n.pc[c.Thread]++
	x.Labelf("step %d", n.pc[c.Thread])
	return n
}

// A closed Stop ends every strategy early with the verdict interrupted and
// the counts of the part explored; a nil Stop changes nothing.
func TestStopInterruptsEveryStrategy(t *testing.T) {
	m := steps{n: 4, k: 12}
	const all = 13 * 13 * 13 * 13
	closed := make(chan struct{})
	close(closed)
	for _, o := range []explorer.Options{
		{Strategy: explorer.BFS},
		{Strategy: explorer.BFS, Workers: 2},
		{Strategy: explorer.DFS},
		{Strategy: explorer.Random, Runs: 1_000_000},
		{Strategy: explorer.RandomThreads, Runs: 1_000_000},
		{Strategy: explorer.PCT, Runs: 1_000_000},
		{Strategy: explorer.Paths},
	} {
		o.Stop = closed
		r, err := explorer.Explore(m, o)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s workers=%d", o.Strategy, o.Workers)
		if r.Verdict != explorer.Interrupted || r.Violation != nil || r.Bound != "" {
			t.Errorf("%s: %s (bound %q), want interrupted", name, r, r.Bound)
		}
		if r.Stats.States >= all || o.Runs > 0 && r.Stats.Executions >= int64(o.Runs) {
			t.Errorf("%s: %s, executions %d: want the counts of a part of the space", name, r, r.Stats.Executions)
		}
	}
	r, err := explorer.Explore(m, explorer.Options{Stop: make(chan struct{})})
	if err != nil || r.Verdict != explorer.OK || r.Stats.States != all {
		t.Fatalf("with an open Stop: %v %v, want ok with %d states", r, err, all)
	}
}
