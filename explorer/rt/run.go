package rt

import (
	"errors"
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// A Step is one step of a controlled run: the goroutine that took it and
// the label of the primitive it performed.
type Step struct {
	Thread string
	Label  string
}

// A Run is the outcome of one controlled run. Exactly one of these
// describes how it ended: Violation (a property failed: a deadlock, a
// Fail, a panic, a mutex misuse), Err (the run says nothing about the
// code: a misuse of the API, a replay that does not fit, a strategy
// error), BoundHit (cut by maxSteps, neither pass nor failure), Ended
// (the code called Env.End: complete, as if every goroutine had exited),
// or none (every goroutine exited). A replay that both reproduces a violation and
// has choices left over sets Violation and Err.
type Run struct {
	// Strategy describes the strategy that scheduled the run.
	Strategy string
	// Threads names the goroutines by id (creation order).
	Threads []string
	// Schedule is the choice of every step; Steps[i] is what Schedule[i]
	// did. Replay(Schedule) reproduces the run.
	Schedule  []model.Choice
	Steps     []Step
	Violation *model.Violation
	Err       error
	// BoundHit: the run was cut at maxSteps; Bound says why that
	// probably happened.
	BoundHit bool
	Bound    string
	// Ended: the code ended the run with Env.End after the last step; the
	// goroutines still there were unwound (Parked).
	Ended bool
	// Parked counts the goroutines that had not exited when the run
	// stopped and were unwound by the tear-down; Leaked counts those that
	// did not exit even then (always 0 unless the runtime has a bug).
	Parked int
	Leaked int
}

// Failed reports whether the run found a violation or an error.
func (r *Run) Failed() bool { return r.Violation != nil || r.Err != nil }

// Outcome is the one-line canonical description of how the run ended.
func (r *Run) Outcome() string {
	var parts []string
	if r.Violation != nil {
		parts = append(parts, "violation: "+r.Violation.Error())
	}
	if r.Err != nil {
		parts = append(parts, "error: "+r.Err.Error())
	}
	if r.BoundHit {
		parts = append(parts, "bound: "+r.Bound)
	}
	if len(parts) == 0 && r.Ended {
		parts = append(parts, "ok: ended by the code (Env.End)")
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("ok: %d goroutines exited", len(r.Threads)))
	}
	return strings.Join(parts, "; ")
}

// String is the canonical text form of the run: outcome, goroutines,
// schedule and numbered steps, the same bytes for the same run.
func (r *Run) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s after %d steps (%s)\n", r.Outcome(), len(r.Steps), r.Strategy)
	b.WriteString("goroutines:")
	for i, n := range r.Threads {
		fmt.Fprintf(&b, " %d=%s", i, n)
	}
	b.WriteString("\nschedule: ")
	b.WriteString(FormatSchedule(r.Schedule))
	b.WriteByte('\n')
	for i, s := range r.Steps {
		fmt.Fprintf(&b, "%4d. %-6s %s", i+1, r.Schedule[i], s.Thread)
		if s.Label != "" {
			b.WriteString(" " + s.Label)
		}
		b.WriteByte('\n')
	}
	if r.Parked > 0 || r.Leaked > 0 {
		fmt.Fprintf(&b, "unwound %d parked goroutines, %d leaked\n", r.Parked, r.Leaked)
	}
	return b.String()
}

// FormatSchedule renders a schedule as space-separated model.Choice
// strings ("0 1 1.2 0").
func FormatSchedule(s []model.Choice) string {
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = c.String()
	}
	return strings.Join(parts, " ")
}

// ErrExhausted is the Err of a Run asked of a strategy that has no run
// left (DFS has enumerated every schedule within its bound).
var ErrExhausted = errors.New("rt: the strategy has no more runs")

// Controlled runs body under the controlled runtime with the strategy's
// next run: body creates the objects and starts the goroutines with
// e.Go (it must not block or take steps itself), then the goroutines run
// one at a time, scheduled by strategy, until all have exited, no
// goroutine can run (a deadlock), a failure, or maxSteps steps (BoundHit).
// Every goroutine has exited when Controlled returns. Bad arguments are a
// Run with Err set.
func Controlled(strategy Strategy, maxSteps int, body func(e *Env)) *Run {
	r, _ := controlled(strategy, maxSteps, body)
	return r
}

