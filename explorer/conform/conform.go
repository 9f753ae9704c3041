// Package conform ties a protocol's real implementation (an rt.Impl) to
// its model: it runs the implementation under a controlled strategy, under
// the Go scheduler, or along a model's counterexample, checks the
// operation history against the model's Spec, and replays a run of the
// real code on the model, step by step, so that a disagreement between
// model and code is reported with the step where it happens (the real
// code yields at the model's steps, with their labels: package model).
package conform

import (
	"errors"
	"fmt"
	"time"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// A Target is one variant of a protocol with its model and implementation.
type Target struct {
	Protocol *model.Protocol
	Impl     *rt.Impl
	Variant  string
	Params   model.Params // resolved (defaults included)
	Machine  model.Machine
	// Watchdog bounds a run under the Go scheduler (Real): one that has
	// not ended after it is reported as a deadlock (rt.Env.WaitTimeout).
	// NewTarget sets DefaultWatchdog; 0 is no bound (a busy-wait that
	// never ends then hangs Real; a deadlock in rt's primitives is
	// reported either way).
	Watchdog time.Duration
}

// NewTarget resolves params and builds the model; the variant must be one
// the implementation supports.
func NewTarget(p *model.Protocol, im *rt.Impl, variant string, given model.Params) (*Target, error) {
	if im == nil {
		return nil, fmt.Errorf("protocol %s has no real implementation", p.Name)
	}
	m, params, err := p.Instantiate(variant, given)
	if err != nil {
		return nil, err
	}
	if !im.Supports(variant) {
		return nil, fmt.Errorf("the real implementation of %s does not implement variant %s (it has: %v)", p.Name, variant, im.Variants)
	}
	return &Target{Protocol: p, Impl: im, Variant: variant, Params: params, Machine: m, Watchdog: DefaultWatchdog}, nil
}

// DefaultWatchdog is a Target's bound on one run under the Go scheduler:
// runs of these models end in milliseconds, so a run still going after a
// minute is spinning on something that will not come, and is reported
// instead of hanging its caller.
const DefaultWatchdog = time.Minute

// Controlled runs the implementation once under strategy s, then, if the
// run ended with every goroutine done, runs the implementation's final
// check and checks its history against the model's Spec. The returned run
// carries any violation found.
func (t *Target) Controlled(s rt.Strategy, maxSteps int) (*rt.Run, error) {
	im := t.Impl
	if im.Gate != nil {
		s, im = im.Gate(s)
	}
	return t.controlled(im, s, maxSteps)
}

func (t *Target) controlled(im *rt.Impl, s rt.Strategy, maxSteps int) (*rt.Run, error) {
	body, err := im.New(t.Variant, t.Params)
	if err != nil {
		return nil, err
	}
	var env *rt.Env
	var check func() *model.Violation
	run := rt.Controlled(s, maxSteps, func(e *rt.Env) {
		env = e
		check = body(e)
	})
	if run.Violation == nil && run.Err == nil && !run.BoundHit && env != nil {
		if check != nil {
			run.Violation = check()
		}
		if run.Violation == nil {
			run.Violation = env.CheckHistory(t.Machine.Properties().Spec)
		}
	}
	return run, nil
}

// Real runs the implementation once under the Go scheduler with seed for
// its environment choices, and returns the first violation (a failed
// run-time check, a panic, a deadlock, the final check, or a
// non-linearizable history) and the number of operations recorded.
func (t *Target) Real(seed int64) (*model.Violation, int, error) {
	body, err := t.Impl.New(t.Variant, t.Params)
	if err != nil {
		return nil, 0, err
	}
	e := rt.Real(seed)
	check := body(e)
	if err := e.WaitTimeout(t.Watchdog); err != nil {
		var v *model.Violation
		if errors.As(err, &v) {
			return v, 0, nil
		}
		return nil, 0, err
	}
	ops, err := e.Operations()
	if err != nil {
		return &model.Violation{Property: model.Linearizability, Message: "malformed history: " + err.Error()}, 0, nil
	}
	if check != nil {
		if v := check(); v != nil {
			return v, len(ops), nil
		}
	}
	return model.CheckHistory(t.Machine.Properties().Spec, ops), len(ops), nil
}

// ReplayModel drives the implementation through a model schedule, checking
// every label: the way a model counterexample is confirmed on real code.
// A *rt.ReplayError in the run's Err names the first step where code and
// model disagree.
func (t *Target) ReplayModel(schedule []model.Choice, labels []string) (*rt.Run, error) {
	// A replay takes only choices the model made, so it needs no gate.
	return t.controlled(t.Impl, rt.ReplayExpect(schedule, labels), len(schedule)+1)
}

// A Mismatch is a step where a run of the real code and the model
// disagree.
type Mismatch struct {
	Step     int // 1-based
	Expected string
	Actual   string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("step %d: the model %s, the real code %s", m.Step, m.Expected, m.Actual)
}

// CheckRun replays a run of the real code on the model: every step must be
// enabled in the model with the same thread and label, and the run's
// violation (if any) must be the model's, at the same step. It returns a
// *Mismatch, or nil when model and code agree.
func (t *Target) CheckRun(run *rt.Run) error {
	if run.Err != nil {
		return fmt.Errorf("the run failed: %w", run.Err)
	}
	if err := t.CheckThreads(run); err != nil {
		return err
	}
	ex, err := explorer.Execute(t.Machine, run.Schedule)
	var div *explorer.DivergenceError
	if errors.As(err, &div) {
		return &Mismatch{Step: div.Step + 1, Expected: fmt.Sprintf("does not enable choice %s", div.Choice), Actual: fmt.Sprintf("took it: %s %q", run.Steps[div.Step].Thread, run.Steps[div.Step].Label)}
	}
	if err != nil {
		return err
	}
	for i, s := range ex.Steps {
		if i >= len(run.Steps) {
			break
		}
		if s.Label != run.Steps[i].Label {
			return &Mismatch{Step: i + 1, Expected: fmt.Sprintf("labels it %q", s.Label), Actual: fmt.Sprintf("labels it %q", run.Steps[i].Label)}
		}
	}
	if ex.Violation != nil && ex.ViolationStep < len(run.Schedule) {
		return &Mismatch{Step: ex.ViolationStep, Expected: "violates " + ex.Violation.Property + " here", Actual: "goes on"}
	}
	if run.Violation == nil && !run.BoundHit && !run.Ended && ex.Violation == nil && !ex.Terminal {
		return &Mismatch{Step: len(run.Schedule) + 1, Expected: "can still step", Actual: "has every goroutine exited"}
	}
	switch mv, rv := ex.Violation, run.Violation; {
	case mv == nil && rv != nil && !run.BoundHit:
		return &Mismatch{Step: len(run.Schedule), Expected: "finds no violation", Actual: "violates " + rv.Property + ": " + rv.Message}
	case mv != nil && rv == nil && !run.BoundHit:
		return &Mismatch{Step: ex.ViolationStep, Expected: "violates " + mv.Property + ": " + mv.Message, Actual: "finds no violation"}
	case mv != nil && rv != nil && mv.Property != rv.Property:
		return &Mismatch{Step: ex.ViolationStep, Expected: "violates " + mv.Property, Actual: "violates " + rv.Property}
	}
	return nil
}

// CheckThreads checks that the run's goroutines are the model's threads,
// by name and in order, as far as the run started them: a schedule names
// threads by index, so a goroutine started out of order would make every
// choice mean another thread. It returns a *Mismatch at step 0.
func (t *Target) CheckThreads(run *rt.Run) error {
	names := t.Machine.Threads()
	for i, n := range run.Threads {
		if i >= len(names) || names[i] != n {
			return &Mismatch{Step: 0, Expected: fmt.Sprintf("has threads %q", names), Actual: fmt.Sprintf("started %q", run.Threads)}
		}
	}
	return nil
}

// A Lasso is a run of the real code that can go on for ever with a
// progress obligation pending: replayed on the model, which agrees with
// the code at every step, the run comes back to a state it was in, the
// obligation pending in every state between, and every thread that could
// step all along that cycle steps in it (weak fairness, as the model's own
// progress check assumes). Repeating the cycle is then a fair execution
// of the model in which the obligation is never discharged, and the code
// took every step of it once.
type Lasso struct {
	Violation *model.Violation
	// Schedule is the run's schedule up to the end of the cycle; its last
	// Cycle steps are the cycle.
	Schedule []model.Choice
	Cycle    int
}

// FindLasso looks for a Lasso in a run that did not end by itself (cut at
// its step bound): the first point of the run that closes one, for the
// first progress property of the model, in its declared order, that has
// one. It returns nil when there is none: a run cut without such a cycle
// shows nothing (a strategy like PCT may just have starved a goroutine).
// The run must agree with the model (CheckRun); a disagreement is the
// error.
func (t *Target) FindLasso(run *rt.Run) (*Lasso, error) {
	props := t.Machine.Properties().Progress
	if len(props) == 0 || run.Violation != nil || run.Err != nil {
		return nil, nil
	}
	threads := len(t.Machine.Threads())
	if threads > 64 || len(props) > 64 {
		return nil, fmt.Errorf("FindLasso handles at most 64 threads and 64 progress properties, the model has %d and %d", threads, len(props))
	}
	// The run is walked on the model without labels (a cut run is long,
	// and most have no lasso), and each state is checked as it is reached,
	// so that the first lasso ends the walk; CheckRun, which compares
	// labels too, runs when the walk fails or finds a lasso.
	st := explorer.NewStepper(t.Machine)
	sched := run.Schedule
	states := make([]model.State, 0, len(sched)+1)
	// enabled[i]-1 is the set of threads that can step in state i, as a
	// bit mask, computed when a candidate cycle first needs it.
	var enabled []uint64
	enabledAt := func(i int) uint64 {
		if enabled[i] == 0 {
			var set uint64
			for _, c := range explorer.Enabled(t.Machine, states[i]) {
				set |= 1 << uint(c.Thread)
			}
			enabled[i] = set + 1
		}
		return enabled[i] - 1
	}
	// seen[k] maps the key of each state of the current stretch of states
	// where props[k] is pending to its last index: a cycle is pending
	// throughout only if it lies inside one stretch.
	seen := make([]map[string]int, len(props))
	for k := range seen {
		seen[k] = map[string]int{}
	}
	s := t.Machine.Init()
	for j := 0; ; j++ {
		states, enabled = append(states, s), append(enabled, 0)
		key := string(s.AppendKey(nil))
		for k, p := range props {
			if !p.Pending(s) {
				clear(seen[k])
				continue
			}
			if i, ok := seen[k][key]; ok {
				always, taken := ^uint64(0), uint64(0)
				for x := i; x < j; x++ {
					always &= enabledAt(x)
					taken |= 1 << uint(sched[x].Thread)
				}
				// The thread test is necessary; CheckLasso also checks
				// the alternatives drawn with ChooseFrom, and is the
				// judge.
				if always&^taken == 0 {
					if _, err := explorer.CheckLasso(t.Machine, sched[:j], j-i, p.Name, explorer.FairnessWeak); err == nil {
						// The lasso is the run up to here: code and model
						// must agree on that much, labels included.
						prefix := *run
						prefix.Schedule, prefix.Steps = sched[:j], run.Steps[:j]
						if err := t.CheckRun(&prefix); err != nil {
							return nil, err
						}
						v := &model.Violation{Property: p.Name, Message: fmt.Sprintf("never discharged: %s forever with it pending throughout (the run, replayed on the model, is back after step %d in the state it was in after step %d; a fair cycle: every thread that could step throughout it steps in it)", explorer.Repeating(i+1, j), j, i)}
						return &Lasso{Violation: v, Schedule: append([]model.Choice(nil), sched[:j]...), Cycle: j - i}, nil
					}
				}
			}
			seen[k][key] = j
		}
		if j == len(sched) {
			return nil, nil
		}
		next, v, ok := st.Step(s, sched[j])
		if !ok || v != nil {
			// CheckRun names the disagreement; the walk and CheckRun
			// judge steps alike, so it finds one.
			if err := t.CheckRun(run); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("step %d: the model's unlabelled step disagrees with the code where its labelled replay does not", j+1)
		}
		s = next
	}
}

// ModelViolations returns the properties that the model violates on
// seeded walks (random-threads, seeds 0 to walks-1, one walk each): which
// of them a run of the real code under the Go scheduler breaks first is
// up to the Go scheduler, so a test of such runs accepts any of these,
// each shown reachable on the model.
func (t *Target) ModelViolations(walks int) (map[string]bool, error) {
	found := map[string]bool{}
	for seed := int64(0); seed < int64(walks); seed++ {
		r, err := explorer.Explore(t.Machine, explorer.Options{Strategy: explorer.RandomThreads, Seed: seed, Runs: 1})
		if err != nil {
			return nil, err
		}
		if r.Violation != nil {
			found[r.Violation.Property] = true
		}
	}
	return found, nil
}
