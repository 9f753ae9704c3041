package rt_test

import (
	"fmt"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// counterModel is the model of counter(false): the same threads, the
// same steps and the same labels (DESIGN.md principle 3), so that a
// counterexample found on the model replays on the real code.
type counterModel struct{}

type counterModelState struct {
	mem model.Mem
	pc  [3]uint8 // A, B: 0 load, 1 store, 2 done; check: 0 join A, 1 join B, 2 load, 3 done
	reg [2]uint64
}

func (s *counterModelState) Clone() model.State {
	c := *s
	c.mem = s.mem.Clone()
	return &c
}
func (s *counterModelState) AppendKey(b []byte) []byte {
	return append(s.mem.AppendKey(b), s.pc[0], s.pc[1], s.pc[2], byte(s.reg[0]), byte(s.reg[1]))
}
func (s *counterModelState) Vars() []model.Var {
	return append(s.mem.Vars(), model.Var{Name: "pc", Value: fmt.Sprint(s.pc)})
}

func (counterModel) Threads() []string             { return []string{"A", "B", "check"} }
func (counterModel) Init() model.State             { return &counterModelState{mem: model.NewMem("count")} }
func (counterModel) Metrics() []string             { return nil }
func (counterModel) Spec() *model.Spec             { return nil }
func (counterModel) Invariants() []model.Invariant { return nil }
func (counterModel) Status(s model.State, t int) model.Status {
	done := uint8(2)
	if t == 2 {
		done = 3
	}
	return model.Status{Done: s.(*counterModelState).pc[t] == done}
}
func (counterModel) Enabled(st model.State, buf []model.Choice) []model.Choice {
	s := st.(*counterModelState)
	for t := 0; t < 2; t++ {
		if s.pc[t] < 2 {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	if pc := s.pc[2]; pc == 2 || (pc < 2 && s.pc[pc] == 2) {
		buf = append(buf, model.Choice{Thread: 2})
	}
	return buf
}
func (counterModel) Step(st model.State, c model.Choice, x *model.Exec) model.State {
	s := st.Clone().(*counterModelState)
	t := c.Thread
	switch {
	case t == 2 && s.pc[2] < 2:
		x.Label("check: join " + []string{"A", "B"}[s.pc[2]])
	case t == 2:
		x.Label("check: load count")
		if v := x.Load(s.mem, 0); v != 2 {
			x.Fail("no-lost-update", "both increments done but count=%d", v)
		}
	case s.pc[t] == 0:
		x.Label("counter_inc: load")
		s.reg[t] = x.Load(s.mem, 0)
	default:
		x.Label("counter_inc: store")
		x.Store(s.mem, 0, s.reg[t]+1)
	}
	s.pc[t]++
	return s
}

// TestModelCounterexampleReplaysOnTheRealCode is principle 3 end to end:
// bfs finds the shortest lost update on the model, and its schedule, with
// its labels checked step by step, reproduces the same violation on the
// real code.
func TestModelCounterexampleReplaysOnTheRealCode(t *testing.T) {
	res, err := explorer.Explore(counterModel{}, explorer.Options{Strategy: explorer.BFS})
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
	ex, err := explorer.Execute(counterModel{}, sum.Failure.Schedule)
	if err != nil || ex.Violation == nil || ex.Violation.Property != "no-lost-update" {
		t.Fatalf("real schedule on the model: %v, %+v", err, ex)
	}
	for i, s := range ex.Steps {
		if s.Label != sum.Failure.Steps[i].Label {
			t.Errorf("step %d: model %q, real %q", i+1, s.Label, sum.Failure.Steps[i].Label)
		}
	}
}
