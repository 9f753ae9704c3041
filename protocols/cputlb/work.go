package cputlb

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// cpu->lock (the per-CPU lock of the branch) protects the work list and is
// the mutex halt_cond waits with. Its critical sections are steps as
// follows; the granularity rule (one step per lock operation) is relaxed
// only where Lipton's reduction makes a section one atomic step (the lock
// moves right, the operations on data the lock protects move both ways,
// the unlock moves left) and the real code can take the section as one
// step too.
//
//   - mttcg's loop takes cpu->lock when tcg_cpu_exec returns and holds it
//     across atomic_mb_set(exit_request, 0) (one step: the lock and the
//     store) into qemu_tcg_wait_io_event, whose idle test then either
//     waits on halt_cond (releasing the lock) or pops the next work item
//     and drops the lock (one step). A wake-up re-acquires the lock in a
//     step of its own, and the test follows as the next step. The lock is
//     held between these steps, as in the branch, so that no work item
//     can be queued between the test and the wait: a step's decision
//     (wait, or pop) is taken with the lock held, and the real code,
//     whose next scheduling point must be known before it is reached
//     (a Cond wait or an unlock), sees the same work list when it runs.
//   - queue_work_on_cpu on a target is three steps: lock and append;
//     qemu_cpu_kick (queue_work_on_cpu_locked kicks under the lock);
//     unlock. Without the kick (no-kick) it is two. The source's
//     async_safe_run_on_cpu on itself stays one step: only the source
//     takes its own cpu->lock, and not while it runs guest code.
//   - process_queued_cpu_work's g_free(wi) and the next pop (lock; free;
//     pop or, on an empty list, broadcast cpu->cond; unlock) stay one
//     step: nobody else holds the lock then (the item was queued, so its
//     queuer has unlocked, and nothing is queued twice on a vCPU).

func workList(c int) string    { return cpuName(c) + "->work_list" }
func cpuLockName(c int) string { return cpuName(c) + "->lock" }

// queueLock is queue_work_on_cpu's first step: lock the target's
// cpu->lock and append the item.
func (m *machine) queueLock(s *state, c int, it item, x *model.Exec) {
	v := &s.cpu[c]
	x.Lock(&s.cpuLock[c], cpuLockName(c))
	x.Touch(workList(c), true)
	if int(v.qlen) == len(v.queue) {
		x.Fail(WorkOnce, "model error: %s's work list is full", cpuName(c))
		return
	}
	v.queue[v.qlen] = it
	v.qlen++
	v.posted++
}

// queueUnlock is queue_work_on_cpu's last step.
func (m *machine) queueUnlock(s *state, c int, x *model.Exec) {
	x.Unlock(&s.cpuLock[c], cpuLockName(c))
}

// kick is qemu_cpu_kick under MTTCG: broadcast halt_cond and cpu_exit
// (exit_request = 1). The two commute for every observer (a halt_cond
// waiter re-tests the work list, never exit_request), so they are one step.
func (m *machine) kick(s *state, c int, x *model.Exec) {
	x.Broadcast(&s.haltCond[c], cpuName(c)+"->halt_cond")
	x.Store(s.mem, wExitReq(c), 1)
	x.Count(mKicks, 1)
}

// stepIdle is the bottom of mttcg's loop: take cpu->lock and clear
// exit_request, then qemu_tcg_wait_io_event (sleep on halt_cond while idle)
// and qemu_wait_io_event_common -> process_queued_cpu_work.
func (m *machine) stepIdle(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuName(t)
	switch v.pc {
	case pcClearExit:
		x.Lock(&s.cpuLock[t], cpuLockName(t))
		x.Store(s.mem, wExitReq(t), 0)
		x.Fence()
		x.Labelf("qemu_tcg_cpu_thread_fn(%s): qemu_mutex_lock(%s); atomic_mb_set(exit_request, 0)", name, cpuLockName(t))
		v.pc = pcIdle
	case pcIdle:
		// cpu_thread_is_idle, with cpu->lock held: halted with an empty
		// work list. When not idle the thread goes on to pop the work
		// list; the check and the pop are one step under the lock.
		x.Touch(workList(t), false)
		if v.halted && v.qlen == 0 {
			x.Wait(&s.haltCond[t], name+"->halt_cond", &s.cpuLock[t], cpuLockName(t))
			x.Labelf("qemu_tcg_wait_io_event(%s): cpu_thread_is_idle (halted, work list empty), qemu_cond_wait(halt_cond)", name)
			v.pc = pcHaltRelock
			return
		}
		m.popNext(s, t, x, fmt.Sprintf("qemu_tcg_wait_io_event(%s): not idle; process_queued_cpu_work: ", name), false)
	case pcHaltRelock:
		// Woken: re-acquire cpu->lock; the idle test is the next step.
		x.Lock(&s.cpuLock[t], cpuLockName(t))
		x.Labelf("qemu_tcg_wait_io_event(%s): woken, re-acquires %s", name, cpuLockName(t))
		v.pc = pcIdle
	}
}

