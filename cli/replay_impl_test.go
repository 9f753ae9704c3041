package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/traces"
)

// replay --impl is as strict as replay: every edited trace that the model
// replay rejects, it rejects too (exit 2), naming the same first
// divergent step, before running any code.
func TestReplayImplIsAsStrictAsReplay(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"pvflush/posted", "exclusive/cpu-lock", "cputlb/no-kick"} {
		orig := filepath.Join("..", "testdata", name+".trace.json")
		raw, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := traces.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		k := len(tr.Steps) / 2 // an edit in the middle of the trace
		other := "vcpu9"
		for _, s := range tr.Steps {
			if s.Thread != tr.Steps[k].Thread {
				other = s.Thread
			}
		}
		// An edit changes the raw JSON or, when it has no raw function, the
		// decoded trace, saved in canonical form.
		edits := []struct {
			name  string
			raw   func(m map[string]any)
			trace func(tr *traces.Trace)
			step  string // the step to name, "" when it is not about a step
			want  string
		}{
			{"params removed", func(m map[string]any) { delete(m, "params") }, nil, "", `"params"`},
			{"params empty", func(m map[string]any) { m["params"] = map[string]any{} }, nil, "", "does not record parameter"},
			{"params null", func(m map[string]any) { m["params"] = nil }, nil, "", `"params"`},
			{"one param removed", nil, func(tr *traces.Trace) { delete(tr.Params, tr.Params.Keys()[0]) }, "", "does not record parameter " + tr.Params.Keys()[0]},
			{"unknown param", nil, func(tr *traces.Trace) { tr.Params["bogus"] = 1 }, "", `no parameter "bogus"`},
			{"param out of range", nil, func(tr *traces.Trace) { tr.Params[tr.Params.Keys()[0]] = 1 << 20 }, "", "out of range"},
			{"thread renamed", nil, func(tr *traces.Trace) { tr.Steps[k].Thread = other }, fmt.Sprint(k + 1), "thread " + other},
			{"label changed", nil, func(tr *traces.Trace) { tr.Steps[k].Label += " (edited)" }, fmt.Sprint(k + 1), "(edited)"},
			{"label changed at the start", nil, func(tr *traces.Trace) { tr.Steps[0].Label = "x" + tr.Steps[0].Label }, "1", ""},
			{"two edits", nil, func(tr *traces.Trace) {
				tr.Steps[k].Label += " (edited)"
				tr.Steps[len(tr.Steps)-1].Thread = other
			}, fmt.Sprint(k + 1), "(edited)"},
			{"choice changed", nil, func(tr *traces.Trace) { tr.Schedule[k].Thread = 99 }, fmt.Sprint(k + 1), "choice 99"},
			{"last step dropped", nil, func(tr *traces.Trace) {
				tr.Schedule, tr.Steps = tr.Schedule[:len(tr.Schedule)-1], tr.Steps[:len(tr.Steps)-1]
			}, fmt.Sprint(len(tr.Steps) - 1), ""},
			{"violation changed", nil, func(tr *traces.Trace) { tr.Violation.Property = "no-such-property" }, fmt.Sprint(len(tr.Steps)), "no-such-property"},
			{"violation removed", nil, func(tr *traces.Trace) { tr.Violation = nil }, fmt.Sprint(len(tr.Steps)), "no violation"},
			{"variant changed", nil, func(tr *traces.Trace) { tr.Variant = "nosuch" }, "", `no variant "nosuch"`},
		}
		for _, e := range edits {
			path := filepath.Join(dir, strings.ReplaceAll(name+" "+e.name, "/", "-")+".json")
			var data []byte
			if e.raw != nil {
				m := map[string]any{}
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatal(err)
				}
				e.raw(m)
				data, err = json.Marshal(m)
			} else {
				edited, _ := traces.Decode(raw)
				e.trace(edited)
				data, err = traces.Encode(edited)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			codeM, outM, errM := check(t, "replay", path)
			codeI, outI, errI := check(t, "replay", "--impl", path)
			if codeM != cli.ExitUsage || codeI != cli.ExitUsage || outI != "" {
				t.Errorf("%s, %s: replay exit %d, replay --impl exit %d with stdout %q; want 2 for both and nothing on stdout\n%s%s", name, e.name, codeM, codeI, outI+outM, errM, errI)
				continue
			}
			if !strings.Contains(errI, e.want) {
				t.Errorf("%s, %s: replay --impl says %q, want %q", name, e.name, errI, e.want)
			}
			if e.step != "" {
				wantStep := "step " + e.step + " "
				if got := firstStep(errI); got != wantStep || firstStep(errM) != wantStep {
					t.Errorf("%s, %s: replay names %q, replay --impl %q; want %q\n%s%s", name, e.name, firstStep(errM), got, wantStep, errM, errI)
				}
			}
		}
	}
}

var stepRE = regexp.MustCompile(`step [0-9]+ `)

func firstStep(s string) string { return stepRE.FindString(s) }
