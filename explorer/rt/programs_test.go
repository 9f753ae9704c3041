package rt_test

import (
	"github.com/protocheck/protocheck/explorer/rt"
)

// The small programs the tests explore. Their labels follow the project's
// "function: action" convention.

// counter: A and B increment a shared word; check joins both and asserts
// that no increment was lost. With atomic=false each increment is a load
// and a store (the classic lost update); with atomic=true one fetch-add.
func counter(atomic bool) func(e *rt.Env) {
	return func(e *rt.Env) {
		w := e.Word64("count")
		var incs []*rt.Thread
		for _, name := range []string{"A", "B"} {
			incs = append(incs, e.Go(name, func() {
				if atomic {
					w.Add("counter_inc: fetch-add", 1)
					return
				}
				v := w.Load("counter_inc: load")
				w.Store("counter_inc: store", v+1)
			}))
		}
		e.Go("check", func() {
			for _, t := range incs {
				t.Join("check: join " + t.Name())
			}
			if v := w.Load("check: load count"); v != 2 {
				e.Failf("no-lost-update", "both increments done but count=%d", v)
			}
		})
	}
}

// lostWakeup: the waiter tests the flag before taking the lock, so the
// setter's signal can come between the test and the wait, and nobody
// wakes the waiter. fixed tests the flag under the lock, in a loop.
func lostWakeup(fixed bool) func(e *rt.Env) {
	return func(e *rt.Env) {
		m := e.Mutex("m")
		cv := e.Cond("cond", m)
		ready := e.Word32("ready")
		e.Go("waiter", func() {
			if fixed {
				m.Lock("waiter: lock m")
				for ready.Load("waiter: load ready") == 0 {
					cv.Wait("waiter: wait cond")
				}
				m.Unlock("waiter: unlock m")
				return
			}
			if ready.Load("waiter: load ready") == 0 {
				m.Lock("waiter: lock m")
				defer m.Unlock("waiter: unlock m") // runs during tear-down too
				cv.Wait("waiter: wait cond")
			}
		})
		e.Go("setter", func() {
			m.Lock("setter: lock m")
			ready.Store("setter: store ready", 1)
			cv.Signal("setter: signal cond")
			m.Unlock("setter: unlock m")
		})
	}
}

// wrongWaiter: A waits for a, B for b, on one condition variable; the
// setter sets a then b with Signal instead of Broadcast. When a's signal
// wakes B, B goes back to waiting and A is never woken: the signal was
// consumed by the wrong waiter. Which waiter a Signal wakes is the Alt of
// its step.
func wrongWaiter(broadcast bool) func(e *rt.Env) {
	return func(e *rt.Env) {
		m := e.Mutex("m")
		cv := e.Cond("cond", m)
		a, b := e.Word32("a"), e.Word32("b")
		waitFor := func(name string, w *rt.Word32) {
			e.Go(name, func() {
				m.Lock(name + ": lock m")
				for w.Load(name+": load") == 0 {
					cv.Wait(name + ": wait cond")
				}
				m.Unlock(name + ": unlock m")
			})
		}
		waitFor("A", a)
		waitFor("B", b)
		e.Go("setter", func() {
			for _, w := range []*rt.Word32{a, b} {
				m.Lock("setter: lock m")
				w.Store("setter: store "+w.Name(), 1)
				if broadcast {
					cv.Broadcast("setter: broadcast cond")
				} else {
					cv.Signal("setter: signal cond")
				}
				m.Unlock("setter: unlock m")
			}
		})
	}
}

// yields: goroutines named by names, each taking n labelled steps.
func yields(n int, names ...string) func(e *rt.Env) {
	return func(e *rt.Env) {
		for _, name := range names {
			e.Go(name, func() {
				for i := 0; i < n; i++ {
					e.Yield(name + ": step")
				}
			})
		}
	}
}

// spin: A spins until B sets the flag; without a preemption B never runs.
func spin(e *rt.Env) {
	flag := e.Word8("flag")
	e.Go("A", func() {
		for flag.Load("kvm_wait: load flag") == 0 {
		}
	})
	e.Go("B", func() { flag.Store("kick: store flag", 1) })
}
