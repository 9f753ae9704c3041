package rt

import (
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// Replay returns a strategy that takes the given choices, one per step,
// and nothing else: a schedule found on the model (explorer.Result's
// Schedule) or on the real code (Run.Schedule) runs the same execution
// again. Replay is strict: a choice that is not enabled, a schedule that
// ends while goroutines can still run, or a run that stops (every
// goroutine exited, or a deadlock) with choices left over is a
// *ReplayError naming the step. (A run that stops at a violation with
// choices left over keeps the violation and also gets the error.) Every
// run of the strategy replays the same schedule.
func Replay(schedule []model.Choice) Strategy {
	return &replayStrategy{sched: append([]model.Choice(nil), schedule...)}
}

// ReplayExpect is Replay that also checks the label of every step against
// labels (explorer.Result's Labels, or the labels of Run.Steps): a
// mismatch is a *ReplayError naming the step, the expected and the actual
// label. This is how a model counterexample is confirmed on the real
// code: same choices, same labels, same violation.
func ReplayExpect(schedule []model.Choice, labels []string) Strategy {
	return &replayStrategy{
		sched:  append([]model.Choice(nil), schedule...),
		labels: append([]string(nil), labels...),
		expect: true,
	}
}

// A ReplayError says where and how a replayed schedule does not fit the
// code. Step is 1-based.
type ReplayError struct {
	Step     int
	Choice   model.Choice
	Thread   string
	Reason   string
	Expected string // expected label, for a label mismatch
	Actual   string // actual label, for a label mismatch
	Enabled  string // the enabled choices with their labels
}

func (e *ReplayError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "replay: step %d", e.Step)
	if e.Thread != "" {
		fmt.Fprintf(&b, ": choice %s (thread %s)", e.Choice, e.Thread)
	}
	b.WriteString(": " + e.Reason)
	if e.Expected != "" || e.Actual != "" {
		fmt.Fprintf(&b, ": expected label %q, got %q", e.Expected, e.Actual)
	}
	if e.Enabled != "" {
		b.WriteString("; enabled: " + e.Enabled)
	}
	return b.String()
}

type replayStrategy struct {
	sched  []model.Choice
	labels []string
	expect bool
	pos    int
}

func (s *replayStrategy) Begin() error {
	if s.expect && len(s.labels) != len(s.sched) {
		return fmt.Errorf("rt: replay: %d labels for %d choices", len(s.labels), len(s.sched))
	}
	s.pos = 0
	return nil
}

func (s *replayStrategy) Pick(p *Point) (model.Choice, error) {
	if s.pos >= len(s.sched) {
		return model.Choice{}, &ReplayError{Step: p.Step + 1, Reason: fmt.Sprintf("the schedule ends after %d choices but goroutines can still run", len(s.sched)), Enabled: p.Describe()}
	}
	c := s.sched[s.pos]
	if !containsChoice(p.Enabled, c) {
		return c, &ReplayError{Step: p.Step + 1, Choice: c, Thread: p.Thread(c.Thread), Reason: "not enabled", Enabled: p.Describe()}
	}
	if s.expect && !strings.HasPrefix(s.labels[s.pos], p.Label(c.Thread)) {
		return c, &ReplayError{Step: p.Step + 1, Choice: c, Thread: p.Thread(c.Thread), Reason: "label mismatch", Expected: s.labels[s.pos], Actual: p.Label(c.Thread)}
	}
	s.pos++
	return c, nil
}

func (s *replayStrategy) End(r *Run) error {
	// A label may be completed by Env.Note after its scheduling point, so
	// Pick only checks that the point's label starts the expected one; the
	// whole labels are compared here, first mismatch first, also when the
	// run failed further on (the first divergence is the one to name:
	// controlled prefers an earlier step's ReplayError to the run's).
	for i := 0; s.expect && i < len(r.Steps) && i < len(s.labels); i++ {
		if r.Steps[i].Label != s.labels[i] {
			return &ReplayError{Step: i + 1, Choice: r.Schedule[i], Thread: r.Steps[i].Thread, Reason: "label mismatch", Expected: s.labels[i], Actual: r.Steps[i].Label}
		}
	}
	if s.pos < len(s.sched) && r.Err == nil {
		why := "every goroutine exited"
		switch {
		case r.Violation != nil:
			why = "the run stopped at " + r.Violation.Property
		case r.BoundHit:
			why = "the run hit max-steps"
		}
		c := s.sched[s.pos]
		name := "?"
		if c.Thread >= 0 && c.Thread < len(r.Threads) {
			name = r.Threads[c.Thread]
		}
		return &ReplayError{Step: s.pos + 1, Choice: c, Thread: name, Reason: fmt.Sprintf("%s after %d steps, but the schedule has %d choices", why, s.pos, len(s.sched))}
	}
	return nil
}

func (s *replayStrategy) String() string {
	if s.expect {
		return fmt.Sprintf("replay(%d choices, labels checked)", len(s.sched))
	}
	return fmt.Sprintf("replay(%d choices)", len(s.sched))
}
