package explorer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// steps is a clean machine of n threads that each take k steps touching
// nothing shared: (k+1)^n states, every one reachable.
func steps(n, k int) model.Machine {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprint("T", i)
	}
	return model.MustNew(model.Def[struct{ PC []uint8 }]{
		Threads: names,
		Init:    func(s *struct{ PC []uint8 }) { s.PC = make([]uint8, n) },
		Step: func(s *struct{ PC []uint8 }, t int, x *model.Exec) {
			if int(s.PC[t]) == k {
				x.Done()
				return
			}
			s.PC[t]++
			x.Labelf("step %d", s.PC[t])
		},
	})
}

// A closed Stop ends every strategy early with the verdict interrupted and
// the counts of the part explored; a nil Stop changes nothing.
func TestStopInterruptsEveryStrategy(t *testing.T) {
	m := steps(4, 12)
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
		if r.Verdict != explorer.Interrupted || r.Violation != nil || !strings.Contains(r.Bound, "interrupted") {
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
