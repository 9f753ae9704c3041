package rt_test

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

func explore(t *testing.T, s rt.Strategy, runs, maxSteps int, body func(*rt.Env)) *rt.Summary {
	t.Helper()
	sum, err := rt.Explore(s, runs, maxSteps, body)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return sum
}

func wantViolation(t *testing.T, sum *rt.Summary, property, msg string) *rt.Run {
	t.Helper()
	r := sum.Failure
	if r == nil {
		t.Fatalf("%s: no failure found", sum)
	}
	if r.Err != nil || r.Violation == nil || r.Violation.Property != property || !strings.Contains(r.Violation.Message, msg) {
		t.Fatalf("%s: want %s containing %q, got\n%s", sum, property, msg, r)
	}
	return r
}

func TestLostUpdate(t *testing.T) {
	for _, s := range []rt.Strategy{rt.Random(1), rt.DFS(2), rt.PCT(1, 2)} {
		sum := explore(t, s, 500, 100, counter(false))
		r := wantViolation(t, sum, "no-lost-update", "count=1")
		t.Logf("%s:\n%s", sum, r)
	}
}

func TestAtomicAddHasNoLostUpdate(t *testing.T) {
	sum := explore(t, rt.DFS(-1), 1000, 100, counter(true))
	// A and B each take one step, check three; check's joins wait for
	// both, so the schedules are: the order of A and B's fetch-adds
	// interleaved with nothing else (2), and check's first join of A can
	// come right after A's step, before B's (1 more): 3.
	if sum.Failure != nil || !sum.Exhausted || sum.Runs != 3 {
		t.Fatalf("got %s", sum)
	}
	sum = explore(t, rt.Random(1), 200, 100, counter(true))
	if sum.Failure != nil || sum.Exhausted || sum.Runs != 200 {
		t.Fatalf("got %s", sum)
	}
}

const lostWakeupMsg = `no goroutine can run: waiter waits on cond (Cond.Wait at "waiter: wait cond")`

func TestLostWakeupDeadlock(t *testing.T) {
	for _, s := range []rt.Strategy{rt.PCT(1, 2), rt.DFS(1)} {
		sum := explore(t, s, 500, 100, lostWakeup(false))
		r := wantViolation(t, sum, model.Deadlock, lostWakeupMsg)
		if r.Violation.Message != lostWakeupMsg {
			t.Errorf("message: %q", r.Violation.Message)
		}
		if r.Parked != 1 || r.Leaked != 0 {
			t.Errorf("parked %d, leaked %d; want 1, 0", r.Parked, r.Leaked)
		}
		t.Logf("%s:\n%s", sum, r)
	}
	// Without a preemption the waiter cannot lose the wake-up.
	if sum := explore(t, rt.DFS(0), 500, 100, lostWakeup(false)); sum.Failure != nil || !sum.Exhausted {
		t.Errorf("dfs(0): %s", sum)
	}
	if sum := explore(t, rt.DFS(-1), 5000, 100, lostWakeup(true)); sum.Failure != nil || !sum.Exhausted {
		t.Errorf("fixed: %s", sum)
	}
}

func TestSignalConsumedByTheWrongWaiter(t *testing.T) {
	for _, s := range []rt.Strategy{rt.DFS(1), rt.Random(3), rt.PCT(3, 3)} {
		sum := explore(t, s, 2000, 200, wrongWaiter(false))
		r := wantViolation(t, sum, model.Deadlock, `waits on cond (Cond.Wait at "`)
		t.Logf("%s:\n%s", sum, r)
	}
	if sum := explore(t, rt.DFS(2), 100000, 200, wrongWaiter(true)); sum.Failure != nil || !sum.Exhausted {
		t.Errorf("broadcast: %s", sum)
	}
}

// preemptingInterleavings counts, naively, the interleavings of len(n)
// threads taking n[i] steps each that have at most bound preemptions (a
// switch away from a thread with steps left); bound < 0: no bound.
func preemptingInterleavings(n []int, bound int) int {
	var rec func(left []int, prev, pre int) int
	rec = func(left []int, prev, pre int) int {
		total, any := 0, false
		for t := range left {
			if left[t] == 0 {
				continue
			}
			any = true
			p := pre
			if prev >= 0 && t != prev && left[prev] > 0 {
				p++
			}
			if bound >= 0 && p > bound {
				continue
			}
			left[t]--
			total += rec(left, t, p)
			left[t]++
		}
		if !any {
			return 1
		}
		return total
	}
	return rec(slices.Clone(n), -1, 0)
}

