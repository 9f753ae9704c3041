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
// larger than bfs's default. Each walk also checks the history of
// exclusive sections, stays in cpu_exec and run_on_cpu calls against the
// spec.
func TestRapidCorrectVariants(t *testing.T) {
	for _, name := range correct {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				params := model.Params{
					"vcpus":      rapid.IntRange(2, 4).Draw(rt, "vcpus"),
					"rounds":     rapid.IntRange(1, 3).Draw(rt, "rounds"),
					"safe-work":  rapid.IntRange(1, 3).Draw(rt, "safe-work"),
					"run-on-cpu": rapid.IntRange(0, 2).Draw(rt, "run-on-cpu"),
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

// Seeded random walks find every buggy variant at the default size too,
// with the property qemu.md names; the number of walks needed is part of
// the expectation.
func TestRandomFindsBugs(t *testing.T) {
	want := map[string]int64{ // walks until the first violation, seed 1
		"cpu-lock":              6,
		"if-not-while":          1,
		"bql-held":              1,
		"finish-safe-work":      2,
		"non-recursive":         1,
		"exclusive-from-exec":   1,
		"end-decrements-always": 69,
		"end-signals-resume":    17,
		"no-smp-mb":             65,
	}
	// Where the first walk to fail breaks another property than the one
	// bfs reports first. no-smp-mb's missing barriers break both Dekker
	// pairs: start_exclusive <-> cpu_exec_start lets a vCPU enter guest
	// code during the section (mutual-exclusion, bfs's shortest), and
	// start_exclusive <-> cpu_exec_end lets a counted vCPU leave by the
	// fast path without releasing start_exclusive, which then waits on
	// exclusive_cond for ever (deadlock; tso_test.go).
	property := map[string]string{"no-smp-mb": model.Deadlock}
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			_, r := explore(t, v.Name, nil, explorer.Options{Strategy: explorer.Random, Seed: 1, Runs: 20000})
			expect := v.Expect
			if p, ok := property[v.Name]; ok {
				expect = p
			}
			if r.Verdict != explorer.Violation || r.Violation.Property != expect {
				t.Fatalf("random: got %s, want %s", r, expect)
			}
			if r.Stats.Executions != want[v.Name] {
				t.Errorf("random: found after %d walks, want %d", r.Stats.Executions, want[v.Name])
			}
		})
	}
}

// Random walks of the correct variants are linearizable against the spec
// (explorer's random strategy checks every walk's history).
func TestRandomWalksLinearizable(t *testing.T) {
	for _, name := range correct {
		_, r := explore(t, name, nil, explorer.Options{Strategy: explorer.Random, Seed: 7, Runs: 300})
		if r.Verdict != explorer.Bounded || r.Violation != nil || r.Stats.Executions != 300 {
			t.Fatalf("%s: %s (%d complete walks)", name, r, r.Stats.Executions)
		}
	}
}
