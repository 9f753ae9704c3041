package rt_test

import (
	"fmt"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// counterModel is the model of counter(false): the same threads, the
// same steps and the same labels (one vocabulary from model to code, package model), so that a
// counterexample found on the model replays on the real code.
var counterModel = model.MustNew(model.Def[counterModelState]{
	Threads:    []string{"A", "B", "check"},
	Assertions: []string{"no-lost-update"},
	Init:       func(s *counterModelState) { s.Mem = model.NewMem("count") },
	Step: func(s *counterModelState, t int, x *model.Exec) {
		switch pc := s.PC[t]; {
		case t < 2 && pc == 2, t == 2 && pc == 3:
			x.Done()
			return
		case t == 2 && pc < 2:
			joined := []string{"A", "B"}[pc]
			if s.PC[pc] < 2 {
				x.Block()
				x.Label(joined)
				return
			}
			x.Label("check: join " + joined)
		case t == 2:
			x.Label("check: load count")
			if v := x.Load(s.Mem, 0); v != 2 {
				x.Fail("no-lost-update", "both increments done but count=%d", v)
			}
		case pc == 0:
			x.Label("counter_inc: load")
			s.Reg[t] = x.Load(s.Mem, 0)
		default:
			x.Label("counter_inc: store")
			x.Store(s.Mem, 0, s.Reg[t]+1)
		}
		s.PC[t]++
	},
	Vars: func(s *counterModelState) []model.Var {
		return append(s.Mem.Vars(), model.Var{Name: "pc", Value: fmt.Sprint(s.PC)})
	},
})

type counterModelState struct {
	Mem model.Mem
	PC  [3]uint8 // A, B: 0 load, 1 store, 2 done; check: 0 join A, 1 join B, 2 load, 3 done
	Reg [2]uint64
}

// TestModelCounterexampleReplaysOnTheRealCode is principle 3 end to end:
// bfs finds the shortest lost update on the model, and its schedule, with
// its labels checked step by step, reproduces the same violation on the
// real code.
func TestModelCounterexampleReplaysOnTheRealCode(t *testing.T) {
	res, err := explorer.Explore(counterModel, explorer.Options{Strategy: explorer.BFS})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation == nil {
		t.Fatalf("the model has no lost update: %s", res)
	}
	r := rt.Controlled(rt.ReplayExpect(res.Schedule, res.Labels), 100, counter(false))
	if r.Err != nil || r.Violation == nil || *r.Violation != *res.Violation {
		t.Fatalf("model: %s\nreal code:\n%s", res, r)
	}
	// And back: the real code's counterexample is a model schedule.
	sum := explore(t, rt.DFS(2), 100, 100, counter(false))
	ex, err := explorer.Execute(counterModel, sum.Failure.Schedule)
	if err != nil || ex.Violation == nil || ex.Violation.Property != "no-lost-update" {
		t.Fatalf("real schedule on the model: %v, %+v", err, ex)
	}
	for i, s := range ex.Steps {
		if s.Label != sum.Failure.Steps[i].Label {
			t.Errorf("step %d: model %q, real %q", i+1, s.Label, sum.Failure.Steps[i].Label)
		}
	}
}