// controlled is Controlled; started is false when the strategy refused to
// begin (exhausted, or a bad parameter) and no run took place.
func controlled(strategy Strategy, maxSteps int, body func(e *Env)) (r *Run, started bool) {
	r = &Run{}
	switch {
	case strategy == nil:
		r.Err = errors.New("rt: Controlled needs a strategy")
		return r, false
	case body == nil:
		r.Err = errors.New("rt: Controlled needs a body")
		return r, false
	case maxSteps < 1:
		r.Err = fmt.Errorf("rt: maxSteps must be at least 1, got %d", maxSteps)
		return r, false
	}
	r.Strategy = strategy.String()
	if err := strategy.Begin(); err != nil {
		r.Err = err
		return r, false
	}
	c := &ctl{strategy: strategy, maxSteps: maxSteps, run: r, cur: -1, prev: -1, home: make(chan struct{}, 1)}
	c.pt.c = c
	e := &Env{c: c}
	c.env = e
	func() {
		defer func() {
			if p := recover(); p != nil {
				c.fail(panicViolation("the body of Controlled", p))
			}
		}()
		body(e)
	}()
	if next := c.decide(); next != nil {
		next.wake <- struct{}{}
		<-c.home
	}
	c.stop()
	r.Threads = make([]string, len(c.threads))
	for i, t := range c.threads {
		r.Threads[i] = t.name
	}
	if err := strategy.End(r); err != nil && (r.Err == nil || earlierStep(err, r.Err)) {
		r.Err = err
	}
	return r, true
}

// earlierStep reports whether a and b are both *ReplayError and a names an
// earlier step than b.
func earlierStep(a, b error) bool {
	var ra, rb *ReplayError
	return errors.As(a, &ra) && errors.As(b, &rb) && ra.Step < rb.Step
}

// A Summary is the outcome of Explore.
type Summary struct {
	Strategy string
	// Runs is the number of runs done, the failing one included.
	Runs int
	// BoundHits counts the runs cut at maxSteps.
	BoundHits int
	// Exhausted: the strategy ran out of runs before the limit (DFS: every
	// schedule within its preemption bound was run).
	Exhausted bool
	// Failure is the first failing run, or nil.
	Failure *Run
}

func (s *Summary) String() string {
	out := fmt.Sprintf("%s: %d runs", s.Strategy, s.Runs)
	if s.Exhausted {
		out += " (exhausted)"
	}
	if s.BoundHits > 0 {
		out += fmt.Sprintf(", %d cut at max-steps", s.BoundHits)
	}
	if s.Failure != nil {
		out += "; " + s.Failure.Outcome()
	}
	return out
}

// Explore does up to runs controlled runs of body with strategy and stops
// at the first failing one, which it then replays strictly (same choices,
// same labels) to prove that it reproduces; a failure that does not is
// uncontrolled nondeterminism in the code under test, returned as an
// error together with the summary. Runs of Random and PCT are seeded from
// the strategy's seed and the run index; DFS stops when exhausted.
// Invalid arguments are an error.
func Explore(strategy Strategy, runs, maxSteps int, body func(e *Env)) (*Summary, error) {
	switch {
	case strategy == nil:
		return nil, errors.New("rt: Explore needs a strategy")
	case body == nil:
		return nil, errors.New("rt: Explore needs a body")
	case runs < 1:
		return nil, fmt.Errorf("rt: runs must be at least 1, got %d", runs)
	case maxSteps < 1:
		return nil, fmt.Errorf("rt: maxSteps must be at least 1, got %d", maxSteps)
	}
	s := &Summary{Strategy: strategy.String()}
	for s.Runs < runs {
		r, started := controlled(strategy, maxSteps, body)
		if !started {
			if errors.Is(r.Err, ErrExhausted) {
				s.Exhausted = true
				break
			}
			return s, r.Err
		}
		s.Runs++
		if r.BoundHit {
			s.BoundHits++
		}
		if r.Failed() {
			s.Failure = r
			return s, reproduce(r, maxSteps, body)
		}
	}
	return s, nil
}

// reproduce replays a failing run and checks that the same thing happens.
func reproduce(r *Run, maxSteps int, body func(e *Env)) error {
	labels := make([]string, len(r.Steps))
	for i, st := range r.Steps {
		labels[i] = st.Label
	}
	again := Controlled(ReplayExpect(r.Schedule, labels), maxSteps, body)
	same := again.Outcome() == r.Outcome() && len(again.Steps) == len(r.Steps)
	if again.Err != nil && r.Err != nil {
		// A strategy's own error (DFS noticing nondeterminism) names the
		// strategy; compare only that both runs failed at the same point.
		same = len(again.Steps) == len(r.Steps)
	}
	if !same {
		return fmt.Errorf("rt: the failing run does not reproduce when its schedule is replayed (uncontrolled nondeterminism in the code under test: a goroutine not started with Env.Go, blocking outside rt, a map iteration, the clock or a global random source?): first run: %s; replay: %s", r.Outcome(), again.Outcome())
	}
	return nil
}
