package cputlb

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
)

func metric(t *testing.T, r *explorer.Result, name string) explorer.Metric {
	t.Helper()
	for _, m := range r.Metrics {
		if m.Name == name {
			if m.Executions == 0 {
				t.Fatalf("%s: no complete execution measured (cyclic state graph?)", name)
			}
			return m
		}
	}
	t.Fatalf("no metric %s", name)
	return explorer.Metric{}
}

// TestBQLAcquisitions is seed 000's point as a count: with
// async_run_on_cpu every remote flush job makes its target take the BQL;
// with async_run_on_cpu_no_bql no flush takes it. Exact over every
// execution (bfs state graphs are acyclic).
func TestBQLAcquisitions(t *testing.T) {
	synced, _ := explore(t, "synced", nil, explorer.Options{Metrics: true})
	noBQL, _ := explore(t, "synced-no-bql", nil, explorer.Options{Metrics: true})
	b, n := metric(t, synced, "bql-acquisitions"), metric(t, noBQL, "bql-acquisitions")
	if b.Min != 1 || b.Max != 1 || b.Mean != 1 {
		t.Errorf("synced: bql-acquisitions min/max/mean %d/%d/%g, want 1/1/1 (one remote job)", b.Min, b.Max, b.Mean)
	}
	if n.Min != 0 || n.Max != 0 || n.Transitions != 0 {
		t.Errorf("synced-no-bql: bql-acquisitions min/max %d/%d over %d transitions, want none", n.Min, n.Max, n.Transitions)
	}
	if !(n.Mean < b.Mean) {
		t.Errorf("synced-no-bql takes %g BQL acquisitions per flush, synced %g: want fewer", n.Mean, b.Mean)
	}
	// Kicks do not change: one per remote job, one for the source's own
	// safe work, and one from start_exclusive when the target is running.
	for _, r := range []*explorer.Result{synced, noBQL} {
		k := metric(t, r, "kicks")
		if k.Min != 2 || k.Max != 3 {
			t.Errorf("kicks min/max %d/%d, want 2/3", k.Min, k.Max)
		}
	}
}
