package pvflush

import (
	"fmt"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// TestSymmetryAgreesWithBFS: with symmetry, bfs gives every variant the
// same verdict as plain bfs, with a shortest counterexample of the same
// length that replays, and explores fewer states (exact counts pinned).
func TestSymmetryAgreesWithBFS(t *testing.T) {
	type want struct{ plain, sym int64 }
	sizes := []struct {
		params model.Params
		states map[string]want // correct variants
	}{
		// The walker variants and two initiators have no free targets
		// (symmetry.go): their counts do not change.
		{nil, map[string]want{
			"fixed": {35191, 34171}, "ignore-cmpxchg": {35191, 34171}, "native": {21592, 21132}, "busy-wait": {35191, 34171},
			"pt-free-rcu": {155653, 155653}, "pt-free-native": {81423, 81423}}},
		// Too small for most bugs (they need a second access or a
		// second preemption); only a few variants, all ok here.
		{model.Params{"vcpus": 4, "accesses": 1, "preemptions": 1}, map[string]want{
			"fixed": {35020, 33851}, "native": {24086, 23379}, "posted": {36508, 35195}, "host-copy": {46653, 44881}}},
		// Two initiators: the swap.
		{model.Params{"initiators": 2, "vcpus": 2}, map[string]want{
			"fixed": {49823, 24994}, "busy-wait": {49823, 24994}}},
	}
	for k, size := range sizes {
		for _, v := range Protocol.Variants {
			if _, ok := size.states[v.Name]; k > 0 && !ok {
				continue // the larger size only for the pinned variants
			}
			name := fmt.Sprintf("%s %v", v.Name, size.params)
			m := instantiate(t, v.Name, size.params)
			plain := exploreWith(t, m, explorer.Options{Workers: 2})
			sym := exploreWith(t, m, explorer.Options{Workers: 2, Symmetry: true})
			// Symmetry checks no progress property: where plain bfs
			// proves everything, symmetry proves everything but
			// flush-returns, and says so (partial).
			if plain.OK() && (sym.Verdict != explorer.Partial || !sym.CleanExcept(FlushReturns)) || !plain.OK() && plain.Verdict != sym.Verdict {
				t.Errorf("%s: symmetry says %s, plain bfs %s", name, sym, plain)
				continue
			}
			if w, ok := size.states[v.Name]; ok {
				if !plain.OK() || plain.Stats.States != w.plain || sym.Stats.States != w.sym {
					t.Errorf("%s: plain %s, symmetry %s; want ok with %d and %d states", name, plain, sym, w.plain, w.sym)
				}
				continue
			}
			if plain.Verdict != explorer.Violation {
				t.Errorf("%s: plain bfs %s (%d states, symmetry %d), no expectation", name, plain, plain.Stats.States, sym.Stats.States)
				continue
			}
			if sym.Violation.Property != plain.Violation.Property || len(sym.Schedule) != len(plain.Schedule) {
				t.Errorf("%s: symmetry finds %s in %d steps, plain bfs %s in %d", name, sym.Violation.Property, len(sym.Schedule), plain.Violation.Property, len(plain.Schedule))
			}
			ex, err := explorer.Execute(m, sym.Schedule)
			if err != nil || ex.Violation == nil || ex.Violation.Property != plain.Violation.Property {
				t.Errorf("%s: the symmetric counterexample does not replay: %v", name, err)
			}
		}
	}
}

// permute returns π(s) for a permutation pi of vCPU ids (pi[0] = 0):
// target t's record and st word move to pi[t], and so do cur and the
// flushmask bits.
func permute(m *machine, s *state, pi [maxVCPUs]int) *state {
	n := model.Clone(m, s).(*state)
	n.in[0].mask = 0
	for t := 1; t < m.n; t++ {
		n.v[pi[t]] = s.v[t]
		n.mem.Init(m.stAddr[pi[t]], s.mem.Peek(m.stAddr[t]))
		if s.in[0].mask&(1<<t) != 0 {
			n.in[0].mask |= 1 << pi[t]
		}
	}
	n.in[0].cur = uint8(pi[s.in[0].cur])
	return n
}

type stepResult struct {
	key, canon string
	violation  string
	counts     string
	events     string
}

func stepOf(m *machine, s model.State, c model.Choice, x *model.Exec) (model.State, stepResult) {
	n := successor(m, s, c, x)
	r := stepResult{key: string(n.AppendKey(nil)), canon: string(m.CanonicalKey(n, nil)),
		counts: fmt.Sprint(x.Counts()), events: fmt.Sprint(len(x.Events()))}
	if v := x.Violation(); v != nil {
		r.violation = v.Property
	}
	return n, r
}

// TestSymmetryIsABisimulation checks the argument of symmetry.go on every
// reachable state: for each transposition π of two free targets, π(s) has
// the same canonical key, the permuted enabled choices, and successors
// that are the permuted successors (same assertion outcome, metric deltas
// and invariants), in which both targets are still free. It also checks
// that equal canonical keys only ever join states related by such a
// permutation.
func TestSymmetryIsABisimulation(t *testing.T) {
	for _, c := range []struct {
		variant string
		params  model.Params
	}{
		{"fixed", model.Params{"vcpus": 4, "accesses": 1, "preemptions": 1}},
		{"native", model.Params{"vcpus": 4, "accesses": 1, "preemptions": 1}},
		{"host-copy", model.Params{"vcpus": 4, "accesses": 1, "preemptions": 1}},
		{"early-entry", model.Params{"vcpus": 4, "accesses": 1, "preemptions": 1}},
		{"mid-instruction", model.Params{"vcpus": 4, "accesses": 1, "preemptions": 1}},
		{"posted", model.Params{"vcpus": 4, "accesses": 1, "preemptions": 1}},
		{"fixed", model.Params{"vcpus": 3, "flushes": 2, "preemptions": 1}},
		{"busy-wait", model.Params{"vcpus": 4, "accesses": 1, "preemptions": 1}},
		{"fixed", model.Params{"vcpus": 4, "accesses": 1, "preemptions": 1, "host": 1}},
	} {
		m := instantiate(t, c.variant, c.params)
		name := fmt.Sprintf("%s %v", c.variant, c.params)
		x := newExec(m)
		byCanon := map[string]*state{}
		checked := 0
		for _, ms := range reachableStates(m) {
			s := ms.(*state)
			canon := string(m.CanonicalKey(s, nil))
			if rep, ok := byCanon[canon]; !ok {
				byCanon[canon] = s
			} else if !relatedByFreePermutation(m, rep, s) {
				t.Fatalf("%s: states share a canonical key but are not free permutations of each other:\n%s\n%s", name, model.Describe(rep), model.Describe(s))
			}
			f := m.freeTargets(s)
			for t1 := 1; t1 < m.n; t1++ {
				for t2 := t1 + 1; t2 < m.n; t2++ {
					if f&(1<<t1) == 0 || f&(1<<t2) == 0 {
						continue
					}
					var pi [maxVCPUs]int
					for i := range pi {
						pi[i] = i
					}
					pi[t1], pi[t2] = t2, t1
					ps := permute(m, s, pi)
					if string(m.CanonicalKey(ps, nil)) != canon {
						t.Fatalf("%s: a free permutation changes the canonical key of\n%s", name, model.Describe(s))
					}
					if msg, pmsg := m.flagShape(s), m.flagShape(ps); (msg == "") != (pmsg == "") {
						t.Fatalf("%s: flag-shape differs under permutation", name)
					}
					if msg, pmsg := m.preemptedNotRunning(s), m.preemptedNotRunning(ps); (msg == "") != (pmsg == "") {
						t.Fatalf("%s: preempted-not-running differs under permutation", name)
					}
					en := explorer.Enabled(m, s)
					pen := explorer.Enabled(m, ps)
					if len(en) != len(pen) {
						t.Fatalf("%s: %d choices, %d after permutation", name, len(en), len(pen))
					}
					for _, ch := range en {
						pc := model.Choice{Thread: pi[ch.Thread], Alt: ch.Alt}
						if !containsChoice(pen, pc) {
							t.Fatalf("%s: choice %v has no permuted counterpart %v", name, ch, pc)
						}
						n, r := stepOf(m, s, ch, x)
						_, pr := stepOf(m, ps, pc, x)
						r.key = string(permute(m, n.(*state), pi).AppendKey(nil))
						if r != pr {
							t.Fatalf("%s: step %v and its permutation %v disagree: %+v vs %+v", name, ch, pc, r, pr)
						}
						if g := m.freeTargets(n.(*state)); g&f != f {
							t.Fatalf("%s: free targets shrink from %b to %b", name, f, g)
						}
						checked++
					}
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no state with two free targets", name)
		}
	}
}

// relatedByFreePermutation reports whether b = π(a) for a permutation π
// of a's free targets.
func relatedByFreePermutation(m *machine, a, b *state) bool {
	f := m.freeTargets(a)
	if f != m.freeTargets(b) {
		return false
	}
	var free []int
	for t := 1; t < m.n; t++ {
		if f&(1<<t) != 0 {
			free = append(free, t)
		}
	}
	want := string(b.AppendKey(nil))
	var try func(k int, pi [maxVCPUs]int, used uint16) bool
	try = func(k int, pi [maxVCPUs]int, used uint16) bool {
		if k == len(free) {
			return string(permute(m, a, pi).AppendKey(nil)) == want
		}
		for _, u := range free {
			if used&(1<<u) == 0 {
				pi[free[k]] = u
				if try(k+1, pi, used|1<<u) {
					return true
				}
			}
		}
		return false
	}
	var id [maxVCPUs]int
	for i := range id {
		id[i] = i
	}
	return try(0, id, 0)
}

// swapState returns the state with the two initiators swapped (vCPU0 <->
// vCPU1, X0 <-> X1), built field by field, as symmetry.go describes it.
func swapState(m *machine, s *state) *state {
	n := model.Clone(m, s).(*state)
	n.mem.Init(m.pteAddr[0], s.mem.Peek(m.pteAddr[1]))
	n.mem.Init(m.pteAddr[1], s.mem.Peek(m.pteAddr[0]))
	for t := 0; t < m.n; t++ {
		n.mem.Init(m.stAddr[t], s.mem.Peek(m.stAddr[swapID(t)]))
		g := s.v[swapID(t)]
		g.ipi[0], g.ipi[1] = g.ipi[1], g.ipi[0]
		g.tlb[0], g.tlb[1] = g.tlb[1], g.tlb[0]
		if g.inflight >= 0 {
			g.inflightPage = 1 - g.inflightPage
		}
		n.v[t] = g
	}
	for k := 0; k < 2; k++ {
		n.in[k] = swapFlusher(s.in[1-k])
	}
	n.freed[0], n.freed[1] = s.freed[1], s.freed[0]
	return n
}

// TestSwapIsABisimulation checks the two-initiator symmetry on every
// reachable state: the swapped state has the same canonical key (which is
// the smaller of the two keys), its invariants agree, and every step of s
// has a step of swap(s) that reaches the swapped successor with the same
// assertion outcome and metric deltas, and back.
func TestSwapIsABisimulation(t *testing.T) {
	for _, c := range []struct {
		variant string
		p       model.Params
	}{
		{"fixed", model.Params{"initiators": 2, "vcpus": 2, "accesses": 1}},
		{"posted", model.Params{"initiators": 2, "vcpus": 2}},
		{"fixed", model.Params{"initiators": 2, "vcpus": 3, "accesses": 0, "preemptions": 1}},
		{"host-copy", model.Params{"initiators": 2, "vcpus": 2, "host": 1, "accesses": 1}},
	} {
		m := instantiate(t, c.variant, c.p)
		x := newExec(m)
		name := fmt.Sprintf("%s %v", c.variant, c.p)
		checked := 0
		for _, ms := range reachableStates(m) {
			s := ms.(*state)
			w := swapState(m, s)
			key, wkey := string(s.AppendKey(nil)), string(w.AppendKey(nil))
			canon := string(m.CanonicalKey(s, nil))
			if canon != string(m.CanonicalKey(w, nil)) || canon != min(key, wkey) {
				t.Fatalf("%s: the swap changes the canonical key of\n%s", name, model.Describe(s))
			}
			if (m.flagShape(s) == "") != (m.flagShape(w) == "") || (m.preemptedNotRunning(s) == "") != (m.preemptedNotRunning(w) == "") {
				t.Fatalf("%s: an invariant differs under the swap at\n%s", name, model.Describe(s))
			}
			if m.flushPending(s) != m.flushPending(w) {
				t.Fatalf("%s: flush-returns differs under the swap", name)
			}
			en, wen := explorer.Enabled(m, s), explorer.Enabled(m, w)
			if len(en) != len(wen) {
				t.Fatalf("%s: %d choices, %d after the swap", name, len(en), len(wen))
			}
			succ := map[string]stepResult{}
			for _, ch := range wen {
				n, r := stepOf(m, w, ch, x)
				r.key, r.canon = "", ""
				succ[string(n.AppendKey(nil))] = r
			}
			for _, ch := range en {
				n, r := stepOf(m, s, ch, x)
				r.key, r.canon = "", ""
				wr, ok := succ[string(swapState(m, n.(*state)).AppendKey(nil))]
				if !ok || wr != r {
					t.Fatalf("%s: step %v has no swapped counterpart (%v) at\n%s", name, ch, ok, model.Describe(s))
				}
				checked++
			}
		}
		if checked == 0 {
			t.Fatalf("%s: nothing checked", name)
		}
	}
}
