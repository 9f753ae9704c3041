package exclusive

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/schedtest"
	"github.com/protocheck/protocheck/model"
	"pgregory.net/rapid"
)

var correct = []string{"upstream", "cpu-lock-broadcast"}

// Correct variants never fail on a schedule drawn by rapid, at sizes
// larger than bfs's default, with guests that halt (so that every walk
// ends) and every mechanism drawn on or off. Each walk also checks the
// history of exclusive sections, stays in cpu_exec and run_on_cpu calls
// against the spec.
func TestRapidCorrectVariants(t *testing.T) {
	for _, name := range correct {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				params := model.Params{
					"vcpus":      rapid.IntRange(2, 4).Draw(rt, "vcpus"),
					"tbs":        rapid.IntRange(1, 3).Draw(rt, "tbs"),
					"safe-work":  rapid.IntRange(1, 3).Draw(rt, "safe-work"),
					"run-on-cpu": rapid.IntRange(0, 2).Draw(rt, "run-on-cpu"),
					"spurious":   rapid.IntRange(0, 1).Draw(rt, "spurious"),
					"hotplug":    rapid.IntRange(0, 1).Draw(rt, "hotplug"),
					"mmio":       rapid.IntRange(0, 1).Draw(rt, "mmio"),
				}
				if name == "cpu-lock-broadcast" && params["hotplug"] == 1 {
					// Seed 001's hot-plug deadlocks with MMIO guests
					// (matrix.go): the walks check the rest.
					params["mmio"] = 0
				}
				m, _, err := Protocol.Instantiate(name, params)
				if err != nil {
					rt.Fatal(err)
				}
				w := schedtest.Walk(rt, m, 2000)
				if w.Violation != nil {
					rt.Fatalf("%s %v: %v", name, params, w.Violation)
				}
				if !w.Terminal {
					rt.Fatalf("%s %v: not finished after 2000 steps", name, params)
				}
			})
		})
	}
}

// Seeded random walks find every buggy variant whose bug is a safety
// violation, with guests that halt after one TB (tbs=1, so that walks
// end); the number of walks needed is part of the expectation. no-kick's
// bug is a progress violation, which walks cannot see, and bounded
// guests hide it anyway (matrix.go). cpu-lock-no-idle's window (the CPU
// inserted between start_exclusive's marking walk and end_exclusive's) is
// too narrow for uniform walks, which meet the hot-plug deadlock it
// shares with cpu-lock-broadcast first, or nothing; PCT, which keeps one
// thread running until a priority change, finds the assertion with RAM
// only guests.
func TestRandomFindsBugs(t *testing.T) {
	tbs1 := model.Params{"tbs": 1}
	cases := map[string]struct {
		strategy string
		params   model.Params
		property string // "": the variant's Expect
		walks    int64  // until the first violation, seed 1
	}{
		"cpu-lock":              {explorer.Random, tbs1, "", 6},
		"if-not-while":          {explorer.Random, tbs1, "", 14},
		"bql-held":              {explorer.Random, tbs1, "", 1},
		"finish-safe-work":      {explorer.Random, tbs1, "", 10},
		"non-recursive":         {explorer.Random, tbs1, "", 1},
		"exclusive-from-exec":   {explorer.Random, tbs1, "", 1},
		"end-decrements-always": {explorer.Random, tbs1, "", 7},
		// The sleeper's lost wake-up is a deadlock once the others halt.
		"end-signals-resume": {explorer.Random, tbs1, model.Deadlock, 152},
		// no-smp-mb's missing barriers break both Dekker pairs:
		// start_exclusive <-> cpu_exec_start lets a vCPU enter guest code
		// during the section (mutual-exclusion, bfs's shortest), and
		// start_exclusive <-> cpu_exec_end lets a counted vCPU leave by the
		// fast path without releasing start_exclusive, which then waits on
		// exclusive_cond for ever (deadlock; tso_test.go).
		"no-smp-mb":        {explorer.Random, tbs1, model.Deadlock, 97},
		"cpu-lock-no-idle": {explorer.PCT, model.Params{"tbs": 1, "mmio": 0}, PropAssertOngoing, 6},
	}
	for _, v := range Protocol.Variants {
		c, ok := cases[v.Name]
		if !ok {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			_, r := explore(t, v.Name, c.params, explorer.Options{Strategy: c.strategy, Seed: 1, Runs: 20000})
			expect := v.Expect
			if c.property != "" {
				expect = c.property
			}
			if r.Verdict != explorer.Violation || r.Violation.Property != expect {
				t.Fatalf("%s: got %s, want %s", c.strategy, r, expect)
			}
			if r.Stats.Executions != c.walks {
				t.Errorf("%s: found after %d walks, want %d", c.strategy, r.Stats.Executions, c.walks)
			}
		})
	}
}

// Random walks of the correct variants are linearizable against the spec
// (explorer's random strategy checks every walk's history).
func TestRandomWalksLinearizable(t *testing.T) {
	for _, name := range correct {
		_, r := explore(t, name, model.Params{"tbs": 1}, explorer.Options{Strategy: explorer.Random, Seed: 7, Runs: 300})
		if r.Verdict != explorer.Bounded || r.Violation != nil || r.Stats.Executions != 300 {
			t.Fatalf("%s: %s (%d complete walks)", name, r, r.Stats.Executions)
		}
	}
}
