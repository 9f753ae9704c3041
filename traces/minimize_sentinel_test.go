package traces

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// foreverPhilo is philoProtocol whose rounds=0 means "eat forever", a
// sentinel, not a smaller size: the deadlock is reachable at every value,
// so a minimizer that lowers rounds as far as the deadlock survives goes
// down to 0 unless told that 0 is not smaller.
func foreverPhilo(sentinel bool) *model.Protocol {
	return &model.Protocol{
		Name:     "philo",
		Variants: []model.Variant{{Name: "v", Expect: "deadlock"}},
		Params: []model.Param{{Name: "n", Default: 3, Min: 2, Max: 4},
			{Name: "rounds", Default: 2, Min: 0, Max: 3, Sentinel: sentinel, Description: "rounds each philosopher eats; 0: forever"}},
		New: func(v string, p model.Params) (model.Machine, error) {
			rounds := p["rounds"]
			if rounds == 0 {
				rounds = -1 // never equal to a round count: no one is ever done
			}
			return philoProtocol.New(v, model.Params{"n": p["n"], "rounds": rounds})
		},
	}
}

// The minimizer never lowers a parameter to a sentinel minimum: a dfs
// deadlock of 3 philosophers for 3 rounds is reported at n=2 rounds=1
// when rounds=0 means "forever", and at rounds=0 when the parameter does
// not say so (which shows the test can fail).
func TestMinimizeNeverShrinksToASentinel(t *testing.T) {
	for _, sentinel := range []bool{true, false} {
		p := foreverPhilo(sentinel)
		m, params, err := p.Instantiate("v", model.Params{"rounds": 3})
		if err != nil {
			t.Fatal(err)
		}
		d, err := explorer.Explore(m, explorer.Options{Strategy: explorer.DFS})
		if err != nil || d.Violation == nil {
			t.Fatalf("dfs: %v %v", d, err)
		}
		tr, err := Record(p, "v", params, d.Schedule)
		if err != nil {
			t.Fatal(err)
		}
		small, err := Minimize(p, tr)
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if !sentinel {
			want = 0
		}
		if small.Params["rounds"] != want || small.Params["n"] != 2 || small.Violation.Property != model.Deadlock {
			t.Errorf("sentinel %v: minimized to %v (%s), want n=2 rounds=%d", sentinel, small.Params, small.Violation.Property, want)
		}
	}
}
