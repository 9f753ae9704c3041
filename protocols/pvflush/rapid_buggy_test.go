package pvflush_test

import (
	"testing"

	"github.com/protocheck/protocheck/explorer/schedtest"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/protocols/pvflush"
	"github.com/protocheck/protocheck/traces"
)

// Each buggy variant is found by rapid, and its shrunk schedule is written
// as a trace that replays strictly and reproduces the property. (Durable
// regressions are the bfs traces in testdata/, not rapid's fail files.)
func TestRapidFindsEveryBuggyVariant(t *testing.T) {
	// rapid divides its checks by 5 under -short; ask for 5 times as
	// many there, so that both modes run the same checks and find the
	// same schedules.
	checks := 2000
	if testing.Short() {
		checks *= 5
	}
	if err := schedtest.Deterministic(t, 1, checks); err != nil {
		t.Fatal(err)
	}
	p := pvflush.Protocol
	for _, v := range p.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			m, params, err := p.Instantiate(v.Name, model.Params{"vcpus": 2, "preemptions": 2})
			if err != nil {
				t.Fatal(err)
			}
			sched, viol, err := schedtest.Find(m, v.Expect, 200)
			if err != nil {
				t.Fatalf("rapid found another property first: %v", err)
			}
			if viol == nil {
				t.Fatalf("rapid did not find %s", v.Expect)
			}
			tr, err := traces.Record(p, v.Name, params, sched)
			if err != nil {
				t.Fatal(err)
			}
			b, err := traces.Encode(tr)
			if err != nil {
				t.Fatal(err)
			}
			back, err := traces.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			r, err := traces.Replay(p, back)
			if err != nil {
				t.Fatalf("the shrunk schedule does not replay: %v", err)
			}
			if r.Execution.Violation == nil || r.Execution.Violation.Property != v.Expect {
				t.Fatalf("replay gives %v", r.Execution.Violation)
			}
			t.Logf("%s: rapid's shrunk schedule has %d steps", v.Name, len(sched))
		})
	}
}
