package rt

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/protocheck/protocheck/model"
)

// Property names of the violations the runtime itself detects. Deadlock is
// model.Deadlock, so a deadlock of the real code and of its model carry the
// same name.
const (
	// PropPanic: a goroutine (or the body of Controlled) panicked.
	PropPanic = "panic"
	// PropMutex: a mutex was unlocked while not held, locked again by its
	// holder, or waited on without being held (the model's "mutex"
	// assertion, qemu_mutex_unlock's own check).
	PropMutex = "mutex"
)

// An Env is one execution's world: it creates the goroutines and the
// synchronization objects of the code under test, and answers the code's
// environment choices. An Env is either real (Real) or controlled (the one
// Controlled passes to its body); the code under test is written once
// against the Env and does not care which.
type Env struct {
	c *ctl // nil in real mode

	// Real mode only. mu guards the fields below it; the primitives take
	// it only when a goroutine starts, exits or is about to block
	// (realwait.go).
	wg        sync.WaitGroup
	mu        sync.Mutex
	rng       *rand.Rand
	violation *model.Violation
	err       error
	all       []*Thread          // by id
	gids      map[uint64]*Thread // goroutine id -> thread, while it runs
	live      int                // goroutines started and not exited
	blocked   int                // of those, the ones in an unsatisfied wait
	waiting   bool               // Wait was called: every goroutine is started
	aborted   bool               // a deadlock, the watchdog or End ended the run: waits unwind
	// over is set once the run is over (End, a deadlock, the watchdog):
	// Yield and Choose then unwind their goroutine, so that code that
	// never blocks (a vCPU running TBs) stops too.
	over atomic.Bool

	// Both modes: what the run still owes (OnCut).
	owes func() *model.Violation

	// Both modes: the operation history (history.go).
	hist history
}

// Real returns an Env whose primitives are thin wrappers over sync and
// sync/atomic, for running the code under the Go scheduler and the race
// detector. seed drives Choose. Call Wait once the goroutines are started.
func Real(seed int64) *Env {
	return &Env{rng: rand.New(rand.NewPCG(uint64(seed), 0x7274)), gids: map[uint64]*Thread{}}
}

// IsControlled reports whether e is a controlled Env.
func (e *Env) IsControlled() bool { return e.c != nil }

// A Thread is a goroutine started with Env.Go. Its id is its index in
// creation order, which is the Thread of a model.Choice.
type Thread struct {
	e    *Env
	id   int
	name string

	// real mode, guarded by the Env's mu (realwait.go).
	gid     uint64    // the goroutine's id
	wait    *waiter   // the wait it is blocked in, counted in Env.blocked
	joiners []*waiter // goroutines waiting in Join for it to exit

	// controlled mode; see ctl.
	wake     chan struct{} // the baton: a receive resumes the goroutine
	creator  int           // who started it (-1: the body), while starting
	starting bool          // running up to its first scheduling point
	exited   bool          // both modes (real: guarded by the Env's mu)
	woken    bool          // signalled while in a Cond's wait set
	pend     pending
	alt      int // alternative chosen for pend
}

// ID is the thread's index in creation order.
func (t *Thread) ID() int { return t.id }

// Name is the name given to Go.
func (t *Thread) Name() string { return t.name }

// Go starts f as a new goroutine named name. Thread ids are given in
// creation order and names should match the model's Threads(), so that a
// schedule means the same on both.
//
// Controlled: starting a goroutine is not a scheduling point. The new
// goroutine runs at once, inside the creator's step, up to its first
// primitive (its code before that is local computation, which folds into
// the step that follows, the granularity rule of package model), and waits there to be
// scheduled; the creator then continues.
func (e *Env) Go(name string, f func()) *Thread {
	if e.c != nil {
		return e.c.spawn(e, name, f)
	}
	if f == nil {
		e.realError(fmt.Errorf("rt: Go(%q) with a nil function", name))
		return &Thread{e: e, id: -1, name: name, exited: true}
	}
	e.mu.Lock()
	t := &Thread{e: e, id: len(e.all), name: name}
	e.all = append(e.all, t)
	// Counted as live before it starts, so that no instant shows its
	// creator's waiters as the whole run.
	e.live++
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer e.exit(t)
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(realAbort); !ok {
					e.realViolation(panicViolation(t.name, r))
				}
			}
		}()
		e.register(t)
		f()
	}()
	return t
}

// Join waits until t has exited. Controlled: a scheduling point that is
// enabled once t has exited; a goroutine joining one that never exits is
// part of a deadlock report.
func (t *Thread) Join(label string) {
	if c := t.e.c; c != nil {
		c.join(t, label)
		return
	}
	e := t.e
	gid := goid()
	e.mu.Lock()
	if t.exited {
		e.mu.Unlock()
		return
	}
	w := newWaiter(waitJoin, t.name, label)
	t.joiners = append(t.joiners, w)
	e.sleepLocked(w, gid)
}

