package model_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/model"
)

// turnState is the state of a small Def machine: two threads take turns
// under a mutex, each incrementing a shared word once.
type turnState struct {
	Mem  model.Mem
	Mu   model.Mutex
	PC   [2]uint8 // 0 lock, 1 increment, 2 unlock, 3 done
	Last int8     // the thread that incremented last, -1 at first
}

func turnDef() model.Def[turnState] {
	return model.Def[turnState]{
		Threads: []string{"A", "B"},
		Init: func(s *turnState) {
			s.Mem = model.NewMem("n")
			s.Last = -1
		},
		Step: func(s *turnState, t int, x *model.Exec) {
			switch s.PC[t] {
			case 0:
				if !x.Lock(&s.Mu, "mu") {
					return
				}
				x.Label("lock")
			case 1:
				x.FetchAdd(s.Mem, 0, 1)
				s.Last = int8(t)
				x.Count(0, 1)
				x.Label("increment")
			case 2:
				x.Unlock(&s.Mu, "mu")
				x.Label("unlock")
			default:
				x.Done()
				return
			}
			s.PC[t]++
		},
		Invariants: []model.InvariantOf[turnState]{{Name: "at-most-two", Check: func(s *turnState) string {
			if n := s.Mem.Peek(0); n > 2 {
				return fmt.Sprintf("n=%d", n)
			}
			return ""
		}}},
		Progress: []model.ProgressOf[turnState]{{Name: "unlocks", Pending: func(s *turnState) bool { return !s.Mu.Free() }}},
		Metrics:  []string{"increments"},
	}
}

func TestDefMachine(t *testing.T) {
	d := turnDef()
	m := model.MustNew(d)
	if got := m.Threads(); !reflect.DeepEqual(got, []string{"A", "B"}) {
		t.Fatalf("threads %v", got)
	}
	// Init gives a new state each time; StateOf reaches the struct.
	s1, s2 := m.Init(), m.Init()
	model.StateOf[turnState](s1).PC[0] = 2
	if p := model.StateOf[turnState](s2); p.PC[0] != 0 || p.Last != -1 || p.Mem.Len() != 1 {
		t.Fatalf("a second initial state is %+v", *p)
	}
	// Step runs in place on the state it is given.
	s := m.Init()
	x := model.NewExec(1)
	x.SetThreadNames(m.Threads())
	x.SetModes(true, false)
	x.Reset(1, -1)
	m.Step(s, 1, x)
	if st := model.StateOf[turnState](s); !st.Mu.HeldBy(1) || st.PC[1] != 1 || x.StepLabel() != "lock" {
		t.Fatalf("after B's lock: %+v %q", *st, x.StepLabel())
	}
	x.Reset(0, -1)
	m.Step(model.Clone(m, s), 0, x)
	if x.Outcome() != model.Blocked || x.StepLabel() != "mu (held by B)" {
		t.Fatalf("A's lock while B holds mu: %s %q", x.Outcome(), x.StepLabel())
	}
	// Properties call through to the struct.
	p := m.Properties()
	if len(p.Invariants) != 1 || p.Invariants[0].Name != "at-most-two" || p.Invariants[0].Check(s) != "" {
		t.Fatalf("invariants %+v", p.Invariants)
	}
	model.StateOf[turnState](s).Mem.Init(0, 3)
	if msg := p.Invariants[0].Check(s); msg != "n=3" {
		t.Fatalf("invariant on n=3: %q", msg)
	}
	if len(p.Progress) != 1 || !p.Progress[0].Pending(s) || p.Progress[0].Pending(m.Init()) {
		t.Fatalf("progress %+v", p.Progress)
	}
	if !reflect.DeepEqual(p.Metrics, []string{"increments"}) || p.Spec != nil {
		t.Fatalf("metrics %v, spec %v", p.Metrics, p.Spec)
	}
	if got := strings.Join(p.Names(), ","); got != "at-most-two,unlocks,deadlock" {
		t.Fatalf("names %s", got)
	}
	// The codec's variables, threads named.
	if got := model.Describe(s); got != "n=3\nMu=held by B\nPC=[0 1]\nLast=-1\n" {
		t.Fatalf("vars:\n%s", got)
	}
	// Encode and decode through the codec.
	c := m.Init()
	if err := c.Decode(s.AppendKey(nil)); err != nil || string(c.AppendKey(nil)) != string(s.AppendKey(nil)) {
		t.Fatalf("decode: %v", err)
	}
	// Neither optional interface unless asked for.
	if _, ok := m.(model.Symmetric); ok {
		t.Error("a Def without Canonical is Symmetric")
	}
	if _, ok := m.(model.Independence); ok {
		t.Error("a Def without Independent is Independence")
	}
}

func TestDefOptionalParts(t *testing.T) {
	canonical := func(s *turnState, b []byte) []byte { return append(b, 'c') }
	independent := func(s *turnState, a, b model.Choice) bool { return a.Thread == 0 }
	spec := &model.Spec{Name: "none", Model: porcupine.Model{}}
	for _, c := range []struct {
		canon, ind bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		d := turnDef()
		d.Spec = spec
		d.Vars = func(s *turnState) []model.Var { return []model.Var{{Name: "pc", Value: fmt.Sprint(s.PC)}} }
		if c.canon {
			d.Canonical = canonical
		}
		if c.ind {
			d.Independent = independent
		}
		m := model.MustNew(d)
		sym, isSym := m.(model.Symmetric)
		ind, isInd := m.(model.Independence)
		if isSym != c.canon || isInd != c.ind {
			t.Errorf("canonical=%v independent=%v: Symmetric %v, Independence %v", c.canon, c.ind, isSym, isInd)
			continue
		}
		s := m.Init()
		if isSym && string(sym.CanonicalKey(s, []byte("k"))) != "kc" {
			t.Errorf("CanonicalKey does not call Canonical")
		}
		if isInd && (!ind.Independent(s, model.Choice{Thread: 0}, model.Choice{Thread: 1}) || ind.Independent(s, model.Choice{Thread: 1}, model.Choice{Thread: 0})) {
			t.Errorf("Independent does not call Independent")
		}
		if got := model.Describe(s); got != "pc=[0 0]\n" {
			t.Errorf("Vars does not replace the codec's: %q", got)
		}
		if m.Properties().Spec != spec {
			t.Errorf("spec not passed on")
		}
	}
}

func TestDefRefusesIncompleteDefinitions(t *testing.T) {
	type bad struct{ Name string }
	noThreads, noInit, noStep := turnDef(), turnDef(), turnDef()
	noThreads.Threads = nil
	noInit.Init = nil
	noStep.Step = nil
	for _, c := range []struct {
		err  error
		want string
	}{
		{newErr(noThreads), "model.Def: no threads"},
		{newErr(noInit), "model.Def: no Init"},
		{newErr(noStep), "model.Def: no Step"},
		{newErr(model.Def[bad]{Threads: []string{"T"}, Init: func(*bad) {}, Step: func(*bad, int, *model.Exec) {}}), "bad.Name has type string"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want %q", c.err, c.want)
		}
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("MustNew of a Def without threads does not panic")
		}
	}()
	model.MustNew(noThreads)
}

func newErr[S any](d model.Def[S]) error {
	_, err := model.New(d)
	return err
}
