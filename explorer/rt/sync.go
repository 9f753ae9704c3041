package rt

import (
	"fmt"
	"sync"
)

// A Mutex is a lock with the semantics of model.Mutex: each Lock and each
// Unlock is one step. Create it with Env.Mutex.
type Mutex struct {
	e    *Env
	c    *ctl
	name string

	// real mode
	mu sync.Mutex

	// controlled mode: holding thread + 1, 0 when free.
	holder int
}

// Mutex returns a new unlocked mutex. name appears in deadlock reports.
func (e *Env) Mutex(name string) *Mutex { return &Mutex{e: e, c: e.c, name: name} }

// Name is the name given to Env.Mutex.
func (m *Mutex) Name() string { return m.name }

// Lock acquires m. Controlled: a scheduling point enabled while m is free;
// locking a mutex the goroutine already holds is a PropMutex violation
// (the real code would hang).
func (m *Mutex) Lock(label string) {
	if m.c != nil {
		m.c.lock(m, label)
		return
	}
	m.mu.Lock()
}

// notLocked reports whether m is unlocked, leaving it so. sync.Mutex's
// unlock of an unlocked mutex is a fatal error that no recover catches;
// this check turns it into a reported violation at the price of one plain
// load in the common case (TryLock on a held mutex fails without a
// read-modify-write), where a flag of our own would cost two atomics per
// Lock/Unlock pair.
func (m *Mutex) notLocked() bool {
	if m.mu.TryLock() {
		m.mu.Unlock()
		return true
	}
	return false
}

// Unlock releases m. Unlocking a mutex that is not held is a PropMutex
// violation, not a crash. (Real mode can only tell "not locked at all",
// and only when no other goroutine locks it at the same moment;
// controlled mode also catches a goroutine unlocking another's mutex.)
func (m *Mutex) Unlock(label string) {
	if m.c != nil {
		m.c.unlock(m, label)
		return
	}
	if m.notLocked() {
		m.e.realViolation(mutexViolation("unlock of %s, which is not locked (at %q)", m.name, label))
		return
	}
	m.mu.Unlock()
}

// A Cond is a condition variable with the POSIX semantics of model.Cond,
// bound to one Mutex. Create it with Env.Cond.
type Cond struct {
	e    *Env
	c    *ctl
	name string
	m    *Mutex

	real sync.Cond

	// controlled mode: the wait set, in increasing thread order, as
	// model.Cond.Waiters, so that Signal's alternatives mean the same.
	waiters []int
}

// Cond returns a condition variable that waits with m. A nil m or a mutex
// of another Env is an error of the run; the Cond then gets a private
// mutex so that the code does not crash on it.
func (e *Env) Cond(name string, m *Mutex) *Cond {
	if m == nil || m.e != e {
		err := fmt.Errorf("rt: Cond(%q) needs a mutex created by the same Env", name)
		if e.c != nil {
			e.c.misuse(err)
		} else {
			e.realError(err)
		}
		m = e.Mutex(name + ".mutex")
	}
	cv := &Cond{e: e, c: e.c, name: name, m: m}
	cv.real.L = &m.mu
	return cv
}

// Name is the name given to Env.Cond.
func (cv *Cond) Name() string { return cv.name }

// RelockLabel is the label of the second step of Cond.Wait, the one in
// which the woken goroutine re-acquires the mutex. A model that gives its
// re-acquire step this label matches the real code step for step.
func RelockLabel(waitLabel string) string { return waitLabel + " (relock)" }

// Wait releases the mutex (which the caller must hold), waits to be woken
// by Signal or Broadcast, and re-acquires the mutex before returning.
// Controlled: two steps, as in model.Cond: the first (labelled label)
// releases the mutex and joins the wait set; the second (labelled
// RelockLabel(label)) is enabled once the goroutine has been woken and the
// mutex is free, and re-acquires it. There are no spurious wake-ups, so a
// missing re-check of the predicate shows up only through another waiter
// or a stale predicate, as in the model. Waiting without holding the mutex
// is a PropMutex violation.
func (cv *Cond) Wait(label string) { cv.WaitAs(label, RelockLabel(label)) }

// WaitAs is Wait with its own label for the second step (woken, re-acquire
// the mutex), for code whose model names that step itself ("exclusive_idle:
// woken, re-acquires qemu_cpu_list_lock"). Complete it with Env.Note after
// WaitAs returns, like any label that carries what the step found.
func (cv *Cond) WaitAs(label, relockLabel string) {
	if cv.c != nil {
		cv.c.wait(cv, label, relockLabel, "", false)
		return
	}
	cv.realWait(label)
}

// WaitSpurious is WaitAs with spurious wake-ups, as POSIX allows them, for
// code whose model has them. Controlled: while the goroutine sits in the
// wait set and has not been woken, it has one more enabled step, labelled
// spuriousLabel, that removes it from the wait set as if woken by nobody;
// the re-acquire step (relockLabel, enabled once woken, by a Signal, a
// Broadcast or that spurious step, and the mutex free) follows as usual.
// A Signal's alternatives do not count a goroutine that has woken
// spuriously: it has left the wait set. Real mode: WaitAs (sync.Cond may
// or may not wake spuriously; nothing to add).
func (cv *Cond) WaitSpurious(label, spuriousLabel, relockLabel string) {
	if cv.c != nil {
		cv.c.wait(cv, label, relockLabel, spuriousLabel, true)
		return
	}
	cv.realWait(label)
}

func (cv *Cond) realWait(label string) {
	m := cv.m
	if m.notLocked() {
		m.e.realViolation(mutexViolation("wait on %s without holding %s (at %q)", cv.name, m.name, label))
		return
	}
	cv.real.Wait()
}

// Signal wakes one waiter, if any. Controlled: a scheduling point whose
// alternatives are the waiters (Alt i wakes the i-th in increasing thread
// order, as model.Exec.Signal), or a single alternative waking nobody; the
// strategy chooses which waiter wakes. It returns the id of the goroutine
// it woke, or -1 (nobody; and always in real mode, where sync.Cond does
// not say), so the code can name it in its label as the model does.
func (cv *Cond) Signal(label string) (woken int) {
	if cv.c != nil {
		if ws := cv.c.signal(cv, label, false); len(ws) == 1 {
			return ws[0]
		}
		return -1
	}
	cv.real.Signal()
	return -1
}

// Broadcast wakes every waiter. Controlled: a scheduling point with one
// alternative; it returns the goroutines it woke, in increasing order, as
// model.Exec.Broadcast does (real mode: nil, sync.Cond does not say).
func (cv *Cond) Broadcast(label string) (woken []int) {
	if cv.c != nil {
		return cv.c.signal(cv, label, true)
	}
	cv.real.Broadcast()
	return nil
}
