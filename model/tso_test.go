package model_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

// A litmus test: each thread runs a straight-line program over the words
// x (0) and y (1) and registers r0..r3.
type insn struct {
	op  byte // 's' store, 'l' load into reg, 'a' acquire load into reg, 'f' fence, 'x' xchg (locked store)
	a   model.Addr
	v   uint64
	reg int
}

type litmusState struct {
	Mem  model.Mem
	PC   [2]uint8
	Regs [4]uint64
}

func litmus(progs [][]insn) model.Machine {
	return model.MustNew(model.Def[litmusState]{
		Threads: []string{"P0", "P1"},
		Init:    func(s *litmusState) { s.Mem = model.NewMem("x", "y") },
		Step: func(s *litmusState, t int, x *model.Exec) {
			if int(s.PC[t]) == len(progs[t]) {
				x.Done()
				return
			}
			in := progs[t][s.PC[t]]
			s.PC[t]++
			switch in.op {
			case 's':
				x.Store(s.Mem, in.a, in.v)
				x.Labelf("%s = %d", s.Mem.Name(in.a), in.v)
			case 'x':
				x.Xchg(s.Mem, in.a, in.v)
				x.Labelf("xchg %s = %d", s.Mem.Name(in.a), in.v)
			case 'l':
				s.Regs[in.reg] = x.Load(s.Mem, in.a)
				x.Labelf("r%d = %s (%d)", in.reg, s.Mem.Name(in.a), s.Regs[in.reg])
			case 'a':
				s.Regs[in.reg], _ = x.LoadDep(s.Mem, in.a, model.Acquire, model.Dep{})
				x.Labelf("r%d = acquire %s (%d)", in.reg, s.Mem.Name(in.a), s.Regs[in.reg])
			case 'f':
				x.Fence(s.Mem)
				x.Label("mfence")
			}
		},
		Vars: func(s *litmusState) []model.Var {
			vs := s.Mem.Vars()
			for i, r := range s.Regs {
				vs = append(vs, model.Var{Name: fmt.Sprintf("r%d", i), Value: fmt.Sprint(r)})
			}
			return vs
		},
	})
}

func tsoOf(m model.Machine) model.Machine {
	return model.WithTSO(m, func(s model.State) *model.Mem { return &model.StateOf[litmusState](s).Mem })
}

const (
	X model.Addr = 0
	Y model.Addr = 1
)

func st(a model.Addr, v uint64) insn { return insn{op: 's', a: a, v: v} }
func xc(a model.Addr, v uint64) insn { return insn{op: 'x', a: a, v: v} }
func ld(r int, a model.Addr) insn    { return insn{op: 'l', a: a, reg: r} }
func lda(r int, a model.Addr) insn   { return insn{op: 'a', a: a, reg: r} }
func fence() insn                    { return insn{op: 'f'} }

// search explores m exhaustively (a plain graph search over the Machine
// interface, with modeltest.Successors running the steps), failing on any
// violation or breach, calls terminal on every state without successors
// (with which threads are done there), and returns the number of states.
func search(t *testing.T, m model.Machine, terminal func(s model.State, done []bool)) int {
	t.Helper()
	seen := map[string]bool{}
	stack := []model.State{m.Init()}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		k := string(s.AppendKey(nil))
		if seen[k] {
			continue
		}
		seen[k] = true
		succs, done, _ := modeltest.Successors(m, s)
		if len(succs) == 0 {
			terminal(s, done)
			continue
		}
		for _, n := range succs {
			if n.Violation != nil || n.Breach != "" {
				t.Fatalf("step %v: %v %s", n.Choice, n.Violation, n.Breach)
			}
			stack = append(stack, n.State)
		}
	}
	return len(seen)
}

