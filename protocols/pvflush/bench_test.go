package pvflush

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// BenchmarkBFS is the engine's speed benchmark: the whole bfs of
// pvflush/fixed vcpus=4 (1 353 533 states), one worker. It reports states
// per second and the explorer's bytes per stored state.
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
	if r.Verdict != explorer.OK || r.Stats.States != 1353533 {
		b.Fatalf("got %s, want ok with 1353533 states", r)
	}
	b.ReportMetric(float64(r.Stats.States)*float64(b.N)/b.Elapsed().Seconds(), "states/s")
	b.ReportMetric(r.Stats.BytesPerState, "bytes/state")
}

// TestHotPathAllocatesNothing: what the explorer runs per transition with
// labels and events off (decode the parent, step, encode the successor,
// check the invariant, and the canonical key for symmetry) allocates
// nothing, for every step of every thread, blocked and done ones
// included, at the first few thousand states of a few variants, under
// both memory models.
func TestHotPathAllocatesNothing(t *testing.T) {
	for _, c := range []struct {
		variant string
		p       model.Params
	}{
		{"fixed", nil}, {"native", nil}, {"host-copy", nil}, {"early-entry", nil}, {"posted", nil},
		{"ignore-cmpxchg", model.Params{"vcpus": 2, "flushes": 2, "memory": 1, "pte-clear": 1}},
	} {
		m, _, err := Protocol.Instantiate(c.variant, c.p)
		if err != nil {
			t.Fatal(err)
		}
		type step struct {
			key []byte
			c   model.Choice
		}
		var steps []step
		states := reachableStates(m)
		if len(states) > 3000 {
			states = states[:3000]
		}
		for _, s := range states {
			key := s.AppendKey(nil)
			for th := range m.Threads() {
				steps = append(steps, step{key, model.Choice{Thread: th, Alt: -1}})
			}
			for _, ch := range explorer.Enabled(m, s) {
				steps = append(steps, step{key, ch})
			}
		}
		props := m.Properties()
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
