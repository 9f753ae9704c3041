package explorer_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// symRace is n interchangeable threads that each increment a shared
// counter, atomically (fetch-add) or racily (load, then store), and then
// set a per-thread flag word. CanonicalKey sorts the threads' local
// states together with their flag words, so states that differ by a
// permutation of threads share a key.
type symRace struct {
	n      int
	atomic bool
}

type symState struct {
	mem model.Mem // word 0: counter; word 1+t: thread t's flag
	pc  []uint8
	reg []uint64
}

func (s *symState) Clone() model.State {
	return &symState{mem: s.mem.Clone(), pc: slices.Clone(s.pc), reg: slices.Clone(s.reg)}
}
func (s *symState) AppendKey(b []byte) []byte {
	b = s.mem.AppendKey(b)
	for t := range s.pc {
		b = append(b, s.pc[t], byte(s.reg[t]))
	}
	return b
}
func (s *symState) Vars() []model.Var { return s.mem.Vars() }

func (r symRace) CanonicalKey(st model.State, b []byte) []byte {
	s := st.(*symState)
	locals := make([][3]byte, r.n)
	for t := range locals {
		locals[t] = [3]byte{s.pc[t], byte(s.reg[t]), byte(s.mem.Peek(model.Addr(1 + t)))}
	}
	slices.SortFunc(locals, func(a, b [3]byte) int { return slices.Compare(a[:], b[:]) })
	b = append(b, byte(s.mem.Peek(0)))
	for _, l := range locals {
		b = append(b, l[:]...)
	}
	return b
}

