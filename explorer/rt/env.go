package rt

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

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

	// Real mode only. mu guards rng, violation, err and threads; the
	// primitives themselves never take it.
	wg        sync.WaitGroup
	mu        sync.Mutex
	rng       *rand.Rand
	violation *model.Violation
	err       error
	threads   int

	// Both modes: the operation history (history.go).
	hist history
}

// Real returns an Env whose primitives are thin wrappers over sync and
// sync/atomic, for running the code under the Go scheduler and the race
// detector. seed drives Choose. Call Wait once the goroutines are started.
func Real(seed int64) *Env {
	return &Env{rng: rand.New(rand.NewPCG(uint64(seed), 0x7274))}
}

// IsControlled reports whether e is a controlled Env.
func (e *Env) IsControlled() bool { return e.c != nil }

// A Thread is a goroutine started with Env.Go. Its id is its index in
// creation order, which is the Thread of a model.Choice.
type Thread struct {
	e    *Env
	id   int
	name string

	// real mode: closed when the goroutine has exited.
	done chan struct{}

	// controlled mode; see ctl.
	wake     chan struct{} // the baton: a receive resumes the goroutine
	creator  int           // who started it (-1: the body), while starting
	starting bool          // running up to its first scheduling point
	exited   bool
	woken    bool // signalled while in a Cond's wait set
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
// the step that follows, DESIGN.md principle 4), and waits there to be
// scheduled; the creator then continues.
func (e *Env) Go(name string, f func()) *Thread {
	if e.c != nil {
		return e.c.spawn(e, name, f)
	}
	if f == nil {
		e.realError(fmt.Errorf("rt: Go(%q) with a nil function", name))
		t := &Thread{e: e, name: name, done: make(chan struct{})}
		close(t.done)
		return t
	}
	e.mu.Lock()
	t := &Thread{e: e, id: e.threads, name: name, done: make(chan struct{})}
	e.threads++
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer close(t.done)
		defer func() {
			if r := recover(); r != nil {
				e.realViolation(panicViolation(t.name, r))
			}
		}()
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
	<-t.done
}

// Yield is an explicit scheduling point: a step with nothing but its label,
// for the actions the model has as steps and the real code has no
// primitive for (a TLB use, an IPI send). Real mode: nothing.
func (e *Env) Yield(label string) {
	if c := e.c; c != nil {
		c.yield(label)
	}
}

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
// or mutex misuse, or another error for a misuse of the API. Real mode
// only; Controlled waits for its goroutines itself.
func (e *Env) Wait() error {
	if e.c != nil {
		err := errors.New("rt: Env.Wait is for real mode; Controlled waits for its goroutines itself")
		e.c.misuse(err)
		return err
	}
	e.wg.Wait()
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
