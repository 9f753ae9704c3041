package traces

import (
	"bytes"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/model"
)

func TestMinimize(t *testing.T) {
	tr := recordPadded(t)
	small, err := Minimize(counterProtocol, tr)
	if err != nil {
		t.Fatal(err)
	}
	if small.Violation == nil || small.Violation.Property != tr.Violation.Property {
		t.Fatalf("minimized trace violates %v, want %s", small.Violation, tr.Violation.Property)
	}
	if len(small.Schedule) >= len(tr.Schedule) {
		t.Errorf("minimized trace has %d steps, the padded one %d", len(small.Schedule), len(tr.Schedule))
	}
	// The smallest lost update: two threads, one increment each, both
	// load before either stores; the fewest switches keep the second
	// thread running through its store.
	want := []model.Choice{{Thread: 0}, {Thread: 1}, {Thread: 1}, {Thread: 0}}
	if !equalSchedules(small.Schedule, want) {
		t.Errorf("minimized schedule = %v, want %v", small.Schedule, want)
	}
	if small.Params["threads"] != 2 || small.Params["incs"] != 1 {
		t.Errorf("minimized params = %v, want threads=2 incs=1", small.Params)
	}
	if _, err := Replay(counterProtocol, small); err != nil {
		t.Errorf("the minimized trace does not replay strictly: %v", err)
	}

	// Deterministic: twice gives the same bytes.
	again, err := Minimize(counterProtocol, tr)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Encode(small)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(again)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("Minimize is not deterministic:\n%s\n---\n%s", a, b)
	}
	goldenFile(t, "racy-minimized.trace.json", a)
}

// A trace whose race needs three threads and the second increment keeps
// its parameters where they must stay: Minimize never trades the property
// for a smaller configuration.
func TestMinimizeKeepsNeededSteps(t *testing.T) {
	tr, err := Record(counterProtocol, "racy", model.Params{"threads": 2, "incs": 1}, []model.Choice{{Thread: 0}, {Thread: 1}, {Thread: 1}, {Thread: 0}})
	if err != nil {
		t.Fatal(err)
	}
	small, err := Minimize(counterProtocol, tr)
	if err != nil {
		t.Fatal(err)
	}
	if !equalSchedules(small.Schedule, tr.Schedule) || small.Params.String() != tr.Params.String() {
		t.Errorf("a minimal trace changed: %v %v", small.Schedule, small.Params)
	}
}

func TestMinimizeErrors(t *testing.T) {
	ok, err := Record(counterProtocol, "atomic", nil, []model.Choice{{Thread: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Minimize(counterProtocol, ok); err == nil || !strings.Contains(err.Error(), "no violation") {
		t.Errorf("Minimize of a clean trace: %v", err)
	}
	stale := recordPadded(t)
	stale.Steps[3].Label = "changed"
	if _, err := Minimize(counterProtocol, stale); err == nil || !strings.Contains(err.Error(), "step 4 diverges") {
		t.Errorf("Minimize of a stale trace: %v", err)
	}
}

func equalSchedules(a, b []model.Choice) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
