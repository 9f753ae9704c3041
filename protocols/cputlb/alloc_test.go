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
// state, step, encode the successor, check the invariant) allocates
// nothing, for every step of every thread,
// blocked and done ones included, at the first few thousand states of
// every variant, with one and two targets. Two kinds of step are measured
// apart: one that violates a property (its message is formatted), and a
// qemu_cond_broadcast that wakes a waiter, where model.Exec.Broadcast
// returns the woken threads in a new slice: at most that one allocation.
func TestHotPathAllocatesNothing(t *testing.T) {
	for _, v := range Protocol.Variants {
		for _, p := range []model.Params{nil, {"cpus": 3, "accesses": 1}} {
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
			// A violation may allocate its message: leave out the steps
			// that fail an assertion or reach a state that breaks an
			// invariant.
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
			// The broadcasts that wake someone.
			var wakes []step
			steps, clean = clean, nil
			for _, st := range steps {
				if err := scratch.Decode(st.key); err != nil {
					t.Fatal(err)
				}
				if wakesByBroadcast(scratch.(*state), st.c.Thread) {
					wakes = append(wakes, st)
				} else {
					clean = append(clean, st)
				}
			}
			steps = clean
			wakeAllocs := testing.AllocsPerRun(2, func() {
				for _, st := range wakes {
					if err := scratch.Decode(st.key); err != nil {
						t.Fatal(err)
					}
					x.Reset(st.c.Thread, st.c.Alt)
					m.Step(scratch, st.c.Thread, x)
				}
			})
			if wakeAllocs > float64(len(wakes)) {
				t.Errorf("%s %v: %.0f allocations over %d broadcasts that wake a waiter, want at most one each", v.Name, p, wakeAllocs, len(wakes))
			}
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
				}
			})
			if allocs != 0 {
				t.Errorf("%s %v: %.0f allocations over %d steps", v.Name, p, allocs, len(steps))
			}
			t.Logf("%s %v: %d steps allocate nothing; %d broadcasts that wake a waiter, %.0f allocations", v.Name, p, len(steps), len(wakes), wakeAllocs)
		}
	}
}

// wakesByBroadcast reports whether thread t's next step in s is a
// qemu_cond_broadcast that wakes a waiter: end_exclusive's broadcast of
// exclusive_resume, or a qemu_cpu_kick of a vCPU asleep on its halt_cond.
func wakesByBroadcast(s *state, t int) bool {
	v := &s.cpu[t]
	switch {
	case v.pc == pcEndExclStore:
		return s.resumeCond.Len() > 0
	case v.pc == pcExclKick:
		return s.haltCond[v.idx].Len() > 0
	case t == src && v.pc == pcGuest && v.guest == gQueueKick:
		return s.haltCond[v.idx].Len() > 0
	case t == src && v.pc == pcGuest && v.guest == gOwn:
		return s.haltCond[src].Len() > 0
	}
	return false
}