func TestDFSEnumeratesExactly(t *testing.T) {
	cases := []struct {
		name  string
		body  func(*rt.Env)
		bound int
		want  int
	}{
		{"2x3 bound 0", yields(3, "A", "B"), 0, 2},
		{"2x3 bound 1", yields(3, "A", "B"), 1, 6},
		{"2x3 bound 2", yields(3, "A", "B"), 2, preemptingInterleavings([]int{3, 3}, 2)},
		{"2x3 unbounded", yields(3, "A", "B"), -1, 20},
		{"3x2 bound 1", yields(2, "A", "B", "C"), 1, preemptingInterleavings([]int{2, 2, 2}, 1)},
		{"3x2 unbounded", yields(2, "A", "B", "C"), -1, 90},
		{"choose 3 then 2", func(e *rt.Env) {
			e.Go("A", func() {
				e.Choose("pick: first", 3)
				e.Choose("pick: second", 2)
			})
		}, 0, 6},
	}
	for _, tc := range cases {
		sum := explore(t, rt.DFS(tc.bound), 100000, 100, tc.body)
		if sum.Failure != nil || !sum.Exhausted || sum.Runs != tc.want {
			t.Errorf("%s: got %s, want %d runs, exhausted", tc.name, sum, tc.want)
		}
	}
	// Every schedule of an exhaustive enumeration is distinct.
	seen := map[string]bool{}
	d := rt.DFS(-1)
	for {
		r := rt.Controlled(d, 100, yields(2, "A", "B", "C"))
		if errors.Is(r.Err, rt.ErrExhausted) {
			break
		}
		k := rt.FormatSchedule(r.Schedule)
		if seen[k] {
			t.Fatalf("schedule %s enumerated twice", k)
		}
		seen[k] = true
	}
	if len(seen) != 90 {
		t.Errorf("%d distinct schedules, want 90", len(seen))
	}
}

func TestReplayReproduces(t *testing.T) {
	sum := explore(t, rt.DFS(2), 1000, 200, wrongWaiter(false))
	found := sum.Failure
	if found == nil || found.Violation == nil {
		t.Fatalf("no failure: %s", sum)
	}
	again := rt.Controlled(rt.Replay(found.Schedule), 200, wrongWaiter(false))
	if again.Outcome() != found.Outcome() || !slices.Equal(again.Steps, found.Steps) || !slices.Equal(again.Schedule, found.Schedule) {
		t.Fatalf("replay differs:\n%s\nvs\n%s", found, again)
	}
	labels := make([]string, len(found.Steps))
	for i, s := range found.Steps {
		labels[i] = s.Label
	}
	if r := rt.Controlled(rt.ReplayExpect(found.Schedule, labels), 200, wrongWaiter(false)); r.Err != nil || r.Outcome() != found.Outcome() {
		t.Fatalf("replay with labels: %s", r)
	}
}

