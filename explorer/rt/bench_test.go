package rt_test

import (
	"sync"
	"testing"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// The real mode must cost about what sync does.

func BenchmarkSyncMutex(b *testing.B) {
	var m sync.Mutex
	for b.Loop() {
		m.Lock()
		m.Unlock()
	}
}

func BenchmarkRealMutex(b *testing.B) {
	m := rt.Real(1).Mutex("m")
	b.ReportAllocs()
	for b.Loop() {
		m.Lock("bench: lock")
		m.Unlock("bench: unlock")
	}
}

func BenchmarkRealMutexContended(b *testing.B) {
	m := rt.Real(1).Mutex("m")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Lock("bench: lock")
			m.Unlock("bench: unlock")
		}
	})
}

func BenchmarkRealWord64Add(b *testing.B) {
	w := rt.Real(1).Word64("w")
	b.ReportAllocs()
	for b.Loop() {
		w.Add("bench: add", 1)
	}
}

// benchSteps runs controlled runs of two goroutines taking steps
// yields each and reports the cost per step.
func benchSteps(b *testing.B, s rt.Strategy, steps int) {
	body := func(e *rt.Env) {
		for _, n := range []string{"A", "B"} {
			e.Go(n, func() {
				for i := 0; i < steps; i++ {
					e.Yield("bench: step")
				}
			})
		}
	}
	total := 0
	for b.Loop() {
		r := rt.Controlled(s, 2*steps+1, body)
		if r.Failed() || r.BoundHit {
			b.Fatal(r.Outcome())
		}
		total += len(r.Steps)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(total), "ns/step")
}

// BenchmarkControlledStep: random scheduling, so about every other step
// hands the baton to the other goroutine (two channel operations).
func BenchmarkControlledStep(b *testing.B) { benchSteps(b, rt.Random(1), 500) }

// BenchmarkControlledStepNoSwitch: the running goroutine keeps the baton
// (DFS's first run has no preemption): the scheduling logic alone.
func BenchmarkControlledStepNoSwitch(b *testing.B) {
	benchSteps(b, rt.Replay(append(sameThread(0, 500), sameThread(1, 500)...)), 500)
}

// BenchmarkControlledRun: the whole cost of a small run (goroutine
// creation, tear-down) for the lost-update program.
func BenchmarkControlledRun(b *testing.B) {
	s := rt.Random(1)
	for b.Loop() {
		rt.Controlled(s, 100, counter(false))
	}
}

func sameThread(t, n int) []model.Choice {
	out := make([]model.Choice, n)
	for i := range out {
		out[i] = model.Choice{Thread: t}
	}
	return out
}
