package rt_test

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// realDeadlock runs body in real mode and returns the deadlock Wait
// reports, failing the test on anything else.
func realDeadlock(t *testing.T, name string, body func(e *rt.Env)) string {
	t.Helper()
	e := rt.Real(1)
	body(e)
	err := e.Wait()
	var v *model.Violation
	if !errors.As(err, &v) || v.Property != model.Deadlock {
		t.Fatalf("%s: Wait returned %v, want a deadlock", name, err)
	}
	return v.Message
}

// waitUntil spins until w holds n: a barrier that is not a wait in rt, so
// that the deadlock below happens on every run.
func waitUntil(w *rt.Word32, n uint32) {
	for w.Load("barrier") != n {
		runtime.Gosched()
	}
}

// Under the Go scheduler a deadlock of the code is a violation that names
// every goroutine and what it waits for, not Go's fatal error.
func TestRealModeReportsDeadlocks(t *testing.T) {
	for _, tc := range []struct {
		name string
		body func(e *rt.Env)
		want []string
	}{
		{"nobody signals", func(e *rt.Env) {
			m := e.Mutex("m")
			cv := e.Cond("cond", m)
			e.Go("waiter", func() {
				m.Lock("waiter: lock m")
				cv.Wait("waiter: wait cond")
			})
		}, []string{`every goroutine waits: waiter waits on cond (Cond.Wait at "waiter: wait cond")`}},
		{"lock order", func(e *rt.Env) {
			a, b := e.Mutex("a"), e.Mutex("b")
			both := e.Word32("both")
			e.Go("T0", func() {
				a.Lock("T0: lock a")
				both.Add("T0: holds a", 1)
				waitUntil(both, 2)
				b.Lock("T0: lock b")
			})
			e.Go("T1", func() {
				b.Lock("T1: lock b")
				both.Add("T1: holds b", 1)
				waitUntil(both, 2)
				a.Lock("T1: lock a")
			})
		}, []string{`T0 waits for b, which is held (Mutex.Lock at "T0: lock b")`, `T1 waits for a, which is held (Mutex.Lock at "T1: lock a")`}},
		{"relock", func(e *rt.Env) {
			m := e.Mutex("m")
			e.Go("A", func() {
				m.Lock("A: lock")
				m.Lock("A: lock again")
			})
		}, []string{`A waits for m, which is held (Mutex.Lock at "A: lock again")`}},
		{"join and a lost wake-up", func(e *rt.Env) {
			m := e.Mutex("m")
			cv := e.Cond("cond", m)
			var sleeper atomic.Pointer[rt.Thread]
			started := e.Word32("started")
			sleeper.Store(e.Go("sleeper", func() {
				waitUntil(started, 1)
				m.Lock("sleeper: lock")
				cv.Wait("sleeper: wait") // the signal came before
			}))
			e.Go("joiner", func() {
				m.Lock("joiner: lock")
				cv.Signal("joiner: signal nobody")
				m.Unlock("joiner: unlock")
				started.Store("joiner: go", 1)
				sleeper.Load().Join("joiner: join sleeper")
			})
		}, []string{`sleeper waits on cond (Cond.Wait at "sleeper: wait")`, `joiner waits for sleeper to exit (Thread.Join at "joiner: join sleeper")`}},
		{"the last goroutine exits", func(e *rt.Env) {
			m := e.Mutex("m")
			cv := e.Cond("cond", m)
			e.Go("waiter", func() {
				m.Lock("waiter: lock")
				cv.Wait("waiter: wait")
			})
			e.Go("worker", func() {
				for i := 0; i < 100; i++ {
					runtime.Gosched()
				}
			})
		}, []string{`every goroutine waits: waiter waits on cond (Cond.Wait at "waiter: wait")`}},
	} {
		base := runtime.NumGoroutine()
		for i := 0; i < 20; i++ {
			msg := realDeadlock(t, tc.name, tc.body)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Fatalf("%s: %q does not say %q", tc.name, msg, w)
				}
			}
		}
		// The deadlocked goroutines were unwound.
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d goroutines left, %d before", tc.name, runtime.NumGoroutine(), base)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// Goroutines that block all the time, in every way, and always get out:
// no run of them is ever reported as a deadlock (the count of waiting
// goroutines is exact, not a guess from timing).
func TestRealModeNoFalseDeadlock(t *testing.T) {
	runs, rounds := 300, 50
	if testing.Short() {
		runs = 50
	}
	for run := 0; run < runs; run++ {
		e := rt.Real(int64(run))
		m := e.Mutex("m")
		cv := e.Cond("turn", m)
		turn := 0 // guarded by m
		var ts []*rt.Thread
		for id := 0; id < 3; id++ {
			ts = append(ts, e.Go("player", func() {
				for r := 0; r < rounds; r++ {
					m.Lock("player: lock")
					for turn%3 != id {
						cv.Wait("player: wait for my turn")
					}
					turn++
					cv.Broadcast("player: next")
					m.Unlock("player: unlock")
				}
			}))
		}
		e.Go("referee", func() {
			for _, t := range ts {
				t.Join("referee: join")
			}
		})
		if err := e.Wait(); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if turn != 3*rounds {
			t.Fatalf("run %d: %d turns", run, turn)
		}
	}
}

// A run that hangs in a busy-wait is not a wait in a primitive: the
// watchdog reports it, naming the spinning goroutine and the waiting one.
func TestRealModeWatchdog(t *testing.T) {
	var stop atomic.Bool
	defer stop.Store(true)
	e := rt.Real(1)
	m := e.Mutex("m")
	cv := e.Cond("cond", m)
	flag := e.Word32("flag")
	e.Go("spinner", func() {
		for flag.Load("spinner: load flag") == 0 && !stop.Load() {
			runtime.Gosched()
		}
	})
	e.Go("sleeper", func() {
		m.Lock("sleeper: lock")
		cv.Wait("sleeper: wait")
	})
	start := time.Now()
	err := e.WaitTimeout(200 * time.Millisecond)
	var v *model.Violation
	if !errors.As(err, &v) || v.Property != model.Deadlock {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"the run has not ended after 200ms", "spinner is running, not waiting in an rt primitive", `sleeper waits on cond (Cond.Wait at "sleeper: wait")`} {
		if !strings.Contains(v.Message, want) {
			t.Errorf("%q does not say %q", v.Message, want)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the watchdog took %s", d)
	}
	// A run that ends in time is not reported.
	e = rt.Real(1)
	e.Go("quick", func() { runtime.Gosched() })
	if err := e.WaitTimeout(time.Minute); err != nil {
		t.Fatal(err)
	}
}
