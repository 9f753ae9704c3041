package model_test

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/model"
)

func proto() *model.Protocol {
	return &model.Protocol{
		Name:     "p",
		Variants: []model.Variant{{Name: "a", Expect: model.ExpectOK}},
		Params:   []model.Param{{Name: "n", Default: 2, Min: 1, Max: 4}, {Name: "k", Default: 0, Min: 0, Max: 1}},
		New:      func(string, model.Params) (model.Machine, error) { return nil, nil },
	}
}

func TestResolveFillsDefaultsAndRejectsBadInput(t *testing.T) {
	p := proto()
	got, err := p.Resolve(model.Params{"k": 1})
	if err != nil || got.String() != "k=1 n=2" {
		t.Fatalf("Resolve = %v, %v", got, err)
	}
	for given, want := range map[string]model.Params{
		`no parameter "x" (parameters: n, k)`: {"x": 1},
		"n=0 is out of range":                 {"n": 0},
		"n=5 is out of range":                 {"n": 5},
	} {
		if _, err := p.Resolve(want); err == nil || !strings.Contains(err.Error(), given) {
			t.Errorf("Resolve(%v) = %v, want %q", want, err, given)
		}
	}
	if _, _, err := p.Instantiate("b", nil); err == nil || !strings.Contains(err.Error(), `no variant "b" (variants: a)`) {
		t.Errorf("Instantiate(b) = %v", err)
	}
}

func TestMutexAndCond(t *testing.T) {
	var mu model.Mutex
	var cv model.Cond
	x := model.NewExec(0)
	x.SetThreadNames([]string{"T0", "T1", "T2", "T3"})
	x.SetModes(true, false)
	x.Reset(1, -1)
	if !x.Lock(&mu, "m") || !mu.HeldBy(1) || x.Violation() != nil || x.Outcome() != model.Stepped {
		t.Fatalf("lock: %v %v %s", mu, x.Violation(), x.Outcome())
	}
	// Another thread's lock blocks, before it changes anything, and says
	// what it waits for.
	x.Reset(0, -1)
	if x.Lock(&mu, "m") || x.Outcome() != model.Blocked || !mu.HeldBy(1) || x.StepLabel() != "m (held by T1)" || x.Contract() != "" {
		t.Fatalf("lock of a held mutex: %v %s %q %q", mu, x.Outcome(), x.StepLabel(), x.Contract())
	}
	// Its own lock again is the assertion "mutex".
	x.Reset(1, -1)
	if !x.Lock(&mu, "m") || x.Violation() == nil || x.Violation().Property != "mutex" {
		t.Fatalf("recursive lock: %v", x.Violation())
	}
	x.Reset(1, -1)
	x.Wait(&cv, "c", &mu, "m")
	if !mu.Free() || !cv.Waiting(1) {
		t.Fatalf("wait must release and join: %v %v", mu, cv)
	}
	x.Reset(1, -1)
	if x.Woken(&cv, "c") || x.Outcome() != model.Blocked || x.StepLabel() != "c (not woken yet)" {
		t.Fatalf("a waiter that is not woken: %s %q", x.Outcome(), x.StepLabel())
	}
	x.Reset(2, -1)
	x.Lock(&mu, "m")
	x.Wait(&cv, "c", &mu, "m")
	// A signal with two waiters draws which one it wakes: alternative 1
	// is the second waiter in thread order.
	x.Reset(0, 1)
	if w := x.Signal(&cv, "c"); w != 2 || cv.Waiting(2) || !cv.Waiting(1) {
		t.Fatalf("signal alt 1 woke %d; waiters %v", w, cv)
	}
	if set, took, named := x.Offered(); set != 0b11 || took != 1 || named {
		t.Fatalf("two waiters: the signal offers %b and took %d (named %v), want 11 and 1", set, took, named)
	}
	if ws := x.Broadcast(&cv, "c").Waiters(); len(ws) != 1 || ws[0] != 1 {
		t.Fatalf("broadcast woke %v", ws)
	}
	x.Reset(1, -1)
	if !x.Woken(&cv, "c") || x.Outcome() != model.Stepped {
		t.Fatalf("a woken waiter: %s", x.Outcome())
	}
	x.Reset(0, -1)
	if w := x.Signal(&cv, "c"); w != -1 {
		t.Fatalf("signal with nobody waiting woke %d", w)
	}
	if set, _, _ := x.Offered(); set != 0 {
		t.Fatalf("a signal with nobody waiting draws %b", set)
	}
	x.Reset(3, -1)
	x.Unlock(&mu, "m")
	if v := x.Violation(); v == nil || v.Property != "mutex" {
		t.Fatalf("unlocking a free mutex: %v", v)
	}
}

