// Package schedtest drives a model.Machine from a rapid property test: one
// draw per scheduling decision, where 0 means "keep running the thread that
// stepped last" and k > 0 picks another enabled choice. rapid shrinks draws
// towards 0, so a shrunk failing schedule has the fewest context switches.
// The shrunk schedule is plain data (a []model.Choice) that a test can save
// as a protocheck trace; durable regressions are those trace files, never
// rapid's own fail files, which are tied to the exact sequence of draws.
package schedtest

import (
	"flag"
	"fmt"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"pgregory.net/rapid"
)

// Picker returns an explorer.Picker that draws each decision from t.
func Picker(t *rapid.T) explorer.Picker {
	return func(enabled []model.Choice, prev int) model.Choice {
		// Order the candidates so that index 0 continues the previous
		// thread (its first alternative) when it can.
		first := -1
		for i, c := range enabled {
			if c.Thread == prev {
				first = i
				break
			}
		}
		if first < 0 {
			first = 0
		}
		k := rapid.IntRange(0, len(enabled)-1).Draw(t, "choice")
		if k == 0 {
			return enabled[first]
		}
		if k <= first {
			return enabled[k-1]
		}
		return enabled[k]
	}
}

// Walk runs one execution of m scheduled by t's draws, for at most
// maxSteps steps, and returns it. The caller asserts on its violation.
func Walk(t *rapid.T, m model.Machine, maxSteps int) *explorer.Walk {
	return explorer.RunWalk(m, Picker(t), maxSteps)
}

// Find lets rapid search for a schedule of m that violates a property, and
// returns the shrunk schedule with its violation (nil, nil when rapid finds
// none within its budget, -rapid.checks). The property fails from one call
// site only, so rapid's shrinking cannot slide from one bug to another
// (STYLE.md habit 15): only a violation of want counts, and other
// violations are reported as an error.
func Find(m model.Machine, want string, maxSteps int) ([]model.Choice, *model.Violation, error) {
	var found []model.Choice
	var violation *model.Violation
	var other error
	tb := &recorder{name: "schedtest.Find/" + want}
	rapid.Check(tb, func(t *rapid.T) {
		w := Walk(t, m, maxSteps)
		if w.Violation == nil {
			return
		}
		if w.Violation.Property != want {
			if other == nil {
				other = w.Violation
			}
			return
		}
		// rapid runs the shrunk case last, to show it reproduces.
		found = append([]model.Choice(nil), w.Schedule...)
		violation = w.Violation
		t.Fatalf("%s", w.Violation)
	})
	if !tb.failed {
		return nil, nil, other
	}
	return found, violation, nil
}

// recorder is a rapid.TB that records a failure instead of failing the
// test that called Find.
type recorder struct {
	name   string
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Name() string          { return r.name }
func (r *recorder) Logf(string, ...any)   {}
func (r *recorder) Log(...any)            {}
func (r *recorder) Skipf(string, ...any)  {}
func (r *recorder) Skip(...any)           {}
func (r *recorder) SkipNow()              {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Error(...any)          { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }
func (r *recorder) FailNow()              { r.failed = true }
func (r *recorder) Fail()                 { r.failed = true }
func (r *recorder) Failed() bool          { return r.failed }

// Deterministic fixes rapid's seed and number of checks for the rest of
// test t (restoring them afterwards), so that a test that must find a bug
// finds the same one on every run and machine. rapid otherwise draws a
// seed from the clock.
func Deterministic(t interface{ Cleanup(func()) }, seed uint64, checks int) error {
	for name, value := range map[string]string{"rapid.seed": fmt.Sprint(seed), "rapid.checks": fmt.Sprint(checks), "rapid.nofailfile": "true"} {
		f := flag.Lookup(name)
		if f == nil {
			return fmt.Errorf("schedtest: rapid's flag -%s is not registered", name)
		}
		old := f.Value.String()
		if err := f.Value.Set(value); err != nil {
			return err
		}
		t.Cleanup(func() { f.Value.Set(old) })
	}
	return nil
}
