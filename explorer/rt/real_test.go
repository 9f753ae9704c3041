package rt_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// A producer/consumer pipeline and a locked counter under the Go
// scheduler: meant for -race, which checks that the real mode's wrappers
// give the happens-before edges of the primitives they wrap.
func TestRealModeUnderRace(t *testing.T) {
	e := rt.Real(1)
	m := e.Mutex("m")
	cv := e.Cond("cond", m)
	total := e.Word64("total")
	flags := e.Word8("flags")
	var plain int // protected by m, so -race must stay quiet
	const workers, per = 4, 200
	var ts []*rt.Thread
	for i := 0; i < workers; i++ {
		ts = append(ts, e.Go("worker", func() {
			for j := 0; j < per; j++ {
				m.Lock("worker: lock m")
				plain++
				m.Unlock("worker: unlock m")
				total.Add("worker: add total", 1)
				if e.Choose("worker: maybe set a flag", 2) == 1 {
					flags.Or("worker: set flag", 1<<uint(i))
				}
			}
		}))
	}
	// A consumer waits on a condition with its predicate in a loop.
	queue := e.Word32("queue")
	done := e.Go("consumer", func() {
		got := 0
		m.Lock("consumer: lock m")
		for got < per {
			for queue.Load("consumer: load queue") == 0 {
				cv.Wait("consumer: wait cond")
			}
			got += int(queue.Swap("consumer: take", 0))
		}
		m.Unlock("consumer: unlock m")
	})
	e.Go("producer", func() {
		for j := 0; j < per; j++ {
			m.Lock("producer: lock m")
			queue.Add("producer: add", 1)
			cv.Signal("producer: signal cond")
			m.Unlock("producer: unlock m")
		}
	})
	for _, th := range ts {
		th.Join("main: join worker")
	}
	done.Join("main: join consumer")
	if err := e.Wait(); err != nil {
		t.Fatal(err)
	}
	if plain != workers*per || total.Load("main: load total") != workers*per {
		t.Fatalf("plain=%d total=%d", plain, total.Load(""))
	}
	if v := flags.CAS("", 0xff, 0); v > 0xf {
		t.Fatalf("flags=%#x", v)
	}
}

func TestRealModeReportsInsteadOfCrashing(t *testing.T) {
	e := rt.Real(1)
	m := e.Mutex("m")
	e.Go("A", func() { m.Unlock("A: unlock") })
	err := e.Wait()
	var v *model.Violation
	if !errors.As(err, &v) || v.Property != rt.PropMutex || !strings.Contains(v.Message, `unlock of m, which is not locked (at "A: unlock")`) {
		t.Fatalf("got %v", err)
	}

	e = rt.Real(1)
	e.Go("vcpu0", func() { panic("boom") })
	if err := e.Wait(); !errors.As(err, &v) || v.Property != rt.PropPanic || !strings.Contains(v.Message, "vcpu0 panicked: boom") {
		t.Fatalf("got %v", err)
	}

	e = rt.Real(1)
	e.Go("A", func() { e.Choose("pick", 0) })
	if err := e.Wait(); err == nil || !strings.Contains(err.Error(), "n must be at least 1") {
		t.Fatalf("got %v", err)
	}

	e = rt.Real(1)
	e.Go("A", func() { e.Fail("invariant", "broken") })
	if err := e.Wait(); err == nil || err.Error() != "invariant: broken" {
		t.Fatalf("got %v", err)
	}
}

func TestWordsWrapAndReturnPrevious(t *testing.T) {
	for _, e := range []*rt.Env{rt.Real(1), nil} {
		check := func(e *rt.Env) {
			b := e.Word8("b")
			b.Store("", 250)
			if p := b.Add("", 10); p != 250 || b.Load("") != 4 {
				t.Errorf("byte add: prev %d, now %d", p, b.Load(""))
			}
			if p := b.CAS("", 3, 9); p != 4 || b.Load("") != 4 {
				t.Errorf("failed cas: prev %d, now %d", p, b.Load(""))
			}
			if p := b.CAS("", 4, 9); p != 4 || b.Load("") != 9 {
				t.Errorf("cas: prev %d, now %d", p, b.Load(""))
			}
			if p := b.Or("", 0x80); p != 9 || b.Swap("", 1) != 0x89 {
				t.Errorf("or/swap")
			}
			w := e.Word32("w")
			if p := w.Add("", ^uint32(0)); p != 0 || w.Load("") != ^uint32(0) {
				t.Errorf("word32 add")
			}
			d := e.Word64("d")
			if p := d.Or("", 6); p != 0 || d.CAS("", 6, 1) != 6 || d.Swap("", 2) != 1 {
				t.Errorf("word64")
			}
		}
		if e != nil {
			check(e)
			continue
		}
		r := rt.Controlled(rt.Random(1), 100, func(e *rt.Env) { e.Go("A", func() { check(e) }) })
		if r.Failed() || len(r.Steps) != 14 {
			t.Errorf("controlled: %s", r)
		}
	}
}
