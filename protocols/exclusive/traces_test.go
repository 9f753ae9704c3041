package exclusive

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/protocheck/protocheck/traces"
)

// The counterexamples kept in testdata replay on the model step for step,
// with the recorded labels, violation and message, and recording their
// schedules again gives the same files byte for byte.
func TestTracesReplayUnchanged(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "exclusive", "*.trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no trace in testdata/exclusive")
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := traces.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			r, err := traces.Replay(Protocol, tr)
			if err != nil {
				t.Fatal(err)
			}
			if v := r.Execution.Violation; tr.Violation == nil || v == nil || v.Message != tr.Violation.Message {
				t.Fatalf("replay gives %v, the trace records %v", v, tr.Violation)
			}
			again, err := traces.Record(Protocol, tr.Variant, tr.Params, tr.Schedule)
			if err != nil {
				t.Fatal(err)
			}
			enc, err := traces.Encode(again)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc, data) {
				t.Errorf("recording the schedule again gives another file:\n%s", enc)
			}
		})
	}
}
