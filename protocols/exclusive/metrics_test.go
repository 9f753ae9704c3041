package exclusive

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/protocheck/protocheck/explorer"
)

// The metrics over every execution bfs explores at the default size (the
// state graph is acyclic, so min, max and mean are exact). Seed 001 takes
// qemu_cpu_list_lock twice per section whatever the schedule, where
// upstream's vCPUs also take it in cpu_exec_start/end's slow paths; it
// pays with more condition-variable wake-ups, since every CPU it waits for
// or releases is woken on its own cpu->cond.
func TestMetricsCompare(t *testing.T) {
	want := map[string][]string{
		"upstream": {
			"wakeups min=1 max=5 mean=3.343",
			"lock-handoffs min=1 max=5 mean=3.343",
			"list-lock-acquisitions min=2 max=7 mean=5.517",
		},
		"cpu-lock-broadcast": {
			"wakeups min=1 max=7 mean=4.598",
			"lock-handoffs min=1 max=7 mean=4.598",
			"list-lock-acquisitions min=2 max=2 mean=2.000",
		},
	}
	for _, name := range correct {
		_, r := explore(t, name, nil, explorer.Options{Metrics: true})
		var got []string
		for _, m := range r.Metrics {
			if m.Executions == 0 {
				t.Fatalf("%s: metric %s has no complete execution (cyclic state graph?)", name, m.Name)
			}
			got = append(got, fmt.Sprintf("%s min=%d max=%d mean=%.3f", m.Name, m.Min, m.Max, m.Mean))
		}
		if !reflect.DeepEqual(got, want[name]) {
			t.Errorf("%s: metrics\n got %q\nwant %q", name, got, want[name])
		}
	}
}
