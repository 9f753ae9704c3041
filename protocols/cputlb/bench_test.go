package cputlb

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// BenchmarkBFS is the protocol's speed benchmark (README, "Exploration at
// scale"): the whole bfs of cputlb/synced cpus=3 accesses=3 without the
// migration thread and the main loop (483 787 states), one worker. It
// reports states per second and the explorer's bytes per stored state.
func BenchmarkBFS(b *testing.B) {
	m, _, err := Protocol.Instantiate("synced", model.Params{"cpus": 3, "accesses": 3, "migration": 0, "commit": 0})
	if err != nil {
		b.Fatal(err)
	}
	var r *explorer.Result
	for b.Loop() {
		if r, err = explorer.Explore(m, explorer.Options{Strategy: explorer.BFS, Workers: 1}); err != nil {
			b.Fatal(err)
		}
	}
	if r.Verdict != explorer.OK || r.Stats.States != 483787 {
		b.Fatalf("got %s, want ok with 483787 states", r)
	}
	b.ReportMetric(float64(r.Stats.States)*float64(b.N)/b.Elapsed().Seconds(), "states/s")
	b.ReportMetric(r.Stats.BytesPerState, "bytes/state")
}
