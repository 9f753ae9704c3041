package exclusive

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// run is the context of one step (or one settle decision, where x is nil)
// of thread t on the state s, which the step changes in place.
type run struct {
	m  *machine
	s  *state
	t  int
	th *thread
	x  *model.Exec
}

func (r *run) call(fn, ret uint8) {
	r.th.stack[r.th.sp] = ret
	r.th.sp++
	r.th.pc = fn
}

func (r *run) ret() {
	r.th.sp--
	r.th.pc = r.th.stack[r.th.sp]
}

// labelling: the step's label is wanted. Every label is built under it,
// so that exploring formats nothing.
func (r *run) labelling() bool { return r.x.Labelling() }

func (r *run) label(s string) { r.x.Label(s) }

func (r *run) labelf(format string, args ...any) { r.x.Labelf(format, args...) }

func (r *run) name(t int) string { return r.m.threads[t] }

func (r *run) cpuLockName(c int) string { return r.m.lockNames[c] }

// Under x86-TSO (memory=1, no-smp-mb) every mutex operation drains the
// stepping thread's store buffer, as a full barrier would. On x86 that is
// what QEMU's QemuMutex (pthread, glibc) does: the acquire is a lock
// cmpxchg, and the release is lll_unlock's atomic exchange (xchg), a
// locked instruction too, not a plain store; qemu_cond_wait releases and
// re-acquires the mutex the same way. It is also the conservative choice
// for the model, whose Mutex lives outside model.Mem and is visible at
// once: a release that left the critical section's stores buffered would
// let the next holder miss them, which x86-TSO's in-order commits never
// allow. Signal and broadcast do not drain (glibc's need not touch memory
// with a locked instruction when there is no waiter); they run under the
// mutex, whose release drains. Under sequential consistency nothing of
// this is recorded: steps and footprints are those of the SC model.
func (r *run) drain() {
	if r.s.mem.TSO() {
		r.x.Fence(r.s.mem)
	}
}

// lock takes mu, or, when another thread holds it, blocks the step (which
// must not have changed anything yet) and returns false: the step returns
// at once. The blocked step's label says what the thread waits for.
func (r *run) lock(mu *model.Mutex, name string) bool {
	if !mu.Free() && !mu.HeldBy(r.t) {
		if r.labelling() {
			r.label(r.m.lockWait(r.s, r.t, mu))
		}
		return r.take(mu, name)
	}
	r.drain()
	r.take(mu, name)
	if mu == &r.s.listLock {
		r.x.Count(mListLock, 1)
	}
	return true
}

// take is Exec.Lock, with the mutex's lock word under ARMv8 (memory=2).
func (r *run) take(mu *model.Mutex, name string) bool {
	if r.m.arm {
		return r.x.LockWord(r.s.mem, r.m.lockWord(r.s, mu), mu, name)
	}
	return r.x.Lock(mu, name)
}

func (r *run) unlock(mu *model.Mutex, name string) {
	r.drain()
	if r.m.arm {
		r.x.UnlockWord(r.s.mem, r.m.lockWord(r.s, mu), mu, name)
		return
	}
	r.x.Unlock(mu, name)
}

// woken is the first half of a woken waiter's step: while the thread is
// still in c's wait set it is blocked (woken returns false and the step
// returns at once), and the label says what it sleeps on.
func (r *run) woken(c *model.Cond, cname string) bool {
	if c.Waiting(r.t) && r.labelling() {
		r.label(r.m.sleepsOn(r.s, r.t))
	}
	return r.x.Woken(c, cname)
}

// reacquire is the rest of that step: the woken waiter gets its mutex
// back, the hand-off of the mutex from the waker to the wakee.
func (r *run) reacquire(mu *model.Mutex, name string) bool {
	if !r.lock(mu, name) {
		return false
	}
	r.x.Count(mHandoffs, 1)
	return true
}

// wokenRelock is the step of a thread that waits on c (with mu) in a loop
// that re-checks its predicate, as every qemu_cond_wait of QEMU does: while
// it still sleeps, a spurious wake-up (spurious=1, once per thread) is a
// step of its own, which leaves the wait set woken by nobody, labelled
// "fn: spurious wake-up from qemu_cond_wait(c)"; once woken (by a signal,
// a broadcast or that step) the thread re-acquires mu. It returns true
// when the thread has re-acquired mu and the caller's step goes on; false
// when the step is over (spurious wake-up) or blocked.
func (r *run) wokenRelock(c *model.Cond, cname string, mu *model.Mutex, mname, fn string) bool {
	if c.Waiting(r.t) && r.canSpurious() {
		r.x.WakeSpuriously(c, cname)
		r.s.spurUsed |= 1 << uint(r.t)
		if r.labelling() {
			r.label(fn + ": spurious wake-up from qemu_cond_wait(" + cname + ")")
		}
		return false
	}
	return r.woken(c, cname) && r.reacquire(mu, mname)
}

// canSpurious: the thread may still wake spuriously once.
func (r *run) canSpurious() bool {
	return r.m.spurious && r.s.spurUsed&(1<<uint(r.t)) == 0
}

