package explorer

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// bfs explores the state space level by level. Every discovered state gets
// an index in discovery order; parent and via rebuild the schedule of the
// counterexample. Transitions are kept (source-ordered, as states are
// expanded in index order) so that metrics can be computed exactly over
// every complete execution afterwards.
func bfs(m model.Machine, opts Options, p *progress) *Result {
	st := newStepper(m)
	nm := len(m.Metrics())
	r := &Result{}
	init := m.Init()
	visited := map[string]int32{}
	var key []byte
	key = init.AppendKey(key[:0])
	visited[string(key)] = 0
	parent := []int32{-1}
	via := []model.Choice{{}}
	terminal := []bool{false}
	g := graph{metrics: nm, start: []int32{0}}
	totals := make([]int64, nm)

	schedule := func(i int32) []model.Choice {
		var out []model.Choice
		for ; i > 0; i = parent[i] {
			out = append(out, via[i])
		}
		for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
			out[a], out[b] = out[b], out[a]
		}
		return out
	}
	finish := func(v *model.Violation, at int32, extra *model.Choice) *Result {
		r.Verdict, r.Violation = Violation, v
		r.Schedule = schedule(at)
		if extra != nil {
			r.Schedule = append(r.Schedule, *extra)
		}
		r.Stats.States = int64(len(parent))
		if len(r.Schedule) > r.Stats.Depth {
			r.Stats.Depth = len(r.Schedule)
		}
		// Executions stop at the violation: only transition totals.
		r.Metrics = g.summarise(m.Metrics(), terminal, totals, true)
		return r
	}

	if v := st.checkState(init); v != nil {
		return finish(v, 0, nil)
	}
	level := []model.State{init}
	levelIdx := []int32{0}
	var enabled []model.Choice
	cut := false
	for depth := 0; len(level) > 0; depth++ {
		r.Stats.Depth = depth
		if depth >= opts.MaxSteps {
			cut = true
			r.Bound = fmt.Sprintf("max-steps=%d: executions longer than that were not explored", opts.MaxSteps)
			break
		}
		var next []model.State
		var nextIdx []int32
		// A violation one step beyond this level is kept while the rest of
		// the level is checked for deadlocks, which are one step shorter.
		var found *model.Violation
		var foundAt int32
		var foundVia model.Choice
		for li, s := range level {
			idx := levelIdx[li]
			enabled = m.Enabled(s, enabled[:0])
			if len(enabled) == 0 {
				if v := st.deadlock(s); v != nil {
					return finish(v, idx, nil)
				}
				terminal[idx] = true
			}
			if found != nil {
				continue
			}
			for _, c := range enabled {
				succ, v := st.step(s, c)
				r.Stats.Transitions++
				counts := st.x.Counts()
				for k, d := range counts {
					totals[k] += d
				}
				if v != nil {
					found, foundAt, foundVia = v, idx, c
					break
				}
				key = succ.AppendKey(key[:0])
				to, seen := visited[string(key)]
				if !seen {
					if len(parent) >= opts.MaxStates {
						cut = true
						r.Bound = fmt.Sprintf("max-states=%d: the state space is larger", opts.MaxStates)
						continue
					}
					to = int32(len(parent))
					visited[string(key)] = to
					parent = append(parent, idx)
					via = append(via, c)
					terminal = append(terminal, false)
					next = append(next, succ)
					nextIdx = append(nextIdx, to)
				}
				g.add(to, counts)
				p.report(int64(len(parent)), r.Stats.Transitions, depth, len(level)-li+len(next))
			}
			g.close()
		}
		if found != nil {
			return finish(found, foundAt, &foundVia)
		}
		level, levelIdx = next, nextIdx
	}
	r.Stats.States = int64(len(parent))
	r.Verdict = OK
	if cut {
		r.Verdict = Bounded
	}
	r.Metrics = g.summarise(m.Metrics(), terminal, totals, cut)
	return r
}
