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

// lockRoundProtocol: thread A takes three steps, the last of which locks m
// and trips an assertion; thread B takes rounds of lock m, unlock m. In the
// trace B, A, A, B, A no contiguous chunk can go (without B's unlock A
// blocks; without B's lock, B's next choice locks instead), but B's whole
// round can: Minimize must drop one thread's steps wherever they are.
var lockRoundProtocol = &model.Protocol{
	Name:     "lockround",
	Variants: []model.Variant{{Name: "v", Expect: "bug"}},
	New: func(string, model.Params) (model.Machine, error) {
		type st struct {
			M    model.Mutex
			A, B uint8
		}
		return model.MustNew(model.Def[st]{
			Threads: []string{"A", "B"},
			Init:    func(*st) {},
			Step: func(s *st, t int, x *model.Exec) {
				switch {
				case t == 0 && s.A < 2:
					x.Touch("a", true)
					x.Labelf("a%d", s.A)
					s.A++
				case t == 0 && s.A == 2:
					if !x.Lock(&s.M, "m") {
						return
					}
					x.Label("lock m")
					x.Fail("bug", "A got the lock")
					s.A++
				case t == 1 && s.B < 4 && s.B%2 == 0:
					if !x.Lock(&s.M, "m") {
						return
					}
					x.Label("lock m")
					s.B++
				case t == 1 && s.B < 4:
					x.Unlock(&s.M, "m")
					x.Label("unlock m")
					s.B++
				default:
					x.Done()
				}
			},
		}), nil
	},
}

func TestMinimizeDropsOneThreadsRound(t *testing.T) {
	b, a := model.Choice{Thread: 1}, model.Choice{Thread: 0}
	tr, err := Record(lockRoundProtocol, "v", nil, []model.Choice{b, a, a, b, a})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Violation == nil || len(tr.Schedule) != 5 {
		t.Fatalf("the padded trace: %v, %d steps", tr.Violation, len(tr.Schedule))
	}
	small, err := Minimize(lockRoundProtocol, tr)
	if err != nil {
		t.Fatal(err)
	}
	if want := []model.Choice{a, a, a}; !equalSchedules(small.Schedule, want) {
		t.Errorf("minimized schedule = %v, want %v (bfs's length)", small.Schedule, want)
	}
}
