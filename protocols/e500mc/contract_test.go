package e500mc

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
	"github.com/protocheck/protocheck/traces"
)

// roundTripSizes are the configurations whose states the encoding tests
// walk: the default, every slice at its largest (CPUs, slots, LPIDs) with
// several VM cycles and host unmaps, the per-cpu word layout, the
// preempted load, guests without TLB instructions, unbounded loads, and
// the seed's scripted workload.
var roundTripSizes = []struct {
	variant string
	params  model.Params
}{
	{"per-lpid", nil},
	{"per-lpid", model.Params{"cpus": 4, "vm1-vcpus": 3, "vm2-vcpus": 3, "lpids": 4, "loads": 12, "ops": 12, "cycles": 3, "unmaps": 3}},
	{"per-cpu", model.Params{"cpus": 3, "vm1-vcpus": 2, "vm2-vcpus": 2, "lpids": 3, "loads": 8, "ops": 8, "cycles": 2, "unmaps": 2}},
	{"no-oldpir", model.Params{"tlb-ops": 0, "ops": 6, "unmaps": 3}},
	{"per-lpid", model.Params{"unbounded-loads": 1, "ops": 6}},
	{"preempt-window", model.Params{"cpus": 3, "loads": 6, "ops": 6, "cycles": 2}},
	{"oldpir-zero", model.Params{"cpus": 3, "loads": 6, "ops": 6, "cycles": 2}},
	{"per-cpu", model.Params{"scenario": 1, "rounds": 4}},
}

// TestRoundTrip walks random schedules and checks at every state that the
// encoding round-trips (into a new state and into a reused one), that a
// truncated encoding is refused, and that each step taken on a state and
// on a copy decoded from its encoding gives the same successor and label.
func TestRoundTrip(t *testing.T) {
	for _, c := range roundTripSizes {
		t.Run(fmt.Sprintf("%s %v", c.variant, c.params), func(t *testing.T) {
			modeltest.RoundTrip(t, machineFor(t, c.variant, c.params), 80)
		})
	}
}

// TestDecodeRefusesAnotherLayout: an encoding of a machine with other
// sizes is an error, not a state with slices of the wrong length.
func TestDecodeRefusesAnotherLayout(t *testing.T) {
	small := machineFor(t, "per-lpid", nil)
	large := machineFor(t, "per-lpid", model.Params{"cpus": 3})
	if err := small.Init().Decode(large.Init().AppendKey(nil)); err == nil {
		t.Fatal("a 2-CPU state decodes a 3-CPU encoding")
	}
}

// TestTracesReplay replays every counterexample in testdata/e500mc on the
// model: the same steps with the same labels, and the recorded violation
// with the same message.
func TestTracesReplay(t *testing.T) {
	paths, err := filepath.Glob("../../testdata/e500mc/*.trace.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no traces: %v", err)
	}
	seen := map[string]bool{}
	for _, path := range paths {
		tr, err := traces.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		seen[tr.Variant] = true
		r, err := traces.Replay(Protocol, tr)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if v := r.Execution.Violation; v == nil || *v != *tr.Violation {
			t.Errorf("%s: replay gives %v, the trace records %v", path, v, tr.Violation)
		}
	}
	for _, v := range Protocol.Variants {
		if v.Expect != model.ExpectOK && !seen[v.Name] {
			t.Errorf("buggy variant %s has no trace in testdata", v.Name)
		}
	}
}

// TestHotPathDoesNotAllocate: exploring steps states, encodes, decodes
// and copies them, checks the invariant and computes canonical keys with
// labels and operations off; none of that may allocate. Checked on the
// states bfs reaches first in configurations with a VMM, the host's
// unmaps, a preempted load and three CPUs.
func TestHotPathDoesNotAllocate(t *testing.T) {
	for _, variant := range []string{"per-lpid", "per-cpu", "preempt-window", "ignore-request"} {
		m := machineFor(t, variant, model.Params{"cpus": 3, "loads": 3, "ops": 3, "unmaps": 2}).(*machine)
		states := reachable(m, 5000)
		x := newExec(m)
		scratch := m.Init()
		var key, canon []byte
		run := func() {
			for _, s := range states {
				key = s.AppendKey(key[:0])
				canon = m.CanonicalKey(s, canon[:0])
				scratch.(model.Copier).CopyFrom(s)
				if msg := m.hostMemorySafety(s); msg != "" && variant != "ignore-request" {
					t.Fatal(msg)
				}
				for th := range m.threads {
					alt := -1
					for {
						if err := scratch.Decode(key); err != nil {
							t.Fatal(err)
						}
						x.Reset(th, alt)
						m.Step(scratch, th, x)
						set, took, _ := x.Offered()
						rest := set &^ (uint64(1)<<uint(took+1) - 1)
						if x.Outcome() != model.Stepped || rest == 0 {
							break
						}
						alt = took + 1
						for rest&(1<<uint(alt)) == 0 {
							alt++
						}
					}
				}
			}
		}
		run() // grows the buffers
		if n := testing.AllocsPerRun(3, run); n != 0 {
			t.Errorf("%s: %.0f allocations over %d states' steps, keys and decodes; want none", variant, n, len(states))
		}
	}
}

// BenchmarkBFS is the exploration of e500mc/per-lpid cpus=3 (the README's
// bench configuration) by bfs with one worker, in states per second.
func BenchmarkBFS(b *testing.B) {
	m, _, err := Protocol.Instantiate("per-lpid", model.Params{"cpus": 3})
	if err != nil {
		b.Fatal(err)
	}
	var states int64
	for i := 0; i < b.N; i++ {
		r, err := explorer.Explore(m, explorer.Options{Strategy: explorer.BFS, Workers: 1, MaxStates: 20_000_000})
		if err != nil {
			b.Fatal(err)
		}
		if r.Verdict != explorer.OK || r.Stats.States != 6068934 || r.Stats.Transitions != 20134992 {
			b.Fatalf("got %s, want ok with 6068934 states and 20134992 transitions", r)
		}
		states += r.Stats.States
	}
	b.ReportMetric(float64(states)/b.Elapsed().Seconds(), "states/s")
}
