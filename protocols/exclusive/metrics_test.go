package exclusive

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// The metrics over every execution bfs explores at the claims'
// configuration (three vCPUs whose guests halt after one TB, one
// exclusive section, no run_on_cpu: the state graph is acyclic, so min,
// max and mean are exact). Seed 001 takes qemu_cpu_list_lock twice per
// section whatever the schedule, where upstream's vCPUs also take it in
// cpu_exec_start/end's slow paths; it pays with more condition-variable
// wake-ups, since every CPU it waits for or releases is woken on its own
// cpu->cond. A wake-up is a thread taken out of a wait set by a signal or
// a broadcast; every woken thread re-acquires its mutex, hence the same
// counts for lock-handoffs.
func TestMetricsCompare(t *testing.T) {
	want := map[string][]string{
		"upstream": {
			"wakeups min=0 max=3 mean=2.226",
			"lock-handoffs min=0 max=3 mean=2.226",
			"list-lock-acquisitions min=2 max=11 mean=8.100",
		},
		"cpu-lock-broadcast": {
			"wakeups min=0 max=4 mean=2.421",
			"lock-handoffs min=0 max=4 mean=2.421",
			"list-lock-acquisitions min=2 max=2 mean=2.000",
		},
	}
	for _, name := range correct {
		_, r := explore(t, name, model.Params{"tbs": 1, "run-on-cpu": 0}, explorer.Options{Metrics: true})
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

// With guests that never halt (the default), executions never end and
// the state graph has cycles: the metrics are totalled over transitions
// but not summarised per execution, which is why the claims and the
// metric configurations bound the guests (tbs >= 1).
func TestMetricsNeedBoundedGuests(t *testing.T) {
	_, r := explore(t, "upstream", nil, explorer.Options{Metrics: true})
	for _, m := range r.Metrics {
		if m.Executions != 0 {
			t.Errorf("%s summarised over %v executions of a cyclic graph", m.Name, m.Executions)
		}
	}
}
