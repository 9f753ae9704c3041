package traces

import (
	"errors"
	"fmt"
	"slices"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// MaxMinimizeExecutions bounds the executions Minimize tries. Each is a
// run of a schedule no longer than the input trace, so the bound makes the
// work proportional to the trace length; when it is reached, Minimize
// returns the shortest trace found so far, which is still valid.
const MaxMinimizeExecutions = 20000

// maxParamTries bounds the values tried per parameter in one pass, so that
// a parameter with a wide range cannot use up the whole budget alone.
const maxParamTries = 64

// Minimize shortens a trace with a violation (one found by random walks,
// by a real-code run, or written by hand; a bfs trace is already shortest)
// while keeping the violated property:
//
//  1. delta debugging over the schedule: drop chunks, then single steps;
//     then over each thread's own steps: drop a block of one thread's
//     consecutive steps wherever they are interleaved (a whole round of
//     a thread that only got in the way, which no contiguous chunk
//     removes: dropping any single one of its steps leaves the thread
//     half-way, holding a lock, and loses the violation);
//  2. fewer context switches: move a later run of the thread that stepped
//     last up to where it was preempted, so runs of one thread get longer,
//     accepting only changes that keep the property, do not lengthen the
//     trace and remove a switch;
//  3. smaller parameters: each parameter from its Min upwards to its
//     current value, accepting the first value for which the schedule
//     (run leniently, then minimized again) still reproduces the property.
//
// A candidate schedule is run leniently: a choice that is not enabled is
// skipped, and the run stops at the first violation. It is accepted only if
// that violation has the trace's property. Each step of the search is a
// pure function of the trace, so the result is deterministic; the work is
// bounded by MaxMinimizeExecutions. The result is Record'ed, so it replays
// strictly.
func Minimize(p *model.Protocol, t *Trace) (*Trace, error) {
	r, err := Replay(p, t)
	if err != nil {
		return nil, fmt.Errorf("minimize: %w", err)
	}
	if t.Violation == nil {
		return nil, errors.New("minimize: the trace has no violation to preserve")
	}
	if isProgress(r.Machine, t.Violation.Property) {
		return nil, fmt.Errorf("minimize: the trace is a %s counterexample, a lasso: it is not minimized (bfs found it after a shortest path to its cycle)", t.Violation.Property)
	}
	_, params, err := p.Instantiate(t.Variant, t.Params)
	if err != nil {
		return nil, fmt.Errorf("minimize: %w", err)
	}
	mz := &minimizer{property: t.Violation.Property, budget: MaxMinimizeExecutions}
	sched := mz.schedule(r.Machine, t.Schedule)
	sched, params = mz.params(p, t.Variant, params, sched)
	out, err := Record(p, t.Variant, params, sched)
	if err != nil {
		return nil, fmt.Errorf("minimize: internal error: the minimized schedule does not replay: %w", err)
	}
	if out.Violation == nil || out.Violation.Property != mz.property {
		// The lenient runs and explorer.Execute disagree, or the model
		// is not deterministic; the input is the honest answer.
		return nil, fmt.Errorf("minimize: internal error: the minimized schedule gives %s, not the violation %s (uncontrolled nondeterminism in the model?)", describeViolation(out.Violation), mz.property)
	}
	return out, nil
}

// minimizer holds what every candidate run is judged by.
type minimizer struct {
	property string
	budget   int // executions left
}

// schedule minimizes sched on machine m: delta debugging, then context
// switches, then delta debugging again, since a reordered schedule may
// make steps removable.
func (mz *minimizer) schedule(m model.Machine, sched []model.Choice) []model.Choice {
	sched = mz.segments(m, mz.ddmin(m, sched))
	reordered := mz.switches(m, sched)
	if !slices.Equal(reordered, sched) {
		reordered = mz.segments(m, mz.ddmin(m, reordered))
	}
	return reordered
}

// segments shortens the schedule thread by thread: for thread t with k
// steps, it tries to remove t's steps i..j (every block of consecutive
// steps of t, the longest first, wherever they sit in the schedule; a
// round of a thread has its own length, which halving would skip),
// accepting the first removal that still reproduces the property, until
// none does.
func (mz *minimizer) segments(m model.Machine, sched []model.Choice) []model.Choice {
	for improved := true; improved && mz.budget > 0; {
		improved = false
		for t := 0; t < len(m.Threads()) && !improved && mz.budget > 0; t++ {
			var at []int // positions of t's steps
			for i, c := range sched {
				if c.Thread == t {
					at = append(at, i)
				}
			}
			for size := len(at); size >= 1 && !improved; size-- {
				for start := 0; start+size <= len(at) && !improved && mz.budget > 0; start++ {
					drop := map[int]bool{}
					for _, i := range at[start : start+size] {
						drop[i] = true
					}
					cand := make([]model.Choice, 0, len(sched)-size)
					for i, c := range sched {
						if !drop[i] {
							cand = append(cand, c)
						}
					}
					if got, ok := mz.run(m, cand); ok && len(got) < len(sched) {
						sched, improved = got, true
					}
				}
			}
		}
	}
	return sched
}

// run executes sched leniently on m and reports whether it reproduces the
// property. It returns the choices actually taken, up to and including the
// violating step: always a subsequence of sched, never longer. It mirrors
// explorer.Execute (invariants after each step, the step's assertion, a
// malformed history, deadlock and linearizability at the end) so that the
// accepted schedule also reproduces under strict replay.
func (mz *minimizer) run(m model.Machine, sched []model.Choice) ([]model.Choice, bool) {
	if mz.budget <= 0 {
		return nil, false
	}
	mz.budget--
	props := m.Properties()
	check := func(s model.State) *model.Violation {
		for _, inv := range props.Invariants {
			if msg := inv.Check(s); msg != "" {
				return &model.Violation{Property: inv.Name, Message: msg}
			}
		}
		return nil
	}
	s := m.Init()
	if v := check(s); v != nil {
		return []model.Choice{}, v.Property == mz.property
	}
	st := explorer.NewStepper(m)
	var hist model.History
	out := make([]model.Choice, 0, len(sched))
	for _, c := range sched {
		next, v, ok := st.Step(s, c)
		if !ok {
			continue
		}
		if err := hist.Record(int64(len(out)), st.Exec().Events()); err != nil && v == nil {
			v = &model.Violation{Property: model.Linearizability}
		}
		out = append(out, c)
		s = next
		if v != nil {
			return out, v.Property == mz.property
		}
	}
	if len(explorer.Enabled(m, s)) == 0 {
		for _, status := range explorer.Statuses(m, s) {
			if !status.Done {
				return out, mz.property == model.Deadlock
			}
		}
	}
	if v := model.CheckHistory(props.Spec, hist.Operations()); v != nil {
		return out, v.Property == mz.property
	}
	return out, false
}

// ddmin is delta debugging over the schedule: remove one of n chunks at a
// time, halving the chunks when none can go, down to single steps. The
// schedule it returns has no single removable step (unless the budget ran
// out).
func (mz *minimizer) ddmin(m model.Machine, sched []model.Choice) []model.Choice {
	n := 2
	for len(sched) > 0 && mz.budget > 0 {
		if n > len(sched) {
			n = len(sched)
		}
		size := (len(sched) + n - 1) / n
		reduced := false
		for start := 0; start < len(sched); start += size {
			end := min(start+size, len(sched))
			cand := make([]model.Choice, 0, len(sched)-(end-start))
			cand = append(append(cand, sched[:start]...), sched[end:]...)
			if got, ok := mz.run(m, cand); ok {
				sched, reduced = got, true
				n = max(n-1, 2)
				break
			}
		}
		if !reduced {
			if n >= len(sched) {
				break
			}
			n = min(2*n, len(sched))
		}
	}
	return sched
}

// switches counts the context switches of a schedule: steps whose thread
// differs from the previous step's.
func switches(sched []model.Choice) int {
	n := 0
	for i := 1; i < len(sched); i++ {
		if sched[i].Thread != sched[i-1].Thread {
			n++
		}
	}
	return n
}

// switches reduces context switches. At each switch from thread t to
// another at position i, it tries to pull t's next run (or only its first
// step) forward to i, so that t keeps running. A candidate is accepted only
// if it reproduces the property, is no longer, and has strictly fewer
// switches, which also guarantees that the loop ends.
func (mz *minimizer) switches(m model.Machine, sched []model.Choice) []model.Choice {
	for improved := true; improved && mz.budget > 0; {
		improved = false
		for i := 1; i < len(sched) && mz.budget > 0; i++ {
			t := sched[i-1].Thread
			if sched[i].Thread == t {
				continue
			}
			j := i + 1
			for j < len(sched) && sched[j].Thread != t {
				j++
			}
			if j == len(sched) {
				continue
			}
			k := j
			for k < len(sched) && sched[k].Thread == t {
				k++
			}
			ends := []int{k}
			if k > j+1 {
				ends = append(ends, j+1)
			}
			for _, end := range ends {
				cand := make([]model.Choice, 0, len(sched))
				cand = append(cand, sched[:i]...)
				cand = append(cand, sched[j:end]...)
				cand = append(cand, sched[i:j]...)
				cand = append(cand, sched[end:]...)
				got, ok := mz.run(m, cand)
				if ok && len(got) <= len(sched) && switches(got) < switches(sched) {
					sched, improved = got, true
					break
				}
			}
		}
	}
	return sched
}

// params tries smaller parameter values, in the protocol's parameter
// order, repeating while some parameter shrinks. The schedule is
// re-minimized for every accepted value: fewer threads or smaller sizes
// usually need fewer steps. A parameter whose minimum is a sentinel
// (model.Param.Sentinel: "forever", "unbounded") is never lowered to it,
// so that the counterexample is reported at a size that is smaller.
func (mz *minimizer) params(p *model.Protocol, variant string, params model.Params, sched []model.Choice) ([]model.Choice, model.Params) {
	for changed := true; changed && mz.budget > 0; {
		changed = false
		for _, q := range p.Params {
			cur := params[q.Name]
			for v, tries := q.Smallest(), 0; v < cur && tries < maxParamTries && mz.budget > 0; v, tries = v+1, tries+1 {
				try := model.Params{}
				for k, x := range params {
					try[k] = x
				}
				try[q.Name] = v
				m, resolved, err := p.Instantiate(variant, try)
				if err != nil {
					continue // a combination the protocol refuses
				}
				got, ok := mz.run(m, sched)
				if !ok {
					continue
				}
				sched, params, changed = mz.schedule(m, got), resolved, true
				break
			}
		}
	}
	return sched, params
}
