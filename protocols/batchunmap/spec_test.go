package batchunmap

import (
	"math/rand/v2"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// Random walks of the correct variants give histories that linearize
// against the process-memory spec (RunWalk checks the whole history).
// With two users in one mm, one may fault on mprotect's new PTE while the
// other still writes through its old TLB entry; the spec must accept it.
func TestCorrectWalksLinearize(t *testing.T) {
	for _, v := range correctVariants {
		for _, p := range []model.Params{{"accesses": 3}, {"users": 2, "accesses": 3, "pages": 2, "syscalls": 2}} {
			testWalksLinearize(t, v, p)
		}
	}
}

func testWalksLinearize(t *testing.T, v string, p model.Params) {
	{
		m, _, err := Protocol.Instantiate(v, p)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 300; i++ {
			rng := rand.New(rand.NewPCG(7, uint64(i)))
			w := explorer.RunWalk(m, slowUsers(rng, m.(*machine).c), 1000)
			if w.Violation != nil || !w.Terminal {
				t.Fatalf("%s %v walk %d: terminal=%v %v", v, p, i, w.Terminal, w.Violation)
			}
		}
	}
}

// The no-pending-flush counterexample, replayed without its step
// assertion, is also a linearizability violation: the write through the
// stale entry succeeds after mprotect(PROT_READ) returned.
func TestStaleWriteIsNotLinearizable(t *testing.T) {
	r, m := explore(t, NoPendingFlush, nil, explorer.Options{})
	if r.Violation == nil {
		t.Fatal("no counterexample")
	}
	var h model.History
	props := m.Properties()
	x := model.NewExec(len(props.Metrics))
	x.SetModes(false, true)
	s := m.Init()
	for i, c := range r.Schedule {
		x.Reset(c.Thread, c.Alt)
		m.Step(s, c.Thread, x)
		if x.Outcome() != model.Stepped {
			t.Fatalf("step %d (%v): %s", i+1, c, x.Outcome())
		}
		if err := h.Record(int64(i), x.Events()); err != nil {
			t.Fatal(err)
		}
	}
	v := model.CheckHistory(props.Spec, h.Operations())
	if v == nil || v.Property != model.Linearizability {
		t.Fatalf("got %v, want a linearizability violation", v)
	}
	t.Log(v)
}

// The spec accepts model.Pending for any operation and a swap fault for
// any access, and rejects a stale read of a reused page.
func TestSpecOutputs(t *testing.T) {
	spec := memorySpec().Model
	op := func(client int, in memIn, out any, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
	}
	ok := []porcupine.Operation{
		op(0, memIn{Op: opWrite, VA: 0, Val: 1}, memOut{}, 0, 1),
		op(1, memIn{Op: opMprotect, VA: 0}, model.Pending{}, 2, 9),
		op(0, memIn{Op: opRead, VA: 0}, memOut{Val: 1}, 3, 4),
		op(0, memIn{Op: opWrite, VA: 1, Val: 1}, memOut{Res: resSwap}, 5, 6),
		op(0, memIn{Op: opRead, VA: 1}, model.Pending{}, 7, 9),
	}
	if !porcupine.CheckOperations(spec, ok) {
		t.Error("a history with pending and swap-fault outputs is rejected")
	}
	stale := []porcupine.Operation{
		op(0, memIn{Op: opWrite, VA: 0, Val: 1}, memOut{}, 0, 1),
		op(0, memIn{Op: opRead, VA: 0}, memOut{Val: reusedVal}, 2, 3),
	}
	if porcupine.CheckOperations(spec, stale) {
		t.Error("a read of another owner's data is accepted")
	}
}
