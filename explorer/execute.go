package explorer

import (
	"bytes"
	"fmt"
	"math/bits"

	"github.com/protocheck/protocheck/model"
)

// A StepRecord describes one executed step of Execute.
type StepRecord struct {
	Choice  model.Choice
	Label   string
	Changed []model.Var
	Counts  []int64 // metric deltas
	// Footprint lists the shared accesses of the step.
	Footprint []model.Access
	// Events are the operation events the step recorded.
	Events []model.Event
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

// Execute runs schedule from the initial state with labels and operation
// events on, checking every property after each step, deadlock after the
// last one, and the linearizability of the whole history. It stops at the
// first violation, which may come before the end of the schedule; the
// caller decides whether that is expected. A choice that is not enabled is
// a *DivergenceError.
//
// Every step is also checked against the step contract as only a
// labelled run can: it must have a label, and running it again with labels
// and events off must give the same successor (labels must never change
// what a step does).
func Execute(m model.Machine, schedule []model.Choice) (*Execution, error) {
	st := newStepper(m)
	st.x.SetModes(true, true)
	s := m.Init()
	key := s.AppendKey(nil)
	ex := &Execution{States: []model.State{model.Clone(m, s)}, Totals: make([]int64, len(st.props.Metrics))}
	if v := st.checkState(s); v != nil {
		ex.Violation = v
		return ex, nil
	}
	var hist model.History
	var succ, quiet []byte
	for i, c := range schedule {
		if err := st.replayable(key, c, i); err != nil {
			return ex, err
		}
		st.x.SetModes(true, true)
		st.run(key, c.Thread, c.Alt)
		succ = st.scratch.AppendKey(succ[:0])
		v := st.verdict(key, succ)
		if (v == nil || v.Property != model.ModelError) && st.x.StepLabel() == "" {
			v = st.breach("the step sets no label")
		}
		rec := StepRecord{
			Choice:    c,
			Label:     st.x.StepLabel(),
			Counts:    append([]int64(nil), st.x.Counts()...),
			Footprint: append([]model.Access(nil), st.x.Footprint()...),
			Events:    append([]model.Event(nil), st.x.Events()...),
		}
		if err := hist.Record(int64(i), st.x.Events()); err != nil && v == nil {
			v = &model.Violation{Property: model.Linearizability, Message: "malformed history: " + err.Error()}
		}
		next := model.Clone(m, st.scratch)
		if v == nil || v.Property != model.ModelError {
			st.x.SetModes(false, false)
			st.run(key, c.Thread, c.Alt)
			if quiet = st.scratch.AppendKey(quiet[:0]); !bytes.Equal(quiet, succ) {
				v = st.breach("with labels off the step gives another successor: what a step does must not depend on Exec.Labelling or Exec.Recording")
			}
		}
		rec.Changed = model.Changed(ex.States[len(ex.States)-1], next)
		for k, d := range rec.Counts {
			ex.Totals[k] += d
		}
		ex.Steps = append(ex.Steps, rec)
		ex.States = append(ex.States, next)
		key = append(key[:0], succ...)
		if v != nil {
			ex.Violation, ex.ViolationStep = v, i+1
			return ex, nil
		}
	}
	st.x.SetModes(false, false)
	enabled, blocked := st.enabled(key)
	if len(enabled) == 0 {
		ex.Terminal = true
		if v := st.deadlock(key, blocked); v != nil {
			ex.Violation, ex.ViolationStep = v, len(schedule)
			return ex, nil
		}
	}
	if v := model.CheckHistory(st.props.Spec, hist.Operations()); v != nil {
		ex.Violation, ex.ViolationStep = v, len(schedule)
	}
	return ex, nil
}

// replayable checks that choice c, the i-th of a schedule, is enabled in
// the state encoded as key, and returns a *DivergenceError otherwise.
func (st *stepper) replayable(key []byte, c model.Choice, i int) error {
	if c.Thread >= 0 && c.Thread < st.n && c.Alt >= 0 {
		st.x.SetModes(false, false)
		// A step that breaks the contract is a choice too (forEach offers
		// it), so that Execute reports the breach where it happens.
		if st.run(key, c.Thread, c.Alt) == model.Stepped || st.x.Contract() != "" {
			if set, took, _ := st.x.Offered(); took == c.Alt && (set != 0 || c.Alt == 0) {
				return nil
			}
		}
	}
	name := "?"
	if c.Thread >= 0 && c.Thread < st.n {
		name = st.names[c.Thread]
	}
	enabled, _ := st.enabled(key)
	return &DivergenceError{Step: i, Choice: c, Thread: name, Enabled: enabled}
}

// Status is what a thread can do in a state, derived by running its step.
type Status struct {
	// Enabled: the thread can step (Alternatives ways, at least 1).
	Enabled      bool
	Alternatives int
	// Done: the thread has nothing left to do here.
	Done bool
	// WaitsFor, for a blocked thread: its step's label.
	WaitsFor string
}

// Statuses returns the status of every thread of m in s.
func Statuses(m model.Machine, s model.State) []Status {
	st := newStepper(m)
	st.x.SetModes(true, false)
	key := s.AppendKey(nil)
	out := make([]Status, st.n)
	for t := range out {
		switch st.run(key, t, -1) {
		case model.Stepped:
			set, _, _ := st.x.Offered()
			out[t] = Status{Enabled: true, Alternatives: max(1, bits.OnesCount64(set))}
		case model.Blocked:
			out[t] = Status{WaitsFor: st.x.StepLabel()}
		default:
			out[t] = Status{Done: true}
		}
	}
	return out
}

func contains(cs []model.Choice, c model.Choice) bool {
	for _, e := range cs {
		if e == c {
			return true
		}
	}
	return false
}

// isProgress reports whether property names one of m's progress
// properties.
func isProgress(m model.Machine, property string) bool {
	for _, p := range m.Properties().Progress {
		if p.Name == property {
			return true
		}
	}
	return false
}

// Explore runs the strategy named in opts on m. The Result's verdict is
// OK only for an exhaustive search (bfs, dfs, paths) that ended, found no
// violation and checked every property of m but those opts skips on
// request (Result.Skipped); a complete search that could not check some
// (progress under dfs, paths or symmetry) is Partial, one cut short by a
// limit Bounded, and a sampling strategy's clean run is Bounded by nature.
// Result.OK is the check for a proof; Result.String names what was not
// checked.
func Explore(m model.Machine, opts Options) (*Result, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	if len(m.Threads()) > 64 {
		return nil, fmt.Errorf("the machine has %d threads; at most 64 are supported", len(m.Threads()))
	}
	if _, err := parseFairness(opts.Fairness, m.Threads()); err != nil {
		return nil, err
	}
	keyOf := plainKey
	if opts.Symmetry {
		sym, ok := m.(model.Symmetric)
		if !ok {
			return nil, errNoSymmetry
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
		liveness(m.Properties(), opts, r)
	case Random, RandomThreads:
		r = random(m, opts, p)
		liveness(m.Properties(), opts, r)
	case PCT:
		r = pct(m, opts, p)
		liveness(m.Properties(), opts, r)
	case Paths:
		r = paths(m, opts, p)
		liveness(m.Properties(), opts, r)
	}
	r.Strategy = opts.Strategy
	if r.Verdict == OK && len(r.Unchecked) > 0 {
		// Every state explored, but not every property checked: not a
		// proof of those, so not ok to a caller who checks the verdict.
		r.Verdict = Partial
	}
	p.finish(&r.Stats)
	if r.Violation != nil && isProgress(m, r.Violation.Property) {
		ex, err := CheckLasso(m, r.Schedule, r.Cycle, r.Violation.Property, opts.Fairness)
		if err != nil {
			return nil, fmt.Errorf("internal error: the %s counterexample does not check on re-execution: %v", r.Violation.Property, err)
		}
		r.Labels = make([]string, len(ex.Steps))
		for i, s := range ex.Steps {
			r.Labels[i] = s.Label
		}
		return r, nil
	}
	if r.Violation != nil {
		// Labels come from one strict re-execution of the schedule, which
		// also proves that the violation reproduces. That run has labels
		// on, so it can meet a breach of the step contract that a quiet
		// search cannot see (a step without a label); the breach is then
		// the result, at the step where it happens.
		ex, err := Execute(m, r.Schedule)
		if err == nil && ex.Violation != nil && ex.Violation.Property == model.ModelError && r.Violation.Property != model.ModelError {
			r.Violation, r.Schedule = ex.Violation, r.Schedule[:ex.ViolationStep]
		} else if err != nil || ex.Violation == nil || ex.Violation.Property != r.Violation.Property || ex.ViolationStep != len(r.Schedule) {
			again := "no violation"
			if err != nil {
				again = err.Error()
			} else if ex.Violation != nil {
				again = ex.Violation.Error()
			}
			return nil, fmt.Errorf("internal error: the %s counterexample (%s) does not reproduce on re-execution, which gives %s (uncontrolled nondeterminism in the model?)", opts.Strategy, r.Violation.Property, again)
		}
		r.Labels = make([]string, len(r.Schedule))
		for i := range r.Labels {
			r.Labels[i] = ex.Steps[i].Label
		}
	}
	return r, nil
}

// Enabled returns the choices enabled in s, a state of m, in the order
// the explorer takes them (by thread, then alternative): the choices whose
// step happens when run.
func Enabled(m model.Machine, s model.State) []model.Choice {
	st := newStepper(m)
	en, _ := st.enabled(s.AppendKey(nil))
	return en
}

// A Stepper runs single steps of a machine and judges each exactly as the
// explorer does: for tools that drive a machine their own way (a trace
// minimizer's lenient runs).
type Stepper struct{ st *stepper }

// NewStepper returns a Stepper for m; its steps record operation events,
// not labels.
func NewStepper(m model.Machine) *Stepper {
	st := newStepper(m)
	st.x.SetModes(false, true)
	return &Stepper{st: st}
}

// Step runs choice c from s, which it does not modify. ok is false when c
// is not enabled in s. Otherwise next is the successor (a new state) and v
// the step's violation, if any: a breach of the step contract, a failed
// assertion, a no-op step, or an invariant of next. Exec then holds the
// step's record (events, counts, footprint).
func (s *Stepper) Step(state model.State, c model.Choice) (next model.State, v *model.Violation, ok bool) {
	st := s.st
	if c.Thread < 0 || c.Thread >= st.n || c.Alt < 0 {
		return nil, nil, false
	}
	key := state.AppendKey(nil)
	out := st.run(key, c.Thread, c.Alt)
	set, took, _ := st.x.Offered()
	if out != model.Stepped && st.x.Contract() == "" || took != c.Alt || set == 0 && c.Alt != 0 {
		return nil, nil, false
	}
	succ := st.scratch.AppendKey(nil)
	v = st.verdict(key, succ)
	next = st.m.Init()
	decode(next, succ)
	return next, v, true
}

// Exec is the record of the last step.
func (s *Stepper) Exec() *model.Exec { return s.st.x }
