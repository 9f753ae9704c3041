package batchunmap

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// BenchmarkBFS explores generation with two user threads, the size of
// the README's scale table, with bfs on one worker, and reports states/s
// and the explorer's bytes per stored state. The counts are checked: a
// faster model that explores another state space measures nothing.
func BenchmarkBFS(b *testing.B) {
	m, _, err := Protocol.Instantiate(Generation, model.Params{"users": 2})
	if err != nil {
		b.Fatal(err)
	}
	var r *explorer.Result
	for b.Loop() {
		if r, err = explorer.Explore(m, explorer.Options{Workers: 1}); err != nil {
			b.Fatal(err)
		}
	}
	if r.Verdict != explorer.OK || r.Stats.States != 3170675 || r.Stats.Transitions != 19220782 {
		b.Fatalf("generation users=2: %s, want ok with 3170675 states and 19220782 transitions", r)
	}
	b.ReportMetric(float64(r.Stats.States)*float64(b.N)/b.Elapsed().Seconds(), "states/s")
	b.ReportMetric(r.Stats.BytesPerState, "bytes/state")
}
