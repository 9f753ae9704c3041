package model_test

import (
	"fmt"
	"testing"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

func armOf(m model.Machine) model.Machine {
	return model.WithARMv8(m, func(s model.State) *model.Mem { return &model.StateOf[litmusState](s).Mem })
}

// armOutcomes is outcomes for a machine under ARMv8: the final registers
// "r0,r1" of every complete execution (every thread done, no promise
// outstanding, not stuck), with memory x=1 y=1 there.
func armOutcomes(t *testing.T, m model.Machine) []string {
	t.Helper()
	final := map[string]bool{}
	search(t, m, func(s model.State, _ []bool) {
		ls := model.StateOf[litmusState](s)
		if ls.Mem.Stuck() || ls.Mem.Promises(0) > 0 || ls.Mem.Promises(1) > 0 {
			return
		}
		if ls.Mem.Peek(X) != 1 || ls.Mem.Peek(Y) != 1 {
			t.Fatalf("terminal memory x=%d y=%d", ls.Mem.Peek(X), ls.Mem.Peek(Y))
		}
		final[fmt.Sprintf("%d,%d", ls.Regs[0], ls.Regs[1])] = true
	})
	return sortedKeys(final)
}

// smallTests are the two-thread tests TestARMv8RunsSCModels and
// TestARMv8NoPromises run: the outcomes "r0,r1" under WithARMv8 (want)
// and without promises (noProm, when it differs: a store visible before
// an earlier access of its thread, which needs a promise).
var smallTests = []struct {
	name         string
	progs        [][]insn
	want, noProm []string
}{
	{"SB", [][]insn{{st(X, 1), ld(0, Y)}, {st(Y, 1), ld(1, X)}}, all4, nil},
	{"SB+fences", [][]insn{{st(X, 1), fence(), ld(0, Y)}, {st(Y, 1), fence(), ld(1, X)}}, []string{"0,1", "1,0", "1,1"}, nil},
	{"SB+xchgs", [][]insn{{xc(X, 1), ld(0, Y)}, {xc(Y, 1), ld(1, X)}}, []string{"0,1", "1,0", "1,1"}, nil},
	// r0 = y, r1 = x: y=1 with x=0 is message passing failing.
	{"MP", [][]insn{{st(X, 1), st(Y, 1)}, {ld(0, Y), ld(1, X)}}, all4, nil},
	{"MP+fences", [][]insn{{st(X, 1), fence(), st(Y, 1)}, {ld(0, Y), fence(), ld(1, X)}}, []string{"0,0", "0,1", "1,1"}, nil},
	// The reader ordered by an acquire, the writer not: its two stores
	// may be seen out of order (a store promised ahead of an earlier
	// one), which without promises they cannot.
	{"MP+po+acq", [][]insn{{st(X, 1), st(Y, 1)}, {lda(0, Y), ld(1, X)}}, all4, []string{"0,0", "0,1", "1,1"}},
	// r0 = x, r1 = y, each load before the other thread's store: both
	// 1 only if a store is promised ahead of the load before it.
	{"LB", [][]insn{{ld(0, X), st(Y, 1)}, {ld(1, Y), st(X, 1)}}, all4, []string{"0,0", "0,1", "1,0"}},
	{"LB+fences", [][]insn{{ld(0, X), fence(), st(Y, 1)}, {ld(1, Y), fence(), st(X, 1)}}, []string{"0,0", "0,1", "1,0"}, nil},
}

var all4 = []string{"0,0", "0,1", "1,0", "1,1"}

// TestARMv8RunsSCModels runs a machine written for SC (Store, Load, Xchg,
// Fence, a Def state with its codec) under WithARMv8 unchanged: plain
// accesses are reordered as ARMv8 allows (store buffering, message
// passing, load buffering through a promise), and Fence (DMB ISH) and the
// fully ordered Xchg restore order.
func TestARMv8RunsSCModels(t *testing.T) {
	for _, c := range smallTests {
		got := armOutcomes(t, armOf(litmus(c.progs)))
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s under ARMv8: outcomes %v, want %v", c.name, got, c.want)
		}
	}
}

// TestARMv8RoundTrip: the states of a Def machine under ARMv8 (messages,
// views, promises) decode their own encoding and copy exactly.
func TestARMv8RoundTrip(t *testing.T) {
	modeltest.RoundTrip(t, armOf(litmus([][]insn{{ld(0, X), st(Y, 1)}, {ld(1, Y), st(X, 1)}})), 10)
}

// TestARMv8Layer checks the layer's vocabulary on its own: SC and TSO
// ignore dependencies and order annotations; a Dep round-trips.
func TestARMv8Layer(t *testing.T) {
	x := model.NewExec(0)
	x.Reset(0, -1)
	m := model.NewMem("x")
	v, d := x.LoadDep(m, 0, model.Acquire, model.Dep{})
	x.StoreDep(m, 0, v+1, model.Release, d, d)
	if old, _, wrote := x.Atomic(m, 0, model.RMW{Op: model.RMWCAS, Expect: 1, Arg: 5}); old != 1 || !wrote || m.Peek(0) != 5 {
		t.Errorf("SC CAS: old %d wrote %v memory %d", old, wrote, m.Peek(0))
	}
	x.Barrier(m, model.BarrierLoad)
	x.Branch(m, d)
	if n := len(x.Footprint()); n != 3 {
		t.Errorf("footprint %v: want load, store, cas", x.Footprint())
	}
	if !d.IsZero() || m.ARMv8() {
		t.Errorf("under SC a Dep is zero and the memory is not ARMv8")
	}
	var e model.Dep
	b := e.Join(d).AppendKey(nil)
	if got, rest, err := model.DecodeDep(b); err != nil || len(rest) != 0 || got != e {
		t.Errorf("DecodeDep: %v %v %v", got, rest, err)
	}
	if _, _, err := model.DecodeDep([]byte{2, 1}); err == nil {
		t.Error("DecodeDep accepts a view whose write bound is below its read bound")
	}
	// A spinning CAS blocks under SC while it cannot succeed.
	x.Reset(0, -1)
	x.Atomic(m, 0, model.RMW{Op: model.RMWCAS, Expect: 0, Arg: 1, Await: true})
	if x.Outcome() != model.Blocked {
		t.Errorf("spin on a held lock: %v, want blocked", x.Outcome())
	}
}