// popNext is process_queued_cpu_work's loop head, with cpu->lock held
// (taken in this step or an earlier one of the caller): pop the next item
// and drop the lock, or, on an empty list, drop it (after broadcasting
// cpu->cond if an item ran).
func (m *machine) popNext(s *state, t int, x *model.Exec, prefix string, afterItem bool) {
	v := &s.cpu[t]
	x.Touch(workList(t), true)
	if v.qlen == 0 {
		if afterItem {
			// qemu_cond_broadcast(cpu->cond) for run_on_cpu waiters,
			// of which this model has none.
			x.Touch(cpuName(t)+"->cond", true)
		}
		x.Unlock(&s.cpuLock[t], cpuLockName(t))
		x.Labelf("%swork list empty", prefix)
		v.pc = pcStart
		return
	}
	v.cur = v.queue[0]
	v.queue[0], v.queue[1] = v.queue[1], itemNone
	v.qlen--
	x.Unlock(&s.cpuLock[t], cpuLockName(t))
	switch v.cur {
	case itemRemoteBQL:
		x.Labelf("%spop %s (wi->bql)", prefix, flushFn)
		v.pc = pcItemBQL
	case itemRemoteNoBQL:
		x.Labelf("%spop %s (no BQL)", prefix, flushFn)
		v.pc = pcItemRun
	case itemSafe:
		x.Labelf("%spop %s (wi->exclusive)", prefix, flushFn)
		v.pc = pcExclLock
	}
}

// flushFn is the flush worker. The model follows the path where idxmap does
// not fit beside the address (TLBFlushPageByMMUIdxData allocated per
// destination and freed by the worker), so work-once covers that g_free.
const flushFn = "tlb_flush_page_by_mmuidx_async_2"

// stepWork runs a popped item.
func (m *machine) stepWork(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuName(t)
	switch v.pc {
	case pcItemBQL:
		x.Lock(&s.bql, "bql")
		x.Count(mBQL, 1)
		x.Labelf("process_queued_cpu_work(%s): wi->bql: qemu_mutex_lock_iothread", name)
		v.pc = pcItemRun
	case pcItemRun:
		m.flushOwnTLB(s, t, x)
		x.Labelf("%s(%s): flush page X from %s's softmmu TLB, g_free(d)", flushFn, name, name)
		v.pc = pcItemDone
		if v.cur == itemRemoteBQL {
			v.pc = pcItemUnBQL
		}
	case pcItemUnBQL:
		x.Unlock(&s.bql, "bql")
		x.Labelf("process_queued_cpu_work(%s): qemu_mutex_unlock_iothread", name)
		v.pc = pcItemDone
	case pcItemDone:
		x.Lock(&s.cpuLock[t], cpuLockName(t))
		v.freedW++
		x.Assert(v.freedW <= v.ran, WorkOnce, "%s frees a work item whose flush did not run (freed %d, ran %d)", name, v.freedW, v.ran)
		v.cur = itemNone
		m.popNext(s, t, x, fmt.Sprintf("process_queued_cpu_work(%s): g_free(wi); ", name), true)
	}
}

// flushOwnTLB is a flush worker running on vCPU t's own thread: it drops
// page X from t's TLB, frees the per-destination data and counts the run.
func (m *machine) flushOwnTLB(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	x.Touch(cpuName(t)+"->tlb", true)
	v.tlb = false
	v.ran++
	v.freedD++
	x.Assert(v.ran <= v.posted, WorkOnce, "%s runs a flush item %d times, but %d was queued", cpuName(t), v.ran, v.posted)
	x.Assert(v.freedD <= v.posted, WorkOnce, "%s frees TLBFlushPageByMMUIdxData twice", cpuName(t))
}
