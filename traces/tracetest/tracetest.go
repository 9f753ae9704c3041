// Package tracetest checks a protocol's kept counterexamples in tests:
// each trace file in a testdata directory replays on the model with the
// violation it records, and recording its schedule again gives the same
// file byte for byte, so that a model change that alters a label, a
// parameter or a step shows up as a diff to re-record and review.
package tracetest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// ReplayUnchanged checks every *.trace.json in dir against p (a subtest
// each) and returns the paths it read, for the caller to count.
func ReplayUnchanged(t *testing.T, p *model.Protocol, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.trace.json"))
	if err != nil {
		t.Fatal(err)
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
			r, err := traces.Replay(p, tr)
			if err != nil {
				t.Fatal(err)
			}
			if v := r.Execution.Violation; tr.Violation == nil || v == nil || v.Message != tr.Violation.Message {
				t.Fatalf("replay gives %v, the trace records %v", v, tr.Violation)
			}
			again, err := Rerecord(p, tr)
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
	return paths
}

// Rerecord records tr's schedule again on p, as a lasso when tr is one.
func Rerecord(p *model.Protocol, tr *traces.Trace) (*traces.Trace, error) {
	if tr.Cycle > 0 {
		return traces.RecordProgress(p, tr.Variant, tr.Params, tr.Schedule, tr.Cycle, tr.Violation, tr.Fairness)
	}
	return traces.Record(p, tr.Variant, tr.Params, tr.Schedule)
}

// Keep turns r, bfs's counterexample for variant of p at params (those
// that differ from the defaults), into the trace to keep: a lasso as bfs
// found it (a progress property's, under r's fairness), a safety
// violation minimized (traces.Minimize).
func Keep(p *model.Protocol, variant string, params model.Params, r *explorer.Result) (*traces.Trace, error) {
	if r.Violation == nil {
		return nil, fmt.Errorf("%s/%s %v: %s, no counterexample", p.Name, variant, params, r)
	}
	m, all, err := p.Instantiate(variant, params)
	if err != nil {
		return nil, err
	}
	for _, pp := range m.Properties().Progress {
		if pp.Name == r.Violation.Property {
			return traces.RecordProgress(p, variant, all, r.Schedule, r.Cycle, r.Violation, r.Fairness)
		}
	}
	tr, err := traces.Record(p, variant, all, r.Schedule)
	if err != nil {
		return nil, err
	}
	return traces.Minimize(p, tr)
}
