// Package modeltest helps test a model.Machine: RoundTrip walks random
// schedules with rapid and checks, at every state, what the explorer
// relies on when it keeps states as encodings (a state decodes to one that
// encodes to the same bytes, shows the same variables, and steps the same
// way); Successors enumerates a state's enabled choices by running the
// steps directly on copies, without the explorer, for tests that want a
// plain oracle to compare the explorer with.
package modeltest

import (
	"bytes"
	"math/bits"
	"testing"

	"github.com/protocheck/protocheck/model"
	"pgregory.net/rapid"
)

// A Successor is one enabled choice of a state and what its step did.
type Successor struct {
	Choice model.Choice
	// State is the successor: a state of its own.
	State model.State
	// Label is the step's label (steps are run with labels and events on).
	Label string
	// Violation is the step's failed assertion, or nil.
	Violation *model.Violation
	// Breach is the step's breach of the step contract (a second draw, a
	// write before Block, ...), or "".
	Breach string
}

// Successors runs every thread's step of m on copies of s, once per
// alternative its draw offers, and returns the steps that happened (or
// breached the step contract), in the explorer's order (by thread, then
// alternative), and the status of every thread: done[t] when thread t's
// step said Done, blocked[t] when it said Block. s is not changed.
func Successors(m model.Machine, s model.State) (succs []Successor, done, blocked []bool) {
	n := len(m.Threads())
	done, blocked = make([]bool, n), make([]bool, n)
	x := newExec(m)
	for t := 0; t < n; t++ {
		alt := -1
		for {
			next := model.Clone(m, s)
			x.Reset(t, alt)
			m.Step(next, t, x)
			out := x.Outcome()
			if out != model.Stepped && x.Contract() == "" {
				done[t], blocked[t] = out == model.Finished, out == model.Blocked
				break
			}
			set, took, _ := x.Offered()
			succs = append(succs, Successor{
				Choice:    model.Choice{Thread: t, Alt: took},
				State:     next,
				Label:     x.StepLabel(),
				Violation: x.Violation(),
				Breach:    x.Contract(),
			})
			rest := set &^ (uint64(1)<<uint(took+1) - 1)
			if out != model.Stepped || took >= 63 || rest == 0 {
				break
			}
			alt = bits.TrailingZeros64(rest)
		}
	}
	return succs, done, blocked
}

func newExec(m model.Machine) *model.Exec {
	x := model.NewExec(len(m.Properties().Metrics))
	x.SetThreadNames(m.Threads())
	x.SetModes(true, true)
	return x
}

// RoundTrip lets rapid walk random schedules of m, at most maxSteps steps
// each, and checks every state on the way with CheckState, and every step
// taken: run on the state itself and on a copy decoded from its encoding,
// it must give the same successor and label. A state whose encoding
// misses a field that a step reads fails here, although it may round-trip.
func RoundTrip(t *testing.T, m model.Machine, maxSteps int) {
	t.Helper()
	rapid.Check(t, func(rt *rapid.T) { RoundTripWalk(rt, m, maxSteps) })
}

// RoundTripWalk is one walk of RoundTrip, drawn from t, for use inside a
// property of one's own.
func RoundTripWalk(t *rapid.T, m model.Machine, maxSteps int) {
	live := m.Init()
	scratch := m.Init()
	x := newExec(m)
	for i := 0; ; i++ {
		CheckState(t, m, live, scratch)
		if i == maxSteps {
			return
		}
		succs, _, _ := Successors(m, live)
		var ok []Successor
		for _, s := range succs {
			if s.Breach == "" {
				ok = append(ok, s)
			}
		}
		if len(ok) == 0 {
			return
		}
		pick := ok[rapid.IntRange(0, len(ok)-1).Draw(t, "choice")]
		c := pick.Choice
		// The same step on the state itself, which never went through
		// its encoding.
		x.Reset(c.Thread, c.Alt)
		m.Step(live, c.Thread, x)
		if x.Outcome() != model.Stepped {
			t.Fatalf("step %d, %s: the step of thread %s happens on a decoded copy but %s on the state itself", i+1, c, m.Threads()[c.Thread], x.Outcome())
		}
		got, want := live.AppendKey(nil), pick.State.AppendKey(nil)
		if !bytes.Equal(got, want) || x.StepLabel() != pick.Label {
			t.Fatalf("step %d, %s (thread %s): the state itself steps to %q labelled %q, a copy decoded from its encoding to %q labelled %q: the encoding misses something the step reads\nstate:\n%s",
				i+1, c, m.Threads()[c.Thread], got, x.StepLabel(), want, pick.Label, model.Describe(pick.State))
		}
	}
}

// CheckState checks that s, a state of m, round-trips through its
// encoding: AppendKey appends and is deterministic; decoding it into a new
// state from m.Init and into scratch (a state of m that held another
// state, whose memory Decode reuses) gives states with the same encoding
// and the same variables; and every strict prefix of the encoding is
// refused with an error, without a panic.
func CheckState(t interface {
	Helper()
	Fatalf(string, ...any)
}, m model.Machine, s, scratch model.State) {
	t.Helper()
	enc := s.AppendKey(nil)
	if again := s.AppendKey([]byte("prefix")); string(again[:6]) != "prefix" || !bytes.Equal(again[6:], enc) {
		t.Fatalf("AppendKey does not append the same encoding twice: %q, then %q after a prefix", enc, again)
	}
	vars := model.Describe(s)
	for _, d := range []struct {
		what string
		into model.State
	}{{"a new state", m.Init()}, {"a reused state", scratch}} {
		if err := d.into.Decode(enc); err != nil {
			t.Fatalf("decoding into %s: %v\nencoding %q of\n%s", d.what, err, enc, vars)
		}
		if got := d.into.AppendKey(nil); !bytes.Equal(got, enc) {
			t.Fatalf("decoding into %s gives a state encoded %q, not %q\nstate:\n%s", d.what, got, enc, vars)
		}
		if got := model.Describe(d.into); got != vars {
			t.Fatalf("decoding into %s gives the variables\n%s\nnot\n%s", d.what, got, vars)
		}
	}
	probe := m.Init()
	for k := 0; k < len(enc); k++ {
		panicked, err := decodeSafely(probe, enc[:k])
		switch {
		case panicked != nil:
			t.Fatalf("Decode panics on the first %d of the %d bytes of the encoding %q: %v", k, len(enc), enc, panicked)
		case err == nil:
			t.Fatalf("Decode accepts the first %d of the %d bytes of the encoding %q: a truncated encoding must be an error", k, len(enc), enc)
		}
	}
}

// decodeSafely decodes b into s, turning a panic into a value.
func decodeSafely(s model.State, b []byte) (panicked any, err error) {
	defer func() { panicked = recover() }()
	return nil, s.Decode(b)
}