// Yield is an explicit scheduling point: a step with nothing but its label,
// for the actions the model has as steps and the real code has no
// primitive for (a TLB use, an IPI send). Real mode: nothing.
func (e *Env) Yield(label string) {
	if c := e.c; c != nil {
		c.yield(label)
		return
	}
	if e.over.Load() {
		panic(realAbort{})
	}
}

// End ends a run that would not end by itself, once the code has shown
// what it had to: a vCPU whose guest never halts runs TBs for ever, so
// its code calls End when every queued work item and exclusive section
// has completed and every vCPU has run on since. The run is then over
// and complete, neither cut nor failed: the final check and the history
// check follow as after a run whose goroutines all exited.
//
// Controlled: the run ends after the current step (Run.Ended) and its
// goroutines are unwound; under Replay and ReplayExpect End does nothing,
// since the schedule says where the run ends. Real: every goroutine unwinds at its next
// Yield, Choose or blocking wait, and those already waiting are woken to
// unwind, so code that calls End must reach one of them in every loop;
// Wait then returns without a violation. End after a violation, a
// deadlock or the watchdog changes nothing.
func (e *Env) End() {
	if c := e.c; c != nil {
		c.end()
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.aborted {
		return
	}
	e.unwindLocked()
}

// OnCut tells the runtime what the run still owes when it is cut before
// its end: f returns the violation of the progress property still
// pending (an exclusive section that has not begun, a work item that has
// not run), or nil when nothing is. Real: WaitTimeout's watchdog reports
// f's violation, prefixed with how long the run lasted, instead of "the
// run has not ended": for code that never ends by itself (End), not
// having ended is no fault, and what is overdue is the finding.
// Controlled: a run cut at maxSteps names it in Run.Bound (a strategy
// such as PCT may starve a goroutine, so a cut is not a verdict there).
// f runs while the code's goroutines may still run (real mode): it must
// only read, and only what is safe to read concurrently (atomics, or a
// Word's Load, which under control is then a read, not a step).
func (e *Env) OnCut(f func() *model.Violation) { e.owes = f }

// Choose returns an environment choice in [0, n): does the host preempt
// the vCPU, which page does the reclaimer pick. Controlled: a scheduling
// point with n alternatives, decided by the strategy and recorded as the
// Alt of the step's model.Choice. Real: drawn from the seeded generator.
// n < 1 is an error of the run (Run.Err, or Wait's error) and returns 0.
func (e *Env) Choose(label string, n int) int {
	if c := e.c; c != nil {
		return c.choose(label, n)
	}
	if n < 1 {
		e.realError(fmt.Errorf("rt: Choose(%q, %d): n must be at least 1", label, n))
		return 0
	}
	if e.over.Load() {
		panic(realAbort{})
	}
	e.mu.Lock()
	v := e.rng.IntN(n)
	e.mu.Unlock()
	return v
}

// Fail reports that the implementation observed a violated property (a
// BUG_ON, an invariant it checks at run time). Only the first failure of a
// run is kept. Fail returns: under Controlled the run stops at the calling
// goroutine's next scheduling point (or exit), so the step in which Fail
// was called is the run's last; in real mode the goroutines go on and Wait
// reports the failure.
func (e *Env) Fail(property, msg string) {
	v := &model.Violation{Property: property, Message: msg}
	if c := e.c; c != nil {
		c.fail(v)
		return
	}
	e.realViolation(v)
}

// Failf is Fail with fmt.Sprintf.
func (e *Env) Failf(property, format string, args ...any) {
	e.Fail(property, fmt.Sprintf(format, args...))
}

// Wait waits for every goroutine started with Go to exit and returns what
// went wrong: a *model.Violation (use errors.As) for the first Fail, panic
// or mutex misuse, or a deadlock (model.Deadlock: every goroutine left
// waits in a primitive, as the message details; the run is then unwound),
// or another error for a misuse of the API. Call it once the body has
// started its goroutines. Real mode only; Controlled waits for its
// goroutines itself.
func (e *Env) Wait() error {
	if e.c != nil {
		err := errors.New("rt: Env.Wait is for real mode; Controlled waits for its goroutines itself")
		e.c.misuse(err)
		return err
	}
	e.mu.Lock()
	e.waiting = true
	e.checkDeadlockLocked()
	e.mu.Unlock()
	e.wg.Wait()
	return e.result()
}

// result is what Wait returns once the run is over.
func (e *Env) result() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return e.err
	}
	if e.violation != nil {
		return e.violation
	}
	return nil
}

func (e *Env) realViolation(v *model.Violation) {
	e.mu.Lock()
	if e.violation == nil {
		e.violation = v
	}
	e.mu.Unlock()
}

func (e *Env) realError(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
}