func TestMemoryLayerRecordsFootprints(t *testing.T) {
	m := model.NewMem("a", "b")
	x := model.NewExec(0)
	x.Reset(0, -1)
	x.Store(m, 0, 1)
	if prev := x.CAS(m, 0, 1, 3); prev != 1 || m.Peek(0) != 3 {
		t.Fatalf("cas: prev %d, now %d", prev, m.Peek(0))
	}
	if prev := x.CAS(m, 0, 1, 5); prev != 3 || m.Peek(0) != 3 {
		t.Fatalf("failed cas: prev %d, now %d", prev, m.Peek(0))
	}
	x.FetchOr(m, 1, 4)
	x.Xchg(m, 1, 0)
	x.Fence()
	var ops []string
	for _, a := range x.Footprint() {
		ops = append(ops, a.String())
	}
	if got := strings.Join(ops, ","); got != "store a,cas a,cas a,fetch-or b,xchg b,fence" {
		t.Fatalf("footprint %s", got)
	}
	c := m.Clone()
	x.Store(c, 0, 9)
	if m.Peek(0) != 3 {
		t.Fatal("Clone shares words")
	}
}

// A pending operation must not make a history non-linearizable by itself.
func TestHistoryCompletesPendingOperations(t *testing.T) {
	reg := &model.Spec{Name: "register", Model: porcupine.Model{
		Init: func() any { return 0 },
		Step: func(s, in, out any) (bool, any) {
			if _, ok := out.(model.Pending); ok {
				if in != nil {
					return true, in
				}
				return true, s
			}
			if in == nil {
				return out == s, s
			}
			return true, in
		},
	}}
	var h model.History
	h.Record(0, []model.Event{{Client: 0, Input: 1}})                             // write 1 starts, never returns
	h.Record(1, []model.Event{{Client: 1}, {Client: 1, Output: 0, Return: true}}) // read 0
	if v := model.CheckHistory(reg, h.Operations()); v != nil {
		t.Fatalf("pending write then read 0: %v", v)
	}
	h.Reset()
	h.Record(0, []model.Event{{Client: 0, Input: 1}, {Client: 0, Return: true}})
	h.Record(1, []model.Event{{Client: 1}, {Client: 1, Output: 0, Return: true}})
	if v := model.CheckHistory(reg, h.Operations()); v == nil || v.Property != model.Linearizability {
		t.Fatalf("stale read after a completed write: %v", v)
	}
	if err := h.Record(2, []model.Event{{Client: 3, Return: true}}); err == nil {
		t.Fatal("a return without a call is accepted")
	}
}

func TestVariantAccepts(t *testing.T) {
	v := model.Variant{Name: "b", Expect: "p", AlsoViolates: []string{"q"}}
	for found, want := range map[string]bool{"p": true, "q": true, "ok": false, "r": false} {
		if got := v.Accepts(found); got != want {
			t.Errorf("Accepts(%q) = %v", found, got)
		}
	}
}

// BenchmarkMem encodes and decodes a memory of seven small words, as the
// explorer does for every successor and every state expanded.
func BenchmarkMem(b *testing.B) {
	m := model.NewMem("a", "b", "c", "d", "e", "f", "g")
	m.Init(3, 100)
	key := m.AppendKey(nil)
	b.Run("encode", func(b *testing.B) {
		buf := make([]byte, 0, 64)
		for i := 0; i < b.N; i++ {
			buf = m.AppendKey(buf[:0])
		}
	})
	b.Run("decode", func(b *testing.B) {
		d := model.NewMem("a", "b", "c", "d", "e", "f", "g")
		for i := 0; i < b.N; i++ {
			if _, err := d.DecodeFrom(key); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A variant's fixed parameters are in the parameters Instantiate returns
// (so that headers and traces name them) and reach the machine; the same
// value given is accepted, another refused, and a fixed value that is no
// value of the protocol's parameters is an error of the protocol.
func TestInstantiateAppliesFixedParameters(t *testing.T) {
	p := proto()
	var got model.Params
	p.New = func(_ string, params model.Params) (model.Machine, error) { got = params; return nil, nil }
	p.Variants = append(p.Variants, model.Variant{Name: "b", Expect: model.ExpectOK, Fixed: model.Params{"k": 1}})
	for _, given := range []model.Params{nil, {"k": 1}, {"n": 3}} {
		_, params, err := p.Instantiate("b", given)
		if err != nil || params["k"] != 1 || got["k"] != 1 {
			t.Errorf("Instantiate(b, %v): params %v, machine's %v, %v; want k=1", given, params, got, err)
		}
	}
	if _, _, err := p.Instantiate("b", model.Params{"k": 0}); err == nil || !strings.Contains(err.Error(), "p/b is defined with k=1, not k=0") {
		t.Errorf("a conflicting value: %v", err)
	}
	if _, params, err := p.Instantiate("a", model.Params{"k": 0}); err != nil || params["k"] != 0 {
		t.Errorf("another variant keeps its own value: %v %v", params, err)
	}
	p.Variants[1].Fixed = model.Params{"k": 2}
	if _, _, err := p.Instantiate("b", nil); err == nil || !strings.Contains(err.Error(), "not a value of one of the protocol's parameters") {
		t.Errorf("a fixed value out of range: %v", err)
	}
}
