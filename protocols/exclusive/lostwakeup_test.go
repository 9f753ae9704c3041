package exclusive

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// The cpu-lock counterexample is qemu.md's LW-2: the signal meant for
// start_exclusive wakes the I/O thread, and the report names both waits
// on the same cpu->cond.
func TestCPULockStolenWakeup(t *testing.T) {
	_, r := explore(t, "cpu-lock", nil, explorer.Options{})
	if r.Violation == nil || r.Violation.Property != model.Deadlock || len(r.Schedule) > 40 {
		t.Fatalf("got %s in %d steps, want a deadlock in at most 40", r, len(r.Schedule))
	}
	stolen := false
	for _, l := range r.Labels {
		if strings.Contains(l, "qemu_cond_signal(cpu2->cond) wakes io-thread") {
			stolen = true
		}
	}
	if !stolen {
		t.Errorf("no step shows the stolen wake-up:\n%s", strings.Join(r.Labels, "\n"))
	}
	for _, want := range []string{
		"vcpu0 waits for cpu2->cond in start_exclusive for !cpu2->exclusive_waiter (already true: a lost wake-up)",
		"vcpu2 waits for cpu2->cond in cpu_exec_end for !cpu2->exclusive_ongoing",
		"io-thread waits for cpu2->cond in run_on_cpu for wi1@cpu2.done",
	} {
		if !strings.Contains(r.Violation.Message, want) {
			t.Errorf("deadlock report lacks %q:\n%s", want, r.Violation.Message)
		}
	}
}

// LW-1 (end_exclusive's signal stolen) is qemu.md's other schedule; bfs
// reports LW-2 because it is shorter. Replaying LW-1 step by step checks
// that the model allows it and that it ends in the deadlock qemu.md
// describes.
func TestCPULockLW1(t *testing.T) {
	m, _, err := Protocol.Instantiate("cpu-lock", model.Params{"vcpus": 2})
	if err != nil {
		t.Fatal(err)
	}
	const e, tt, io = 0, 1, 2
	var sched []model.Choice
	add := func(th, n int) {
		for i := 0; i < n; i++ {
			sched = append(sched, model.Choice{Thread: th})
		}
	}
	add(e, 2)  // thread_fn lock, pop safe0
	add(e, 6)  // P1 (2 steps), P2 over cpu0 and cpu1 (4 steps): T not running
	add(e, 4)  // P3 over cpu0 and cpu1: no waiter
	add(tt, 4) // thread_fn lock, tcg_cpu_exec unlock, cpu_exec_start lock, wait on !exclusive_ongoing
	add(io, 5) // bql_lock, bql_unlock, lock cpu1, queue + kick, wait for wi.done
	add(e, 3)  // func, Q1 on cpu0: lock, signal
	add(e, 2)  // Q1 on cpu0: unlock; Q1 on cpu1: lock
	// Q1 on cpu1: signal cpu1->cond, whose waiters are vcpu1 and io-thread
	// (in thread order): alternative 1 wakes the I/O thread.
	sched = append(sched, model.Choice{Thread: e, Alt: 1})
	add(e, 1)  // unlock cpu1
	add(io, 2) // re-acquire, wi.done still false: wait again
	ex, err := explorer.Execute(m, sched)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Violation != nil {
		t.Fatalf("violation before the end of LW-1: %v", ex.Violation)
	}
	if got := ex.Steps[len(ex.Steps)-4].Label; !strings.Contains(got, "qemu_cond_signal(cpu1->cond) wakes io-thread") {
		t.Fatalf("step %d is %q, want end_exclusive's signal waking the I/O thread", len(ex.Steps)-3, got)
	}
	// vcpu0 finishes end_exclusive and goes idle; vcpu1 and the I/O thread
	// sleep for ever: let bfs from here confirm that every continuation
	// deadlocks.
	r, err := explorer.Explore(&suffix{machine: m.(*machine), prefix: ex.States[len(ex.States)-1]}, explorer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation == nil || r.Violation.Property != model.Deadlock ||
		!strings.Contains(r.Violation.Message, "vcpu1 waits for cpu1->cond in cpu_exec_start for !cpu1->exclusive_ongoing (already true: a lost wake-up)") ||
		!strings.Contains(r.Violation.Message, "io-thread waits for cpu1->cond in run_on_cpu for wi1@cpu1.done (still false)") {
		t.Fatalf("after LW-1: %s", r)
	}
}

// suffix explores a machine from a given state.
type suffix struct {
	*machine
	prefix model.State
}

func (s *suffix) Init() model.State {
	st := s.machine.Init()
	if err := st.Decode(s.prefix.AppendKey(nil)); err != nil {
		panic(err)
	}
	return st
}
