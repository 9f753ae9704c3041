package exclusive

import (
	"testing"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

// Every state on random walks round-trips through its compact encoding
// (truncations refused), and a step from a decoded copy is the step from
// the state itself: for both protocols, the spurious wake-ups of
// if-not-while, the hot-plugged CPU of finish-safe-work and
// cpu-lock-no-idle, the store buffers of no-smp-mb, halted guests, and a
// size with several items per vCPU and every mechanism on.
func TestStateRoundTrip(t *testing.T) {
	for _, c := range []struct {
		variant string
		params  model.Params
	}{
		{"upstream", nil},
		{"cpu-lock", nil},
		{"cpu-lock-broadcast", model.Params{"vcpus": 4, "tbs": 2, "safe-work": 3, "run-on-cpu": 3, "hotplug": 1, "spurious": 1}},
		{"if-not-while", nil},
		{"cpu-lock-no-idle", nil},
		{"exclusive-from-exec", model.Params{"vcpus": 2, "tbs": 2}},
		{"no-smp-mb", nil},
		{"upstream", model.Params{"vcpus": 4, "memory": 1, "safe-work": 4, "run-on-cpu": 4, "hotplug": 1, "spurious": 1, "tbs": 1}},
	} {
		m, params, err := Protocol.Instantiate(c.variant, c.params)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(c.variant+" "+params.String(), func(t *testing.T) {
			if testing.Short() && c.params != nil {
				t.Skip("a larger size")
			}
			modeltest.RoundTrip(t, m, 100)
		})
	}
}
