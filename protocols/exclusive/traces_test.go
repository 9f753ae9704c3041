package exclusive

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
	"github.com/protocheck/protocheck/traces/tracetest"
)

var updateTraces = flag.Bool("update-traces", false, "rewrite testdata/exclusive's traces from bfs's counterexamples")

// kept lists the counterexamples kept in testdata/exclusive: bfs's
// shortest, minimized (safety) or as bfs's lasso (progress), each at the
// configuration named. The progress counterexamples are kept with guests
// that touch RAM only (mmio=0): with MMIO guests bfs's shortest lasso has
// the looping vCPU take and release the BQL on every TB, which weak
// fairness allows to starve the threads that wait for the BQL (they are
// enabled only between two of its TBs), and the bug is easier to read
// without that.
var kept = []struct {
	file, variant string
	params        model.Params
}{
	{"cpu-lock", "cpu-lock", nil},
	{"if-not-while", "if-not-while", nil},
	{"bql-held", "bql-held", nil},
	{"finish-safe-work", "finish-safe-work", nil},
	{"non-recursive", "non-recursive", nil},
	{"exclusive-from-exec", "exclusive-from-exec", nil},
	{"end-decrements-always", "end-decrements-always", nil},
	{"end-signals-resume", "end-signals-resume", model.Params{"mmio": 0}},
	{"no-smp-mb", "no-smp-mb", nil},
	{"no-kick", "no-kick", model.Params{"mmio": 0}},
	{"cpu-lock-no-idle", "cpu-lock-no-idle", nil},
	{"safe-work-no-kick", "safe-work-no-kick", model.Params{"mmio": 0}},
	// A finding: seed 001's hot-plug deadlocks with MMIO guests.
	{"cpu-lock-broadcast-hotplug", "cpu-lock-broadcast", model.Params{"hotplug": 1}},
	// A finding: upstream's halted vCPU misses the kick of a vCPU that
	// queues work on it without the BQL.
	{"upstream-cross-work", "upstream", model.Params{"vcpus": 2, "tbs": 1, "run-on-cpu": 0, "cross-work": 1}},
	// A finding: seed 001's branch's pause_all_vcpus returns before every
	// CPU has stopped.
	{"cpu-lock-broadcast-pause", "cpu-lock-broadcast", model.Params{"vcpus": 2, "safe-work": 2, "pause": 1}},
	// On an arm64 host (ARMv8 memory), each smp_mb() of the handshake
	// left out.
	{"arm64-drop-mb-1", "upstream", armRow(dropStartExclusive)},
	{"arm64-drop-mb-2", "upstream", armRow(dropExecStart)},
	{"arm64-drop-mb-3", "upstream", withTBs(armRow(dropExecEnd), 1)},
}

func tracePath(name string) string {
	return filepath.Join("..", "..", "testdata", "exclusive", name+".trace.json")
}

// TestUpdateTraces rewrites the kept traces (-update-traces): bfs finds
// each counterexample; a safety one is minimized (traces.Minimize), a
// progress one is recorded as bfs's lasso under weak fairness.
func TestUpdateTraces(t *testing.T) {
	if !*updateTraces {
		t.Skip("rewrites testdata with -update-traces")
	}
	for _, k := range kept {
		_, r := explore(t, k.variant, k.params, explorer.Options{})
		tr, err := tracetest.Keep(Protocol, k.variant, k.params, r)
		if err != nil {
			t.Fatalf("%s: %v", k.file, err)
		}
		if err := traces.Save(tracePath(k.file), tr); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s in %d steps (bfs: %d)", k.file, tr.Violation.Property, len(tr.Schedule), len(r.Schedule))
	}
}

// Every buggy variant has a kept counterexample, of a property it is
// expected to violate.
func TestTracesKeptForEveryBug(t *testing.T) {
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		tr, err := traces.Load(tracePath(v.Name))
		if err != nil {
			t.Errorf("%s: %v", v.Name, err)
			continue
		}
		if tr.Violation == nil || !v.Accepts(tr.Violation.Property) {
			t.Errorf("%s: the kept trace shows %v, not what the variant is expected to violate", v.Name, tr.Violation)
		}
	}
}

// The counterexamples kept in testdata replay on the model step for step,
// with the recorded labels, violation and message (a lasso: its cycle
// closes, its obligation is pending throughout and the cycle is fair), and
// recording their schedules again gives the same files byte for byte.
func TestTracesReplayUnchanged(t *testing.T) {
	if paths := tracetest.ReplayUnchanged(t, Protocol, filepath.Join("..", "..", "testdata", "exclusive")); len(paths) != len(kept) {
		t.Fatalf("%d traces in testdata/exclusive, %d kept", len(paths), len(kept))
	}
}
