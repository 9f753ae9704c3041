package cputlb

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

// reachable returns the first max states of m in bfs order, each a state
// of its own.
func reachable(m model.Machine, max int) []model.State {
	init := m.Init()
	seen := map[string]bool{string(init.AppendKey(nil)): true}
	out := []model.State{init}
	for i := 0; i < len(out) && len(out) < max; i++ {
		succs, _, _ := modeltest.Successors(m, out[i])
		for _, n := range succs {
			if k := string(n.State.AppendKey(nil)); !seen[k] {
				seen[k] = true
				out = append(out, n.State)
			}
		}
	}
	return out
}

// TestHotPathAllocatesNothing: what the explorer runs per transition with
// labels and events off (decode the parent, copy it into the scratch
// state, step, encode the successor, check the invariants) allocates
// nothing, for every step of every thread, blocked and done ones included,
// at the first few thousand states of every variant, at the default size
// and with two sources. A step that violates a property (its message is
// formatted) is left out.
func TestHotPathAllocatesNothing(t *testing.T) {
	for _, v := range Protocol.Variants {
		for _, p := range []model.Params{nil, {"cpus": 3, "sources": 2, "migration": 0, "commit": 0}} {
			m, _, err := Protocol.Instantiate(v.Name, p)
			if err != nil {
				t.Fatal(err)
			}
			type step struct {
				key []byte
				c   model.Choice
			}
			var steps []step
			for _, s := range reachable(m, 4000) {
				key := s.AppendKey(nil)
				for th := range m.Threads() {
					steps = append(steps, step{key, model.Choice{Thread: th, Alt: -1}})
				}
				for _, c := range explorer.Enabled(m, s) {
					steps = append(steps, step{key, c})
				}
			}
			props := m.Properties()
			x := model.NewExec(len(props.Metrics))
			x.SetThreadNames(m.Threads())
			scratch := m.Init()
			var buf []byte
			clean := steps[:0]
			for _, st := range steps {
				if err := scratch.Decode(st.key); err != nil {
					t.Fatal(err)
				}
				x.Reset(st.c.Thread, st.c.Alt)
				m.Step(scratch, st.c.Thread, x)
				bad := x.Violation() != nil
				for _, inv := range props.Invariants {
					bad = bad || inv.Check(scratch) != ""
				}
				if !bad {
					clean = append(clean, st)
				}
			}
			steps = clean
			base := m.Init()
			allocs := testing.AllocsPerRun(2, func() {
				for _, st := range steps {
					if err := base.Decode(st.key); err != nil {
						t.Fatal(err)
					}
					scratch.(model.Copier).CopyFrom(base)
					x.Reset(st.c.Thread, st.c.Alt)
					m.Step(scratch, st.c.Thread, x)
					buf = scratch.AppendKey(buf[:0])
					for _, inv := range props.Invariants {
						inv.Check(scratch)
					}
					for _, pr := range props.Progress {
						pr.Pending(scratch)
					}
				}
			})
			if allocs != 0 {
				t.Errorf("%s %v: %.0f allocations over %d steps", v.Name, p, allocs, len(steps))
			}
			t.Logf("%s %v: %d steps allocate nothing", v.Name, p, len(steps))
		}
	}
}