func TestReplayIsStrict(t *testing.T) {
	body := lostWakeup(false)
	// waiter loads, setter runs to the end, waiter locks and waits.
	sched := []model.Choice{{Thread: 0}, {Thread: 1}, {Thread: 1}, {Thread: 1}, {Thread: 1}, {Thread: 0}, {Thread: 0}}
	labels := []string{"waiter: load ready", "setter: lock m", "setter: store ready", "setter: signal cond", "setter: unlock m", "waiter: lock m", "waiter: wait cond"}
	r := rt.Controlled(rt.ReplayExpect(sched, labels), 100, body)
	if r.Err != nil || r.Violation == nil || r.Violation.Message != lostWakeupMsg {
		t.Fatalf("replay: %s", r)
	}

	check := func(name string, s rt.Strategy, step int, want ...string) {
		t.Helper()
		r := rt.Controlled(s, 100, body)
		var re *rt.ReplayError
		if !errors.As(r.Err, &re) || re.Step != step {
			t.Fatalf("%s: want a ReplayError at step %d, got %v", name, step, r.Err)
		}
		for _, w := range want {
			if !strings.Contains(r.Err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", name, r.Err, w)
			}
		}
	}
	bad := slices.Clone(labels)
	bad[2] = "setter: store ready=1"
	check("label", rt.ReplayExpect(sched, bad), 3, `replay: step 3: choice 1 (thread setter): label mismatch: expected label "setter: store ready=1", got "setter: store ready"`)
	// The waiter cannot lock while the setter holds m.
	blocked := slices.Clone(sched)
	blocked[2] = model.Choice{Thread: 0}
	check("unrunnable", rt.Replay(blocked), 3, "choice 0 (thread waiter): not enabled", `1 (setter "setter: store ready")`)
	check("alt", rt.Replay(append(slices.Clone(sched[:3]), model.Choice{Thread: 1, Alt: 1})), 4, "choice 1.1 (thread setter): not enabled")
	check("short", rt.Replay(sched[:4]), 5, "the schedule ends after 4 choices but goroutines can still run")
	check("long", rt.Replay(append(slices.Clone(sched), model.Choice{Thread: 1})), 8, "the run stopped at deadlock after 7 steps, but the schedule has 8 choices")
	check("bad thread", rt.Replay([]model.Choice{{Thread: 7}}), 1, "choice 7 (thread ?): not enabled")
	if r := rt.Controlled(rt.ReplayExpect(sched, labels[:2]), 100, body); r.Err == nil || !strings.Contains(r.Err.Error(), "2 labels for 7 choices") {
		t.Errorf("labels/choices mismatch: %v", r.Err)
	}

	// A label completed by Note that differs at step 1 is the divergence
	// named, not the choice that is not enabled at step 3.
	noted := func(e *rt.Env) {
		e.Go("A", func() {
			e.Yield("a: read")
			e.Note(" 1")
			e.Yield("a: two")
		})
		e.Go("B", func() { e.Yield("b") })
	}
	check2 := rt.Controlled(rt.ReplayExpect([]model.Choice{{Thread: 0}, {Thread: 0}, {Thread: 1, Alt: 1}}, []string{"a: read 2", "a: two", "b"}), 100, noted)
	var re *rt.ReplayError
	if !errors.As(check2.Err, &re) || re.Step != 1 || !strings.Contains(re.Error(), `expected label "a: read 2", got "a: read 1"`) {
		t.Errorf("a Note-completed label differing before a later divergence: %v, want step 1 named", check2.Err)
	}
}

func TestDeterminism(t *testing.T) {
	for _, mk := range []func() rt.Strategy{
		func() rt.Strategy { return rt.Random(7) },
		func() rt.Strategy { return rt.PCT(7, 3) },
		func() rt.Strategy { return rt.DFS(2) },
	} {
		var outs [2]string
		for i := range outs {
			s := mk()
			var b strings.Builder
			for run := 0; run < 30; run++ {
				r := rt.Controlled(s, 200, wrongWaiter(false))
				b.WriteString(r.String())
			}
			outs[i] = b.String()
		}
		if outs[0] != outs[1] {
			t.Errorf("%s: two sequences of runs differ", mk())
		}
		var sums [2]string
		for i := range sums {
			sum := explore(t, mk(), 1000, 200, wrongWaiter(false))
			sums[i] = sum.String() + "\n" + sum.Failure.String()
		}
		if sums[0] != sums[1] {
			t.Errorf("%s: explorations differ:\n%s\n%s", mk(), sums[0], sums[1])
		}
	}
}

func TestBoundHit(t *testing.T) {
	r := rt.Controlled(rt.DFS(0), 50, spin)
	if !r.BoundHit || r.Failed() || len(r.Steps) != 50 {
		t.Fatalf("want a bound hit after 50 steps: %s", r)
	}
	for _, w := range []string{"max-steps=50", `A at "kvm_wait: load flag"`, "spin loop"} {
		if !strings.Contains(r.Bound, w) {
			t.Errorf("bound message %q does not mention %q", r.Bound, w)
		}
	}
	sum := explore(t, rt.DFS(1), 100, 50, spin)
	if sum.BoundHits == 0 || sum.Failure != nil {
		t.Errorf("got %s", sum)
	}
}

