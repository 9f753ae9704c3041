package pvflush

import (
	"bytes"
	"flag"
	"os"
	"slices"
	"testing"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

var update = flag.Bool("update", false, "rewrite the traces in testdata/pvflush and the golden rendering from what bfs finds")

// TestTestdataTraces: each buggy variant's trace in testdata/ replays
// strictly on the model (every thread and label as recorded, the recorded
// violation at its end) and is still the shortest counterexample bfs
// finds at the default size, choice for choice (as check explore writes
// it); the posted trace renders as the golden file.
func TestTestdataTraces(t *testing.T) {
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			path := "../../testdata/pvflush/" + v.Name + ".trace.json"
			m, params, err := Protocol.Instantiate(v.Name, nil)
			if err != nil {
				t.Fatal(err)
			}
			b := bfs(t, m)
			if *update {
				tr, err := traces.Record(Protocol, v.Name, params, b.Schedule)
				if err != nil {
					t.Fatal(err)
				}
				if err := traces.Save(path, tr); err != nil {
					t.Fatal(err)
				}
			}
			tr, err := traces.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			r, err := traces.Replay(Protocol, tr)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Execution.Violation; got == nil || tr.Violation == nil || *got != *tr.Violation || got.Property != v.Expect {
				t.Fatalf("replay gives %v, the trace records %v, the variant expects %s", got, tr.Violation, v.Expect)
			}
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
			golden := "../../testdata/golden/replay-pvflush-posted.txt"
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != string(want) {
				t.Errorf("the rendering differs from the golden file:\n%s", out.String())
			}
		})
	}
}

// rowTraces are the shortest traces of matrix rows beyond the default
// size, each found by bfs with the properties its file leaves out
// (check explore ... --without ... --out FILE): the return of KVM_RUN to
// userspace (user-exits) on the hosts before 54aa83c90198, with no host
// preemption at all.
var rowTraces = []struct {
	file, variant string
	params        model.Params
	expect        string
}{
	{"host2017-user-exit", "fixed", model.Params{"host": 1, "preemptions": 0, "user-exits": 1}, StaleTLB},
	{"mid-instruction-user-exit", "mid-instruction", model.Params{"preemptions": 0, "user-exits": 1}, StaleTLB},
}

// TestTestdataRowTraces: each row trace replays strictly, with the
// properties it records as left out, ends in the expected violation, and
// is still what bfs finds at its parameters, choice for choice.
func TestTestdataRowTraces(t *testing.T) {
	for _, c := range rowTraces {
		t.Run(c.file, func(t *testing.T) {
			tr, err := traces.Load("../../testdata/pvflush/" + c.file + ".trace.json")
			if err != nil {
				t.Fatal(err)
			}
			p := Protocol.Without(tr.Without...)
			r, err := traces.Replay(p, tr)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Execution.Violation; got == nil || tr.Violation == nil || *got != *tr.Violation || got.Property != c.expect {
				t.Fatalf("replay gives %v, the trace records %v, want %s", got, tr.Violation, c.expect)
			}
			m, _, err := p.Instantiate(c.variant, c.params)
			if err != nil {
				t.Fatal(err)
			}
			b := bfs(t, m)
			if !slices.Equal(b.Schedule, tr.Schedule) || !slices.Equal(b.Labels, tr.Labels()) {
				t.Fatalf("bfs finds another counterexample:\n%v\nthe trace has\n%v", b.Schedule, tr.Schedule)
			}
		})
	}
}
