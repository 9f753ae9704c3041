package e500mc

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/schedtest"
	"github.com/protocheck/protocheck/model"
	"pgregory.net/rapid"
)

// TestRapidCorrect drives the correct variants from rapid at a size bfs
// could not exhaust in a test (3 CPUs, 3+2 vCPUs, 3 LPIDs, 8 loads, 8
// guest operations, 2 VM cycles): every schedule rapid draws is clean,
// history included.
func TestRapidCorrect(t *testing.T) {
	big := model.Params{"cpus": 3, "vm1-vcpus": 3, "vm2-vcpus": 2, "lpids": 3, "loads": 8, "ops": 8, "cycles": 2}
	for _, variant := range []string{"per-lpid", "per-cpu"} {
		m := machineFor(t, variant, big)
		t.Run(variant, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				w := schedtest.Walk(rt, m, 200)
				if w.Violation != nil {
					rt.Fatalf("schedule %v: %v", w.Schedule, w.Violation)
				}
				if !w.Terminal {
					rt.Fatalf("schedule %v did not terminate within 200 steps", w.Schedule)
				}
			})
		})
	}
}

// TestRandomFindsBugs shows the buggy variants are found by seeded random
// walks too, not only by bfs, at the same larger size: each search is
// reproducible from its seed.
func TestRandomFindsBugs(t *testing.T) {
	big := model.Params{"cpus": 3, "vm1-vcpus": 3, "vm2-vcpus": 2, "lpids": 3, "loads": 8, "ops": 8, "cycles": 2}
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		r := explore(t, machineFor(t, v.Name, big), explorer.Options{Strategy: explorer.Random, Seed: 1, Runs: 5000})
		if r.Verdict != explorer.Violation || r.Violation.Property != v.Expect {
			t.Errorf("%s: random search got %s, want a %s violation", v.Name, r, v.Expect)
			continue
		}
		t.Logf("%s: found after %d walks: %v", v.Name, r.Stats.Executions, r.Violation)
	}
}
