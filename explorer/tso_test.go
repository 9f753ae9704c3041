package explorer_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// sbLitmus is the store-buffering litmus test as a machine: P0 runs
// x = 1; r0 = y and P1 runs y = 1; r1 = x, each with an optional fence
// between its store and its load. The invariant "sb" forbids the outcome
// r0 = r1 = 0, which sequential consistency never reaches and x86-TSO
// does. Threads share nothing outside the memory layer, so every pair of
// steps of different threads is left to footprints (model.Independence).
type sbLitmus struct{ fence bool }

type sbState struct {
	mem  model.Mem
	pc   [2]uint8
	regs [2]uint64
}

func (s *sbState) Clone() model.State { c := *s; c.mem = s.mem.Clone(); return &c }
func (s *sbState) AppendKey(b []byte) []byte {
	return append(s.mem.AppendKey(b), s.pc[0], s.pc[1], byte(s.regs[0]), byte(s.regs[1]))
}
func (s *sbState) Vars() []model.Var {
	return append(s.mem.Vars(), model.Var{Name: "r0", Value: fmt.Sprint(s.regs[0])}, model.Var{Name: "r1", Value: fmt.Sprint(s.regs[1])})
}

func (l sbLitmus) len() uint8 {
	if l.fence {
		return 3
	}
	return 2
}
func (l sbLitmus) Threads() []string { return []string{"P0", "P1"} }
func (l sbLitmus) Init() model.State { return &sbState{mem: model.NewMem("x", "y")} }
func (l sbLitmus) Metrics() []string { return nil }
func (l sbLitmus) Spec() *model.Spec { return nil }
func (l sbLitmus) Invariants() []model.Invariant {
	return []model.Invariant{{Name: "sb", Check: func(ms model.State) string {
		s := ms.(*sbState)
		if s.pc[0] == l.len() && s.pc[1] == l.len() && s.regs[0] == 0 && s.regs[1] == 0 {
			return "both loads read 0: each store was still in its thread's store buffer"
		}
		return ""
	}}}
}
func (l sbLitmus) Status(s model.State, t int) model.Status {
	return model.Status{Done: s.(*sbState).pc[t] == l.len()}
}
func (l sbLitmus) Enabled(s model.State, buf []model.Choice) []model.Choice {
	for t := 0; t < 2; t++ {
		if !l.Status(s, t).Done {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}
func (l sbLitmus) Step(ms model.State, c model.Choice, x *model.Exec) model.State {
	s := ms.Clone().(*sbState)
	t := c.Thread
	mine, other := model.Addr(t), model.Addr(1-t)
	pc := s.pc[t]
	s.pc[t]++
	switch {
	case pc == 0:
		x.Store(s.mem, mine, 1)
		x.Labelf("%s = 1", s.mem.Name(mine))
	case pc == 1 && l.fence:
		x.Fence() // no memory given: WithTSO drains at the end of the step
		x.Label("mfence")
	default:
		s.regs[t] = x.Load(s.mem, other)
		x.Labelf("r%d = %s (%d)", t, s.mem.Name(other), s.regs[t])
	}
	return s
}
func (l sbLitmus) Independent(model.State, model.Choice, model.Choice) bool { return true }

func sbTSO(l sbLitmus) model.Machine {
	return model.WithTSO(l, func(s model.State) *model.Mem { return &s.(*sbState).mem })
}

func TestTSOStoreBufferingLitmus(t *testing.T) {
	for _, c := range []struct {
		name    string
		m       model.Machine
		verdict explorer.Verdict
		states  int64
	}{
		{"SC", sbLitmus{}, explorer.OK, 13},
		{"SC+mfence", sbLitmus{fence: true}, explorer.OK, 22},
		{"TSO", sbTSO(sbLitmus{}), explorer.Violation, 0},
		{"TSO+mfence", sbTSO(sbLitmus{fence: true}), explorer.OK, 31},
	} {
		for _, strategy := range []string{explorer.BFS, explorer.DFS} {
			r, err := explorer.Explore(c.m, explorer.Options{Strategy: strategy})
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != c.verdict {
				t.Errorf("%s %s: verdict %s (%v), want %s", c.name, strategy, r.Verdict, r.Violation, c.verdict)
				continue
			}
			if strategy == explorer.BFS && c.verdict == explorer.OK && r.Stats.States != c.states {
				t.Errorf("%s bfs: %d states, want %d", c.name, r.Stats.States, c.states)
			}
		}
	}

	// The shortest counterexample: both stores buffered, both loads read
	// memory.
	r, err := explorer.Explore(sbTSO(sbLitmus{}), explorer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"x = 1", "r0 = y (0)", "y = 1", "r1 = x (0)"}
	if r.Violation == nil || r.Violation.Property != "sb" || !reflect.DeepEqual(r.Labels, want) {
		t.Fatalf("bfs: %v %q, want sb by %q", r.Violation, r.Labels, want)
	}
	ex, err := explorer.Execute(sbTSO(sbLitmus{}), r.Schedule)
	if err != nil || ex.Violation == nil {
		t.Fatalf("replay: %v %v", err, ex)
	}
	if got := fmt.Sprint(ex.Steps[0].Changed); got != "[{sb[P0] {x=1}}]" {
		t.Errorf("the buffered store changes %s, want only sb[P0]", got)
	}
}

// Message passing: x = 1; y = 1 || r0 = y; r1 = x. TSO keeps stores in
// order, so r0 = 1, r1 = 0 stays unreachable; the commits are steps the
// explorer reaches and labels.
func TestTSOMessagePassing(t *testing.T) {
	m := model.WithTSO(mpLitmus{}, func(s model.State) *model.Mem { return &s.(*sbState).mem })
	r, err := explorer.Explore(m, explorer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != explorer.OK || r.Stats.States != 23 {
		t.Fatalf("mp under TSO: %s %v, %d states; want ok, 23 states", r.Verdict, r.Violation, r.Stats.States)
	}
	// A commit step, as the explorer's executions label it.
	ex, err := explorer.Execute(m, []model.Choice{{Thread: 0}, {Thread: 0}, {Thread: 2, Alt: 0}})
	if err != nil || ex.Steps[2].Label != "store buffer: P0 commits x = 1" || ex.Violation != nil {
		t.Fatalf("commit step: %v %+v", err, ex.Steps)
	}
	if !strings.Contains(fmt.Sprint(ex.Steps[2].Footprint), "commit x") {
		t.Errorf("commit footprint %v", ex.Steps[2].Footprint)
	}
}

type mpLitmus struct{}

func (mpLitmus) Threads() []string { return []string{"P0", "P1"} }
func (mpLitmus) Init() model.State { return &sbState{mem: model.NewMem("x", "y")} }
func (mpLitmus) Metrics() []string { return nil }
func (mpLitmus) Spec() *model.Spec { return nil }
func (mpLitmus) Invariants() []model.Invariant {
	return []model.Invariant{{Name: "mp", Check: func(ms model.State) string {
		s := ms.(*sbState)
		if s.pc[1] == 2 && s.regs[0] == 1 && s.regs[1] == 0 {
			return "saw y = 1 and then x = 0"
		}
		return ""
	}}}
}
func (mpLitmus) Status(s model.State, t int) model.Status {
	return model.Status{Done: s.(*sbState).pc[t] == 2}
}
func (l mpLitmus) Enabled(s model.State, buf []model.Choice) []model.Choice {
	for t := 0; t < 2; t++ {
		if !l.Status(s, t).Done {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}
func (mpLitmus) Step(ms model.State, c model.Choice, x *model.Exec) model.State {
	s := ms.Clone().(*sbState)
	pc := s.pc[c.Thread]
	s.pc[c.Thread]++
	a := model.Addr(pc) // P0 stores x then y; P1 loads y then x
	if c.Thread == 0 {
		x.Store(s.mem, a, 1)
		x.Labelf("%s = 1", s.mem.Name(a))
		return s
	}
	a = 1 - a
	s.regs[pc] = x.Load(s.mem, a)
	x.Labelf("r%d = %s (%d)", pc, s.mem.Name(a), s.regs[pc])
	return s
}
