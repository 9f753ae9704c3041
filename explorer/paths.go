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
	es := newExecStats(len(m.Metrics()))
	spec := m.Spec()
	type frame struct {
		s       model.State
		enabled []model.Choice
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
	stack := []frame{{s: init, enabled: m.Enabled(init, nil), totals: make([]int64, len(m.Metrics()))}}
	cut := ""
	interrupted := false
	for n := 1; len(stack) > 0; n++ {
		if n&4095 == 0 && stopRequested(opts.Stop) {
			interrupted = true
			break
		}
		top := &stack[len(stack)-1]
		depth := len(stack) - 1
		if depth > r.Stats.Depth {
			r.Stats.Depth = depth
		}
		if top.next == 0 && len(top.enabled) == 0 {
			// A complete execution: deadlock, then the whole history.
			if v := st.deadlock(top.s); v != nil {
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
			if top.next < len(top.enabled) && cut == "" {
				cut = fmt.Sprintf("max-steps=%d: longer executions were not followed", opts.MaxSteps)
			}
			stack = stack[:len(stack)-1]
			if len(sched) > 0 {
				sched = sched[:len(sched)-1]
				events = events[:len(events)-1]
			}
			continue
		}
		c := top.enabled[top.next]
		top.next++
		succ, v := st.step(top.s, c)
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
		stack = append(stack, frame{s: succ, enabled: m.Enabled(succ, nil), totals: totals})
		p.report(r.Stats.States, r.Stats.Transitions, depth+1, len(stack))
	}
	r.Verdict = OK
	if cut != "" {
		r.Verdict, r.Bound = Bounded, cut
	}
	if interrupted {
		r.Verdict, r.Bound = Interrupted, ""
	}
	r.Metrics = es.metrics(m.Metrics())
	return r
}
