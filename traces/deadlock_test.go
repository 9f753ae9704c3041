package traces

import (
	"fmt"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/model"
)

// locksProtocol is a second test model, for a property that is checked at
// the end of a run rather than at a state: two threads take two mutexes,
// `rounds` times, in the same order (variant ordered) or in opposite
// orders (variant abba, which deadlocks).
var locksProtocol = &model.Protocol{
	Name: "locks",
	Variants: []model.Variant{
		{Name: "ordered", Expect: model.ExpectOK},
		{Name: "abba", Expect: model.Deadlock},
	},
	Params: []model.Param{{Name: "rounds", Default: 2, Min: 1, Max: 3}},
	New: func(variant string, p model.Params) (model.Machine, error) {
		return &locks{abba: variant == "abba", rounds: p["rounds"]}, nil
	},
}

type locks struct {
	abba   bool
	rounds int
}

type locksState struct {
	mu [2]model.Mutex
	pc [2]int
}

func (s *locksState) Clone() model.State { c := *s; return &c }
func (s *locksState) AppendKey(b []byte) []byte {
	return fmt.Appendf(b, "%v%v%d%d", s.mu[0], s.mu[1], s.pc[0], s.pc[1])
}
func (s *locksState) Vars() []model.Var {
	return []model.Var{{Name: "a", Value: s.mu[0].String()}, {Name: "b", Value: s.mu[1].String()},
		{Name: "pc[0]", Value: fmt.Sprint(s.pc[0])}, {Name: "pc[1]", Value: fmt.Sprint(s.pc[1])}}
}

var lockNames = [2]string{"a", "b"}

// next says what thread t does at its pc: which mutex, and whether it
// locks it.
func (l *locks) next(s *locksState, t int) (mu int, lock bool) {
	order := [2]int{0, 1}
	if l.abba && t == 1 {
		order = [2]int{1, 0}
	}
	switch s.pc[t] % 4 {
	case 0:
		return order[0], true
	case 1:
		return order[1], true
	case 2:
		return order[1], false
	}
	return order[0], false
}

func (l *locks) Threads() []string { return []string{"t0", "t1"} }
func (l *locks) Init() model.State { return &locksState{} }
func (l *locks) done(s *locksState, t int) bool {
	return s.pc[t] >= 4*l.rounds
}
func (l *locks) Enabled(st model.State, buf []model.Choice) []model.Choice {
	s := st.(*locksState)
	for t := range 2 {
		if l.done(s, t) {
			continue
		}
		if mu, lock := l.next(s, t); !lock || s.mu[mu].Free() {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}
func (l *locks) Step(st model.State, c model.Choice, x *model.Exec) model.State {
	s := st.Clone().(*locksState)
	mu, lock := l.next(s, c.Thread)
	if lock {
		x.Lock(&s.mu[mu], lockNames[mu])
		x.Labelf("mutex_lock(%s)", lockNames[mu])
	} else {
		x.Unlock(&s.mu[mu], lockNames[mu])
		x.Labelf("mutex_unlock(%s)", lockNames[mu])
	}
	s.pc[c.Thread]++
	return s
}
func (l *locks) Status(st model.State, t int) model.Status {
	s := st.(*locksState)
	if l.done(s, t) {
		return model.Status{Done: true}
	}
	mu, _ := l.next(s, t)
	return model.Status{WaitsFor: lockNames[mu]}
}
func (l *locks) Invariants() []model.Invariant { return nil }
func (l *locks) Metrics() []string             { return nil }
func (l *locks) Spec() *model.Spec             { return nil }

func TestMinimizeDeadlock(t *testing.T) {
	// t0 finishes a round, t1 takes b and lets it go, then the ABBA
	// deadlock: t0 holds a, t1 holds b.
	padded := []model.Choice{{Thread: 0}, {Thread: 0}, {Thread: 0}, {Thread: 0}, {Thread: 1}, {Thread: 1}, {Thread: 1}, {Thread: 1}, {Thread: 0}, {Thread: 1}}
	tr, err := Record(locksProtocol, "abba", nil, padded)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Violation == nil || tr.Violation.Property != model.Deadlock {
		t.Fatalf("padded ABBA trace: violation %v, want a deadlock", tr.Violation)
	}
	small, err := Minimize(locksProtocol, tr)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Choice{{Thread: 0}, {Thread: 1}}
	if !equalSchedules(small.Schedule, want) || small.Params["rounds"] != 1 {
		t.Errorf("minimized = %v %v, want %v rounds=1", small.Schedule, small.Params, want)
	}
	if small.Violation == nil || !strings.Contains(small.Violation.Message, "t0 waits for b; t1 waits for a") {
		t.Errorf("minimized violation = %v", small.Violation)
	}
	r, err := Replay(locksProtocol, small)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Render(&b, r); err != nil {
		t.Fatal(err)
	}
	goldenFile(t, "abba-minimized.golden", []byte(b.String()))
}
