package exclusive

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// The cpu-lock counterexample is LW-2: the signal meant for
// start_exclusive wakes the I/O thread, and the report names both waits
// on the same cpu->cond.
func TestCPULockStolenWakeup(t *testing.T) {
	_, r := explore(t, "cpu-lock", nil, explorer.Options{})
	if r.Violation == nil || r.Violation.Property != model.Deadlock || len(r.Schedule) > 60 {
		t.Fatalf("got %s in %d steps, want a deadlock in at most 60", r, len(r.Schedule))
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

// drive builds a schedule of m thread by thread: each leg steps thread
// (alternative alt on its last step) until the step's label contains
// until. It fails the test when the thread cannot step or never gets
// there.
type leg struct {
	thread, alt int
	until       string
}

func drive(t *testing.T, m model.Machine, legs []leg) ([]model.Choice, *explorer.Execution) {
	t.Helper()
	var sched []model.Choice
	var ex *explorer.Execution
	for _, l := range legs {
		for i := 0; ; i++ {
			if i > 100 {
				t.Fatalf("%s never reaches %q", m.Threads()[l.thread], l.until)
			}
			try := append(append([]model.Choice(nil), sched...), model.Choice{Thread: l.thread})
			var err error
			if ex, err = explorer.Execute(m, try); err != nil {
				t.Fatalf("%s cannot step towards %q: %v", m.Threads()[l.thread], l.until, err)
			}
			if l.alt != 0 && !strings.Contains(ex.Steps[len(ex.Steps)-1].Label, l.until) {
				// The step the leg ends with may need another alternative.
				alt := append(append([]model.Choice(nil), sched...), model.Choice{Thread: l.thread, Alt: l.alt})
				if ax, err := explorer.Execute(m, alt); err == nil && strings.Contains(ax.Steps[len(ax.Steps)-1].Label, l.until) {
					try, ex = alt, ax
				}
			}
			sched = try
			if ex.Violation != nil {
				t.Fatalf("violation on the way to %q: %v", l.until, ex.Violation)
			}
			if strings.Contains(ex.Steps[len(ex.Steps)-1].Label, l.until) {
				break
			}
		}
	}
	return sched, ex
}

// LW-1 (end_exclusive's signal stolen) is A.3 (d')'s other schedule; bfs
// reports LW-2 because it is shorter. Driving cpu-lock through LW-1 step
// by step checks that the model allows it and that it ends in the
// deadlock A.3 (d') describes, once vcpu0's guest has halted (tbs=1; with
// a guest that runs on, the same lost wake-up is a violation of
// cpu-exec-start-proceeds: vcpu0 runs TBs for ever while vcpu1 sleeps in
// cpu_exec_start).
func TestCPULockLW1(t *testing.T) {
	m, _, err := Protocol.Instantiate("cpu-lock", model.Params{"vcpus": 2, "tbs": 1})
	if err != nil {
		t.Fatal(err)
	}
	const e, tt, io = 0, 1, 2
	_, ex := drive(t, m, []leg{
		// E queues its safe work and runs start_exclusive while T has not
		// entered cpu_exec: T is marked exclusive_ongoing only.
		{thread: e, until: "the exclusive section starts"},
		// T's cpu_exec_start waits for !exclusive_ongoing.
		{thread: tt, until: "cpu_exec_exclusive_locked: while (cpu1->exclusive_ongoing) qemu_cond_wait(cpu1->cond)"},
		// The I/O thread's run_on_cpu(cpu1) waits for wi.done on the same cond.
		{thread: io, until: "run_on_cpu: while (!wi1@cpu1.done) qemu_cond_wait(cpu1->cond)"},
		// end_exclusive on cpu1: the signal's waiters are vcpu1 and the I/O
		// thread, in thread order; alternative 1 wakes the I/O thread.
		{thread: e, alt: 1, until: "end_exclusive: exclusive_ongoing = false; qemu_cond_signal(cpu1->cond) wakes io-thread"},
		{thread: e, until: "end_exclusive: qemu_mutex_unlock(qemu_cpu_list_lock)"},
		// The I/O thread re-checks wi.done, still false, and sleeps again.
		{thread: io, until: "run_on_cpu: while (!wi1@cpu1.done) qemu_cond_wait(cpu1->cond)"},
	})
	// vcpu1 and the I/O thread sleep for ever: bfs from here confirms
	// that every continuation deadlocks.
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
