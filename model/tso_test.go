package model_test

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/model"
)

// A litmus test: each thread runs a straight-line program over the words
// x (0) and y (1) and registers r0..r3.
type insn struct {
	op  byte // 's' store, 'l' load into reg, 'f' fence, 'x' xchg (locked store)
	a   model.Addr
	v   uint64
	reg int
}

type litmus struct{ progs [][]insn }

type litmusState struct {
	mem  model.Mem
	pc   [2]uint8
	regs [4]uint64
}

func (s *litmusState) Clone() model.State {
	c := *s
	c.mem = s.mem.Clone()
	return &c
}

func (s *litmusState) AppendKey(b []byte) []byte {
	b = s.mem.AppendKey(b)
	b = append(b, s.pc[0], s.pc[1])
	for _, r := range s.regs {
		b = append(b, byte(r))
	}
	return b
}

func (s *litmusState) Vars() []model.Var {
	vs := s.mem.Vars()
	for i, r := range s.regs {
		vs = append(vs, model.Var{Name: fmt.Sprintf("r%d", i), Value: fmt.Sprint(r)})
	}
	return vs
}

func (l litmus) Threads() []string             { return []string{"P0", "P1"} }
func (l litmus) Init() model.State             { return &litmusState{mem: model.NewMem("x", "y")} }
func (l litmus) Metrics() []string             { return nil }
func (l litmus) Spec() *model.Spec             { return nil }
func (l litmus) Invariants() []model.Invariant { return nil }

func (l litmus) Status(s model.State, t int) model.Status {
	return model.Status{Done: int(s.(*litmusState).pc[t]) == len(l.progs[t])}
}

