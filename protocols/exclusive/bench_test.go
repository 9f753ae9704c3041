package exclusive

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// BenchmarkBFS explores README's bench configuration of this protocol,
// upstream with four vCPUs (1 483 432 states; the progress properties are
// checked on the state graph, which bfs keeps for them), with bfs and one
// worker, and reports states per second and the bytes stored per state.
func BenchmarkBFS(b *testing.B) {
	m, _, err := Protocol.Instantiate("upstream", model.Params{"vcpus": 4})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var r *explorer.Result
	for i := 0; i < b.N; i++ {
		if r, err = explorer.Explore(m, explorer.Options{Strategy: explorer.BFS, Workers: 1}); err != nil {
			b.Fatal(err)
		}
	}
	if r.Verdict != explorer.OK {
		b.Fatalf("upstream vcpus=4: %s", r)
	}
	b.ReportMetric(float64(r.Stats.States)*float64(b.N)/b.Elapsed().Seconds(), "states/s")
	b.ReportMetric(r.Stats.BytesPerState, "bytes/state")
	b.ReportMetric(float64(r.Stats.States), "states")
}

// BenchmarkStep is one state's expansion at the default size, to watch
// the model's own cost: decoding, stepping every thread and encoding each
// successor, as the explorer does.
func BenchmarkStep(b *testing.B) {
	m, s := midRun(b)
	key := s.AppendKey(nil)
	x := model.NewExec(len(m.Properties().Metrics))
	var succ []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for t := range m.Threads() {
			if err := s.Decode(key); err != nil {
				b.Fatal(err)
			}
			x.Reset(t, -1)
			m.Step(s, t, x)
			succ = s.AppendKey(succ[:0])
		}
	}
}

// BenchmarkState measures the three things the explorer does to a state
// besides stepping it, on the state of BenchmarkStep: encoding it (for
// every successor), decoding it (for every state expanded) and copying it
// (before every step tried).
func BenchmarkState(b *testing.B) {
	m, s := midRun(b)
	key := s.AppendKey(nil)
	b.Run("encode", func(b *testing.B) {
		buf := make([]byte, 0, 2*len(key))
		for i := 0; i < b.N; i++ {
			buf = s.AppendKey(buf[:0])
		}
	})
	b.Run("decode", func(b *testing.B) {
		d := m.Init()
		for i := 0; i < b.N; i++ {
			if err := d.Decode(key); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("copy", func(b *testing.B) {
		d := m.Init().(model.Copier)
		for i := 0; i < b.N; i++ {
			d.CopyFrom(s)
		}
	})
}

// midRun returns the default upstream machine and a state in the middle of
// a run: vcpu0 inside start_exclusive, the others on their way into
// cpu_exec.
func midRun(b *testing.B) (model.Machine, model.State) {
	m, _, err := Protocol.Instantiate("upstream", nil)
	if err != nil {
		b.Fatal(err)
	}
	var sched []model.Choice
	for _, run := range []struct{ thread, steps int }{{0, 21}, {1, 7}, {2, 4}} {
		for i := 0; i < run.steps; i++ {
			sched = append(sched, model.Choice{Thread: run.thread})
		}
	}
	ex, err := explorer.Execute(m, sched)
	if err != nil || ex.Violation != nil {
		b.Fatalf("%v %v", err, ex.Violation)
	}
	return m, ex.States[len(ex.States)-1]
}
