package explorer_test

import (
	"fmt"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"pgregory.net/rapid"
)

// graphModel is a random small state graph as a machine: the global state
// is one node; in each node each thread is done, blocked, or steps to one
// of its successors (drawn with Choose, or with ChooseFrom when the
// alternatives are named). A progress property is pending in some nodes.
type graphModel struct {
	nodes, threads int
	// moves[node][thread]: nil = done, empty = blocked, else targets
	moves   [][][]int
	named   [][]bool // the draw of moves[node][thread] is ChooseFrom
	pending []bool
}

type graphState struct{ Node uint8 }

func (g *graphModel) machine() model.Machine {
	names := make([]string, g.threads)
	for i := range names {
		names[i] = fmt.Sprintf("T%d", i)
	}
	return model.MustNew(model.Def[graphState]{
		Threads: names,
		Init:    func(s *graphState) {},
		Step: func(s *graphState, t int, x *model.Exec) {
			mv := g.moves[s.Node][t]
			switch {
			case mv == nil:
				x.Done()
				return
			case len(mv) == 0:
				x.Block()
				x.Label("blocked")
				return
			}
			i := 0
			if g.named[s.Node][t] {
				i = x.ChooseFrom(uint64(1)<<uint(len(mv)) - 1)
			} else if len(mv) > 1 {
				i = x.Choose(len(mv))
			}
			x.Touch(fmt.Sprintf("node%d", s.Node), true) // a real step, even a self-loop
			x.Labelf("%d -> %d", s.Node, mv[i])
			s.Node = uint8(mv[i])
		},
		Progress: []model.ProgressOf[graphState]{{Name: "leaves", Pending: func(s *graphState) bool { return g.pending[s.Node] }}},
	})
}

func drawGraph(t *rapid.T) *graphModel {
	g := &graphModel{nodes: rapid.IntRange(1, 4).Draw(t, "nodes"), threads: rapid.IntRange(1, 2).Draw(t, "threads")}
	for n := 0; n < g.nodes; n++ {
		var row [][]int
		var named []bool
		for th := 0; th < g.threads; th++ {
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0:
				row = append(row, nil)
			case 1:
				row = append(row, []int{})
			default:
				k := rapid.IntRange(1, 2).Draw(t, "alts")
				var to []int
				for i := 0; i < k; i++ {
					to = append(to, rapid.IntRange(0, g.nodes-1).Draw(t, "to"))
				}
				row = append(row, to)
			}
			named = append(named, rapid.Bool().Draw(t, "named"))
		}
		g.moves = append(g.moves, row)
		g.named = append(g.named, named)
		g.pending = append(g.pending, rapid.Bool().Draw(t, "pending"))
	}
	return g
}

// naiveViolates decides progress by brute force, independently of the
// explorer's algorithm: a reachable node that is pending with every thread
// done, or a set S of reachable pending nodes (every subset is tried) that
// is strongly connected by the edges inside it, has one (so a cycle exists
// through all of S) and, under fairness, takes inside S every thread and
// every named alternative enabled in all of S's nodes. The closed walk
// over all of S's inside edges is then a fair lasso, and every fair cycle
// is such a walk over its own node set.
func (g *graphModel) naiveViolates(fair bool) bool {
	reach := make([]bool, g.nodes)
	reach[0] = true
	for changed := true; changed; {
		changed = false
		for n := 0; n < g.nodes; n++ {
			if !reach[n] {
				continue
			}
			for _, mv := range g.moves[n] {
				for _, to := range mv {
					if !reach[to] {
						reach[to], changed = true, true
					}
				}
			}
		}
	}
	for n := 0; n < g.nodes; n++ {
		if !reach[n] || !g.pending[n] {
			continue
		}
		allDone := true
		for _, mv := range g.moves[n] {
			if mv != nil {
				allDone = false // a blocked thread makes it a deadlock instead
			}
		}
		if allDone {
			return true
		}
	}
	for set := 1; set < 1<<g.nodes; set++ {
		in := func(n int) bool { return set&(1<<n) != 0 }
		ok := true
		for n := 0; n < g.nodes; n++ {
			if in(n) && (!reach[n] || !g.pending[n]) {
				ok = false
			}
		}
		if !ok || !g.stronglyConnected(in) || !g.fairSet(in, fair) {
			continue
		}
		return true
	}
	return false
}