func (l litmus) Enabled(s model.State, buf []model.Choice) []model.Choice {
	for t := range l.progs {
		if !l.Status(s, t).Done {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}

func (l litmus) Step(ms model.State, c model.Choice, x *model.Exec) model.State {
	s := ms.Clone().(*litmusState)
	in := l.progs[c.Thread][s.pc[c.Thread]]
	s.pc[c.Thread]++
	switch in.op {
	case 's':
		x.Store(s.mem, in.a, in.v)
		x.Labelf("%s = %d", s.mem.Name(in.a), in.v)
	case 'x':
		x.Xchg(s.mem, in.a, in.v)
		x.Labelf("xchg %s = %d", s.mem.Name(in.a), in.v)
	case 'l':
		s.regs[in.reg] = x.Load(s.mem, in.a)
		x.Labelf("r%d = %s (%d)", in.reg, s.mem.Name(in.a), s.regs[in.reg])
	case 'f':
		x.Fence(s.mem)
		x.Label("mfence")
	}
	return s
}

func tsoOf(l litmus) model.Machine {
	return model.WithTSO(l, func(s model.State) *model.Mem { return &s.(*litmusState).mem })
}

const (
	X model.Addr = 0
	Y model.Addr = 1
)

func st(a model.Addr, v uint64) insn { return insn{op: 's', a: a, v: v} }
func xc(a model.Addr, v uint64) insn { return insn{op: 'x', a: a, v: v} }
func ld(r int, a model.Addr) insn    { return insn{op: 'l', a: a, reg: r} }
func fence() insn                    { return insn{op: 'f'} }

// outcomes explores m exhaustively (a plain graph search over the Machine
// interface) and returns the final register values "r0,r1" of every
// terminal state, sorted, checking that every thread is done and memory
// holds x=1 y=1 there.
func outcomes(t *testing.T, m model.Machine) []string {
	t.Helper()
	seen := map[string]bool{}
	final := map[string]bool{}
	x := model.NewExec(0)
	stack := []model.State{m.Init()}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		k := string(s.AppendKey(nil))
		if seen[k] {
			continue
		}
		seen[k] = true
		en := m.Enabled(s, nil)
		if len(en) == 0 {
			for th := range m.Threads() {
				if !m.Status(s, th).Done {
					t.Fatalf("terminal state with %s not done:\n%s", m.Threads()[th], model.Describe(s))
				}
			}
			ls := s.(*litmusState)
			if ls.mem.Peek(X) != 1 || ls.mem.Peek(Y) != 1 {
				t.Fatalf("terminal memory x=%d y=%d", ls.mem.Peek(X), ls.mem.Peek(Y))
			}
			final[fmt.Sprintf("%d,%d", ls.regs[0], ls.regs[1])] = true
			continue
		}
		for _, c := range en {
			x.Reset(c.Thread)
			n := m.Step(s, c, x)
			if v := x.Violation(); v != nil {
				t.Fatalf("step %v: %v", c, v)
			}
			stack = append(stack, n)
		}
	}
	var out []string
	for k := range final {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestLitmusOutcomeSets(t *testing.T) {
	sb := litmus{progs: [][]insn{{st(X, 1), ld(0, Y)}, {st(Y, 1), ld(1, X)}}}
	sbFence := litmus{progs: [][]insn{{st(X, 1), fence(), ld(0, Y)}, {st(Y, 1), fence(), ld(1, X)}}}
	sbXchg := litmus{progs: [][]insn{{xc(X, 1), ld(0, Y)}, {xc(Y, 1), ld(1, X)}}}
	// One fence only: P1's store can still pass... nothing of P1's own,
	// but P0's load of y may pass P0's buffered x.
	sbOneFence := litmus{progs: [][]insn{{st(X, 1), ld(0, Y)}, {st(Y, 1), fence(), ld(1, X)}}}
	mp := litmus{progs: [][]insn{{st(X, 1), st(Y, 1)}, {ld(0, Y), ld(1, X)}}}
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
	x.Reset(0)
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
	x.Reset(1)
	x.Store(c, 1, 9)
	if m.Buffered(1) != 0 {
		t.Fatal("Clone shares buffers")
	}
	// Keys tell buffers apart, and differ from SC's.
	if string(m.AppendKey(nil)) == string(c.AppendKey(nil)) || string(m.AppendKey(nil)) == string(sc.AppendKey(nil)) {
		t.Fatal("keys do not include the buffers")
	}
	x.Reset(0)
	if a, v, ok := x.CommitOldest(m, 0); !ok || a != 0 || v != 5 || m.Peek(0) != 5 || m.Buffered(0) != 2 {
		t.Fatalf("commit: %d %d %v, memory %d", a, v, ok, m.Peek(0))
	}
	x.Reset(0)
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
	// Under SC nothing of the buffers shows.
	if got := model.Describe(&memState{sc}); got != "a=0\nb=0\n" || string(sc.AppendKey(nil)) != "0,0," {
		t.Fatalf("SC memory shows buffers: %q %q", got, sc.AppendKey(nil))
	}
}

type memState struct{ m model.Mem }

func (s *memState) Clone() model.State        { return &memState{s.m.Clone()} }
func (s *memState) AppendKey(b []byte) []byte { return s.m.AppendKey(b) }
func (s *memState) Vars() []model.Var         { return s.m.Vars() }

// The store-buffer thread: its choices, labels and status.
func TestWithTSOStoreBufferThread(t *testing.T) {
	m := tsoOf(litmus{progs: [][]insn{{st(X, 1), ld(0, Y)}, {st(Y, 1), ld(1, X)}}})
	if got := m.Threads(); !reflect.DeepEqual(got, []string{"P0", "P1", model.StoreBufferThread}) {
		t.Fatalf("threads %v", got)
	}
	x := model.NewExec(0)
	s := m.Init()
	if !m.Status(s, 2).Done {
		t.Fatal("empty buffers: the store-buffer thread is not done")
	}
	for _, c := range []model.Choice{{Thread: 0}, {Thread: 1}} {
		x.Reset(c.Thread)
		s = m.Step(s, c, x)
	}
	if got := m.Enabled(s, nil); !reflect.DeepEqual(got, []model.Choice{{Thread: 0}, {Thread: 1}, {Thread: 2, Alt: 0}, {Thread: 2, Alt: 1}}) {
		t.Fatalf("enabled %v", got)
	}
	if m.Status(s, 2).Done {
		t.Fatal("non-empty buffers: the store-buffer thread is done")
	}
	x.Reset(2)
	n := m.Step(s, model.Choice{Thread: 2, Alt: 1}, x)
	if x.StepLabel() != "store buffer: P1 commits y = 1" || n.(*litmusState).mem.Peek(Y) != 1 || s.(*litmusState).mem.Peek(Y) != 0 {
		t.Fatalf("commit step: %q", x.StepLabel())
	}
	if got := fmt.Sprint(model.Changed(s, n)); got != "[{y 1} {sb[P1] {}}]" {
		t.Fatalf("changed %s", got)
	}
}
