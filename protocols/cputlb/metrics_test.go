package cputlb

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
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

// TestMetricsPerExecution counts, exactly over every execution (bfs state
// graphs here are acyclic), what each flavour of the seed does with the
// migration thread beside the broadcast invalidate: the BQL acquisitions
// made to run a TLB flush item (the remote flush job: once in synced,
// never in synced-no-bql), every BQL acquisition (the migration thread's
// sync and its two re-locks after run_on_cpu, the two do_nothing items,
// and that flush job), the kicks (the remote job, the source's own safe
// work, the two run_on_cpu, and start_exclusive's when it finds the
// target running) and the tlb.c.lock critical sections.
func TestMetricsPerExecution(t *testing.T) {
	want := map[string][4][2]int64{
		"synced-fixed":        {{6, 6}, {1, 1}, {4, 5}, {0, 0}},
		"synced-no-bql-fixed": {{5, 5}, {0, 0}, {4, 5}, {0, 0}},
	}
	for _, v := range []string{"synced-fixed", "synced-no-bql-fixed"} {
		r, _ := explore(t, v, model.Params{"commit": 0}, explorer.Options{Metrics: true, Workers: 2})
		for i, name := range metricNames {
			mm := metric(t, r, name)
			w := want[v][i]
			if name != "tlb-lock-acquisitions" && (mm.Min != w[0] || mm.Max != w[1]) {
				t.Errorf("%s: %s min/max %d/%d, want %d/%d", v, name, mm.Min, mm.Max, w[0], w[1])
			}
			t.Logf("%s: %s min %d max %d mean %.3f", v, name, mm.Min, mm.Max, mm.Mean)
		}
	}
}