func (r symRace) Threads() []string {
	out := make([]string, r.n)
	for i := range out {
		out[i] = fmt.Sprint("T", i)
	}
	return out
}
func (r symRace) Init() model.State {
	names := []string{"count"}
	for t := 0; t < r.n; t++ {
		names = append(names, fmt.Sprintf("flag%d", t))
	}
	return &symState{mem: model.NewMem(names...), pc: make([]uint8, r.n), reg: make([]uint64, r.n)}
}
func (r symRace) Metrics() []string { return nil }
func (r symRace) Spec() *model.Spec { return nil }
func (r symRace) last() uint8 {
	if r.atomic {
		return 2
	}
	return 3
}
func (r symRace) Status(s model.State, t int) model.Status {
	return model.Status{Done: s.(*symState).pc[t] == r.last()}
}
func (r symRace) Enabled(s model.State, buf []model.Choice) []model.Choice {
	for t, pc := range s.(*symState).pc {
		if pc < r.last() {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}
func (r symRace) Step(s model.State, c model.Choice, x *model.Exec) model.State {
	n := s.Clone().(*symState)
	t := c.Thread
	switch pc := n.pc[t]; {
	case pc == r.last()-1:
		x.Store(n.mem, model.Addr(1+t), 1)
		x.Label("flag")
	case r.atomic:
		x.FetchAdd(n.mem, 0, 1)
		x.Label("fetch-add")
	case pc == 0:
		n.reg[t] = x.Load(n.mem, 0)
		x.Label("load")
	default:
		x.Store(n.mem, 0, n.reg[t]+1)
		x.Label("store")
	}
	n.pc[t]++
	return n
}
func (r symRace) Invariants() []model.Invariant {
	return []model.Invariant{{Name: "no-lost-update", Check: func(st model.State) string {
		s := st.(*symState)
		for t := range s.pc {
			if s.mem.Peek(model.Addr(1+t)) == 0 {
				return ""
			}
		}
		if got := s.mem.Peek(0); got != uint64(r.n) {
			return fmt.Sprintf("count=%d after %d increments", got, r.n)
		}
		return ""
	}}}
}

func TestSymmetryReducesStatesAndKeepsVerdicts(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		m := symRace{n: 4, atomic: atomic}
		for _, strategy := range []string{explorer.BFS, explorer.DFS} {
			full, err := explorer.Explore(m, explorer.Options{Strategy: strategy})
			if err != nil {
				t.Fatal(err)
			}
			sym, err := explorer.Explore(m, explorer.Options{Strategy: strategy, Symmetry: true})
			if err != nil {
				t.Fatal(err)
			}
			if full.Verdict != sym.Verdict {
				t.Errorf("atomic=%v %s: symmetry says %s, full %s", atomic, strategy, sym, full)
			}
			if atomic && sym.Stats.States >= full.Stats.States {
				t.Errorf("atomic %s: symmetry %d states, full %d", strategy, sym.Stats.States, full.Stats.States)
			}
			if atomic {
				// 4 threads with local states in {0,1,2} for pc, flag
				// implied: orbits are multisets of 4 pcs from 3 values.
				if strategy == explorer.BFS && sym.Stats.States != 15 {
					t.Errorf("symmetric bfs: %d states, want 15 (multisets)", sym.Stats.States)
				}
			}
			if strategy == explorer.BFS && !atomic && len(sym.Schedule) != len(full.Schedule) {
				t.Errorf("shortest counterexample: %d steps with symmetry, %d without", len(sym.Schedule), len(full.Schedule))
			}
		}
	}
	if _, err := explorer.Explore(counterRace(2), explorer.Options{Symmetry: true}); err == nil {
		t.Error("symmetry accepted for a machine that does not implement model.Symmetric")
	}
}

func TestPCTIsReproducibleAndFindsTheRace(t *testing.T) {
	m := counterRace(3)
	var first []model.Choice
	for i := 0; i < 2; i++ {
		r, err := explorer.Explore(m, explorer.Options{Strategy: explorer.PCT, Seed: 3, Runs: 200, Depth: 2})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != explorer.Violation {
			t.Fatalf("pct did not find the lost update: %s", r)
		}
		if i == 0 {
			first = r.Schedule
		} else if fmt.Sprint(first) != fmt.Sprint(r.Schedule) {
			t.Fatalf("same seed, different schedules: %v vs %v", first, r.Schedule)
		}
	}
	// Depth 1 has no change point: each walk runs threads to completion in
	// priority order, which never loses an update.
	r, err := explorer.Explore(m, explorer.Options{Strategy: explorer.PCT, Seed: 3, Runs: 50, Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != explorer.Bounded || r.Stats.Executions != 50 {
		t.Errorf("pct depth 1: %s", r)
	}
}

// many is a thread with many alternatives next to a thread with one step:
// the uniform-over-choices picker rarely runs the single thread first, the
// thread-first picker half of the time.
type many struct{}
type manyState struct{ done [2]bool }

func (s *manyState) Clone() model.State { c := *s; return &c }
func (s *manyState) AppendKey(b []byte) []byte {
	k := byte(0)
	for t, d := range s.done {
		if d {
			k |= 1 << t
		}
	}
	return append(b, k)
}
func (s *manyState) Vars() []model.Var { return nil }
func (many) Threads() []string         { return []string{"user", "kernel"} }
func (many) Init() model.State         { return &manyState{} }
func (many) Metrics() []string         { return nil }
func (many) Spec() *model.Spec         { return nil }
func (many) Status(s model.State, t int) model.Status {
	return model.Status{Done: s.(*manyState).done[t]}
}
func (many) Invariants() []model.Invariant {
	return []model.Invariant{{Name: "kernel-last", Check: func(s model.State) string {
		ms := s.(*manyState)
		if ms.done[1] && !ms.done[0] {
			return "the kernel thread ran first"
		}
		return ""
	}}}
}
func (many) Enabled(s model.State, buf []model.Choice) []model.Choice {
	ms := s.(*manyState)
	if !ms.done[0] {
		for a := 0; a < 50; a++ {
			buf = append(buf, model.Choice{Thread: 0, Alt: a})
		}
	}
	if !ms.done[1] {
		buf = append(buf, model.Choice{Thread: 1})
	}
	return buf
}
func (many) Step(s model.State, c model.Choice, x *model.Exec) model.State {
	n := s.Clone().(*manyState)
	n.done[c.Thread] = true
	x.Label("step")
	return n
}

func TestRandomThreadsPicksThreadsUniformly(t *testing.T) {
	plain, _ := explorer.Explore(many{}, explorer.Options{Strategy: explorer.Random, Seed: 1, Runs: 10})
	threads, _ := explorer.Explore(many{}, explorer.Options{Strategy: explorer.RandomThreads, Seed: 1, Runs: 10})
	if threads.Verdict != explorer.Violation || threads.Stats.Executions > 4 {
		t.Errorf("random-threads: %s after %d walks, want the kernel-first order within a few walks", threads, threads.Stats.Executions)
	}
	if plain.Verdict == explorer.Violation && plain.Stats.Executions <= threads.Stats.Executions {
		t.Logf("plain random was lucky: %d walks", plain.Stats.Executions)
	}
}

// A preemption bound cuts the interleavings that need more preemptions;
// the verdict then says Bounded, and the lost update (which needs one
// preemption) is found with a bound of one but not of zero.
func TestPreemptionBound(t *testing.T) {
	m := counterRace(2)
	r0, err := explorer.Explore(m, explorer.Options{Strategy: explorer.DFS, Preemptions: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r0.Verdict != explorer.Bounded {
		t.Errorf("preemptions=0: %s, want bounded", r0)
	}
	r1, err := explorer.Explore(m, explorer.Options{Strategy: explorer.DFS, Preemptions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r1.Verdict != explorer.Violation {
		t.Errorf("preemptions=1: %s, want the lost update", r1)
	}
}
