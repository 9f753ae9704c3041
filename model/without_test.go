package model_test

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// twoBugs has two threads that each set a flag; thread A's step asserts
// "a-first" (B must not have set its flag yet) and an invariant
// "not-both" fails once both flags are set. Without "a-first", the
// search must go on to "not-both".
type twoBugsState struct {
	A, B bool
}

func twoBugs() model.Machine {
	return model.MustNew(model.Def[twoBugsState]{
		Threads:    []string{"A", "B"},
		Assertions: []string{"a-first"},
		Init:       func(*twoBugsState) {},
		Step: func(s *twoBugsState, t int, x *model.Exec) {
			switch {
			case t == 0 && !s.A:
				x.Assert(!s.B, "a-first", "B set its flag first")
				s.A = true
				x.Touch("a", true)
				x.Label("a = true")
			case t == 1 && !s.B:
				s.B = true
				x.Touch("b", true)
				x.Label("b = true")
			default:
				x.Done()
			}
		},
		Invariants: []model.InvariantOf[twoBugsState]{{Name: "not-both", Check: func(s *twoBugsState) string {
			if s.A && s.B {
				return "both flags set"
			}
			return ""
		}}},
		Canonical: func(s *twoBugsState, b []byte) []byte { return append(b, 0) }, // any key: only the interface matters here
	})
}

func TestWithoutLeavesPropertiesOut(t *testing.T) {
	m := twoBugs()
	explore := func(m model.Machine) *explorer.Result {
		t.Helper()
		r, err := explorer.Explore(m, explorer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := explore(m); r.Violation == nil || r.Violation.Property != "not-both" {
		t.Fatalf("the machine itself: %s, want not-both first (2 steps)", r)
	}
	// Without the invariant, the assertion is what is left to find.
	w, err := model.Without(m, "not-both")
	if err != nil {
		t.Fatal(err)
	}
	if r := explore(w); r.Violation == nil || r.Violation.Property != "a-first" {
		t.Errorf("without not-both: %s, want a-first", r)
	}
	if got := strings.Join(w.Properties().Names(), " "); got != "a-first deadlock" {
		t.Errorf("without not-both, Names() = %q", got)
	}
	// Without both, nothing fails, and the assertion's step goes on.
	w2, err := model.Without(m, "not-both", "a-first")
	if err != nil {
		t.Fatal(err)
	}
	if r := explore(w2); r.Verdict != explorer.OK || r.Stats.States != 4 {
		t.Errorf("without both: %s, want ok with the 4 states of the machine", r)
	}
	if _, ok := w2.(model.Symmetric); !ok {
		t.Error("the machine without properties is no longer Symmetric")
	}
	for _, bad := range []struct{ name, want string }{
		{"nosuch", `no property "nosuch" to leave out (properties: not-both, a-first, deadlock)`},
		{model.Deadlock, "deadlock cannot be left out"},
	} {
		if _, err := model.Without(m, bad.name); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Without(%q): %v, want %q", bad.name, err, bad.want)
		}
	}
}

// A protocol without a property builds machines without it and says which
// it leaves out, sorted and once each, for the traces it records.
func TestProtocolWithout(t *testing.T) {
	p := model.Single("two", twoBugs())
	q := p.Without("not-both").Without("a-first", "not-both")
	if got := strings.Join(q.LeftOut, " "); got != "a-first not-both" || len(p.LeftOut) != 0 {
		t.Errorf("LeftOut = %q (and %q for the original)", q.LeftOut, p.LeftOut)
	}
	m, _, err := q.Instantiate("model", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Properties().Invariants) != 0 || len(m.Properties().Assertions) != 0 {
		t.Errorf("properties left: %+v", m.Properties())
	}
	if _, _, err := p.Without("nosuch").Instantiate("model", nil); err == nil {
		t.Error("an unknown property to leave out was accepted")
	}
}
