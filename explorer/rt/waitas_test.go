package rt_test

import (
	"testing"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// WaitAs names the wake-up step as the model does; Wait names it
// RelockLabel(label). Signal says whom it woke.
func TestWaitAsLabelsTheWakeUpStep(t *testing.T) {
	for _, custom := range []bool{false, true} {
		woken := -2
		// waiter: lock, wait; waker: lock, signal, unlock; waiter: wake-up, unlock.
		sched := []model.Choice{{Thread: 0}, {Thread: 0}, {Thread: 1}, {Thread: 1}, {Thread: 1}, {Thread: 0}, {Thread: 0}}
		run := rt.Controlled(rt.Replay(sched), 100, func(e *rt.Env) {
			m := e.Mutex("m")
			cv := e.Cond("cv", m)
			ready := false
			e.Go("waiter", func() {
				m.Lock("waiter: lock")
				for !ready {
					if custom {
						cv.WaitAs("waiter: wait", "waiter: woken, re-acquires m")
						e.Note("; ready")
					} else {
						cv.Wait("waiter: wait")
					}
				}
				m.Unlock("waiter: unlock")
			})
			e.Go("waker", func() {
				m.Lock("waker: lock")
				ready = true
				woken = cv.Signal("waker: signal")
				m.Unlock("waker: unlock")
			})
		})
		if run.Failed() {
			t.Fatalf("custom=%v: %s", custom, run)
		}
		want := rt.RelockLabel("waiter: wait")
		if custom {
			want = "waiter: woken, re-acquires m; ready"
		}
		if woken != 0 {
			t.Errorf("Signal returned %d, want 0 (the waiter)", woken)
		}
		if got := run.Steps[5].Label; got != want {
			t.Errorf("custom=%v: the wake-up step is %q, want %q\n%s", custom, got, want, run)
		}
	}
}
