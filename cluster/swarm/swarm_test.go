package swarm

import (
	"context"
	"reflect"
	"testing"

	"github.com/protocheck/protocheck/cluster/beamrun"
	"github.com/protocheck/protocheck/cluster/internal/beamtest"
	"github.com/protocheck/protocheck/cluster/target"
	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

func TestMain(m *testing.M) { beamtest.Main(m) }

var prism = &beamrun.Runner{Name: "prism"}

func resolve(t *testing.T, protocol, variant string, params model.Params) target.Target {
	t.Helper()
	p, err := target.Lookup(protocol)
	if err != nil {
		t.Fatal(err)
	}
	tg, _, err := target.Resolve(p, variant, params)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func local(t *testing.T, tg target.Target, s Sampling, runs int) *explorer.Result {
	t.Helper()
	m, err := tg.Machine()
	if err != nil {
		t.Fatal(err)
	}
	o := s.options()
	o.Runs = runs
	r, err := explorer.Explore(m, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func same(t *testing.T, got, want *explorer.Result) {
	t.Helper()
	if got.Verdict != want.Verdict || !reflect.DeepEqual(got.Violation, want.Violation) || got.Bound != want.Bound {
		t.Errorf("verdict %s %v (%s), local %s %v (%s)", got.Verdict, got.Violation, got.Bound, want.Verdict, want.Violation, want.Bound)
	}
	g, w := got.Stats, want.Stats
	if g.States != w.States || g.Transitions != w.Transitions || g.Depth != w.Depth || g.Executions != w.Executions {
		t.Errorf("%d states, %d transitions, depth %d, %d executions; local %d, %d, %d, %d",
			g.States, g.Transitions, g.Depth, g.Executions, w.States, w.Transitions, w.Depth, w.Executions)
	}
	if !reflect.DeepEqual(got.Schedule, want.Schedule) {
		t.Errorf("schedule %v, local %v", got.Schedule, want.Schedule)
	}
	if !reflect.DeepEqual(got.Metrics, want.Metrics) {
		t.Errorf("metrics %v, local %v", got.Metrics, want.Metrics)
	}
}

// The swarm finds the local explorer's first violating walk, with the same
// counts up to it, for every sampling strategy and any sharding.
func TestFirstViolatingWalk(t *testing.T) {
	// With two vCPUs and walks of at most 200 steps, each strategy finds
	// the lost wake-up within a few hundred walks (at the default size,
	// random needs about 3000 walks of 10 000 steps).
	tg := resolve(t, "exclusive", "cpu-lock", model.Params{"vcpus": 2})
	for _, s := range []Sampling{
		{Strategy: explorer.Random, Seed: 1, MaxSteps: 200},
		{Strategy: explorer.RandomThreads, Seed: 2, MaxSteps: 200},
		{Strategy: explorer.PCT, Seed: 1, Depth: 3, MaxSteps: 200},
	} {
		want := local(t, tg, s, 1000)
		if want.Verdict != explorer.Violation {
			t.Fatalf("%s: the local explorer finds nothing in 1000 walks", s.Strategy)
		}
		for _, shards := range []int{1, 5} {
			out, err := Explore(context.Background(), Config{Target: tg, Sampling: s, Runs: 1000, Shards: shards, Partitions: 4, Dir: t.TempDir(), Run: prism.Run})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s seed %d, %d shards: walk %d", s.Strategy, s.Seed, shards, out.Result.Stats.Executions)
			same(t, out.Result, want)
		}
	}
}

// A clean swarm reports what the local one does: distinct states,
// complete executions, metrics over them.
func TestClean(t *testing.T) {
	tg := resolve(t, "pvflush", "fixed", nil)
	s := Sampling{Strategy: explorer.Random, Seed: 7}
	out, err := Explore(context.Background(), Config{Target: tg, Sampling: s, Runs: 300, Shards: 3, Dir: t.TempDir(), Run: prism.Run})
	if err != nil {
		t.Fatal(err)
	}
	same(t, out.Result, local(t, tg, s, 300))
}
