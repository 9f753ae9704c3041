package pvflush

import (
	"bytes"
	"os"
	"slices"
	"testing"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// TestTestdataTraces: each buggy variant's trace in testdata/ replays
// strictly on the model (every thread and label as recorded, the recorded
// violation at its end) and is still the shortest counterexample bfs
// finds, choice for choice; the posted trace renders as the golden file.
func TestTestdataTraces(t *testing.T) {
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			tr, err := traces.Load("../../testdata/pvflush/" + v.Name + ".trace.json")
			if err != nil {
				t.Fatal(err)
			}
			r, err := traces.Replay(Protocol, tr)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Execution.Violation; got == nil || tr.Violation == nil || *got != *tr.Violation {
				t.Fatalf("replay gives %v, the trace records %v", got, tr.Violation)
			}
			m, _, err := Protocol.Instantiate(tr.Variant, tr.Params)
			if err != nil {
				t.Fatal(err)
			}
			b := bfs(t, m)
			if !slices.Equal(b.Schedule, tr.Schedule) || !slices.Equal(b.Labels, tr.Labels()) {
				t.Fatalf("bfs finds another counterexample:\n%v\nthe trace has\n%v", b.Schedule, tr.Schedule)
			}
			if v.Name != "posted" {
				return
			}
			var out bytes.Buffer
			if err := traces.RenderSummary(&out, r, traces.DefaultLines); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile("../../testdata/golden/replay-pvflush-posted.txt")
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != string(want) {
				t.Errorf("the rendering differs from the golden file:\n%s", out.String())
			}
		})
	}
}