func TestPanicIsAFailureOfTheRun(t *testing.T) {
	r := rt.Controlled(rt.Random(1), 100, func(e *rt.Env) {
		m := e.Mutex("m")
		e.Go("holder", func() {
			m.Lock("holder: lock m")
			e.Yield("holder: work")
			m.Unlock("holder: unlock m")
		})
		e.Go("vcpu1", func() {
			e.Yield("vcpu1: before")
			var p *int
			_ = *p
		})
	})
	if r.Violation == nil || r.Violation.Property != rt.PropPanic {
		t.Fatalf("want a panic violation: %s", r)
	}
	for _, w := range []string{"vcpu1 panicked: runtime error: invalid memory address", "rt_test.TestPanicIsAFailureOfTheRun", "rt_test.go:"} {
		if !strings.Contains(r.Violation.Message, w) {
			t.Errorf("message %q does not mention %q", r.Violation.Message, w)
		}
	}
	r = rt.Controlled(rt.Random(1), 100, func(e *rt.Env) { panic("in the body") })
	if r.Violation == nil || !strings.Contains(r.Violation.Message, "the body of Controlled panicked: in the body") {
		t.Fatalf("body panic: %s", r)
	}
}

func TestMisuse(t *testing.T) {
	run := func(body func(*rt.Env)) *rt.Run { return rt.Controlled(rt.Random(1), 100, body) }
	cases := []struct {
		name, prop, err string
		r               *rt.Run
	}{
		{"nil strategy", "", "needs a strategy", rt.Controlled(nil, 10, func(*rt.Env) {})},
		{"nil body", "", "needs a body", rt.Controlled(rt.Random(1), 10, nil)},
		{"max steps", "", "maxSteps must be at least 1, got 0", rt.Controlled(rt.Random(1), 0, func(*rt.Env) {})},
		{"pct depth", "", "pct depth must be at least 1, got 0", rt.Controlled(rt.PCT(1, 0), 10, func(*rt.Env) {})},
		{"choose 0", "", `Choose("pick", 0): n must be at least 1`, run(func(e *rt.Env) { e.Go("A", func() { e.Choose("pick", 0) }) })},
		{"lock in body", "", `Mutex.Lock (at "init: lock") called outside the run's goroutines`, run(func(e *rt.Env) { e.Mutex("m").Lock("init: lock") })},
		{"nil cond mutex", "", `Cond("c") needs a mutex created by the same Env`, run(func(e *rt.Env) { e.Cond("c", nil) })},
		{"nil go", "", `Go("A") with a nil function`, run(func(e *rt.Env) { e.Go("A", nil) })},
		{"wait in controlled", "", "Env.Wait is for real mode", run(func(e *rt.Env) { e.Go("A", func() { e.Wait() }) })},
		{"unlock not held", rt.PropMutex, `A unlocks m, which it does not hold (free; at "A: unlock")`, run(func(e *rt.Env) {
			m := e.Mutex("m")
			e.Go("A", func() { m.Unlock("A: unlock") })
		})},
		{"relock", rt.PropMutex, `A locks m, which it already holds (at "A: again")`, run(func(e *rt.Env) {
			m := e.Mutex("m")
			e.Go("A", func() { m.Lock("A: lock"); m.Lock("A: again") })
		})},
		{"wait without mutex", rt.PropMutex, `A waits on c without holding m`, run(func(e *rt.Env) {
			m := e.Mutex("m")
			c := e.Cond("c", m)
			e.Go("A", func() { c.Wait("A: wait") })
		})},
		{"self join", model.Deadlock, `A joins itself`, run(func(e *rt.Env) {
			var self *rt.Thread
			self = e.Go("A", func() { e.Yield("A: start"); self.Join("A: join") })
		})},
	}
	for _, tc := range cases {
		r := tc.r
		switch {
		case tc.prop == "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tc.err)):
			t.Errorf("%s: want error %q, got %s", tc.name, tc.err, r.Outcome())
		case tc.prop != "" && (r.Violation == nil || r.Violation.Property != tc.prop || !strings.Contains(r.Violation.Message, tc.err)):
			t.Errorf("%s: want %s %q, got %s", tc.name, tc.prop, tc.err, r.Outcome())
		}
	}
	if _, err := rt.Explore(rt.Random(1), 0, 10, func(*rt.Env) {}); err == nil {
		t.Error("runs=0 accepted")
	}
	if _, err := rt.Explore(rt.PCT(1, 0), 10, 10, func(*rt.Env) {}); err == nil || !strings.Contains(err.Error(), "depth") {
		t.Errorf("pct depth 0: %v", err)
	}
	// Deadlock reports name who waits for whom: a mutex whose holder
	// exited without unlocking it, then goroutines joining each other.
	r := run(func(e *rt.Env) {
		m := e.Mutex("bql")
		e.Go("vcpu0", func() { m.Lock("vcpu0: lock bql") })
		e.Go("vcpu1", func() { e.Yield("vcpu1: spin"); m.Lock("vcpu1: lock bql") })
	})
	if r.Violation == nil || !strings.Contains(r.Violation.Message, `vcpu1 waits for bql held by vcpu0, which has exited (Mutex.Lock at "vcpu1: lock bql")`) {
		t.Errorf("lock deadlock: %s", r.Outcome())
	}
	r = run(func(e *rt.Env) {
		var b *rt.Thread
		a := e.Go("A", func() { e.Yield("A: start"); b.Join("A: join B") })
		b = e.Go("B", func() { a.Join("B: join A") })
	})
	if r.Violation == nil || r.Violation.Message != `no goroutine can run: A waits for B to exit (Thread.Join at "A: join B"); B waits for A to exit (Thread.Join at "B: join A")` {
		t.Errorf("join deadlock: %s", r.Outcome())
	}
}

