package exclusive

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// bfs at the default size: exact state counts for the correct variants,
// the property qemu.md names and the shortest counterexample's length for
// the buggy ones.
var bfsWant = map[string]struct {
	property    string // "" for ok
	states      int64  // ok: exact
	transitions int64  // ok: exact
	steps       int    // violation: length of the shortest counterexample
}{
	"upstream":              {states: 119638, transitions: 299441},
	"cpu-lock":              {property: model.Deadlock, steps: 35},
	"cpu-lock-broadcast":    {states: 78899, transitions: 243084},
	"if-not-while":          {property: PropMutualExclusion, steps: 20},
	"bql-held":              {property: model.Deadlock, steps: 16},
	"finish-safe-work":      {property: model.Deadlock, steps: 20},
	"non-recursive":         {property: model.Deadlock, steps: 37},
	"exclusive-from-exec":   {property: model.Deadlock, steps: 55},
	"end-decrements-always": {property: PropMutualExclusion, steps: 33},
	"end-signals-resume":    {property: model.Deadlock, steps: 67},
	"no-smp-mb":             {property: PropMutualExclusion, steps: 17}, // always x86-TSO (tso_test.go)
}

func explore(t *testing.T, variant string, params model.Params, opts explorer.Options) (model.Machine, *explorer.Result) {
	t.Helper()
	m, _, err := Protocol.Instantiate(variant, params)
	if err != nil {
		t.Fatal(err)
	}
	r, err := explorer.Explore(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m, r
}

func TestBFSDefaultSize(t *testing.T) {
	if len(bfsWant) != len(Protocol.Variants) {
		t.Fatalf("bfsWant has %d variants, Protocol %d", len(bfsWant), len(Protocol.Variants))
	}
	for _, v := range Protocol.Variants {
		t.Run(v.Name, func(t *testing.T) {
			want, ok := bfsWant[v.Name]
			if !ok {
				t.Fatalf("no expectation for %s", v.Name)
			}
			expect := want.property
			if expect == "" {
				expect = model.ExpectOK
			}
			if v.Expect != expect {
				t.Fatalf("variant says Expect=%s, test expects %s", v.Expect, expect)
			}
			_, r := explore(t, v.Name, nil, explorer.Options{})
			if want.property == "" {
				if r.Verdict != explorer.OK || r.Stats.States != want.states || r.Stats.Transitions != want.transitions {
					t.Fatalf("got %s, want ok with %d states, %d transitions", r, want.states, want.transitions)
				}
				return
			}
			if r.Verdict != explorer.Violation || r.Violation.Property != want.property || len(r.Schedule) != want.steps {
				t.Fatalf("got %s in %d steps, want %s in %d steps", r, len(r.Schedule), want.property, want.steps)
			}
		})
	}
}
