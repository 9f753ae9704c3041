package rt_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// recorder wraps a strategy and records, at every scheduling point, the
// enabled choices with the labels of their pending primitives.
type recorder struct {
	rt.Strategy
	points [][]string // per step: "thread.alt label"
}

func (r *recorder) Pick(p *rt.Point) (model.Choice, error) {
	var en []string
	for _, c := range p.Enabled {
		en = append(en, fmt.Sprintf("%d.%d %s", c.Thread, c.Alt, p.Label(c.Thread)))
	}
	r.points = append(r.points, en)
	return r.Strategy.Pick(p)
}

const (
	spWait     = "waiter: if (!ready) wait"
	spSpurious = "waiter: spurious wake-up from wait"
	spRelock   = "waiter: woken, re-acquires m"
)

// spuriousBody: a waiter that waits once, with if (the bug that needs a
// spurious wake-up), and a waker that sets ready and signals. The waiter
// records what it saw after the wait in *sawReady.
func spuriousBody(woken *int, sawReady *bool) func(e *rt.Env) {
	return func(e *rt.Env) {
		m := e.Mutex("m")
		cv := e.Cond("cv", m)
		ready := false
		e.Go("waiter", func() {
			m.Lock("waiter: lock")
			if !ready {
				cv.WaitSpurious(spWait, spSpurious, spRelock)
			}
			*sawReady = ready
			m.Unlock("waiter: unlock")
		})
		e.Go("waker", func() {
			m.Lock("waker: lock")
			ready = true
			*woken = cv.Signal("waker: signal")
			m.Unlock("waker: unlock")
		})
	}
}

func labels(run *rt.Run) []string {
	var out []string
	for _, s := range run.Steps {
		out = append(out, s.Label)
	}
	return out
}

// The spurious wake-up is a step of the waiter, enabled while it sits in
// the wait set not woken (whoever holds the mutex), and never before the
// wait or once a Signal has woken it; the re-acquire step follows it.
func TestWaitSpuriousStepEnabledOnlyWhileWaiting(t *testing.T) {
	c := func(th int) model.Choice { return model.Choice{Thread: th} }

	// 1. Spurious wake-up while the waker holds the mutex: the relock
	// waits for it, and the signal wakes nobody.
	woken, saw := -2, false
	rec := &recorder{Strategy: rt.Replay([]model.Choice{c(0), c(0), c(1), c(0), c(1), c(1), c(0), c(0)})}
	run := rt.Controlled(rec, 100, spuriousBody(&woken, &saw))
	if run.Failed() {
		t.Fatalf("spurious run: %s", run)
	}
	want := []string{"waiter: lock", spWait, "waker: lock", spSpurious, "waker: signal", "waker: unlock", spRelock, "waiter: unlock"}
	if got := labels(run); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("spurious run: steps %q, want %q\n%s", got, want, run)
	}
	if woken != -1 {
		t.Errorf("spurious run: Signal returned %d, want -1 (the waiter had left the wait set)", woken)
	}
	wantPoints := [][]string{
		{"0.0 waiter: lock", "1.0 waker: lock"},
		{"0.0 " + spWait}, // the waker waits for m; no spurious step before the wait
		{"0.0 " + spSpurious, "1.0 waker: lock"},
		{"0.0 " + spSpurious, "1.0 waker: signal"}, // enabled with m held by the waker
		{"1.0 waker: signal"},                      // woken spuriously: relock waits for m
		{"1.0 waker: unlock"},
		{"0.0 " + spRelock},
		{"0.0 waiter: unlock"},
	}
	checkPoints(t, "spurious run", rec.points, wantPoints)

	// 2. Woken by the Signal: the spurious step is gone, the relock step
	// is enabled once the mutex is free.
	woken, saw = -2, false
	rec = &recorder{Strategy: rt.Replay([]model.Choice{c(0), c(0), c(1), c(1), c(1), c(0), c(0)})}
	run = rt.Controlled(rec, 100, spuriousBody(&woken, &saw))
	if run.Failed() {
		t.Fatalf("signalled run: %s", run)
	}
	want = []string{"waiter: lock", spWait, "waker: lock", "waker: signal", "waker: unlock", spRelock, "waiter: unlock"}
	if got := labels(run); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("signalled run: steps %q, want %q\n%s", got, want, run)
	}
	if woken != 0 || !saw {
		t.Errorf("signalled run: Signal returned %d (want 0), the waiter saw ready=%v (want true)", woken, saw)
	}
	wantPoints = [][]string{
		{"0.0 waiter: lock", "1.0 waker: lock"},
		{"0.0 " + spWait},
		{"0.0 " + spSpurious, "1.0 waker: lock"},
		{"0.0 " + spSpurious, "1.0 waker: signal"},
		{"1.0 waker: unlock"}, // woken: no spurious step, relock waits for m
		{"0.0 " + spRelock},
		{"0.0 waiter: unlock"},
	}
	checkPoints(t, "signalled run", rec.points, wantPoints)

	// 3. A spurious wake-up after the Signal woke the waiter does not fit.
	run = rt.Controlled(rt.Replay([]model.Choice{c(0), c(0), c(1), c(1), c(0)}), 100, spuriousBody(&woken, &saw))
	if run.Err == nil {
		t.Errorf("a spurious wake-up of a woken waiter replayed:\n%s", run)
	}
}

