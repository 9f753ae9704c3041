package batchunmap

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
	"github.com/protocheck/protocheck/traces/tracetest"
)

var updateTraces = flag.Bool("update-traces", false, "rewrite the mutations' traces in testdata/batchunmap from bfs's counterexamples")

// keptMutations are the counterexamples of mutations given by a parameter
// rather than a variant (the variants' own are replayed on the real code
// by TestImplReplaysModelTraces): bfs's shortest, minimized, at the
// configuration named.
var keptMutations = []struct {
	file, variant string
	params        model.Params
	want          string
}{
	// arm64 under ARMv8 with spin_lock's acquire taken away.
	{"arm64-weak-lock", ARM64, armRow(weakLock), SyscallPostcondition},
}

func tracePath(name string) string {
	return filepath.Join("..", "..", "testdata", "batchunmap", name+".trace.json")
}

// TestUpdateTraces rewrites keptMutations' traces (-update-traces).
func TestUpdateTraces(t *testing.T) {
	if !*updateTraces {
		t.Skip("rewrites testdata with -update-traces")
	}
	for _, k := range keptMutations {
		r, _ := explore(t, k.variant, k.params, explorer.Options{})
		if r.Violation == nil || r.Violation.Property != k.want {
			t.Fatalf("%s %v: %s, want %s", k.variant, k.params, r, k.want)
		}
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

// Each mutation's kept trace shows the violation it is kept for.
func TestMutationTracesKept(t *testing.T) {
	for _, k := range keptMutations {
		tr, err := traces.Load(tracePath(k.file))
		if err != nil {
			t.Fatal(err)
		}
		if tr.Variant != k.variant || tr.Violation == nil || tr.Violation.Property != k.want {
			t.Errorf("%s: %s shows %v, want %s", k.file, tr.Variant, tr.Violation, k.want)
		}
		for name, v := range k.params {
			if tr.Params[name] != v {
				t.Errorf("%s: %s=%d, kept for %s=%d", k.file, name, tr.Params[name], name, v)
			}
		}
	}
}

// Every trace in testdata/batchunmap replays on the model step for step,
// with its recorded labels, violation and message, and recording its
// schedule again gives the same file byte for byte (every parameter
// included).
func TestTracesReplayUnchanged(t *testing.T) {
	bugs := 0
	for _, v := range Protocol.Variants {
		if v.Expect != model.ExpectOK {
			bugs++
		}
	}
	if paths := tracetest.ReplayUnchanged(t, Protocol, filepath.Join("..", "..", "testdata", "batchunmap")); len(paths) != bugs+len(keptMutations) {
		t.Fatalf("%d traces in testdata/batchunmap, %d buggy variants and %d mutations kept", len(paths), bugs, len(keptMutations))
	}
}
