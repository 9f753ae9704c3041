package rt_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// endless starts a spinner that runs for ever and a waiter that waits for
// ever on a condition nobody signals; the spinner calls End after spins
// iterations (never when spins is 0), and the run owes "owed-prop" while
// the waiter waits.
func endless(e *rt.Env, spins int) {
	m := e.Mutex("m")
	cv := e.Cond("cond", m)
	waiting := e.Word32("waiting")
	e.OnCut(func() *model.Violation {
		if waiting.Load("") == 0 {
			return nil
		}
		return &model.Violation{Property: "owed-prop", Message: "the waiter still waits"}
	})
	e.Go("waiter", func() {
		m.Lock("waiter: lock m")
		waiting.Store("waiter: waiting = 1", 1)
		cv.Wait("waiter: wait cond")
	})
	e.Go("spinner", func() {
		for i := 1; ; i++ {
			e.Yield("spinner: spin")
			if i == spins {
				e.End()
			}
		}
	})
}

// Code that never ends by itself ends a run with End: under control the
// run is over after that step, complete (no bound hit, no violation), and
// the goroutines are unwound; in real mode every goroutine unwinds, the
// spinning one at its next Yield and the waiting one at once, and Wait
// reports nothing.
func TestEndEndsARunThatNeverEnds(t *testing.T) {
	run := rt.Controlled(rt.Random(1), 1000, func(e *rt.Env) { endless(e, 20) })
	if !run.Ended || run.BoundHit || run.Failed() || run.Outcome() != "ok: ended by the code (Env.End)" {
		t.Fatalf("controlled: %s", run.Outcome())
	}
	spins := 0
	for _, s := range run.Steps {
		if s.Label == "spinner: spin" {
			spins++
		}
	}
	if spins != 20 || run.Parked != 2 || run.Leaked != 0 {
		t.Errorf("controlled: %d spins, %d parked, %d leaked; want 20, 2, 0\n%s", spins, run.Parked, run.Leaked, run)
	}
	// A replay runs as long as its schedule says, End or not.
	again := rt.Controlled(rt.Replay(run.Schedule[:5]), 1000, func(e *rt.Env) { endless(e, 3) })
	if again.Ended || len(again.Steps) != 5 {
		t.Errorf("replay of 5 steps with End at the 3rd spin: %s after %d steps", again.Outcome(), len(again.Steps))
	}

	e := rt.Real(1)
	endless(e, 1000)
	if err := e.WaitTimeout(time.Minute); err != nil {
		t.Errorf("real: %v", err)
	}
}

// A run cut before its end is reported by what it owes: at max-steps
// under control (in Run.Bound, which is no verdict), and as a violation
// of the owed property when the watchdog cuts a real run.
func TestACutRunIsJudgedByWhatItOwes(t *testing.T) {
	run := rt.Controlled(rt.Random(1), 200, func(e *rt.Env) { endless(e, 0) })
	if !run.BoundHit || run.Failed() || !strings.Contains(run.Bound, "still owed: owed-prop: the waiter still waits") {
		t.Errorf("controlled: %s", run.Outcome())
	}
	e := rt.Real(1)
	endless(e, 0)
	err := e.WaitTimeout(50 * time.Millisecond)
	var v *model.Violation
	if !errors.As(err, &v) || v.Property != "owed-prop" || v.Message != "after 50ms, the waiter still waits" {
		t.Errorf("real: %v, want owed-prop after 50ms", err)
	}
}
