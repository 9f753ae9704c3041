package benchmodel

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
)

func BenchmarkBFS(b *testing.B) {
	m := New(5, 4)
	var states int64
	for i := 0; i < b.N; i++ {
		r, err := explorer.Explore(m, explorer.Options{Workers: 1})
		if err != nil {
			b.Fatal(err)
		}
		states = r.Stats.States
		b.ReportMetric(float64(r.Stats.Transitions), "transitions")
	}
	b.ReportMetric(float64(states)*float64(b.N)/b.Elapsed().Seconds(), "states/s")
	b.ReportMetric(float64(states), "states")
}
