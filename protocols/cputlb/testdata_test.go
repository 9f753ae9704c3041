package cputlb

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// TestTestdataTracesReplay: every counterexample in testdata/cputlb (one
// per buggy variant at its default size, and the seed's era's dirty
// tracking bug without the main loop)
// replays strictly on the model (each step enabled, with its recorded
// thread and label, the recorded property at the end), its violation
// message is the model's word for word, and it is still the
// counterexample bfs finds for its variant and parameters.
func TestTestdataTracesReplay(t *testing.T) {
	files, err := filepath.Glob("../../testdata/cputlb/*.trace.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no traces in testdata/cputlb")
	}
	kept := map[string]bool{}
	for _, f := range files {
		kept[filepath.Base(f)] = true
	}
	for _, v := range Protocol.Variants {
		if v.Expect != model.ExpectOK && !kept[v.Name+".trace.json"] {
			t.Errorf("no trace of %s in testdata/cputlb", v.Name)
		}
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tr, err := traces.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := traces.Replay(Protocol, tr)
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Execution.Violation; got == nil || tr.Violation == nil || got.Message != tr.Violation.Message {
				t.Errorf("violation %v, the trace records %v", got, tr.Violation)
			}
			r := bfs(t, tr.Variant, tr.Params)
			if !reflect.DeepEqual(r.Schedule, tr.Schedule) || !reflect.DeepEqual(r.Labels, tr.Labels()) {
				t.Errorf("bfs finds the schedule %v, the trace records %v", r.Schedule, tr.Schedule)
			}
		})
	}
}
