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
	for _, v := range []string{"synced-fixed", "synced-no-bql-fixed"} {
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

// TestBuggyVariantsRandom: seeded random walks or PCT find every buggy
// variant at its default size, each with a property the variant is known
// to break. For no-kick the walks meet first the other face of the missing
// kick (V-A6): a target that halted before the invalidate is never woken
// from halt_cond, its flush item stays queued, and the run ends in a
// deadlock; bfs finds the shorter stale translation (TestBFSVerdicts).
func TestBuggyVariantsRandom(t *testing.T) {
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		var found []string
		for _, opts := range []explorer.Options{
			{Strategy: explorer.Random, Seed: 7, Runs: 2000},
			{Strategy: explorer.PCT, Seed: 7, Runs: 2000, Depth: 3},
		} {
			r, _ := explore(t, v.Name, nil, opts)
			if r.Verdict != explorer.Violation {
				continue
			}
			if !v.Accepts(r.Violation.Property) {
				t.Errorf("%s: %s finds %s, which the variant is not known to break", v.Name, opts.Strategy, r.Violation)
			}
			found = append(found, opts.Strategy+": "+r.Violation.Property)
		}
		if len(found) == 0 {
			t.Errorf("%s: neither random walks nor PCT find a violation", v.Name)
		}
		t.Logf("%s: %v", v.Name, found)
	}
}

// TestNoKickHaltedTarget: without the kick, a target that halted before
// the invalidate sleeps on halt_cond with its flush item queued; the
// explorer reports it as a deadlock naming what the vCPU waits for.
func TestNoKickHaltedTarget(t *testing.T) {
	// The migration thread and the main loop, which queue work on the
	// target with a kick, are left out: their kicks would wake it.
	noEnv := model.Params{"migration": 0, "commit": 0}
	m, _, err := Protocol.Instantiate("no-kick", noEnv)
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
	ok, _, _ := Protocol.Instantiate("synced-no-bql", noEnv)
	if w := explorer.RunWalk(ok, prefer1, 1000); w.Violation != nil || !w.Terminal {
		t.Errorf("synced-no-bql: %v, terminal %v", w.Violation, w.Terminal)
	}
}
