package cputlb

import "github.com/protocheck/protocheck/model"

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

// queueLock is queue_work_on_cpu's first step: lock the target's
// cpu->lock and append the item. The caller has blocked the step while
// the lock is held (cpuLockBusy).
func (m *machine) queueLock(s *state, c int, it item, x *model.Exec) {
	v := &s.cpu[c]
	x.Lock(&s.cpuLock[c], cpuLockNames[c])
	x.Touch(workLists[c], true)
	if int(v.qlen) == len(v.queue) {
		x.Fail(WorkOnce, "model error: %s's work list is full", cpuNames[c])
		return
	}
	v.queue[v.qlen] = it
	v.qlen++
	v.posted++
}

// queueUnlock is queue_work_on_cpu's last step.
func (m *machine) queueUnlock(s *state, c int, x *model.Exec) {
	x.Unlock(&s.cpuLock[c], cpuLockNames[c])
}

// kick is qemu_cpu_kick under MTTCG: broadcast halt_cond and cpu_exit
// (exit_request = 1). The two commute for every observer (a halt_cond
// waiter re-tests the work list, never exit_request), so they are one step.
func (m *machine) kick(s *state, c int, x *model.Exec) {
	x.Broadcast(&s.haltCond[c], haltCondNames[c])
	x.Store(s.mem, wExitReq(c), 1)
	x.Count(mKicks, 1)
}

// stepIdle is the bottom of mttcg's loop: take cpu->lock and clear
// exit_request, then qemu_tcg_wait_io_event (sleep on halt_cond while idle)
// and qemu_wait_io_event_common -> process_queued_cpu_work.
func (m *machine) stepIdle(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuNames[t]
	switch v.pc {
	case pcClearExit:
		if cpuLockBusy(s, t, x) {
			return
		}
		x.Lock(&s.cpuLock[t], cpuLockNames[t])
		x.Store(s.mem, wExitReq(t), 0)
		x.Fence()
		if x.Labelling() {
			x.Labelf("qemu_tcg_cpu_thread_fn(%s): qemu_mutex_lock(%s); atomic_mb_set(exit_request, 0)", name, cpuLockNames[t])
		}
		v.pc = pcIdle
	case pcIdle:
		// cpu_thread_is_idle, with cpu->lock held: halted with an empty
		// work list. When not idle the thread goes on to pop the work
		// list; the check and the pop are one step under the lock.
		x.Touch(workLists[t], false)
		if v.halted && v.qlen == 0 {
			x.Wait(&s.haltCond[t], haltCondNames[t], &s.cpuLock[t], cpuLockNames[t])
			if x.Labelling() {
				x.Labelf("qemu_tcg_wait_io_event(%s): cpu_thread_is_idle (halted, work list empty), qemu_cond_wait(halt_cond)", name)
			}
			v.pc = pcHaltRelock
			return
		}
		prefix := ""
		if x.Labelling() {
			prefix = "qemu_tcg_wait_io_event(" + name + "): not idle; process_queued_cpu_work: "
		}
		m.popNext(s, t, x, prefix, false)
	case pcHaltRelock:
		// Woken: re-acquire cpu->lock; the idle test is the next step.
		// Asleep with nothing queued and the guest halted for good, the
		// vCPU is done.
		if s.haltCond[t].Waiting(t) {
			if v.qlen == 0 && m.programDone(t, v) {
				x.Done()
				return
			}
			x.Block()
			if x.Labelling() {
				x.Labelf("%s (halted with %d queued work item(s) and nobody left to kick it)", haltCondNames[t], v.qlen)
			}
			return
		}
		if cpuLockBusy(s, t, x) {
			return
		}
		x.Lock(&s.cpuLock[t], cpuLockNames[t])
		if x.Labelling() {
			x.Labelf("qemu_tcg_wait_io_event(%s): woken, re-acquires %s", name, cpuLockNames[t])
		}
		v.pc = pcIdle
	}
}

