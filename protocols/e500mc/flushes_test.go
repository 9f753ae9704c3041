package e500mc

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// TestAlternatingScenario is the seed's claim as counts: one CPU
// alternating a vCPU of VM1 and a vCPU of VM2 for N rounds flushes 2N
// times under per-cpu and twice under per-lpid; every flush of A's TLB
// after its first slice costs A one refill (a DTLB miss exit).
func TestAlternatingScenario(t *testing.T) {
	for _, n := range []int{1, 2, 3, 10} {
		for _, c := range []struct {
			variant          string
			flushes, refills int64
			states           int64
		}{
			// A's first slice: load, entry, tlbwe, shadow_map, write_stlbe,
			// entry, hit, put; B's: load, entry, put; A's later slices:
			// load, entry, hit, put, and under per-cpu also the miss, the
			// refill and a second entry.
			{"per-cpu", int64(2 * n), int64(n - 1), int64(10*n + 2)},
			{"per-lpid", 2, 0, int64(7*n + 5)},
		} {
			m := machineFor(t, c.variant, model.Params{"scenario": 1, "rounds": n})
			r := explore(t, m, explorer.Options{Metrics: true})
			if r.Verdict != explorer.OK || r.Stats.States != c.states {
				t.Fatalf("%s rounds=%d: %s, want ok with %d states (one execution)", c.variant, n, r, c.states)
			}
			f, rf := summary(t, r, Flushes), summary(t, r, Refills)
			if f.Executions != 1 || f.Min != c.flushes || f.Max != c.flushes || rf.Min != c.refills || rf.Max != c.refills {
				t.Errorf("%s rounds=%d: flushes %d..%d refills %d..%d over %v executions, want %d flushes and %d refills in one execution",
					c.variant, n, f.Min, f.Max, rf.Min, rf.Max, f.Executions, c.flushes, c.refills)
			}
		}
	}
}

// summary is a metric of r as a claim sees it.
func summary(t *testing.T, r *explorer.Result, name string) model.MetricSummary {
	t.Helper()
	for _, mt := range r.Metrics {
		if mt.Name == name {
			return model.MetricSummary{Executions: mt.Executions, Min: mt.Min, Max: mt.Max, Mean: mt.Mean, TransitionsSum: mt.Transitions}
		}
	}
	t.Fatalf("no metric %s in %s", name, r)
	return model.MetricSummary{}
}
