package cputlb

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/schedtest"
	"github.com/protocheck/protocheck/model"
	"pgregory.net/rapid"
)

// TestCorrectVariantsRapid drives the correct variants, with two targets,
// from rapid: every drawn schedule ends with every vCPU idle and no
// property violated (linearizability included).
func TestCorrectVariantsRapid(t *testing.T) {
	for _, v := range []string{"synced", "synced-no-bql"} {
		m, _, err := Protocol.Instantiate(v, model.Params{"cpus": 3})
		if err != nil {
			t.Fatal(err)
		}
		t.Run(v, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				w := schedtest.Walk(rt, m, 1000)
				if w.Violation != nil {
					rt.Fatalf("%s after %d steps", w.Violation, len(w.Schedule))
				}
				if !w.Terminal {
					rt.Fatalf("not finished after %d steps", len(w.Schedule))
				}
			})
		})
	}
}

// TestBuggyVariantsRandom: a seeded random search finds every buggy
// variant with two targets. For no-kick the random walks hit first the
// other face of the missing kick (V-A6): a target that halted before the
// invalidate is never woken from halt_cond, its flush item stays queued,
// and the run ends in a deadlock; bfs finds the shorter stale translation
// (TestBFSVerdicts).
func TestBuggyVariantsRandom(t *testing.T) {
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		want := v.Expect
		if v.Name == "no-kick" {
			want = model.Deadlock
		}
		r, _ := explore(t, v.Name, model.Params{"cpus": 3}, explorer.Options{Strategy: explorer.Random, Seed: 7, Runs: 5000})
		if r.Verdict != explorer.Violation || r.Violation.Property != want {
			t.Errorf("%s: %s, want %s", v.Name, r, want)
		}
	}
}

// TestNoKickHaltedTarget: without the kick, a target that halted before
// the invalidate sleeps on halt_cond with its flush item queued; the
// explorer reports it as a deadlock naming what the vCPU waits for.
func TestNoKickHaltedTarget(t *testing.T) {
	m, _, err := Protocol.Instantiate("no-kick", nil)
	if err != nil {
		t.Fatal(err)
	}
	// cpu1 runs until it sleeps, then cpu0 runs to the end.
	prefer1 := func(en []model.Choice, _ int) model.Choice {
		for _, c := range en {
			if c.Thread == 1 {
				return c
			}
		}
		return en[0]
	}
	w := explorer.RunWalk(m, prefer1, 1000)
	if w.Violation == nil || w.Violation.Property != model.Deadlock {
		t.Fatalf("violation %v, want deadlock", w.Violation)
	}
	const want = "no thread can step: cpu1 waits for cpu1->halt_cond (halted with 1 queued work item(s) and nobody left to kick it)"
	if w.Violation.Message != want {
		t.Errorf("message %q, want %q", w.Violation.Message, want)
	}
	// The same schedule with the kick reaches the end cleanly.
	ok, _, _ := Protocol.Instantiate("synced-no-bql", nil)
	if w := explorer.RunWalk(ok, prefer1, 1000); w.Violation != nil || !w.Terminal {
		t.Errorf("synced-no-bql: %v, terminal %v", w.Violation, w.Terminal)
	}
}
