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
// set a per-thread flag word. The canonical key sorts the threads' local
// states together with their flag words, so states that differ by a
// permutation of threads share a key.
func symRace(n int, atomic bool) model.Machine {
	last := uint8(3)
	if atomic {
		last = 2
	}
	names := make([]string, n)
	words := []string{"count"}
	for t := range names {
		names[t] = fmt.Sprint("T", t)
		words = append(words, fmt.Sprintf("flag%d", t))
	}
	return model.MustNew(model.Def[symState]{
		Threads: names,
		Init: func(s *symState) {
			s.Mem = model.NewMem(words...)
			s.PC = make([]uint8, n)
			s.Reg = make([]uint64, n)
		},
		Step: func(s *symState, t int, x *model.Exec) {
			switch pc := s.PC[t]; {
			case pc == last:
				x.Done()
				return
			case pc == last-1:
				x.Store(s.Mem, model.Addr(1+t), 1)
				x.Label("flag")
			case atomic:
				x.FetchAdd(s.Mem, 0, 1)
				x.Label("fetch-add")
			case pc == 0:
				s.Reg[t] = x.Load(s.Mem, 0)
				x.Label("load")
			default:
				x.Store(s.Mem, 0, s.Reg[t]+1)
				x.Label("store")
			}
			s.PC[t]++
		},
		Invariants: []model.InvariantOf[symState]{{Name: "no-lost-update", Check: func(s *symState) string {
			for t := range s.PC {
				if s.Mem.Peek(model.Addr(1+t)) == 0 {
					return ""
				}
			}
			if got := s.Mem.Peek(0); got != uint64(n) {
				return fmt.Sprintf("count=%d after %d increments", got, n)
			}
			return ""
		}}},
		Vars: func(s *symState) []model.Var { return s.Mem.Vars() },
		Canonical: func(s *symState, b []byte) []byte {
			locals := make([][3]byte, n)
			for t := range locals {
				locals[t] = [3]byte{s.PC[t], byte(s.Reg[t]), byte(s.Mem.Peek(model.Addr(1 + t)))}
			}
			slices.SortFunc(locals, func(a, b [3]byte) int { return slices.Compare(a[:], b[:]) })
			b = append(b, byte(s.Mem.Peek(0)))
			for _, l := range locals {
				b = append(b, l[:]...)
			}
			return b
		},
	})
}

type symState struct {
	Mem model.Mem // word 0: counter; word 1+t: thread t's flag
	PC  []uint8
	Reg []uint64
}

func TestSymmetryReducesStatesAndKeepsVerdicts(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		m := symRace(4, atomic)
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
var many = model.MustNew(model.Def[manyState]{
	Threads: []string{"user", "kernel"},
	Init:    func(*manyState) {},
	Step: func(s *manyState, t int, x *model.Exec) {
		if s.Done[t] {
			x.Done()
			return
		}
		if t == 0 {
			x.Choose(50)
		}
		s.Done[t] = true
		x.Label("step")
	},
	Invariants: []model.InvariantOf[manyState]{{Name: "kernel-last", Check: func(s *manyState) string {
		if s.Done[1] && !s.Done[0] {
			return "the kernel thread ran first"
		}
		return ""
	}}},
	Vars: func(*manyState) []model.Var { return nil },
})

type manyState struct{ Done [2]bool }

func TestRandomThreadsPicksThreadsUniformly(t *testing.T) {
	plain, _ := explorer.Explore(many, explorer.Options{Strategy: explorer.Random, Seed: 1, Runs: 10})
	threads, _ := explorer.Explore(many, explorer.Options{Strategy: explorer.RandomThreads, Seed: 1, Runs: 10})
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
