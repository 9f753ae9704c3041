package model_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

func memOfLitmus(s model.State) *model.Mem { return &model.StateOf[litmusState](s).Mem }

// TestARMv8NoPromises: without promises, ARMv8 keeps every reordering of
// the small tests but load buffering.
func TestARMv8NoPromises(t *testing.T) {
	for _, c := range smallTests {
		want := c.want
		if c.noProm != nil {
			want = c.noProm
		}
		m := model.WithARMv8NoPromises(litmus(c.progs), memOfLitmus)
		if got := armOutcomes(t, m); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s under ARMv8 without promises: outcomes %v, want %v", c.name, got, want)
		}
		if n := len(m.Threads()); n != 2 {
			t.Errorf("%s: %d threads, want the machine's 2 (no promise thread)", c.name, n)
		}
	}
}

// TestARMv8CompactionKeepsOutcomes: compaction changes no outcome and
// never adds states, on random loop-free programs of stores, loads and
// fences over three words, against the same machine uncompacted.
func TestARMv8CompactionKeepsOutcomes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ops := []func() insn{
		func() insn { return st(model.Addr(rng.IntN(2)), uint64(1+rng.IntN(2))) },
		func() insn { return ld(rng.IntN(2), model.Addr(rng.IntN(2))) },
		func() insn { return fence() },
	}
	fewer := 0
	for i := 0; i < 150; i++ {
		progs := make([][]insn, 2)
		for p := range progs {
			for k := 0; k < 2+rng.IntN(4); k++ {
				in := ops[rng.IntN(len(ops))]()
				if in.op == 'l' {
					in.reg = 2*p + in.reg
				}
				progs[p] = append(progs[p], in)
			}
		}
		on := model.WithARMv8NoPromises(litmus(progs), memOfLitmus)
		off := model.WithARMv8NoPromisesUncompacted(litmus(progs), memOfLitmus)
		a, na := finals(t, on)
		b, nb := finals(t, off)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("program %v: outcomes compacted %v, uncompacted %v", progs, a, b)
		}
		if na > nb {
			t.Fatalf("program %v: %d states compacted, %d uncompacted", progs, na, nb)
		}
		if na < nb {
			fewer++
		}
	}
	if fewer == 0 {
		t.Error("compaction merged no states in any program: it does nothing")
	}
}