// kick is qemu_cpu_kick(cpu c): qemu_cond_broadcast(cpu->halt_cond), then
// (MTTCG) cpu_exit: qatomic_set(&cpu->exit_request, 1). It is one step: a
// thread asleep on halt_cond is halted, so the cpu_exec it runs once woken
// returns at cpu_handle_halt before reading exit_request, and a thread not
// asleep there is not affected by the broadcast; no thread can see one of
// the two without the other. cpu_exit's smp_wmb and its store of
// icount_decr.u16.high, which only chained TBs read, are not modelled
// (doc.go). It returns the label's text when labelling.
func (r *run) kick(c int) string {
	ws := r.broadcast(&r.s.haltCond[c], r.haltName(c))
	r.x.Store(r.s.mem, r.m.aExit[c], 1)
	if !r.labelling() {
		return ""
	}
	return fmt.Sprintf("qemu_cpu_kick(cpu%d): qemu_cond_broadcast(cpu%d->halt_cond) %s; cpu_exit(cpu%d): %s(&cpu%d->exit_request, 1)",
		c, c, r.wakesAll(ws), c, r.m.atomicSet, c)
}

func (r *run) wait(c *model.Cond, cname string, mu *model.Mutex, mname string) {
	r.drain()
	if r.m.arm {
		// pthread_cond_wait releases the mutex; the waiter's next access
		// is the re-acquire once woken.
		r.x.ReleaseWordAndPark(r.s.mem, r.m.lockWord(r.s, mu))
	}
	r.x.Wait(c, cname, mu, mname)
}

// signal wakes one waiter of c, drawn by the explorer, and returns it
// (-1: nobody waits).
func (r *run) signal(c *model.Cond, cname string) int {
	w := r.x.Signal(c, cname)
	if w >= 0 {
		r.x.Count(mWakeups, 1)
	}
	return w
}

// broadcast wakes every waiter of c and returns them.
func (r *run) broadcast(c *model.Cond, cname string) model.Cond {
	ws := r.x.Broadcast(c, cname)
	r.x.Count(mWakeups, int64(ws.Len()))
	return ws
}

// wakes says whom a signal woke, for labels.
func (r *run) wakes(w int) string {
	if w < 0 {
		return "wakes nobody"
	}
	return "wakes " + r.name(w)
}

// wakesAll says whom a broadcast woke, for labels.
func (r *run) wakesAll(woken model.Cond) string {
	ws := woken.Waiters()
	if len(ws) == 0 {
		return "wakes nobody"
	}
	out := "wakes"
	for _, w := range ws {
		out += " " + r.name(w)
	}
	return out
}

// step executes thread t's current pc.
func (r *run) step() {
	switch pc := r.th.pc; {
	case pc >= pcVStart && pc <= pcVRelock:
		r.vcpuStep()
	case pc >= pcQLock && pc <= pcQUnlock:
		r.queueStep()
	case pc >= pcPEntry && pc <= pcPBcast:
		r.workStep()
	case pc >= pcSXEntry && pc <= pcXEUnlock:
		r.upstreamStep()
	case pc >= pcCSLock && pc <= pcR2Woken:
		r.cpuLockStep()
	case pc >= pcIOStart && pc <= pcRCLockBQL:
		r.ioStep()
	default:
		panic("exclusive: no step at " + pcName(pc))
	}
}

// decide resolves thread t's decision pc.
func (r *run) decide() {
	switch r.th.pc {
	case pcVIdle, pcVTop, pcVExec, pcVTB:
		r.vcpuDecide()
	case pcPEntry, pcPNestedEnd, pcPOuterEnd, pcPSafeDone, pcPNext:
		r.workDecide()
	case pcSXEntry, pcEXEntry:
		r.upstreamDecide()
	case pcR1, pcR2:
		r.cpuLockDecide()
	case pcIONext, pcHPEnd:
		r.ioDecide()
	default:
		panic("exclusive: no decision at " + pcName(r.th.pc))
	}
}

// Observers. in-exec(c) is A1-S1's: from cpu_exec_start's return to
// cpu_exec_end's first access; an exclusive section is active from
// start_exclusive's return to end_exclusive's first step. Both also
// record the operations of the linearizability spec.

func (r *run) enterExec(c int) {
	r.s.inExec[c] = true
	r.s.execGen[c] = r.s.gen
	if r.x.Recording() {
		r.x.Call(c, execOp{CPU: c, Gen: int(r.s.gen)})
	}
}

func (r *run) leaveExec(c int) {
	r.s.inExec[c] = false
	if r.x.Recording() {
		r.x.Return(c, int(r.s.gen))
	}
}

func (r *run) sectionStart() {
	r.s.active[r.t] = true
	if r.x.Recording() {
		r.x.Call(clientExclusive+r.t, exclusiveOp{Thread: r.m.threads[r.t], Gen: int(r.s.gen)})
	}
}

func (r *run) sectionEnd() {
	r.s.active[r.t] = false
	if r.x.Recording() {
		r.x.Return(clientExclusive+r.t, int(r.s.gen))
	}
}

// runWork marks that a work item's func runs; a second run of the same
// item is the work-once violation.
func (r *run) runWork(i int) {
	if r.s.ran[i]++; r.s.ran[i] != 1 {
		r.x.Fail(PropWorkOnce, "%s runs %s a second time", r.name(r.t), r.m.itemName(i))
	}
}
