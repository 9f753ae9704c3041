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
		return newLocks(variant == "abba", p["rounds"]), nil
	},
}

// locksState is the state of the locks model.
type locksState struct {
	Mu [2]model.Mutex
	PC [2]int
}

var lockNames = [2]string{"a", "b"}

func newLocks(abba bool, rounds int) model.Machine {
	// next says what thread t does at its pc: which mutex, and whether it
	// locks it.
	next := func(s *locksState, t int) (mu int, lock bool) {
		order := [2]int{0, 1}
		if abba && t == 1 {
			order = [2]int{1, 0}
		}
		switch s.PC[t] % 4 {
		case 0:
			return order[0], true
		case 1:
			return order[1], true
		case 2:
			return order[1], false
		}
		return order[0], false
	}
	return model.MustNew(model.Def[locksState]{
		Threads: []string{"t0", "t1"},
		Init:    func(*locksState) {},
		Step: func(s *locksState, t int, x *model.Exec) {
			if s.PC[t] >= 4*rounds {
				x.Done()
				return
			}
			mu, lock := next(s, t)
			if lock {
				// What the thread waits for if the mutex is held.
				x.Label(lockNames[mu])
				if !x.Lock(&s.Mu[mu], lockNames[mu]) {
					return
				}
				x.Labelf("mutex_lock(%s)", lockNames[mu])
			} else {
				x.Unlock(&s.Mu[mu], lockNames[mu])
				x.Labelf("mutex_unlock(%s)", lockNames[mu])
			}
			s.PC[t]++
		},
		Vars: func(s *locksState) []model.Var {
			return []model.Var{{Name: "a", Value: s.Mu[0].String()}, {Name: "b", Value: s.Mu[1].String()},
				{Name: "pc[0]", Value: fmt.Sprint(s.PC[0])}, {Name: "pc[1]", Value: fmt.Sprint(s.PC[1])}}
		},
	})
}

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
