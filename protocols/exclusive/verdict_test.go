package exclusive

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// bfs at the default size (guests that never halt: the progress
// properties are checked on a state graph with cycles): exact state
// counts for the correct variants, the property and the shortest
// counterexample's length for the buggy ones, and for a progress
// violation the length of its lasso's cycle.
var bfsWant = map[string]struct {
	property    string // "" for ok
	states      int64  // ok: exact
	transitions int64  // ok: exact
	steps       int    // violation: length of the shortest counterexample
	cycle       int    // progress violation: the lasso's cycle
}{
	"upstream":               {states: 99607, transitions: 308377},
	"cpu-lock":               {property: model.Deadlock, steps: 53},
	"cpu-lock-broadcast":     {states: 65575, transitions: 227071},
	"if-not-while":           {property: PropMutualExclusion, steps: 38},
	"bql-held":               {property: model.Deadlock, steps: 36},
	"finish-safe-work":       {property: model.Deadlock, steps: 36},
	"non-recursive":          {property: model.Deadlock, steps: 55},
	"exclusive-from-exec":    {property: model.Deadlock, steps: 41},
	"end-decrements-always":  {property: PropMutualExclusion, steps: 54},
	"end-signals-resume":     {property: PropExecStartProceeds, steps: 61, cycle: 4},
	"no-smp-mb":              {property: PropMutualExclusion, steps: 34}, // always x86-TSO (tso_test.go)
	"no-kick":                {property: PropStartExclusiveProceeds, steps: 38, cycle: 4},
	"cpu-lock-no-idle":       {property: PropMutualExclusion, steps: 35},
	"safe-work-no-kick":      {property: PropSafeWorkRuns, steps: 43, cycle: 6},
	"cpu-lock-pause-recheck": {states: 967573, transitions: 3226126},
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
			if len(r.Unchecked) > 0 {
				t.Fatalf("unchecked: %v", r.Unchecked)
			}
			if want.property == "" {
				if r.Verdict != explorer.OK || r.Stats.States != want.states || r.Stats.Transitions != want.transitions {
					t.Fatalf("got %s, want ok with %d states, %d transitions", r, want.states, want.transitions)
				}
				return
			}
			if r.Verdict != explorer.Violation || r.Violation.Property != want.property || len(r.Schedule) != want.steps || r.Cycle != want.cycle {
				t.Fatalf("got %s in %d steps (cycle %d), want %s in %d steps (cycle %d)", r, len(r.Schedule), r.Cycle, want.property, want.steps, want.cycle)
			}
		})
	}
}

// Seed 001's branch with vm_stop (pause=1): its pause_all_vcpus waits for
// each CPU with an if on cpu->cond, which end_exclusive also broadcasts,
// and returns before every CPU has stopped; the series' v9
// (cpu-lock-pause-recheck) re-reads cpu->stopped and is ok. Without the
// contract's check the exploration goes on: no guest TB runs between
// vm_stop's return and vm_start in either scheme (every CPU has cpu->stop
// set and has been kicked).
func TestSeedPause(t *testing.T) {
	cases := []struct {
		variant string
		params  model.Params
		without []string
		prop    string // "" for ok
		n       int64  // steps of the shortest violation, or states
	}{
		{"cpu-lock-broadcast", model.Params{"pause": 1, "vcpus": 2, "safe-work": 2}, nil, PropVMStopped, 40},
		{"cpu-lock-broadcast", model.Params{"pause": 1}, nil, PropVMStopped, 68},
		{"cpu-lock-broadcast", model.Params{"pause": 1}, []string{PropVMStopped}, "", 1895290},
		{"cpu-lock-pause-recheck", model.Params{"vcpus": 2, "safe-work": 2}, nil, "", 167799},
		{"upstream", model.Params{"pause": 1, "vcpus": 2, "safe-work": 2}, nil, "", 0},
	}
	for _, c := range cases {
		m, _, err := Protocol.Instantiate(c.variant, c.params)
		if err != nil {
			t.Fatal(err)
		}
		if c.without != nil {
			if m, err = model.Without(m, c.without...); err != nil {
				t.Fatal(err)
			}
		}
		r, err := explorer.Explore(m, explorer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		name := c.variant + " " + c.params.String()
		switch {
		case c.prop == "":
			if !r.OK() {
				t.Errorf("%s: %v, want ok", name, r.Verdict)
			} else if c.n != 0 && r.Stats.States != c.n {
				t.Errorf("%s: %d states, want %d", name, r.Stats.States, c.n)
			}
		case r.Violation == nil || r.Violation.Property != c.prop:
			t.Errorf("%s: %v, want a violation of %s", name, r.Verdict, c.prop)
		case int64(len(r.Schedule)) != c.n:
			t.Errorf("%s: %d steps, want %d", name, len(r.Schedule), c.n)
		}
	}
}
