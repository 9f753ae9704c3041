package traces

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/internal/clip"
	"github.com/protocheck/protocheck/model"
)

// Replayed is a trace re-applied to its model: the machine rebuilt from
// the trace's variant and parameters and the strict execution of its
// schedule, with every state (for rendering).
type Replayed struct {
	Trace     *Trace
	Machine   model.Machine
	Execution *explorer.Execution
	// Cycle is the number of final steps that repeat forever, for a
	// progress violation that is a lasso (0 otherwise).
	Cycle int
}

// A DivergenceError says that a trace no longer fits its model: at Step
// (1-based; 0 is the initial state) the trace expected one thing and the
// model did another.
type DivergenceError struct {
	Step             int
	Expected, Actual string
}

func (e *DivergenceError) Error() string {
	where := fmt.Sprintf("step %d", e.Step)
	if e.Step == 0 {
		where = "the initial state"
	}
	return fmt.Sprintf("%s diverges: trace expects %s, model gives %s", where, e.Expected, e.Actual)
}

// Replay rebuilds the trace's machine and re-applies its schedule
// strictly. Every step must be enabled and give the recorded thread and
// label; the recorded violation (or none) must occur exactly at the end of
// the schedule, with the same property and the same message, word for
// word (a lasso's message is a function of the lasso and its fairness,
// explorer.LassoMessage). Otherwise the error is a *DivergenceError naming
// the first step that differs. An unknown variant
// or parameter, a value out of range, or a trace of another protocol is a
// plain error.
func Replay(p *model.Protocol, t *Trace) (*Replayed, error) {
	if p == nil {
		return nil, errors.New("replay: no protocol")
	}
	if err := t.validate(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if t.Protocol != p.Name {
		return nil, fmt.Errorf("replay: the trace is of protocol %q, not %q", clip.String(t.Protocol), p.Name)
	}
	if !slices.Equal(t.Without, p.LeftOut) {
		return nil, fmt.Errorf("replay: the trace was found with %s left out, the protocol given leaves out %s (model.Protocol.Without)", describeLeftOut(t.Without), describeLeftOut(p.LeftOut))
	}
	if err := completeParams(p, t.Params); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	m, _, err := p.Instantiate(t.Variant, t.Params)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if t.Violation != nil && isProgress(m, t.Violation.Property) {
		return replayProgress(m, t)
	}
	if t.Cycle != 0 || t.Fairness != "" {
		return nil, &DivergenceError{Step: len(t.Schedule), Expected: "a violation of a progress property (the trace has a cycle or a fairness)", Actual: "no progress property " + describeViolation(t.Violation)}
	}
	ex, err := explorer.Execute(m, t.Schedule)
	// The first divergence is reported: a changed label comes before the
	// choice that is no longer enabled further on.
	names := m.Threads()
	for i, s := range ex.Steps {
		want := t.Steps[i]
		got := Step{Thread: threadName(names, s.Choice.Thread), Label: s.Label}
		if got != want {
			return nil, &DivergenceError{Step: i + 1, Expected: describeStep(want), Actual: describeStep(got)}
		}
	}
	if err != nil {
		return nil, divergence(m, err)
	}
	n := len(t.Schedule)
	if v := ex.Violation; v != nil && ex.ViolationStep < n {
		return nil, &DivergenceError{
			Step:     ex.ViolationStep,
			Expected: fmt.Sprintf("no violation before the end of its %d steps", n),
			Actual:   "violation " + v.Error(),
		}
	}
	if d := compareViolations(t.Violation, ex.Violation); d != "" {
		return nil, &DivergenceError{Step: n, Expected: describeViolation(t.Violation), Actual: d}
	}
	return &Replayed{Trace: t, Machine: m, Execution: ex}, nil
}

func isProgress(m model.Machine, property string) bool {
	for _, p := range m.Properties().Progress {
		if p.Name == property {
			return true
		}
	}
	return false
}

// replayProgress replays a progress counterexample: every step as in
// Replay, and then the lasso itself, checked by explorer.CheckLasso (the
// cycle closes, the obligation is pending throughout and, under weak
// fairness, the cycle is fair). The replayed execution carries the trace's
// violation at its last step, for rendering.
func replayProgress(m model.Machine, t *Trace) (*Replayed, error) {
	fairness := t.Fairness
	if fairness == "" {
		fairness = explorer.FairnessWeak
	}
	ex, err := explorer.CheckLasso(m, t.Schedule, t.Cycle, t.Violation.Property, fairness)
	names := m.Threads()
	if ex != nil {
		for i, s := range ex.Steps {
			want := t.Steps[i]
			got := Step{Thread: threadName(names, s.Choice.Thread), Label: s.Label}
			if got != want {
				return nil, &DivergenceError{Step: i + 1, Expected: describeStep(want), Actual: describeStep(got)}
			}
		}
	}
	if err != nil {
		var de *explorer.DivergenceError
		if errors.As(err, &de) {
			return nil, divergence(m, err)
		}
		return nil, &DivergenceError{Step: len(t.Schedule), Expected: "a " + t.Violation.Property + " counterexample", Actual: err.Error()}
	}
	msg, err := explorer.LassoMessage(m, t.Schedule, t.Cycle, fairness)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	v := model.Violation{Property: t.Violation.Property, Message: msg}
	if v != *t.Violation {
		return nil, &DivergenceError{Step: len(t.Schedule), Expected: describeViolation(t.Violation), Actual: describeViolation(&v)}
	}
	ex.Violation, ex.ViolationStep = &v, len(t.Schedule)
	return &Replayed{Trace: t, Machine: m, Execution: ex, Cycle: t.Cycle}, nil
}

// compareViolations returns "" when the execution's violation matches the
// trace's (the same property and message, or none for both), and
// otherwise what the model gave. The message is part of what a trace
// records: one edited by hand, or one the model no longer gives (the model
// changed what it says about the same execution), is a divergence, not a
// detail, so a trace never shows a reader words the model does not say.
func compareViolations(want, got *model.Violation) string {
	switch {
	case want == nil && got == nil:
		return ""
	case want != nil && got != nil && *want == *got:
		return ""
	}
	return describeViolation(got)
}

func describeViolation(v *model.Violation) string {
	if v == nil {
		return "no violation"
	}
	return "violation " + clip.String(v.Error())
}

func describeLeftOut(names []string) string {
	if len(names) == 0 {
		return "no property"
	}
	return clip.String(strings.Join(names, ", "))
}

// describeStep names a step's thread and label, each clipped: either may
// come from a trace file, whatever its size.
func describeStep(s Step) string {
	return fmt.Sprintf("thread %s %q", clip.String(s.Thread), clip.String(s.Label))
}

// divergence turns explorer.Execute's error into a *DivergenceError with a
// 1-based step, naming threads so the message reads without the model.
func divergence(m model.Machine, err error) error {
	var de *explorer.DivergenceError
	if !errors.As(err, &de) {
		return err
	}
	names := m.Threads()
	name := func(c model.Choice) string {
		if c.Thread >= 0 && c.Thread < len(names) {
			return fmt.Sprintf("%s (thread %s)", c, names[c.Thread])
		}
		return fmt.Sprintf("%s (no such thread: the machine has %d)", c, len(names))
	}
	actual := "no enabled choice"
	if len(de.Enabled) > 0 {
		parts := make([]string, len(de.Enabled))
		for i, c := range de.Enabled {
			parts[i] = name(c)
		}
		actual = "only " + strings.Join(parts, ", ") + " enabled"
	}
	return &DivergenceError{Step: de.Step + 1, Expected: "choice " + name(de.Choice) + " enabled", Actual: actual}
}

// threadName is names[t], or a description of t when the machine has no
// such thread, so that a schedule naming a thread the machine does not
// have cannot make us panic.
func threadName(names []string, t int) string {
	if t >= 0 && t < len(names) {
		return names[t]
	}
	return fmt.Sprintf("#%d", t)
}

// completeParams checks that a trace names every parameter of its protocol
// and no other: a trace records all of them, defaults included, so that it
// replays the same configuration after a default changes; a missing one
// means the trace is older than the protocol's parameters.
func completeParams(p *model.Protocol, given model.Params) error {
	for _, q := range p.Params {
		if _, ok := given[q.Name]; !ok {
			return fmt.Errorf("the trace does not record parameter %s (it is older than the model's parameters: re-record it)", q.Name)
		}
	}
	if len(given) != len(p.Params) {
		if _, err := p.Resolve(given); err != nil {
			return err
		}
	}
	return nil
}
