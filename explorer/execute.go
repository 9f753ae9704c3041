package explorer

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// stepper applies choices and checks the per-state properties. It is the
// one place where "a step happened" is turned into a possible violation,
// shared by every strategy and by Execute.
type stepper struct {
	m    model.Machine
	invs []model.Invariant
	x    *model.Exec
}

func newStepper(m model.Machine) *stepper {
	return &stepper{m: m, invs: m.Invariants(), x: model.NewExec(len(m.Metrics()))}
}

// checkState checks every invariant of s.
func (st *stepper) checkState(s model.State) *model.Violation {
	for _, inv := range st.invs {
		if msg := inv.Check(s); msg != "" {
			return &model.Violation{Property: inv.Name, Message: msg}
		}
	}
	return nil
}

// step applies c to s; st.x holds the step's record afterwards.
func (st *stepper) step(s model.State, c model.Choice) (model.State, *model.Violation) {
	st.x.Reset(c.Thread)
	next := st.m.Step(s, c, st.x)
	if v := st.x.Violation(); v != nil {
		return next, v
	}
	return next, st.checkState(next)
}

// deadlock returns a deadlock violation if s has no enabled choice and
// some thread is not done, naming each blocked thread and what it waits
// for. It is only called when no choice is enabled.
func (st *stepper) deadlock(s model.State) *model.Violation {
	names := st.m.Threads()
	msg := ""
	for t := range names {
		stat := st.m.Status(s, t)
		if stat.Done {
			continue
		}
		if msg != "" {
			msg += "; "
		}
		w := stat.WaitsFor
		if w == "" {
			w = "nothing it can name"
		}
		msg += fmt.Sprintf("%s waits for %s", names[t], w)
	}
	if msg == "" {
		return nil
	}
	return &model.Violation{Property: model.Deadlock, Message: "no thread can step: " + msg}
}

// A StepRecord describes one executed step of Execute.
type StepRecord struct {
	Choice  model.Choice
	Label   string
	Changed []model.Var
	Counts  []int64 // metric deltas
	// Footprint lists the shared accesses of the step.
	Footprint []model.Access
}

// An Execution is the result of running a schedule.
type Execution struct {
	Steps  []StepRecord
	States []model.State // States[0] is the initial state; States[i+1] follows Steps[i]
	// Violation is the first property that failed; ViolationStep is the
	// number of steps taken when it did (0 for the initial state).
	Violation     *model.Violation
	ViolationStep int
	// Terminal: no choice is enabled after the last step.
	Terminal bool
	// Totals are the metric totals of the execution.
	Totals []int64
}

// A DivergenceError says that a schedule does not fit the machine: the
// choice at Step (0-based) is not enabled there.
type DivergenceError struct {
	Step    int
	Choice  model.Choice
	Thread  string
	Enabled []model.Choice
}

func (e *DivergenceError) Error() string {
	return fmt.Sprintf("step %d: choice %s (thread %s) is not enabled; enabled choices: %v", e.Step+1, e.Choice, e.Thread, e.Enabled)
}

// Execute runs schedule from the initial state, checking every property
// after each step, deadlock after the last one, and the linearizability of
// the whole history. It stops at the first violation, which may come before
// the end of the schedule; the caller decides whether that is expected. A
// choice that is not enabled is a *DivergenceError.
func Execute(m model.Machine, schedule []model.Choice) (*Execution, error) {
	st := newStepper(m)
	s := m.Init()
	ex := &Execution{States: []model.State{s}, Totals: make([]int64, len(m.Metrics()))}
	if v := st.checkState(s); v != nil {
		ex.Violation = v
		return ex, nil
	}
	var hist model.History
	var enabled []model.Choice
	for i, c := range schedule {
		enabled = m.Enabled(s, enabled[:0])
		if !contains(enabled, c) {
			name := "?"
			if c.Thread >= 0 && c.Thread < len(m.Threads()) {
				name = m.Threads()[c.Thread]
			}
			return ex, &DivergenceError{Step: i, Choice: c, Thread: name, Enabled: append([]model.Choice(nil), enabled...)}
		}
		next, v := st.step(s, c)
		rec := StepRecord{
			Choice:    c,
			Label:     st.x.StepLabel(),
			Changed:   model.Changed(s, next),
			Counts:    append([]int64(nil), st.x.Counts()...),
			Footprint: append([]model.Access(nil), st.x.Footprint()...),
		}
		for k, d := range rec.Counts {
			ex.Totals[k] += d
		}
		if err := hist.Record(int64(i), st.x.Events()); err != nil && v == nil {
			v = &model.Violation{Property: model.Linearizability, Message: "malformed history: " + err.Error()}
		}
		ex.Steps = append(ex.Steps, rec)
		ex.States = append(ex.States, next)
		s = next
		if v != nil {
			ex.Violation, ex.ViolationStep = v, i+1
			return ex, nil
		}
	}
	enabled = m.Enabled(s, enabled[:0])
	if len(enabled) == 0 {
		ex.Terminal = true
		if v := st.deadlock(s); v != nil {
			ex.Violation, ex.ViolationStep = v, len(schedule)
			return ex, nil
		}
	}
	if v := model.CheckHistory(m.Spec(), hist.Operations()); v != nil {
		ex.Violation, ex.ViolationStep = v, len(schedule)
	}
	return ex, nil
}

func contains(cs []model.Choice, c model.Choice) bool {
	for _, e := range cs {
		if e == c {
			return true
		}
	}
	return false
}

// Explore runs the strategy named in opts on m.
func Explore(m model.Machine, opts Options) (*Result, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	keyOf := plainKey
	if opts.Symmetry {
		sym, ok := m.(model.Symmetric)
		if !ok {
			return nil, fmt.Errorf("symmetry reduction: the machine (%T) does not implement model.Symmetric", m)
		}
		keyOf = sym.CanonicalKey
	}
	p := newProgress(opts)
	var r *Result
	switch opts.Strategy {
	case BFS:
		r = bfs(m, opts, p, keyOf)
	case DFS:
		r = dfs(m, opts, p, keyOf)
	case Random, RandomThreads:
		r = random(m, opts, p)
	case PCT:
		r = pct(m, opts, p)
	case Paths:
		r = paths(m, opts, p)
	}
	r.Strategy = opts.Strategy
	p.finish(&r.Stats)
	if r.Violation != nil {
		// Labels come from one strict re-execution of the schedule, which
		// also proves that the violation reproduces.
		ex, err := Execute(m, r.Schedule)
		if err != nil || ex.Violation == nil || ex.Violation.Property != r.Violation.Property {
			again := "no violation"
			if err != nil {
				again = err.Error()
			} else if ex.Violation != nil {
				again = ex.Violation.Error()
			}
			return nil, fmt.Errorf("internal error: the %s counterexample (%s) does not reproduce on re-execution, which gives %s (uncontrolled nondeterminism in the model?)", opts.Strategy, r.Violation.Property, again)
		}
		r.Labels = make([]string, len(ex.Steps))
		for i, s := range ex.Steps {
			r.Labels[i] = s.Label
		}
	}
	return r, nil
}