// finals lists the registers and memory of every terminal state, and
// counts the states.
func finals(t *testing.T, m model.Machine) ([]string, int) {
	t.Helper()
	out := map[string]bool{}
	n := search(t, m, func(s model.State, _ []bool) {
		ls := model.StateOf[litmusState](s)
		out[fmt.Sprintf("%v x=%d y=%d", ls.Regs, ls.Mem.Peek(X), ls.Mem.Peek(Y))] = true
	})
	return sortedKeys(out), n
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// counter is two threads that, for ever, take a lock, read a counter,
// and write it back incremented modulo 3: the lock's Mutex and, with
// words, its lock word (LockWord, UnlockWord).
type counter struct {
	Mem  model.Mem
	Lock model.Mutex
	PC   [2]uint8
	R    [2]uint8
	Last uint8 // the value the last holder wrote (the model's own record)
}

func counterMachine(words bool) model.Machine {
	const c, l = 0, 1
	return model.MustNew(model.Def[counter]{
		Threads: []string{"T0", "T1"},
		Init:    func(s *counter) { s.Mem = model.NewMem("c", "lock") },
		Step: func(s *counter, t int, x *model.Exec) {
			switch s.PC[t] {
			case 0:
				if words {
					if !x.LockWord(s.Mem, l, &s.Lock, "lock") {
						return
					}
				} else if !x.Lock(&s.Lock, "lock") {
					return
				}
			case 1:
				s.R[t] = uint8(x.Load(s.Mem, c))
				x.Assert(s.R[t] == s.Last, "stale", "T%d reads c = %d under the lock, the last holder wrote %d", t, s.R[t], s.Last)
			case 2:
				s.Last = (s.R[t] + 1) % 3
				x.Store(s.Mem, c, uint64(s.Last))
			case 3:
				if words {
					x.UnlockWord(s.Mem, l, &s.Lock, "lock")
				} else {
					x.Unlock(&s.Lock, "lock")
				}
			}
			s.PC[t] = (s.PC[t] + 1) % 4
		},
		Assertions: []string{"stale"},
	})
}

func memOfCounter(s model.State) *model.Mem { return &model.StateOf[counter](s).Mem }

// TestARMv8LockWords: two threads loop for ever on a lock-protected
// counter. With the lock words the critical sections are ordered and a
// holder always reads what the last one wrote; compaction keeps the loop's
// state space finite (each state's messages are those still readable).
// With the Mutex alone nothing orders them under ARMv8, and a holder
// reads a stale counter: what the lock words are for.
func TestARMv8LockWords(t *testing.T) {
	for _, words := range []bool{true, false} {
		m := model.WithARMv8NoPromises(counterMachine(words), memOfCounter)
		seen := map[string]bool{}
		stack := []model.State{m.Init()}
		stale := false
		// Breadth first: without lock words the state space has no end,
		// and the stale read is a few steps from the start.
		for len(stack) > 0 && len(seen) < 20000 && !stale {
			s := stack[0]
			stack = stack[1:]
			k := string(s.AppendKey(nil))
			if seen[k] {
				continue
			}
			seen[k] = true
			succs, _, _ := modeltest.Successors(m, s)
			for _, n := range succs {
				if n.Breach != "" {
					t.Fatalf("words=%v: breach %s", words, n.Breach)
				}
				if n.Violation != nil {
					if n.Violation.Property != "stale" {
						t.Fatalf("words=%v: %v", words, n.Violation)
					}
					stale = true
					continue
				}
				stack = append(stack, n.State)
			}
		}
		switch {
		case words && len(stack) > 0:
			t.Fatalf("with lock words the loop has more than %d states: compaction does not bound it", len(seen))
		case words && stale:
			t.Error("with lock words a holder read a stale counter")
		case !words && !stale:
			t.Error("with the Mutex alone no holder read a stale counter: the test shows nothing")
		}
		if words {
			t.Logf("lock words: %d states", len(seen))
		}
	}
}

// TestARMv8ParkAndExit: a parked thread may only re-take its lock, and an
// exited one access nothing.
func TestARMv8ParkAndExit(t *testing.T) {
	m := model.NewMem("c", "lock")
	m.EnableARMv8("T0")
	x := model.NewExec(0)
	x.Reset(0, -1)
	x.ReleaseWordAndPark(m, 1)
	x.Load(m, 0)
	if v := x.Violation(); v == nil || v.Property != "memory" {
		t.Errorf("a load while parked: %v, want a memory violation", v)
	}
	x.Reset(0, -1)
	x.AcquireWord(m, 1)
	x.Load(m, 0)
	if v := x.Violation(); v != nil {
		t.Errorf("a load after re-taking the lock: %v", v)
	}
	x.Reset(0, -1)
	x.ExitMem(m)
	x.Store(m, 0, 1)
	if v := x.Violation(); v == nil || v.Property != "memory" {
		t.Errorf("a store after ExitMem: %v, want a memory violation", v)
	}
}

// TestARMv8OmitsProgress: WithARMv8NoPromises leaves the progress
// properties out and says so, through Without too; WithARMv8 keeps them.
func TestARMv8OmitsProgress(t *testing.T) {
	type st struct{ Mem model.Mem }
	inner := model.MustNew(model.Def[st]{
		Threads:    []string{"T"},
		Init:       func(s *st) { s.Mem = model.NewMem("x") },
		Step:       func(s *st, _ int, x *model.Exec) { x.Done() },
		Invariants: []model.InvariantOf[st]{{Name: "inv", Check: func(*st) string { return "" }}},
		Progress:   []model.ProgressOf[st]{{Name: "p", Pending: func(*st) bool { return false }}},
	})
	mem := func(s model.State) *model.Mem { return &model.StateOf[st](s).Mem }
	m := model.WithARMv8NoPromises(inner, mem)
	if n := len(m.Properties().Progress); n != 0 {
		t.Errorf("%d progress properties under WithARMv8NoPromises, want none", n)
	}
	w, err := model.Without(m, "inv")
	if err != nil {
		t.Fatal(err)
	}
	if names, why := model.OmittedBy(w); fmt.Sprint(names) != "[p]" || why == "" {
		t.Errorf("OmittedBy: %v %q, want [p] and a reason", names, why)
	}
	if names, _ := model.OmittedBy(model.WithARMv8(inner, mem)); len(names) != 0 {
		t.Errorf("WithARMv8 omits %v", names)
	}
}