// stronglyConnected: every node of the set reaches every other (and
// itself, by at least one step) through edges inside the set.
func (g *graphModel) stronglyConnected(in func(int) bool) bool {
	for a := 0; a < g.nodes; a++ {
		if !in(a) {
			continue
		}
		seen := make([]bool, g.nodes)
		stack := []int{a}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, mv := range g.moves[n] {
				for _, to := range mv {
					if in(to) && !seen[to] {
						seen[to] = true
						stack = append(stack, to)
					}
				}
			}
		}
		for b := 0; b < g.nodes; b++ {
			if in(b) && !seen[b] {
				return false
			}
		}
	}
	return true
}

// fairSet: every thread, and every named alternative, enabled in all of
// the set's nodes is taken by an edge inside the set.
func (g *graphModel) fairSet(in func(int) bool, fair bool) bool {
	if !fair {
		return true
	}
	for th := 0; th < g.threads; th++ {
		always, taken := true, false
		alwaysAlt, takenAlt := [2]bool{true, true}, [2]bool{}
		for n := 0; n < g.nodes; n++ {
			if !in(n) {
				continue
			}
			mv := g.moves[n][th]
			if len(mv) == 0 {
				always = false
			}
			for a := range alwaysAlt {
				if !g.named[n][th] || a >= len(mv) {
					alwaysAlt[a] = false
				}
			}
			for a, to := range mv {
				if in(to) {
					taken = true
					if g.named[n][th] {
						takenAlt[a] = true
					}
				}
			}
		}
		if always && !taken {
			return false
		}
		for a := range alwaysAlt {
			if alwaysAlt[a] && !takenAlt[a] {
				return false
			}
		}
	}
	return true
}

// The progress check agrees with a brute-force search for fair lassos on
// random small graphs, under weak fairness and without, and every lasso it
// reports re-executes as one (CheckLasso).
func TestProgressAgreesWithNaiveLassos(t *testing.T) {
	outcomes := map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		g := drawGraph(t)
		for _, fairness := range []string{explorer.FairnessWeak, explorer.FairnessNone} {
			m := g.machine()
			r, err := explorer.Explore(m, explorer.Options{Fairness: fairness})
			if err != nil {
				t.Fatal(err)
			}
			if r.Violation != nil && r.Violation.Property == model.Deadlock {
				continue // the search stopped before the progress check
			}
			want := g.naiveViolates(fairness == explorer.FairnessWeak)
			got := r.Violation != nil && r.Violation.Property == "leaves"
			if got != want {
				t.Fatalf("fairness %s: explorer says %v (%s), brute force says %v; graph %+v", fairness, got, r, want, g)
			}
			outcomes[fmt.Sprintf("%s %v cycle=%v", fairness, got, r.Cycle > 0)]++
			if got {
				if _, err := explorer.CheckLasso(m, r.Schedule, r.Cycle, "leaves", fairness); err != nil {
					t.Fatalf("fairness %s: the lasso %v (cycle %d) does not check: %v", fairness, r.Schedule, r.Cycle, err)
				}
			}
		}
	})
	// The draws must reach every kind of outcome, or the test says little.
	for _, f := range []string{explorer.FairnessWeak, explorer.FairnessNone} {
		for _, o := range []string{"false cycle=false", "true cycle=true", "true cycle=false"} {
			if outcomes[f+" "+o] == 0 {
				t.Errorf("no random graph gave %s %s: %v", f, o, outcomes)
			}
		}
	}
}