// popNext is process_queued_cpu_work's loop head, with cpu->lock held
// (taken in this step or an earlier one of the caller): pop the next item
// and drop the lock, or, on an empty list, drop it (after broadcasting
// cpu->cond if an item ran).
func (m *machine) popNext(s *state, t int, x *model.Exec, prefix string, afterItem bool) {
	v := &s.cpu[t]
	x.Touch(workLists[t], true)
	if v.qlen == 0 {
		if afterItem {
			// qemu_cond_broadcast(cpu->cond) for run_on_cpu waiters,
			// of which this model has none.
			x.Touch(cpuCondNames[t], true)
		}
		x.Unlock(&s.cpuLock[t], cpuLockNames[t])
		if x.Labelling() {
			x.Labelf("%swork list empty", prefix)
		}
		v.pc = pcStart
		return
	}
	v.cur = v.queue[0]
	v.queue[0], v.queue[1] = v.queue[1], itemNone
	v.qlen--
	x.Unlock(&s.cpuLock[t], cpuLockNames[t])
	switch v.cur {
	case itemRemoteBQL:
		if x.Labelling() {
			x.Labelf("%spop %s (wi->bql)", prefix, flushFn)
		}
		v.pc = pcItemBQL
	case itemRemoteNoBQL:
		if x.Labelling() {
			x.Labelf("%spop %s (no BQL)", prefix, flushFn)
		}
		v.pc = pcItemRun
	case itemSafe:
		if x.Labelling() {
			x.Labelf("%spop %s (wi->exclusive)", prefix, flushFn)
		}
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
	name := cpuNames[t]
	switch v.pc {
	case pcItemBQL:
		if !s.bql.Free() {
			x.Block()
			if x.Labelling() {
				x.Label("the BQL (" + s.bql.String() + ")")
			}
			return
		}
		x.Lock(&s.bql, "bql")
		x.Count(mBQL, 1)
		if x.Labelling() {
			x.Labelf("process_queued_cpu_work(%s): wi->bql: qemu_mutex_lock_iothread", name)
		}
		v.pc = pcItemRun
	case pcItemRun:
		m.flushOwnTLB(s, t, x)
		if x.Labelling() {
			x.Labelf("%s(%s): flush page X from %s's softmmu TLB, g_free(d)", flushFn, name, name)
		}
		v.pc = pcItemDone
		if v.cur == itemRemoteBQL {
			v.pc = pcItemUnBQL
		}
	case pcItemUnBQL:
		x.Unlock(&s.bql, "bql")
		if x.Labelling() {
			x.Labelf("process_queued_cpu_work(%s): qemu_mutex_unlock_iothread", name)
		}
		v.pc = pcItemDone
	case pcItemDone:
		if cpuLockBusy(s, t, x) {
			return
		}
		x.Lock(&s.cpuLock[t], cpuLockNames[t])
		v.freedW++
		if v.freedW > v.ran {
			x.Fail(WorkOnce, "%s frees a work item whose flush did not run (freed %d, ran %d)", name, v.freedW, v.ran)
		}
		v.cur = itemNone
		prefix := ""
		if x.Labelling() {
			prefix = "process_queued_cpu_work(" + name + "): g_free(wi); "
		}
		m.popNext(s, t, x, prefix, true)
	}
}

// flushOwnTLB is a flush worker running on vCPU t's own thread: it drops
// page X from t's TLB, frees the per-destination data and counts the run.
func (m *machine) flushOwnTLB(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	x.Touch(tlbNames[t], true)
	v.tlb = false
	v.ran++
	v.freedD++
	if v.ran > v.posted {
		x.Fail(WorkOnce, "%s runs a flush item %d times, but %d was queued", cpuNames[t], v.ran, v.posted)
	}
	if v.freedD > v.posted {
		x.Fail(WorkOnce, "%s frees TLBFlushPageByMMUIdxData twice", cpuNames[t])
	}
}
