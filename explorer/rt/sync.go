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

	// real mode: rm guards held and queue, for a few instructions per
	// operation. A waiter gets the mutex handed over by Unlock, in FIFO
	// order, so that whoever satisfies a wait is the one who uncounts it
	// (realwait.go).
	rm    sync.Mutex
	held  bool
	queue []*waiter

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
	m.rm.Lock()
	if !m.held {
		m.held = true
		m.rm.Unlock()
		return
	}
	w := newWaiter(waitLock, m.name, label)
	m.queue = append(m.queue, w)
	m.rm.Unlock()
	m.e.sleep(w) // woken holding m
}

// isHeld reports whether m is locked (by anyone: real mode does not know
// by whom).
func (m *Mutex) isHeld() bool {
	m.rm.Lock()
	defer m.rm.Unlock()
	return m.held
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
	m.rm.Lock()
	if !m.held {
		m.rm.Unlock()
		m.e.realViolation(mutexViolation("unlock of %s, which is not locked (at %q)", m.name, label))
		return
	}
	if len(m.queue) == 0 {
		m.held = false
		m.rm.Unlock()
		return
	}
	w := m.queue[0]
	m.queue = append(m.queue[:0], m.queue[1:]...)
	m.rm.Unlock()
	m.e.wake(w) // hand m over: it stays held
}

// A Cond is a condition variable with the POSIX semantics of model.Cond,
// bound to one Mutex. Create it with Env.Cond.
type Cond struct {
	e    *Env
	c    *ctl
	name string
	m    *Mutex

	// real mode: rc guards rwait, the goroutines waiting, in FIFO order.
	rc    sync.Mutex
	rwait []*waiter

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
	return &Cond{e: e, c: e.c, name: name, m: m}
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
	cv.realWait(label, relockLabel)
}

// WaitSpurious is WaitAs with spurious wake-ups, as POSIX allows them, for
// code whose model has them. Controlled: while the goroutine sits in the
// wait set and has not been woken, it has one more enabled step, labelled
// spuriousLabel, that removes it from the wait set as if woken by nobody;
// the re-acquire step (relockLabel, enabled once woken, by a Signal, a
// Broadcast or that spurious step, and the mutex free) follows as usual.
// A Signal's alternatives do not count a goroutine that has woken
// spuriously: it has left the wait set. Real mode: WaitAs (it never wakes
// spuriously; code that is right with spurious wake-ups is right without).
func (cv *Cond) WaitSpurious(label, spuriousLabel, relockLabel string) {
	if cv.c != nil {
		cv.c.wait(cv, label, relockLabel, spuriousLabel, true)
		return
	}
	cv.realWait(label, relockLabel)
}

// realWait joins the wait set before it releases the mutex, so that no
// Signal between the two is lost, as with a POSIX condition variable.
func (cv *Cond) realWait(label, relockLabel string) {
	m := cv.m
	if !m.isHeld() {
		m.e.realViolation(mutexViolation("wait on %s without holding %s (at %q)", cv.name, m.name, label))
		return
	}
	w := newWaiter(waitCond, cv.name, label)
	cv.rc.Lock()
	cv.rwait = append(cv.rwait, w)
	cv.rc.Unlock()
	m.Unlock(label)
	cv.e.sleep(w)
	m.Lock(relockLabel)
}

// realWake wakes the first waiter, or every one.
func (cv *Cond) realWake(all bool) {
	cv.rc.Lock()
	ws := cv.rwait
	switch {
	case all:
		cv.rwait = nil
	case len(ws) > 0:
		ws = ws[:1:1]
		cv.rwait = append([]*waiter(nil), cv.rwait[1:]...)
	}
	cv.rc.Unlock()
	for _, w := range ws {
		cv.e.wake(w)
	}
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
	cv.realWake(false)
	return -1
}

// Broadcast wakes every waiter. Controlled: a scheduling point with one
// alternative; it returns the goroutines it woke, in increasing order, as
// model.Exec.Broadcast does (real mode: nil, sync.Cond does not say).
func (cv *Cond) Broadcast(label string) (woken []int) {
	if cv.c != nil {
		return cv.c.signal(cv, label, true)
	}
	cv.realWake(true)
	return nil
}
