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
func sbLitmus(fence bool) model.Machine {
	last := uint8(2)
	if fence {
		last = 3
	}
	return model.MustNew(model.Def[sbState]{
		Threads: []string{"P0", "P1"},
		Init:    func(s *sbState) { s.Mem = model.NewMem("x", "y") },
		Step: func(s *sbState, t int, x *model.Exec) {
			mine, other := model.Addr(t), model.Addr(1-t)
			pc := s.PC[t]
			if pc == last {
				x.Done()
				return
			}
			s.PC[t]++
			switch {
			case pc == 0:
				x.Store(s.Mem, mine, 1)
				x.Labelf("%s = 1", s.Mem.Name(mine))
			case pc == 1 && fence:
				x.Fence() // no memory given: WithTSO drains at the end of the step
				x.Label("mfence")
			default:
				s.Regs[t] = x.Load(s.Mem, other)
				x.Labelf("r%d = %s (%d)", t, s.Mem.Name(other), s.Regs[t])
			}
		},
		Invariants: []model.InvariantOf[sbState]{{Name: "sb", Check: func(s *sbState) string {
			if s.PC[0] == last && s.PC[1] == last && s.Regs[0] == 0 && s.Regs[1] == 0 {
				return "both loads read 0: each store was still in its thread's store buffer"
			}
			return ""
		}}},
		Vars:        sbVars,
		Independent: func(*sbState, model.Choice, model.Choice) bool { return true },
	})
}

type sbState struct {
	Mem  model.Mem
	PC   [2]uint8
	Regs [2]uint64
}

func sbVars(s *sbState) []model.Var {
	return append(s.Mem.Vars(), model.Var{Name: "r0", Value: fmt.Sprint(s.Regs[0])}, model.Var{Name: "r1", Value: fmt.Sprint(s.Regs[1])})
}

func sbMem(s model.State) *model.Mem { return &model.StateOf[sbState](s).Mem }

func sbTSO(m model.Machine) model.Machine { return model.WithTSO(m, sbMem) }

func TestTSOStoreBufferingLitmus(t *testing.T) {
	for _, c := range []struct {
		name    string
		m       model.Machine
		verdict explorer.Verdict
		states  int64
	}{
		{"SC", sbLitmus(false), explorer.OK, 13},
		{"SC+mfence", sbLitmus(true), explorer.OK, 22},
		{"TSO", sbTSO(sbLitmus(false)), explorer.Violation, 0},
		{"TSO+mfence", sbTSO(sbLitmus(true)), explorer.OK, 31},
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
	r, err := explorer.Explore(sbTSO(sbLitmus(false)), explorer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"x = 1", "r0 = y (0)", "y = 1", "r1 = x (0)"}
	if r.Violation == nil || r.Violation.Property != "sb" || !reflect.DeepEqual(r.Labels, want) {
		t.Fatalf("bfs: %v %q, want sb by %q", r.Violation, r.Labels, want)
	}
	ex, err := explorer.Execute(sbTSO(sbLitmus(false)), r.Schedule)
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
	m := model.WithTSO(mpLitmus, sbMem)
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

var mpLitmus = model.MustNew(model.Def[sbState]{
	Threads: []string{"P0", "P1"},
	Init:    func(s *sbState) { s.Mem = model.NewMem("x", "y") },
	Step: func(s *sbState, t int, x *model.Exec) {
		pc := s.PC[t]
		if pc == 2 {
			x.Done()
			return
		}
		s.PC[t]++
		a := model.Addr(pc) // P0 stores x then y; P1 loads y then x
		if t == 0 {
			x.Store(s.Mem, a, 1)
			x.Labelf("%s = 1", s.Mem.Name(a))
			return
		}
		a = 1 - a
		s.Regs[pc] = x.Load(s.Mem, a)
		x.Labelf("r%d = %s (%d)", pc, s.Mem.Name(a), s.Regs[pc])
	},
	Invariants: []model.InvariantOf[sbState]{{Name: "mp", Check: func(s *sbState) string {
		if s.PC[1] == 2 && s.Regs[0] == 1 && s.Regs[1] == 0 {
			return "saw y = 1 and then x = 0"
		}
		return ""
	}}},
	Vars: sbVars,
})
