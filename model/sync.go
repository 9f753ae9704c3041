package model

import (
	"fmt"
	"math/bits"
)

// A Mutex is a lock kept in a model's state. The zero value is unlocked.
// Each acquire and release is one step (the granularity rule, see the package documentation).
type Mutex struct {
	holder int16 // thread+1; 0 when free
}

// HeldMutex returns a mutex held by thread t (or free, for t < 0): for a
// hand-written Decode that rebuilds a state.
func HeldMutex(t int) Mutex { return Mutex{holder: int16(t + 1)} }

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

// Lock acquires m for the stepping thread and returns true, or, when
// another thread holds m, blocks the step (see Exec.Block) and returns
// false: the caller returns at once. Locking a mutex the thread already
// holds fails the assertion "mutex" (a non-recursive mutex deadlocks on
// itself).
func (x *Exec) Lock(m *Mutex, name string) bool {
	switch {
	case m.holder == 0:
		x.Touch(name, true)
		m.holder = int16(x.thread + 1)
		return true
	case m.HeldBy(x.thread):
		x.Touch(name, true)
		x.Fail("mutex", "%s locks %s, which it already holds", x.ThreadName(x.thread), name)
		return true
	}
	x.Block()
	if x.labelling && x.label == "" {
		x.label = fmt.Sprintf("%s (held by %s)", name, x.ThreadName(m.Holder()))
	}
	return false
}

// Unlock releases m. Releasing a mutex the thread does not hold fails the
// assertion "mutex" (qemu_mutex_unlock's own check).
func (x *Exec) Unlock(m *Mutex, name string) {
	x.Touch(name, true)
	if !m.HeldBy(x.thread) {
		x.Fail("mutex", "%s unlocks %s, which it does not hold (%s)", x.ThreadName(x.thread), name, m)
		return
	}
	m.holder = 0
}

// A Cond is a condition variable with POSIX semantics, kept in a model's
// state: Wait releases the mutex and joins the wait set in one step; a
// woken thread leaves the wait set and re-acquires the mutex in a separate
// step (Woken, then Lock); Signal wakes one waiter chosen by the explorer
// (one alternative per waiter); Broadcast wakes all. A spurious wake-up is
// a step the model takes where the code allows one (WakeSpuriously). Up
// to 64 threads.
type Cond struct {
	waiters uint64 // bit t set: thread t is in the wait set
}

// CondWith returns a condition variable whose wait set is the threads set
// in waiters (bit t: thread t): for a hand-written Decode.
func CondWith(waiters uint64) Cond { return Cond{waiters: waiters} }

// Set is the wait set, bit t for thread t.
func (c Cond) Set() uint64 { return c.waiters }

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

// Len is the number of threads in the wait set.
func (c Cond) Len() int { return bits.OnesCount64(c.waiters) }

func (c Cond) String() string { return fmt.Sprint(c.Waiters()) }

// Wait releases m and puts the stepping thread in c's wait set, in one
// step.
func (x *Exec) Wait(c *Cond, cname string, m *Mutex, mname string) {
	x.Unlock(m, mname)
	x.Touch(cname, true)
	c.waiters |= 1 << uint(x.thread)
}

// Woken reports whether the stepping thread has left c's wait set. While
// it is still in it, Woken blocks the step ("cname (not woken yet)") and
// returns false: the caller returns at once.
func (x *Exec) Woken(c *Cond, cname string) bool {
	if !c.Waiting(x.thread) {
		return true
	}
	x.Block()
	if x.labelling && x.label == "" {
		x.label = cname + " (not woken yet)"
	}
	return false
}

// Signal wakes one waiter of c and returns it, or returns -1 when nobody
// waits. With several waiters the step draws which one (alternative i
// wakes the i-th waiter in increasing thread order), so every choice is
// explored.
func (x *Exec) Signal(c *Cond, cname string) int {
	x.Touch(cname, true)
	n := c.Len()
	if n == 0 {
		return -1
	}
	i := 0
	if n > 1 {
		i = x.Choose(n)
	}
	w := c.waiters
	for ; i > 0; i-- {
		w &= w - 1
	}
	t := bits.TrailingZeros64(w)
	c.waiters &^= 1 << uint(t)
	return t
}

// Broadcast wakes every waiter of c and returns the wait set it emptied
// (Len and Waiters say whom it woke; a value, so that a step that does not
// ask allocates nothing).
func (x *Exec) Broadcast(c *Cond, cname string) Cond {
	x.Touch(cname, true)
	woken := *c
	c.waiters = 0
	return woken
}

// WakeSpuriously removes the stepping thread from c's wait set without a
// signal, as POSIX allows.
func (x *Exec) WakeSpuriously(c *Cond, cname string) {
	x.Touch(cname, true)
	c.waiters &^= 1 << uint(x.thread)
}

// SetThreadNames gives x the machine's thread names, for the texts its
// primitives write (who holds a mutex).
func (x *Exec) SetThreadNames(names []string) { x.names = names }

// ThreadName names thread t for messages.
func (x *Exec) ThreadName(t int) string {
	if t >= 0 && t < len(x.names) {
		return x.names[t]
	}
	return fmt.Sprintf("thread %d", t)
}