// outcomes explores m exhaustively and returns the final register values
// "r0,r1" of every terminal state, sorted, checking that every thread is
// done and memory holds x=1 y=1 there.
func outcomes(t *testing.T, m model.Machine) []string {
	t.Helper()
	final := map[string]bool{}
	search(t, m, func(s model.State, done []bool) {
		for th := range m.Threads() {
			if !done[th] {
				t.Fatalf("terminal state with %s not done:\n%s", m.Threads()[th], model.Describe(s))
			}
		}
		ls := model.StateOf[litmusState](s)
		if ls.Mem.Peek(X) != 1 || ls.Mem.Peek(Y) != 1 {
			t.Fatalf("terminal memory x=%d y=%d", ls.Mem.Peek(X), ls.Mem.Peek(Y))
		}
		final[fmt.Sprintf("%d,%d", ls.Regs[0], ls.Regs[1])] = true
	})
	return sortedKeys(final)
}

func TestLitmusOutcomeSets(t *testing.T) {
	sb := litmus([][]insn{{st(X, 1), ld(0, Y)}, {st(Y, 1), ld(1, X)}})
	sbFence := litmus([][]insn{{st(X, 1), fence(), ld(0, Y)}, {st(Y, 1), fence(), ld(1, X)}})
	sbXchg := litmus([][]insn{{xc(X, 1), ld(0, Y)}, {xc(Y, 1), ld(1, X)}})
	// One fence only: P1's store can still pass... nothing of P1's own,
	// but P0's load of y may pass P0's buffered x.
	sbOneFence := litmus([][]insn{{st(X, 1), ld(0, Y)}, {st(Y, 1), fence(), ld(1, X)}})
	mp := litmus([][]insn{{st(X, 1), st(Y, 1)}, {ld(0, Y), ld(1, X)}})
	scSB := []string{"0,1", "1,0", "1,1"}
	tsoSB := []string{"0,0", "0,1", "1,0", "1,1"}
	mpAll := []string{"0,0", "0,1", "1,1"} // r0 = y, r1 = x: never y=1 x=0
	for _, c := range []struct {
		name string
		m    model.Machine
		want []string
	}{
		{"SB/SC", sb, scSB},
		{"SB/TSO", tsoOf(sb), tsoSB},
		{"SB+mfence/SC", sbFence, scSB},
		{"SB+mfence/TSO", tsoOf(sbFence), scSB},
		{"SB+xchg/TSO", tsoOf(sbXchg), scSB},
		{"SB+one-mfence/TSO", tsoOf(sbOneFence), tsoSB},
		{"MP/SC", mp, mpAll},
		{"MP/TSO", tsoOf(mp), mpAll},
	} {
		if got := outcomes(t, c.m); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: outcomes (r0,r1) %v, want %v", c.name, got, c.want)
		}
	}
}

