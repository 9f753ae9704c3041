package model

import (
	"fmt"
	"math/bits"
)

// A Mutex is a lock kept in a model's state. The zero value is unlocked.
// A model enables a thread's lock step only when Free reports true; the
// step then calls Exec.Lock. Each acquire and release is one step
// (DESIGN.md granularity rule).
type Mutex struct {
	holder int16 // thread+1; 0 when free
}

// Free reports whether the mutex is unlocked.
func (m Mutex) Free() bool { return m.holder == 0 }

// Holder returns the thread holding the mutex, or -1.
func (m Mutex) Holder() int { return int(m.holder) - 1 }

// HeldBy reports whether thread t holds the mutex.
func (m Mutex) HeldBy(t int) bool { return int(m.holder) == t+1 }

func (m Mutex) String() string {
	if m.holder == 0 {
		return "free"
	}
	return fmt.Sprintf("held by %d", m.holder-1)
}

// Lock acquires m for the stepping thread. Locking a held mutex is a
// modelling error reported as the assertion "mutex".
func (x *Exec) Lock(m *Mutex, name string) {
	x.Touch(name, true)
	if m.holder != 0 {
		x.Fail("mutex", "thread %d locks %s, which thread %d holds", x.thread, name, m.holder-1)
		return
	}
	m.holder = int16(x.thread + 1)
}

// Unlock releases m. Releasing a mutex the thread does not hold fails the
// assertion "mutex" (qemu_mutex_unlock's own check).
func (x *Exec) Unlock(m *Mutex, name string) {
	x.Touch(name, true)
	if !m.HeldBy(x.thread) {
		x.Fail("mutex", "thread %d unlocks %s, which it does not hold (%s)", x.thread, name, m)
		return
	}
	m.holder = 0
}

// A Cond is a condition variable with POSIX semantics, kept in a model's
// state: Wait releases the mutex and joins the wait set in one step; a
// woken thread leaves the wait set and must re-acquire the mutex in a
// separate step, which the model enables when the mutex is free; Signal
// wakes one waiter chosen by the explorer (one alternative per waiter);
// Broadcast wakes all. Spurious wake-ups are a separate step a model may
// enable (Exec.WakeSpuriously). Up to 64 threads.
type Cond struct {
	waiters uint64 // bit t set: thread t is in the wait set
}

// Waiting reports whether thread t is in the wait set.
func (c Cond) Waiting(t int) bool { return c.waiters&(1<<uint(t)) != 0 }

// Waiters returns the threads in the wait set, in increasing order.
func (c Cond) Waiters() []int {
	var out []int
	for w := c.waiters; w != 0; w &= w - 1 {
		out = append(out, bits.TrailingZeros64(w))
	}
	return out
}

// SignalAlts is the number of alternatives of a Signal step: one per
// waiter, or one (waking nobody) when the wait set is empty.
func (c Cond) SignalAlts() int {
	if n := bits.OnesCount64(c.waiters); n > 0 {
		return n
	}
	return 1
}

func (c Cond) String() string { return fmt.Sprint(c.Waiters()) }

// Wait releases m and puts the stepping thread in c's wait set, in one
// step.
func (x *Exec) Wait(c *Cond, cname string, m *Mutex, mname string) {
	x.Unlock(m, mname)
	x.Touch(cname, true)
	c.waiters |= 1 << uint(x.thread)
}

// Signal wakes the alt-th waiter of c (in increasing thread order) and
// returns it, or returns -1 when nobody waits.
func (x *Exec) Signal(c *Cond, cname string, alt int) int {
	x.Touch(cname, true)
	ws := c.Waiters()
	if len(ws) == 0 {
		return -1
	}
	if alt < 0 || alt >= len(ws) {
		x.Fail("cond", "signal of %s with alternative %d, but %d threads wait", cname, alt, len(ws))
		return -1
	}
	c.waiters &^= 1 << uint(ws[alt])
	return ws[alt]
}

// Broadcast wakes every waiter of c and returns them.
func (x *Exec) Broadcast(c *Cond, cname string) []int {
	x.Touch(cname, true)
	ws := c.Waiters()
	c.waiters = 0
	return ws
}

// WakeSpuriously removes the stepping thread from c's wait set without a
// signal, as POSIX allows.
func (x *Exec) WakeSpuriously(c *Cond, cname string) {
	x.Touch(cname, true)
	c.waiters &^= 1 << uint(x.thread)
}
