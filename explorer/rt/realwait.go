package rt

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/protocheck/protocheck/model"
)

// Real mode's waiting, and how it notices a deadlock.
//
// Under the Go scheduler a deadlock of the code would otherwise end the
// process with Go's "all goroutines are asleep" (when nothing else runs)
// or hang it (when something does, as a signal handler). So the real
// primitives that block (Mutex.Lock on a held mutex, Cond.Wait,
// Thread.Join) wait through a waiter of their own, and the Env counts,
// under its lock, the goroutines started with Go that have not exited
// (live) and those among them waiting for something nobody has done yet
// (blocked). The goroutine that satisfies a wait (the Unlock that hands
// the mutex over, the Signal, the exit) uncounts the waiter before it
// wakes it, so blocked only ever counts goroutines that cannot move by
// themselves; and only a goroutine that is not blocked can satisfy a
// wait. Once blocked equals live, no goroutine of the run can ever move
// again: that is a deadlock, exactly, with no timing involved. The check
// is made when a goroutine starts to wait and when one exits, and only
// once Wait is called (while the body is still starting goroutines, the
// first ones may all be waiting for one not started yet).
//
// A deadlock is reported as a model.Deadlock violation naming every
// goroutine and what it waits for, and the run is unwound: every waiter
// is woken with its abort flag set, and its primitive panics with
// realAbort, which the goroutine's wrapper recovers, so that deferred
// calls run and Wait returns.
//
// A goroutine that spins on a word (a busy-wait) never blocks in a
// primitive, so a run that hangs that way is only caught by the watchdog
// of WaitTimeout. The spinning goroutine unwinds at its next Yield or
// Choose; one that spins on words alone cannot be stopped, and is left
// running.

// waitKind says what a waiter waits for, for the deadlock report.
type waitKind uint8

const (
	waitLock waitKind = iota
	waitCond
	waitJoin
)

// A waiter is one blocking wait of real mode. Every field but ch and the
// description is guarded by the Env's mu.
type waiter struct {
	kind  waitKind
	obj   string // the mutex, condition variable or goroutine waited for
	label string
	ch    chan struct{} // one wake-up (buffered)

	t       *Thread // the waiting goroutine, once counted; nil for one not started with Go
	woken   bool    // satisfied (or aborted): ch has its wake-up
	counted bool    // counted in Env.blocked
	abort   bool    // woken to unwind: the run is over
}

func newWaiter(kind waitKind, obj, label string) *waiter {
	return &waiter{kind: kind, obj: obj, label: label, ch: make(chan struct{}, 1)}
}

// realAbort is the panic with which a waiting primitive unwinds its
// goroutine once a deadlock, the watchdog or Env.End ended the run.
type realAbort struct{}

func (realAbort) String() string {
	return "rt: the real run is over (a deadlock, the watchdog or Env.End); this panic unwinds its goroutines"
}

// sleep blocks the calling goroutine until w is woken. It counts the
// goroutine as blocked (unless it is not one of the run's, or w was
// already woken) and checks for a deadlock first.
func (e *Env) sleep(w *waiter) {
	gid := goid()
	e.mu.Lock()
	e.sleepLocked(w, gid)
}

// sleepLocked is sleep with e.mu held; it releases it.
func (e *Env) sleepLocked(w *waiter, gid uint64) {
	t := e.gids[gid]
	if t != nil && e.aborted {
		e.mu.Unlock()
		panic(realAbort{})
	}
	if t != nil && !w.woken {
		w.t, w.counted = t, true
		t.wait = w
		e.blocked++
		e.checkDeadlockLocked()
	}
	e.mu.Unlock()
	<-w.ch
	// The flag was set before the wake-up was sent: no lock needed.
	if w.abort {
		panic(realAbort{})
	}
}

// wake satisfies w: it is uncounted and its goroutine resumes.
func (e *Env) wake(w *waiter) {
	e.mu.Lock()
	e.wakeLocked(w)
	e.mu.Unlock()
}

func (e *Env) wakeLocked(w *waiter) {
	if w.woken {
		return
	}
	w.woken = true
	if w.counted {
		w.counted = false
		w.t.wait = nil
		e.blocked--
	}
	w.ch <- struct{}{}
}

// register records the calling goroutine as t, so that a wait can tell
// which goroutine waits.
func (e *Env) register(t *Thread) {
	gid := goid()
	e.mu.Lock()
	e.gids[gid] = t
	t.gid = gid
	e.mu.Unlock()
}