func checkPoints(t *testing.T, what string, got, want [][]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d scheduling points, want %d: %q", what, len(got), len(want), got)
	}
	for i := range want {
		if strings.Join(got[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("%s: step %d: enabled %q, want %q", what, i+1, got[i], want[i])
		}
	}
}

// ifWaitBody: the waiter waits once, with if, and fails when it goes on
// without ready; with WaitAs it cannot, with WaitSpurious it can.
func ifWaitBody(spurious bool) func(e *rt.Env) {
	return func(e *rt.Env) {
		m := e.Mutex("m")
		cv := e.Cond("cv", m)
		ready := false
		e.Go("waiter", func() {
			m.Lock("waiter: lock")
			if !ready {
				if spurious {
					cv.WaitSpurious(spWait, spSpurious, spRelock)
				} else {
					cv.WaitAs(spWait, spRelock)
				}
			}
			if !ready {
				e.Fail("ready", "the waiter went on without ready")
			}
			m.Unlock("waiter: unlock")
		})
		e.Go("waker", func() {
			m.Lock("waker: lock")
			ready = true
			cv.Signal("waker: signal")
			m.Unlock("waker: unlock")
		})
	}
}

// Explore finds the bug that needs a spurious wake-up, and the run
// through it replays, labels included; with WaitAs there is none. A
// waiter nobody signals is not a deadlock when it may wake spuriously.
func TestWaitSpuriousReplayAndExplore(t *testing.T) {
	sum, err := rt.Explore(rt.DFS(2), 10000, 100, ifWaitBody(true))
	if err != nil {
		t.Fatal(err)
	}
	failing := sum.Failure
	if failing == nil {
		t.Fatalf("DFS found no run through the spurious wake-up: %s", sum)
	}
	if !strings.Contains(strings.Join(labels(failing), "|"), "|"+spSpurious+"|"+spRelock) {
		t.Fatalf("the failing run does not go through the spurious step and the relock:\n%s", failing)
	}
	again := rt.Controlled(rt.ReplayExpect(failing.Schedule, labels(failing)), 100, ifWaitBody(true))
	if again.Err != nil || again.Violation == nil || again.Violation.Property != "ready" || rt.FormatSchedule(again.Schedule) != rt.FormatSchedule(failing.Schedule) || strings.Join(labels(again), "|") != strings.Join(labels(failing), "|") {
		t.Fatalf("the replay differs:\n%s\nwant\n%s", again, failing)
	}
	// The same schedule does not fit the code without spurious wake-ups.
	if run := rt.Controlled(rt.Replay(failing.Schedule), 100, ifWaitBody(false)); run.Err == nil {
		t.Errorf("the spurious schedule replayed on WaitAs:\n%s", run)
	}

	sum, err = rt.Explore(rt.DFS(2), 10000, 100, ifWaitBody(false))
	if err != nil || sum.Failure != nil || !sum.Exhausted {
		t.Fatalf("WaitAs: err %v, %s", err, sum)
	}

	// A lone waiter: with WaitSpurious it wakes spuriously and exits;
	// with WaitAs it deadlocks.
	for _, spurious := range []bool{true, false} {
		run := rt.Controlled(rt.Random(1), 100, func(e *rt.Env) {
			m := e.Mutex("m")
			cv := e.Cond("cv", m)
			e.Go("waiter", func() {
				m.Lock("waiter: lock")
				if spurious {
					cv.WaitSpurious(spWait, spSpurious, spRelock)
				} else {
					cv.WaitAs(spWait, spRelock)
				}
				m.Unlock("waiter: unlock")
			})
		})
		want := strings.Join([]string{"waiter: lock", spWait, spSpurious, spRelock, "waiter: unlock"}, "|")
		if spurious && (run.Failed() || strings.Join(labels(run), "|") != want) {
			t.Errorf("lone WaitSpurious:\n%s", run)
		}
		if !spurious && (run.Violation == nil || run.Violation.Property != model.Deadlock) {
			t.Errorf("lone WaitAs: want a deadlock\n%s", run)
		}
	}
}

// Real mode: WaitSpurious is WaitAs (the predicate loop copes with any
// spurious wake-up sync.Cond may have).
func TestWaitSpuriousRealMode(t *testing.T) {
	e := rt.Real(1)
	m := e.Mutex("m")
	cv := e.Cond("cv", m)
	ready := false
	e.Go("waiter", func() {
		m.Lock("waiter: lock")
		for !ready {
			cv.WaitSpurious(spWait, spSpurious, spRelock)
		}
		m.Unlock("waiter: unlock")
	})
	e.Go("waker", func() {
		m.Lock("waker: lock")
		ready = true
		cv.Broadcast("waker: broadcast")
		m.Unlock("waker: unlock")
	})
	if err := e.Wait(); err != nil {
		t.Fatal(err)
	}
}
