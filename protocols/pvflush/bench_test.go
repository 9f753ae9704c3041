package pvflush

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// BenchmarkBFS is the engine's speed benchmark: the whole bfs of
// pvflush/fixed vcpus=4 (1 253 203 states), one worker, with the progress
// property checked (bfs keeps the state graph for it, which is most of
// the bytes per state). It reports states per second and the explorer's
// bytes per stored state.
func BenchmarkBFS(b *testing.B) {
	m, _, err := Protocol.Instantiate("fixed", model.Params{"vcpus": 4})
	if err != nil {
		b.Fatal(err)
	}
	var r *explorer.Result
	for b.Loop() {
		if r, err = explorer.Explore(m, explorer.Options{Strategy: explorer.BFS, Workers: 1}); err != nil {
			b.Fatal(err)
		}
	}
	if r.Verdict != explorer.OK || r.Stats.States != 1253203 {
		b.Fatalf("got %s, want ok with 1253203 states", r)
	}
	b.ReportMetric(float64(r.Stats.States)*float64(b.N)/b.Elapsed().Seconds(), "states/s")
	b.ReportMetric(r.Stats.BytesPerState, "bytes/state")
}

// TestHotPathAllocatesNothing: what the explorer runs per transition with
// labels and events off (decode the parent, step, encode the successor,
// check the invariants and progress obligations, and the canonical key
// for symmetry) allocates
// nothing, for every step of every thread, blocked and done ones
// included, at the first 1500 states of a few variants, under
// both memory models.
func TestHotPathAllocatesNothing(t *testing.T) {
	for _, c := range []struct {
		variant string
		p       model.Params
	}{
		{"fixed", nil}, {"native", nil}, {"host-copy", nil}, {"early-entry", nil}, {"posted", nil},
		{"busy-wait", nil}, {"pt-free-rcu", nil}, {"pt-free-page", nil},
		{"fixed", model.Params{"initiators": 2, "vcpus": 2}}, {"fixed", model.Params{"host": 1, "vcpus": 2}},
		{"ignore-cmpxchg", model.Params{"vcpus": 2, "flushes": 2, "memory": 1, "pte-clear": 1}},
	} {
		// The 2017 host breaks B-S1 in two steps, and a violated
		// invariant formats its message; without B-S1 its steps are on
		// the hot path like any other.
		m := build(t, c.variant, c.p, func(m *machine) {
			if m.host2017 {
				withoutBS1(m)
			}
		})
		type step struct {
			key []byte
			c   model.Choice
		}
		var steps []step
		states := reachableStates(m)
		if len(states) > 1500 {
			states = states[:1500]
		}
		props := m.Properties()
		// The non-violating path: steps from and to states that satisfy
		// every invariant, and that fail no assertion (a violation formats
		// its message, once per search).
		violates := func(s model.State) bool {
			for _, inv := range props.Invariants {
				if inv.Check(s) != "" {
					return true
				}
			}
			return false
		}
		lx := newExec(m)
		for _, s := range states {
			if violates(s) {
				continue
			}
			key := s.AppendKey(nil)
			for th := range m.Threads() {
				ch := model.Choice{Thread: th, Alt: -1}
				n := successor(m, s, ch, lx)
				if lx.Outcome() != model.Stepped || lx.Violation() == nil && !violates(n) {
					steps = append(steps, step{key, ch})
				}
			}
			for _, ch := range explorer.Enabled(m, s) {
				n := successor(m, s, ch, lx)
				if lx.Violation() == nil && !violates(n) {
					steps = append(steps, step{key, ch})
				}
			}
		}
		sym, _ := m.(model.Symmetric)
		x := model.NewExec(len(props.Metrics))
		scratch := m.Init()
		var buf []byte
		allocs := testing.AllocsPerRun(2, func() {
			for _, st := range steps {
				if err := scratch.Decode(st.key); err != nil {
					t.Fatal(err)
				}
				x.Reset(st.c.Thread, st.c.Alt)
				m.Step(scratch, st.c.Thread, x)
				buf = scratch.AppendKey(buf[:0])
				for _, inv := range props.Invariants {
					inv.Check(scratch)
				}
				for _, p := range props.Progress {
					p.Pending(scratch)
				}
				if sym != nil {
					buf = sym.CanonicalKey(scratch, buf[:0])
				}
			}
		})
		if allocs != 0 {
			t.Errorf("%s %v: %.0f allocations over %d steps", c.variant, c.p, allocs, len(steps))
		}
	}
}