// exit accounts for t's end: its joiners are woken, and a run whose other
// goroutines all wait is a deadlock.
func (e *Env) exit(t *Thread) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t.exited = true
	delete(e.gids, t.gid)
	e.live--
	for _, w := range t.joiners {
		e.wakeLocked(w)
	}
	t.joiners = nil
	e.checkDeadlockLocked()
}

// checkDeadlockLocked ends the run when every live goroutine waits.
func (e *Env) checkDeadlockLocked() {
	if !e.waiting || e.aborted || e.live == 0 || e.blocked != e.live {
		return
	}
	e.abortLocked("every goroutine waits: " + e.describeLocked())
}

// abortLocked records a deadlock violation (unless the run already has a
// violation: the first one is kept) and wakes every counted waiter to
// unwind.
func (e *Env) abortLocked(msg string) {
	if e.violation == nil {
		e.violation = &model.Violation{Property: model.Deadlock, Message: msg}
	}
	e.unwindLocked()
}

// unwindLocked ends the run: every counted waiter is woken to unwind, and
// every later wait unwinds at once.
func (e *Env) unwindLocked() {
	e.aborted = true
	e.over.Store(true)
	for _, t := range e.all {
		if w := t.wait; w != nil {
			w.abort = true
			e.wakeLocked(w)
		}
	}
}

// describeLocked says, in thread order, what every live goroutine waits
// for, or that it is running.
func (e *Env) describeLocked() string {
	var parts []string
	for _, t := range e.all {
		if t.exited {
			continue
		}
		w := t.wait
		switch {
		case w == nil:
			parts = append(parts, fmt.Sprintf("%s is running, not waiting in an rt primitive (a busy-wait for something that never comes, or a livelock?)", t.name))
		case w.kind == waitLock:
			parts = append(parts, fmt.Sprintf("%s waits for %s, which is held (Mutex.Lock at %q)", t.name, w.obj, w.label))
		case w.kind == waitCond:
			parts = append(parts, fmt.Sprintf("%s waits on %s (Cond.Wait at %q)", t.name, w.obj, w.label))
		case w.kind == waitJoin:
			parts = append(parts, fmt.Sprintf("%s waits for %s to exit (Thread.Join at %q)", t.name, w.obj, w.label))
		}
	}
	return strings.Join(parts, "; ")
}

// WaitTimeout is Wait with a watchdog: if the goroutines have not all
// exited (or End has not been called) after d, the run is reported as
// the violation OnCut's function gives, or, when there is none or it
// finds nothing owed, as a model.Deadlock violation that
// names every goroutine still there and what it waits for, or that it is
// running (a busy-wait that never ends is not a wait in a primitive, so
// only the watchdog sees it). The waiting goroutines unwind, and the
// running ones at their next Yield or Choose; one that spins on words
// alone cannot be stopped and keeps running. d <= 0 is Wait.
func (e *Env) WaitTimeout(d time.Duration) error {
	if e.c != nil || d <= 0 {
		return e.Wait()
	}
	done := make(chan struct{})
	go func() {
		e.Wait()
		close(done)
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		// What the code says it still owes is read before e.mu is
		// taken: it reads the code's own atomics, and the code may be
		// inside a primitive that holds e.mu.
		var owed *model.Violation
		if e.owes != nil {
			owed = e.owes()
		}
		e.mu.Lock()
		if !e.aborted && e.live > 0 {
			if owed != nil {
				if e.violation == nil {
					e.violation = &model.Violation{Property: owed.Property, Message: fmt.Sprintf("after %s, %s", d, owed.Message)}
				}
				e.unwindLocked()
			} else {
				e.abortLocked(fmt.Sprintf("the run has not ended after %s: %s", d, e.describeLocked()))
			}
		}
		e.mu.Unlock()
		// The waiters unwind at once; a spinning goroutine would not.
		select {
		case <-done:
		case <-time.After(100 * time.Millisecond):
		}
	}
	return e.result()
}

// goid returns the calling goroutine's id. Go does not expose it; the
// first line of the goroutine's own stack trace ("goroutine 17 [running]:")
// has it. This costs microseconds, so it is only called when a goroutine
// starts and when it is about to block.
func goid() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	s := strings.TrimPrefix(string(buf[:n]), "goroutine ")
	var id uint64
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		id = id*10 + uint64(s[i]-'0')
	}
	return id
}
