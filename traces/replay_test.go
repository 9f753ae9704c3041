package traces

import (
	"errors"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/model"
)

// divergesAt replays tr and checks that it fails with a *DivergenceError
// at step, whose message contains each of want.
func divergesAt(t *testing.T, tr *Trace, step int, want ...string) {
	t.Helper()
	r, err := Replay(counterProtocol, tr)
	var de *DivergenceError
	if !errors.As(err, &de) {
		t.Fatalf("Replay = %v, %v; want a *DivergenceError", r, err)
	}
	if de.Step != step {
		t.Errorf("divergence at step %d, want %d: %v", de.Step, step, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

func TestReplay(t *testing.T) {
	tr := recordPadded(t)
	r, err := Replay(counterProtocol, tr)
	if err != nil {
		t.Fatal(err)
	}
	if r.Trace != tr || r.Execution.Violation == nil || r.Execution.ViolationStep != len(tr.Schedule) || len(r.Machine.Threads()) != 3 {
		t.Errorf("Replay = %+v", r)
	}
	// A trace without a violation replays too, and so does a prefix
	// ending before the race.
	ok, err := Record(counterProtocol, "atomic", model.Params{"threads": 2}, []model.Choice{{Thread: 1}, {Thread: 0}, {Thread: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Replay(counterProtocol, ok); err != nil {
		t.Errorf("replay of a clean trace: %v", err)
	}
}

func TestReplayLabelChanged(t *testing.T) {
	tr := recordPadded(t)
	tr.Steps[6].Label = "counter_inc: load 7"
	divergesAt(t, tr, 7, `step 7 diverges: trace expects thread cpu0 "counter_inc: load 7", model gives thread cpu0 "counter_inc: load 3"`)
}

// A label read from a trace file is quoted clipped, whatever its size.
func TestReplayClipsALongLabel(t *testing.T) {
	tr := recordPadded(t)
	tr.Steps[6].Label = strings.Repeat("x", 10000)
	divergesAt(t, tr, 7, "bytes left out", `model gives thread cpu0 "counter_inc: load 3"`)
	if _, err := Replay(counterProtocol, tr); len(err.Error()) > 400 {
		t.Errorf("the message quotes %d bytes:\n%s", len(err.Error()), err)
	}
}

func TestReplayThreadNameChanged(t *testing.T) {
	tr := recordPadded(t)
	tr.Steps[0].Thread = "vcpu2"
	divergesAt(t, tr, 1, `trace expects thread vcpu2`, `model gives thread cpu2`)
}

func TestReplayStaleSchedule(t *testing.T) {
	tr := recordPadded(t)
	// cpu2 has finished after four steps; a fifth is not enabled.
	tr.Schedule[4] = model.Choice{Thread: 2}
	tr.Steps[4] = Step{Thread: "cpu2", Label: "counter_inc: load 2"}
	divergesAt(t, tr, 5, "step 5 diverges: trace expects choice 2 (thread cpu2) enabled, model gives only 0 (thread cpu0), 1 (thread cpu1) enabled")

	tr = recordPadded(t)
	tr.Schedule[0] = model.Choice{Thread: 9}
	divergesAt(t, tr, 1, "no such thread")

	tr = recordPadded(t)
	tr.Schedule[2] = model.Choice{Thread: 2, Alt: 1}
	divergesAt(t, tr, 3, "choice 2.1 (thread cpu2) enabled")
}

func TestReplayEarlyViolation(t *testing.T) {
	// One more step after the race: the trace claims the race is
	// harmless until its end, the model fails at step 10.
	long := recordPadded(t)
	long.Schedule = append(long.Schedule, model.Choice{Thread: 1})
	long.Steps = append(long.Steps, Step{Thread: "cpu1", Label: "counter_inc: load 4"})
	divergesAt(t, long, 10, "trace expects no violation before the end of its 11 steps", "model gives violation no-lost-update: 5 increments done but count=4")
}

func TestReplayViolationMissingOrDifferent(t *testing.T) {
	tr := recordPadded(t)
	tr.Violation = nil
	divergesAt(t, tr, 10, "trace expects no violation, model gives violation no-lost-update")

	tr = recordPadded(t)
	tr.Violation = &model.Violation{Property: "deadlock", Message: "no thread can step"}
	divergesAt(t, tr, 10, "trace expects violation deadlock: no thread can step, model gives violation no-lost-update")

	// The recorded violation does not happen: the atomic variant has the
	// same steps' threads but never loses an update.
	ok, err := Record(counterProtocol, "atomic", model.Params{"threads": 2, "incs": 1}, []model.Choice{{Thread: 0}, {Thread: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ok.Violation = &model.Violation{Property: "no-lost-update", Message: "1 increments done but count=2"}
	divergesAt(t, ok, 2, "step 2 diverges: trace expects violation no-lost-update", "model gives no violation")

	// The recorded message is part of the trace: one edited (or one the
	// model no longer gives) is a divergence at the violation's step,
	// naming both, never a trace that replays as if unchanged.
	tr = recordPadded(t)
	tr.Violation.Message = "an edited wording"
	divergesAt(t, tr, 10, "trace expects violation no-lost-update: an edited wording, model gives violation no-lost-update: 5 increments done but count=4")
}

func TestReplayErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Trace)
		want string
	}{
		{"other protocol", func(tr *Trace) { tr.Protocol = "pvflush" }, `the trace is of protocol "pvflush", not "counter"`},
		{"unknown variant", func(tr *Trace) { tr.Variant = "lockless" }, `no variant "lockless" (variants: atomic, racy)`},
		{"unknown param", func(tr *Trace) { tr.Params["vcpus"] = 2 }, `no parameter "vcpus"`},
		{"param out of range", func(tr *Trace) { tr.Params["threads"] = 9 }, "threads=9 is out of range"},
		{"steps mismatch", func(tr *Trace) { tr.Steps = tr.Steps[:3] }, "3 steps for 10 choices"},
		{"negative thread", func(tr *Trace) { tr.Schedule[1].Thread = -1 }, "negative thread"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := recordPadded(t)
			c.edit(tr)
			_, err := Replay(counterProtocol, tr)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Replay error %v, want one saying %q", err, c.want)
			}
			var de *DivergenceError
			if errors.As(err, &de) {
				t.Errorf("a bad trace is not a divergence: %v", err)
			}
		})
	}
	if _, err := Replay(nil, recordPadded(t)); err == nil {
		t.Errorf("Replay with no protocol succeeded")
	}
	if _, err := Replay(counterProtocol, nil); err == nil {
		t.Errorf("Replay of no trace succeeded")
	}
}

func TestRecordStale(t *testing.T) {
	_, err := Record(counterProtocol, "racy", model.Params{"threads": 2}, []model.Choice{{Thread: 0}, {Thread: 2}})
	var de *DivergenceError
	if !errors.As(err, &de) || de.Step != 2 {
		t.Errorf("Record of a stale schedule: %v", err)
	}
	if _, err := Record(counterProtocol, "nope", nil, nil); err == nil {
		t.Errorf("Record with an unknown variant succeeded")
	}
}

func TestDivergenceErrorInitialState(t *testing.T) {
	e := &DivergenceError{Step: 0, Expected: "no violation", Actual: "violation x: y"}
	if got, want := e.Error(), "the initial state diverges: trace expects no violation, model gives violation x: y"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// A trace records every parameter; one without all of them is older than
// the model's parameters and is refused rather than replayed with today's
// defaults.
func TestReplayNeedsEveryParameter(t *testing.T) {
	tr, err := Record(counterProtocol, "atomic", model.Params{"threads": 2}, []model.Choice{{Thread: 1}, {Thread: 0}, {Thread: 0}})
	if err != nil {
		t.Fatal(err)
	}
	for name := range tr.Params {
		short := *tr
		short.Params = model.Params{}
		for k, v := range tr.Params {
			if k != name {
				short.Params[k] = v
			}
		}
		if _, err := Replay(counterProtocol, &short); err == nil || !strings.Contains(err.Error(), "does not record parameter "+name) {
			t.Errorf("without %s: %v", name, err)
		}
	}
}

// A user's own machine is traced through model.Single, without writing a
// protocol of its own.
func TestTraceOfABareMachine(t *testing.T) {
	p := model.Single("counter", newCounter(true, 2, 1))
	tr, err := Record(p, "model", nil, []model.Choice{{Thread: 0}, {Thread: 1}, {Thread: 1}, {Thread: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Violation == nil || tr.Violation.Property != "no-lost-update" {
		t.Fatalf("violation %v", tr.Violation)
	}
	if _, err := Replay(p, tr); err != nil {
		t.Fatal(err)
	}
}
