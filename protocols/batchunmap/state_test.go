package batchunmap

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

// Seeded walks of every variant, re-executed strictly: each step keeps to
// the step contract (it has a label, and with labels and events off it
// gives the same successor), the re-execution meets the walk's violation,
// and every state on the way decodes from its own encoding into a fresh
// initial state with the same key and the same variables.
func TestWalksKeepTheStepContract(t *testing.T) {
	walks := 40
	if testing.Short() {
		walks = 8
	}
	for _, v := range Protocol.Variants {
		for _, p := range []model.Params{nil, {"syscalls": 0}, {"bookkeeping": 1, "users": 2, "batch": 1, "pages": 3, "migrations": 2}, {"mms": 2, "pages": 2, "ptls": 2, "users": 2, "syscalls": 2}, {"reclaimers": 1, "pages": 4, "syscall": 3, "syscalls": 4}, {"contend": 1, "pages": 3, "syscall": 4}, {"nested": 1, "syscall": 4, "syscalls": 2}, {"syscall": 7, "syscalls": 4}} {
			if refused(v.Name, p) {
				continue
			}
			m, _, err := Protocol.Instantiate(v.Name, p)
			if err != nil {
				t.Fatal(err)
			}
			c := m.(*machine).c
			found := map[string]int{}
			for i := 0; i < walks; i++ {
				w := explorer.RunWalk(m, slowUsers(rand.New(rand.NewPCG(3, uint64(i))), c), 1000)
				ex, err := explorer.Execute(m, w.Schedule)
				if err != nil {
					t.Fatalf("%s %v walk %d: %v", v.Name, p, i, err)
				}
				if ex.Violation != nil && ex.Violation.Property == model.ModelError {
					t.Fatalf("%s %v walk %d, step %d: %s", v.Name, p, i, ex.ViolationStep, ex.Violation)
				}
				if !reflect.DeepEqual(ex.Violation, w.Violation) {
					t.Fatalf("%s %v walk %d: the walk found %v, its re-execution %v", v.Name, p, i, w.Violation, ex.Violation)
				}
				if w.Violation != nil {
					found[w.Violation.Property]++
				}
				for k, s := range ex.States {
					key := s.AppendKey(nil)
					d := m.Init()
					if err := d.Decode(key); err != nil {
						t.Fatalf("%s %v walk %d state %d: %v", v.Name, p, i, k, err)
					}
					if !bytes.Equal(d.AppendKey(nil), key) || !reflect.DeepEqual(d.Vars(), s.Vars()) {
						t.Fatalf("%s %v walk %d state %d does not round-trip:\n%s\n%s", v.Name, p, i, k, model.Describe(s), model.Describe(d))
					}
				}
			}
			t.Logf("%s %v: %d walks, violations %v", v.Name, p, walks, found)
		}
	}
}

// modeltest's random walks: every state round-trips through its encoding
// (into a new and into a reused state, with the same variables), every
// truncated encoding is refused, and a step on a decoded copy does what it
// does on the state itself.
func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		variant string
		p       model.Params
	}{
		{Generation, nil},
		{X86, model.Params{"migrations": 2, "users": 2, "mms": 2, "pages": 4, "ptls": 4}},
		{ARM64, model.Params{"bookkeeping": 1, "users": 2}},
		{BoolFlag, model.Params{"bookkeeping": 1, "users": 2}},
		{NestedReset, model.Params{"syscalls": 0, "batch": 2}},
		{RiscvStickyMask, model.Params{"mms": 3, "pages": 3, "ptls": 3, "users": 3, "width": 4}},
		{Immediate, model.Params{"pages": 6, "ptls": 3, "reuse": 0}},
	} {
		m, _, err := Protocol.Instantiate(c.variant, c.p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(c.variant, func(t *testing.T) { modeltest.RoundTrip(t, m, 200) })
		if testing.Short() {
			break
		}
	}
}

// A malformed encoding, or one of another size, is an error, never a
// panic, and the state then decodes a good encoding as before (a longer
// encoded slice must not leave the views on a replaced array).
func TestDecodeRejectsMalformedKeys(t *testing.T) {
	m, _, err := Protocol.Instantiate(Generation, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := Protocol.Instantiate(Generation, model.Params{"users": 2})
	if err != nil {
		t.Fatal(err)
	}
	key := m.Init().AppendKey(nil)
	// A state whose TLB, page contents and accesses are not zero: user0
	// wrote va0.
	ex, err := explorer.Execute(m, []model.Choice{{Thread: m.(*machine).c.tUser0, Alt: 1}})
	if err != nil {
		t.Fatal(err)
	}
	good := ex.States[1]
	goodKey := good.AppendKey(nil)
	s := m.Init()
	for _, bad := range [][]byte{nil, key[:len(key)-1], append(append([]byte(nil), key...), 0), other.Init().AppendKey(nil)} {
		if err := s.Decode(key); err != nil {
			t.Fatal(err)
		}
		if err := s.Decode(bad); err == nil {
			t.Errorf("Decode(%v) accepted", bad)
		}
		if err := s.Decode(goodKey); err != nil || !bytes.Equal(s.AppendKey(nil), goodKey) || model.Describe(s) != model.Describe(good) {
			t.Fatalf("after Decode(%v) failed, the state does not decode its own encoding: %v\n%s", bad, err, model.Describe(s))
		}
	}
}