func TestFailStopsTheRunAtThatStep(t *testing.T) {
	r := rt.Controlled(rt.DFS(0), 100, func(e *rt.Env) {
		e.Go("A", func() {
			e.Yield("A: one")
			e.Fail("invariant", "seen at one")
			e.Yield("A: two")
		})
	})
	if r.Violation == nil || r.Violation.Error() != "invariant: seen at one" || len(r.Steps) != 1 || r.Parked != 1 {
		t.Fatalf("got %s", r)
	}
}

func TestGoroutinesStartedByGoroutines(t *testing.T) {
	sum := explore(t, rt.DFS(-1), 1000, 100, func(e *rt.Env) {
		e.Go("parent", func() {
			c := e.Go("child", func() { e.Yield("child: step") })
			e.Yield("parent: step")
			c.Join("parent: join child")
		})
	})
	// parent's step and child's in either order, then the join: 2.
	if sum.Failure != nil || sum.Runs != 2 {
		t.Fatalf("got %s", sum)
	}
	r := rt.Controlled(rt.DFS(-1), 100, func(e *rt.Env) {
		e.Go("parent", func() { e.Go("child", func() { e.Yield("child: step") }) })
	})
	if r.Failed() || !slices.Equal(r.Threads, []string{"parent", "child"}) || rt.FormatSchedule(r.Schedule) != "1" {
		t.Fatalf("got %s", r)
	}
}

// TestNoGoroutineOutlivesARun tears down many runs in every way a run can
// stop early and checks that the process is back to its goroutines.
func TestNoGoroutineOutlivesARun(t *testing.T) {
	base := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		for _, body := range []func(*rt.Env){lostWakeup(false), wrongWaiter(false), spin, counter(false)} {
			sum, err := rt.Explore(rt.Random(int64(i)), 50, 40, body)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Failure != nil && sum.Failure.Leaked != 0 {
				t.Fatalf("leaked: %s", sum.Failure)
			}
		}
		// A goroutine that swallows the tear-down and tries again.
		rt.Controlled(rt.Random(int64(i)), 10, func(e *rt.Env) {
			m := e.Mutex("m")
			e.Go("stubborn", func() {
				defer func() {
					recover()
					e.Go("late", func() { e.Yield("late: never runs") })
					m.Lock("stubborn: lock again")
				}()
				m.Lock("stubborn: lock")
				m.Lock("stubborn: relock")
			})
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, baseline %d:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWordsCanBeReadAfterTheRun(t *testing.T) {
	var w *rt.Word64
	var m *rt.Mutex
	r := rt.Controlled(rt.Random(1), 100, func(e *rt.Env) {
		w = e.Word64("count")
		w.Store("init", 40)
		m = e.Mutex("m")
		e.Go("A", func() { w.Add("A: add", 2) })
	})
	if r.Failed() || len(r.Steps) != 1 || w.Load("after") != 42 {
		t.Fatalf("got %s, count %d", r, w.Load("after"))
	}
	m.Lock("after: lock")
	if r.Err == nil || !strings.Contains(r.Err.Error(), "after it returned") {
		t.Fatalf("lock after the run: %v", r.Err)
	}
}
