package explorer

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestSCCsMatchReachability checks sccs against the definition on random
// graphs: two states of the induced subgraph are in one component exactly
// when each reaches the other inside it (transitive closure by
// Floyd-Warshall), and a state is in a reported component exactly when it
// is on a cycle of the subgraph (a path of one step or more back to
// itself).
func TestSCCsMatchReachability(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(t, "n")
		g, _ := newSuccs("")
		succ := make([][]int32, n)
		for v := 0; v < n; v++ {
			k := rapid.IntRange(0, 4).Draw(t, "degree")
			for i := 0; i < k; i++ {
				w := int32(rapid.IntRange(0, n-1).Draw(t, "to"))
				succ[v] = append(succ[v], w)
				g.add(w, 0)
			}
			g.end(int32(v))
		}
		if err := g.load(n); err != nil {
			t.Fatal(err)
		}
		in := newBitset(int32(n))
		for v := 0; v < n; v++ {
			if rapid.IntRange(0, 3).Draw(t, "in") > 0 {
				in.add(int32(v))
			}
		}
		// The roots bfs records edge by edge are cycleRoots's.
		for v := range succ {
			for _, w := range succ[v] {
				if w <= int32(v) && in.has(int32(v)) && in.has(w) {
					g.back(w, 1)
				}
			}
		}
		recorded, found := g.rootsOf(0, int32(n))
		roots, ok := g.cycleRoots(int32(n), in)
		if !slices.Equal(recorded, roots) || found != ok {
			t.Fatalf("roots recorded %b (%v), cycleRoots %b (%v)", recorded, found, roots, ok)
		}
		reach := make([][]bool, n)
		for v := range reach {
			reach[v] = make([]bool, n)
			reach[v][v] = true
			for _, w := range succ[v] {
				if in.has(int32(v)) && in.has(w) {
					reach[v][w] = true
				}
			}
		}
		for k := 0; k < n; k++ {
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					reach[i][j] = reach[i][j] || reach[i][k] && reach[k][j]
				}
			}
		}
		comp := make([]int, n)
		for v := range comp {
			comp[v] = -1
		}
		count := 0
		g.sccs(int32(n), in, func(members []int32) {
			if !slices.IsSorted(members) {
				t.Fatalf("members %v not sorted", members)
			}
			for _, v := range members {
				if !in.has(v) {
					t.Fatalf("state %d outside the subgraph in component %v", v, members)
				}
				if comp[v] >= 0 {
					t.Fatalf("state %d in two components", v)
				}
				comp[v] = count
				for _, w := range members {
					if !reach[v][w] {
						t.Fatalf("component %v: %d does not reach %d", members, v, w)
					}
				}
			}
			count++
		})
		for v := 0; v < n; v++ {
			onCycle := false
			for _, w := range succ[v] {
				onCycle = onCycle || in.has(int32(v)) && in.has(w) && reach[w][v]
			}
			if onCycle != (comp[v] >= 0) {
				t.Fatalf("state %d: on a cycle %v, in a component %v", v, onCycle, comp[v] >= 0)
			}
			for w := 0; w < n; w++ {
				if comp[v] >= 0 && comp[w] >= 0 && reach[v][w] && reach[w][v] && comp[v] != comp[w] {
					t.Fatalf("states %d and %d reach each other but are in different components", v, w)
				}
			}
		}
	})
}