func TestTSOMemoryOps(t *testing.T) {
	m := model.NewMem("a", "b")
	sc := m.Clone()
	m.EnableTSO("P0", "P1")
	x := model.NewExec(0)
	x.Reset(0, -1)
	x.Store(m, 0, 5)
	x.Store(m, 1, 6)
	x.Store(m, 0, 7)
	if m.Peek(0) != 0 || m.PeekThread(0, 0) != 7 || m.PeekThread(1, 0) != 0 || m.Buffered(0) != 3 {
		t.Fatalf("after stores: memory %d, P0 sees %d, P1 sees %d, buffered %d", m.Peek(0), m.PeekThread(0, 0), m.PeekThread(1, 0), m.Buffered(0))
	}
	if v := x.Load(m, 0); v != 7 {
		t.Fatalf("store forwarding: load %d, want 7", v)
	}
	if got := model.Describe(&memState{m}); got != "a=0\nb=0\nsb[P0]={a=5; b=6; a=7}\nsb[P1]={}\n" {
		t.Fatalf("vars:\n%s", got)
	}
	c := m.Clone()
	x.Reset(1, -1)
	x.Store(c, 1, 9)
	if m.Buffered(1) != 0 {
		t.Fatal("Clone shares buffers")
	}
	// Keys tell buffers apart, and differ from SC's.
	if string(m.AppendKey(nil)) == string(c.AppendKey(nil)) || string(m.AppendKey(nil)) == string(sc.AppendKey(nil)) {
		t.Fatal("keys do not include the buffers")
	}
	x.Reset(0, -1)
	if a, v, ok := x.CommitOldest(m, 0); !ok || a != 0 || v != 5 || m.Peek(0) != 5 || m.Buffered(0) != 2 {
		t.Fatalf("commit: %d %d %v, memory %d", a, v, ok, m.Peek(0))
	}
	x.Reset(0, -1)
	if prev := x.FetchAdd(m, 1, 1); prev != 6 || m.Peek(1) != 7 || m.Peek(0) != 7 || m.Buffered(0) != 0 {
		t.Fatalf("locked RMW did not drain first: prev %d, memory a=%d b=%d", prev, m.Peek(0), m.Peek(1))
	}
	var ops []string
	for _, a := range x.Footprint() {
		ops = append(ops, a.String())
	}
	if got := strings.Join(ops, ","); got != "commit b,commit a,fetch-add b" {
		t.Fatalf("footprint %s", got)
	}
	// Under SC nothing of the buffers shows: the encoding is the words'.
	if got := model.Describe(&memState{sc}); got != "a=0\nb=0\n" || string(sc.AppendKey(nil)) != "\x00\x00" {
		t.Fatalf("SC memory shows buffers: %q %q", got, sc.AppendKey(nil))
	}
}

type memState struct{ m model.Mem }

func (s *memState) AppendKey(b []byte) []byte { return s.m.AppendKey(b) }
func (s *memState) Vars() []model.Var         { return s.m.Vars() }
func (s *memState) Decode(b []byte) error {
	rest, err := s.m.DecodeFrom(b)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("%d bytes left over", len(rest))
	}
	return err
}

// The store-buffer thread: its choices, labels and status.
func TestWithTSOStoreBufferThread(t *testing.T) {
	m := tsoOf(litmus([][]insn{{st(X, 1), ld(0, Y)}, {st(Y, 1), ld(1, X)}}))
	if got := m.Threads(); !reflect.DeepEqual(got, []string{"P0", "P1", model.StoreBufferThread}) {
		t.Fatalf("threads %v", got)
	}
	x := model.NewExec(0)
	x.SetModes(true, false)
	s := m.Init()
	if _, done, _ := modeltest.Successors(m, s); !done[2] {
		t.Fatal("empty buffers: the store-buffer thread is not done")
	}
	for _, th := range []int{0, 1} {
		x.Reset(th, -1)
		m.Step(s, th, x)
	}
	succs, done, blocked := modeltest.Successors(m, s)
	var got []model.Choice
	for _, n := range succs {
		got = append(got, n.Choice)
	}
	if !reflect.DeepEqual(got, []model.Choice{{Thread: 0}, {Thread: 1}, {Thread: 2, Alt: 0}, {Thread: 2, Alt: 1}}) {
		t.Fatalf("enabled %v", got)
	}
	if done[2] || blocked[2] {
		t.Fatal("non-empty buffers: the store-buffer thread is done or blocked")
	}
	n := model.Clone(m, s)
	x.Reset(2, 1)
	m.Step(n, 2, x)
	if x.StepLabel() != "store buffer: P1 commits y = 1" || model.StateOf[litmusState](n).Mem.Peek(Y) != 1 || model.StateOf[litmusState](s).Mem.Peek(Y) != 0 {
		t.Fatalf("commit step: %q", x.StepLabel())
	}
	if set, took, named := x.Offered(); set != 0b11 || took != 1 || !named {
		t.Fatalf("the commit step draws %b, took %d, named %v: want both buffers, 1, named (weak fairness per buffer)", set, took, named)
	}
	if got := fmt.Sprint(model.Changed(s, n)); got != "[{y 1} {sb[P1] {}}]" {
		t.Fatalf("changed %s", got)
	}
}
