package explorer

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// paths enumerates every execution depth-first without merging states, so
// that path properties (linearizability of the whole history, metric
// totals) are checked on every execution, not on one per merged state. It
// is exponential in the length of executions: use it at small sizes.
func paths(m model.Machine, opts Options, p *progress) *Result {
	r := &Result{}
	st := newStepper(m)
	nm := len(st.props.Metrics)
	es := newExecStats(nm)
	spec := st.props.Spec
	type frame struct {
		key     []byte
		enabled []model.Choice
		blocked threadSet
		next    int
		totals  []int64
	}
	var hist model.History
	var sched []model.Choice
	var events [][]model.Event // per depth, the events of the step that reached it
	init := m.Init()
	r.Stats.States = 1
	if v := st.checkState(init); v != nil {
		r.Verdict, r.Violation = Violation, v
		return r
	}
	push := func(key []byte, totals []int64) frame {
		f := frame{key: key, totals: totals}
		f.enabled, f.blocked = st.enabled(key)
		return f
	}
	stack := []frame{push(init.AppendKey(nil), make([]int64, nm))}
	cut := ""
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		depth := len(stack) - 1
		if depth > r.Stats.Depth {
			r.Stats.Depth = depth
		}
		if top.next == 0 && len(top.enabled) == 0 {
			// A complete execution: deadlock, then the whole history.
			if v := st.deadlock(top.key, top.blocked); v != nil {
				r.Verdict, r.Violation, r.Schedule = Violation, v, append([]model.Choice(nil), sched...)
				return r
			}
			hist.Reset()
			var v *model.Violation
			for i, ev := range events {
				if err := hist.Record(int64(i), ev); err != nil && v == nil {
					v = &model.Violation{Property: model.Linearizability, Message: "malformed history: " + err.Error()}
				}
			}
			if v == nil {
				v = model.CheckHistory(spec, hist.Operations())
			}
			if v != nil {
				r.Verdict, r.Violation, r.Schedule = Violation, v, append([]model.Choice(nil), sched...)
				return r
			}
			es.add(top.totals)
			r.Stats.Executions++
			if r.Stats.Executions >= int64(opts.Runs) {
				cut = fmt.Sprintf("paths: stopped after %d executions", opts.Runs)
				break
			}
		}
		if top.next >= len(top.enabled) || depth >= opts.MaxSteps {
			if top.next < len(top.enabled) {
				if cut == "" {
					cut = fmt.Sprintf("max-steps=%d: longer executions were not followed", opts.MaxSteps)
				}
				// A path cut at max-steps is an execution followed as far
				// as allowed: it counts toward the bound on executions, or
				// a spin loop would make the bound meaningless.
				if r.Stats.Executions++; r.Stats.Executions >= int64(opts.Runs) {
					break
				}
			}
			stack = stack[:len(stack)-1]
			if len(sched) > 0 {
				sched = sched[:len(sched)-1]
				events = events[:len(events)-1]
			}
			continue
		}
		if r.Stats.Transitions&1023 == 1023 {
			if why, v := p.limit(int(r.Stats.States)); why != "" {
				r.Verdict, r.Bound = v, why
				r.Metrics = es.metrics(st.props.Metrics)
				return r
			}
		}
		c := top.enabled[top.next]
		top.next++
		st.x.SetModes(false, true)
		st.run(top.key, c.Thread, c.Alt)
		succ := st.scratch.AppendKey(nil)
		v := st.verdict(top.key, succ)
		st.x.SetModes(false, false)
		r.Stats.Transitions++
		r.Stats.States++
		sched = append(sched, c)
		events = append(events, append([]model.Event(nil), st.x.Events()...))
		if v != nil {
			r.Verdict, r.Violation, r.Schedule = Violation, v, append([]model.Choice(nil), sched...)
			return r
		}
		totals := append([]int64(nil), top.totals...)
		for k, d := range st.x.Counts() {
			totals[k] += d
			es.trans[k] += d
		}
		stack = append(stack, push(succ, totals))
		p.report(r.Stats.States, r.Stats.Transitions, depth+1, len(stack))
	}
	r.Verdict = OK
	if cut != "" {
		r.Verdict, r.Bound = Bounded, cut
	}
	r.Metrics = es.metrics(st.props.Metrics)
	return r
}
