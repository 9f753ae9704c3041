package explorer

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/protocheck/protocheck/model"
)

// TestSuccsRoundTrip writes a random graph of several segments, in memory
// and spilled to a file, and reads every state's successors and choices
// back, in order; the file is gone once the graph is loaded.
func TestSuccsRoundTrip(t *testing.T) {
	const n = 3*colSize + 123
	rng := rand.New(rand.NewPCG(1, 2))
	succ := make([][]int32, n)
	chs := make([][]uint16, n)
	for v := range succ {
		for k := rng.IntN(7); k > 0; k-- {
			w := int32(rng.IntN(n))
			if rng.IntN(2) == 0 {
				// Near the state, as most successors are.
				w = int32(min(n-1, max(0, v+rng.IntN(64)-16)))
			}
			succ[v] = append(succ[v], w)
			chs[v] = append(chs[v], packChoice(model.Choice{Thread: rng.IntN(5), Alt: rng.IntN(3)}, rng.IntN(4) == 0))
		}
	}
	for _, dir := range []string{"", t.TempDir()} {
		g, err := newSuccs(dir)
		if err != nil {
			t.Fatal(err)
		}
		for v := range succ {
			for i, w := range succ[v] {
				g.add(w, chs[v][i])
			}
			g.end(int32(v))
		}
		if err := g.load(n); err != nil {
			t.Fatal(err)
		}
		if dir != "" {
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("%d files left in the spill directory after load", len(left))
			}
		}
		for v := range succ {
			if g.degree(int32(v)) != len(succ[v]) {
				t.Fatalf("dir %q: state %d has %d successors, want %d", dir, v, g.degree(int32(v)), len(succ[v]))
			}
			i := 0
			for w, ch := range g.edges(int32(v)) {
				if w != succ[v][i] || ch != chs[v][i] {
					t.Fatalf("dir %q: state %d edge %d is (%d, %#x), want (%d, %#x)", dir, v, i, w, ch, succ[v][i], chs[v][i])
				}
				i++
			}
			if i != len(succ[v]) {
				t.Fatalf("dir %q: state %d: %d edges read, want %d", dir, v, i, len(succ[v]))
			}
		}
	}
}

// TestParentsRoundTrip reads the parents record back, in memory and from
// its file, in any order.
func TestParentsRoundTrip(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		p, err := newParents(dir)
		if err != nil {
			t.Fatal(err)
		}
		const n = 100000
		for i := 0; i < n; i++ {
			p.append(int32(i/3)-1, uint16(i*7))
		}
		for _, i := range []int32{n - 1, 0, 12345, n / 2, 1} {
			par, via := p.at(i)
			if par != i/3-1 || via != uint16(i*7) {
				t.Fatalf("dir %q: state %d: parent %d via %d, want %d via %d", dir, i, par, via, i/3-1, uint16(i*7))
			}
		}
		p.append(7, 9)
		if par, via := p.at(n); par != 7 || via != 9 || p.len() != n+1 {
			t.Fatalf("dir %q: after another append: parent %d via %d, %d states", dir, par, via, p.len())
		}
		p.close()
	}
}
