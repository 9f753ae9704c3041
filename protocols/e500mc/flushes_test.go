package e500mc

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// TestAlternatingScenario is the seed's claim as counts: one CPU
// alternating a vCPU of VM1 and a vCPU of VM2 for N rounds flushes 2N
// times under per-cpu and twice under per-lpid; every flush after the
// first slice costs A one refill.
func TestAlternatingScenario(t *testing.T) {
	for _, n := range []int{1, 2, 3, 10} {
		for _, c := range []struct {
			variant          string
			flushes, refills int64
		}{
			{"per-cpu", int64(2 * n), int64(n - 1)},
			{"per-lpid", 2, 0},
		} {
			m := machineFor(t, c.variant, model.Params{"scenario": 1, "rounds": n})
			r := explore(t, m, explorer.Options{Metrics: true})
			if r.Verdict != explorer.OK || r.Stats.States != int64(5*n+2) {
				t.Fatalf("%s rounds=%d: %s, want ok with %d states (one execution)", c.variant, n, r, 5*n+2)
			}
			got := map[string]explorer.Metric{}
			for _, mt := range r.Metrics {
				got[mt.Name] = mt
			}
			f, rf := got[Flushes], got[Refills]
			if f.Executions != 1 || f.Min != c.flushes || f.Max != c.flushes || rf.Min != c.refills || rf.Max != c.refills {
				t.Errorf("%s rounds=%d: flushes %d..%d refills %d..%d over %v executions, want %d flushes and %d refills in one execution",
					c.variant, n, f.Min, f.Max, rf.Min, rf.Max, f.Executions, c.flushes, c.refills)
			}
		}
	}
}
