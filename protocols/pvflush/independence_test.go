package pvflush

import (
	"fmt"
	"slices"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// stepRecord is everything Independent promises to be the same for a step
// in either order.
type stepRecord struct {
	label     string
	footprint []model.Access
	violation string
	events    []model.Event
	counts    []int64
}

func (r stepRecord) equal(o stepRecord) bool {
	return r.label == o.label && r.violation == o.violation && slices.Equal(r.footprint, o.footprint) &&
		slices.Equal(r.events, o.events) && slices.Equal(r.counts, o.counts)
}

func record(m *machine, s model.State, c model.Choice, x *model.Exec) (model.State, stepRecord) {
	n := successor(m, s, c, x)
	r := stepRecord{label: x.StepLabel(), footprint: slices.Clone(x.Footprint()),
		events: slices.Clone(x.Events()), counts: slices.Clone(x.Counts())}
	if v := x.Violation(); v != nil {
		r.violation = v.Property + ": " + v.Message
	}
	return n, r
}

// conflict is the explorer's dependence by footprint, exactly (the
// explorer's Bloom-like summary can only add conflicts).
func conflict(f, g []model.Access) bool {
	clash := func(a, b model.Access) bool {
		if a.Op == model.OpFence || b.Op == model.OpFence || !(a.Write || b.Write) {
			return false
		}
		if a.Addr >= 0 || b.Addr >= 0 {
			return a.Addr == b.Addr
		}
		return a.Object == b.Object
	}
	for _, a := range f {
		for _, b := range g {
			if clash(a, b) {
				return true
			}
		}
	}
	return false
}

func enabledIn(m model.Machine, s model.State, c model.Choice) bool {
	return containsChoice(explorer.Enabled(m, s), c)
}

// TestIndependenceDiamonds checks every promise of model.Independence on
// every pair of enabled steps of different threads with disjoint
// footprints that Independent accepts, at every reachable state of every
// variant: each stays enabled after the other, both orders reach the same
// state, and each step has the same label, footprint, assertion outcome,
// events and metric deltas in either order.
func TestIndependenceDiamonds(t *testing.T) {
	// The analysed machines: one initiator, no walker, no spin (the
	// others are always dependent: TestIndependenceOnlyWhereAnalysed).
	var analysed []string
	for _, v := range Protocol.Variants {
		if vv := variants[v.Name]; !vv.walker && !vv.busyWait {
			analysed = append(analysed, v.Name)
		}
	}
	sizes := []struct {
		params   model.Params
		variants []string
	}{
		{model.Params{"vcpus": 2, "flushes": 2, "accesses": 1}, analysed},
		{nil, []string{"fixed", "native", "host-copy", "early-entry"}},
		{model.Params{"flushes": 2, "accesses": 1}, []string{"ignore-cmpxchg"}},
		{model.Params{"vcpus": 4, "accesses": 1, "preemptions": 1}, []string{"host-copy"}},
		{model.Params{"vcpus": 2, "host": 1, "flushes": 2}, []string{"fixed", "posted"}},
	}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, size := range sizes {
		p := size.params
		for _, name := range size.variants {
			v := model.Variant{Name: name}
			m := instantiate(t, v.Name, p)
			x := newExec(m)
			accepted, pairs := 0, 0
			for _, s := range reachableStates(m) {
				en := explorer.Enabled(m, s)
				type done struct {
					n  model.State
					r  stepRecord
					fp []model.Access
				}
				steps := make([]done, len(en))
				for i, c := range en {
					steps[i].n = successor(m, s, c, x)
					steps[i].fp = append([]model.Access(nil), x.Footprint()...)
				}
				for i, a := range en {
					for j, b := range en {
						if j <= i || a.Thread == b.Thread || conflict(steps[i].fp, steps[j].fp) {
							continue
						}
						pairs++
						ab, ba := m.Independent(s, a, b), m.Independent(s, b, a)
						if ab != ba {
							t.Fatalf("%s %v: Independent is not symmetric for %v, %v", v.Name, p, a, b)
						}
						if !ab {
							continue
						}
						accepted++
						_, steps[i].r = record(m, s, a, x)
						_, steps[j].r = record(m, s, b, x)
						sa, sb := steps[i].n, steps[j].n
						free := m.freeTargets(s.(*state)) | m.freeTargets(sa.(*state)) | m.freeTargets(sb.(*state))
						if free&(1<<a.Thread) != 0 || free&(1<<b.Thread) != 0 {
							t.Fatalf("%s %v: %v and %v: a free target may be put to sleep at\n%s", v.Name, p, a, b, model.Describe(s))
						}
						if !enabledIn(m, sa, b) || !enabledIn(m, sb, a) {
							t.Fatalf("%s %v: %v and %v do not stay enabled after each other at\n%s", v.Name, p, a, b, model.Describe(s))
						}
						sab, rb := record(m, sa, b, x)
						sba, ra := record(m, sb, a, x)
						if !rb.equal(steps[j].r) || !ra.equal(steps[i].r) {
							t.Fatalf("%s %v: %v and %v change each other:\n%+v\n%+v\n%+v\n%+v\nat\n%s", v.Name, p, a, b, steps[i].r, ra, steps[j].r, rb, model.Describe(s))
						}
						if string(sab.AppendKey(nil)) != string(sba.AppendKey(nil)) {
							t.Fatalf("%s %v: %v and %v do not commute at\n%s", v.Name, p, a, b, model.Describe(s))
						}
					}
				}
			}
			if accepted == 0 {
				t.Errorf("%s %v: no independent pair among %d", v.Name, p, pairs)
			}
		}
	}
}

// TestDFSReduction: dfs with sleep sets reaches every state plain dfs
// reaches, in fewer transitions (exact counts pinned), and every variant
// gets the same verdict as plain bfs.
func TestDFSReduction(t *testing.T) {
	type want struct{ states, full, reduced int64 }
	sizes := []struct {
		params model.Params
		want   map[string]want // variants ok at this size
	}{
		{nil, map[string]want{
			"fixed": {35191, 118924, 89606}, "ignore-cmpxchg": {35191, 118924, 89606}, "native": {21592, 73629, 54432}}},
		{model.Params{"vcpus": 4, "accesses": 1, "preemptions": 1}, map[string]want{
			"fixed": {35020, 139515, 103382}}},
	}
	for k, size := range sizes {
		for _, v := range Protocol.Variants {
			if _, ok := size.want[v.Name]; k > 0 && !ok {
				continue // the larger size only for the pinned variants
			}
			name := fmt.Sprintf("%s %v", v.Name, size.params)
			m := instantiate(t, v.Name, size.params)
			base := exploreWith(t, m, explorer.Options{})
			full := base // plain dfs only where the counts are pinned
			if _, ok := size.want[v.Name]; ok {
				full = exploreWith(t, m, explorer.Options{Strategy: explorer.DFS, NoReduction: true})
			}
			red := exploreWith(t, m, explorer.Options{Strategy: explorer.DFS})
			// Sleep sets together with symmetry (independence.go): the
			// same states as bfs with symmetry.
			sym := exploreWith(t, m, explorer.Options{Symmetry: true})
			redSym := exploreWith(t, m, explorer.Options{Strategy: explorer.DFS, Symmetry: true})
			if redSym.Verdict == explorer.Partial && redSym.Stats.States != sym.Stats.States {
				t.Errorf("%s: dfs with symmetry reaches %d states, bfs with symmetry %d", name, redSym.Stats.States, sym.Stats.States)
			}
			for _, r := range []*explorer.Result{full, red, redSym} {
				if r == base {
					continue // full is bfs's result where no count is pinned
				}
				// dfs checks no progress property: where bfs proves
				// everything, dfs proves everything but flush-returns,
				// and says so (partial).
				if base.OK() && (r.Verdict != explorer.Partial || !r.CleanExcept(FlushReturns)) ||
					!base.OK() && r.Verdict != base.Verdict || r.Violation != nil && !v.Accepts(r.Violation.Property) {
					t.Errorf("%s: dfs says %s, bfs %s", name, r, base)
				}
			}
			if w, ok := size.want[v.Name]; ok {
				if !red.CleanExcept(FlushReturns) || full.Stats.States != w.states || red.Stats.States != w.states ||
					full.Stats.Transitions != w.full || red.Stats.Transitions != w.reduced {
					t.Errorf("%s: dfs %s, reduced dfs %s; want ok, %d states, %d and %d transitions", name, full, red, w.states, w.full, w.reduced)
				}
			}
			if red.Verdict == explorer.Violation {
				ex, err := explorer.Execute(m, red.Schedule)
				if err != nil || ex.Violation == nil || ex.Violation.Property != red.Violation.Property {
					t.Errorf("%s: the reduced dfs counterexample does not replay: %v", name, err)
				}
			}
		}
	}
}

// TestIndependenceOnlyWhereAnalysed: two initiators, the walker and the
// spin are not analysed, and Independent says so for every pair.
func TestIndependenceOnlyWhereAnalysed(t *testing.T) {
	for _, c := range []struct {
		variant string
		p       model.Params
	}{
		{"fixed", model.Params{"vcpus": 2, "initiators": 2}}, {"pt-free-rcu", nil}, {"busy-wait", nil},
	} {
		m := instantiate(t, c.variant, c.p)
		states := reachableStates(m)
		if len(states) > 3000 {
			states = states[:3000]
		}
		for _, s := range states {
			en := explorer.Enabled(m, s)
			for _, a := range en {
				for _, b := range en {
					if a.Thread != b.Thread && m.Independent(s, a, b) {
						t.Fatalf("%s %v: %v and %v independent", c.variant, c.p, a, b)
					}
				}
			}
		}
	}
}
