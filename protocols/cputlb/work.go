package cputlb

import "github.com/protocheck/protocheck/model"

// cpu->lock (the per-CPU lock of the branch, cota/qemu cpus-common.c at
// 09addeed) protects the work list and wi->done, and is the mutex that
// halt_cond and cpu->cond wait with. Every lock and unlock of it is a step
// of its own, with these folds, each by Lipton's reduction (the lock moves
// right, accesses to data the lock protects move both ways, the unlock
// moves left):
//
//   - mttcg's loop takes cpu->lock when tcg_cpu_exec returns and holds it
//     across atomic_mb_set(exit_request, 0) (one step: the lock and the
//     store) into qemu_tcg_wait_io_event, whose idle test then either
//     waits on halt_cond (releasing the lock) or pops the next work item
//     and drops the lock (one step: the pop touches only the list). A
//     wake-up re-acquires the lock in a step of its own, and the test
//     follows as the next step. The lock is held between these steps, as
//     in the branch, so that no work item can be queued between the test
//     and the wait.
//   - queue_work_on_cpu is three steps: lock and append; qemu_cpu_kick
//     (queue_work_on_cpu_locked kicks under the lock); unlock. Without the
//     kick (no-kick) it is two. run_on_cpu waits instead of unlocking.
//   - process_queued_cpu_work, after an item: lock and g_free(wi) (or
//     atomic_mb_set(&wi->done, true) for a run_on_cpu item); then, the
//     lock held, pop the next item and unlock (one step), or, the list
//     drained, qemu_cond_broadcast(&cpu->cond) and unlock (two steps).

// queueLock is queue_work_on_cpu's first step: lock vCPU c's cpu->lock
// and append the item. The caller has blocked the step while the lock is
// held (cpuLockBusy).
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

// kick is qemu_cpu_kick under MTTCG: broadcast halt_cond and cpu_exit
// (exit_request = 1). The two commute for every observer (a halt_cond
// waiter re-tests its work list, never exit_request), so they are one step.
func (m *machine) kick(s *state, c int, x *model.Exec) {
	x.Broadcast(&s.haltCond[c], haltCondNames[c])
	x.Store(s.mem, m.aExitReq[c], 1)
	x.Count(mKicks, 1)
}

// kickLabel is the label of a kick of vCPU c.
func kickLabel(c int) string {
	return "qemu_cpu_kick(" + cpuNames[c] + "): qemu_cond_broadcast(" + haltCondNames[c] + "), cpu_exit"
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
		x.Store(s.mem, m.aExitReq[t], 0)
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
		m.popNext(s, t, x, prefix)
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

// popNext is process_queued_cpu_work's loop head at its entry, with
// cpu->lock held: pop the next item and drop the lock, or, on an empty
// list, return and drop it (no broadcast: nothing ran).
func (m *machine) popNext(s *state, t int, x *model.Exec, prefix string) {
	v := &s.cpu[t]
	x.Touch(workLists[t], true)
	x.Unlock(&s.cpuLock[t], cpuLockNames[t])
	if v.qlen == 0 {
		if x.Labelling() {
			x.Labelf("%swork list empty; qemu_mutex_unlock(%s)", prefix, cpuLockNames[t])
		}
		v.pc = pcStart
		return
	}
	m.pop(s, t, x, prefix)
}

// pop takes the first item off vCPU t's list (the caller has unlocked
// cpu->lock in this step) and goes on to run it.
func (m *machine) pop(s *state, t int, x *model.Exec, prefix string) {
	v := &s.cpu[t]
	v.cur = v.queue[0]
	copy(v.queue[:], v.queue[1:])
	v.queue[queueCap-1] = itemNone
	v.qlen--
	v.sub = 0
	if x.Labelling() {
		x.Labelf("%spop %s%s; qemu_mutex_unlock(%s)", prefix, funcName(v.cur), itemMode(v.cur), cpuLockNames[t])
	}
	switch {
	case v.cur.kind() == itemSafe:
		v.pc = pcExclLock
	case v.cur.bql():
		v.pc = pcItemBQL
	default:
		v.pc = pcItemRun
	}
}

// funcName names a work item's function.
func funcName(it item) string {
	switch it.kind() {
	case itemRemoteBQL, itemRemoteNoBQL, itemSafe:
		return flushFn + "(" + pageNames[it.src()] + ")"
	case itemRunOnCPU:
		return "do_nothing"
	case itemCommitBQL, itemCommitNoBQL:
		return "tlb_flush_by_mmuidx_async_work"
	case itemCommitCPU:
		return "tcg_commit_cpu"
	}
	return "-"
}

func itemMode(it item) string {
	switch {
	case it.kind() == itemSafe:
		return " (wi->exclusive)"
	case it.bql():
		return " (wi->bql)"
	}
	return " (no BQL)"
}

// flushFn is the remote flush worker. The model follows the path where
// idxmap fits beside the page address (tlb_flush_page_by_mmuidx_async_1,
// "Most targets have only a few mmu_idx"), which flush_all_helper queues
// and which seed 000 converts; the other path, a TLBFlushPageByMMUIdxData
// allocated per destination for tlb_flush_page_by_mmuidx_async_2, is
// queued by a loop in the _synced function itself, which the seed leaves
// on async_run_on_cpu.
const flushFn = "tlb_flush_page_by_mmuidx_async_1"

// stepWork runs a popped item. An item with wi->bql takes the BQL and
// runs its function in one step (Lipton: the lock is a right mover and
// every function's body is a single step whose accesses the BQL or
// tlb.c.lock protect, or the vCPU's own), and releases it in the next.
func (m *machine) stepWork(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuNames[t]
	switch v.pc {
	case pcItemBQL:
		if bqlBusy(s, x) {
			return
		}
		x.Lock(&s.bql, "bql")
		x.Count(mBQL, 1)
		if v.cur.flush() {
			x.Count(mFlushBQL, 1)
		}
		prefix := ""
		if x.Labelling() {
			prefix = "process_queued_cpu_work(" + name + "): wi->bql: qemu_mutex_lock_iothread; "
		}
		m.runFunc(s, t, x, prefix)
		v.pc = pcItemUnBQL
	case pcItemRun:
		m.runFunc(s, t, x, "")
		v.pc = pcItemDone
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
		v.freed++
		if v.freed > v.ran {
			x.Fail(WorkOnce, "%s frees a work item whose function did not run (freed %d, ran %d)", name, v.freed, v.ran)
		}
		if v.cur.kind() == itemRunOnCPU {
			x.Store(s.mem, m.aDone[t], 1)
			if x.Labelling() {
				x.Labelf("process_queued_cpu_work(%s): qemu_mutex_lock(%s); atomic_mb_set(&wi->done, true)", name, cpuLockNames[t])
			}
		} else if x.Labelling() {
			x.Labelf("process_queued_cpu_work(%s): qemu_mutex_lock(%s); g_free(wi)", name, cpuLockNames[t])
		}
		v.cur = itemNone
		v.pc = pcItemPop
	case pcItemPop:
		x.Touch(workLists[t], true)
		if v.qlen > 0 {
			x.Unlock(&s.cpuLock[t], cpuLockNames[t])
			prefix := ""
			if x.Labelling() {
				prefix = "process_queued_cpu_work(" + name + "): "
			}
			m.pop(s, t, x, prefix)
			return
		}
		x.Broadcast(&s.cpuCond[t], cpuCondNames[t])
		if x.Labelling() {
			x.Labelf("process_queued_cpu_work(%s): work list drained; qemu_cond_broadcast(%s)", name, cpuCondNames[t])
		}
		v.pc = pcItemUnlock
	case pcItemUnlock:
		x.Unlock(&s.cpuLock[t], cpuLockNames[t])
		if x.Labelling() {
			x.Labelf("process_queued_cpu_work(%s): qemu_mutex_unlock(%s)", name, cpuLockNames[t])
		}
		v.pc = pcStart
	}
}

// runFunc runs vCPU t's current item's function (a safe item's too,
// inside its exclusive section), one step: each function's accesses are a
// critical section on tlb.c.lock, with, for tcg_commit_cpu, the store of
// the vCPU's own memory_dispatch and the read of the map the BQL it holds
// protects. prefix starts the label (when labelling).
func (m *machine) runFunc(s *state, t int, x *model.Exec, prefix string) {
	v := &s.cpu[t]
	name := cpuNames[t]
	it := v.cur
	m.ran(s, t, x)
	switch it.kind() {
	case itemRemoteBQL, itemRemoteNoBQL, itemSafe:
		p := it.src()
		m.flushPage(s, t, p, x)
		if x.Labelling() {
			x.Labelf("%s%s(%s): tlb_flush_page_by_mmuidx_async_0: qemu_spin_lock(%s); flush page %s; qemu_spin_unlock", prefix, flushFn, name, tlbLockNames[t], pageNames[p])
		}
	case itemRunOnCPU:
		x.Touch(workLists[t], false)
		if x.Labelling() {
			x.Labelf("%sdo_nothing(%s)", prefix, name)
		}
	case itemCommitBQL, itemCommitNoBQL:
		m.flushAll(s, t, x)
		if x.Labelling() {
			x.Labelf("%stlb_flush_by_mmuidx_async_work(%s): qemu_spin_lock(%s); flush every entry; qemu_spin_unlock", prefix, name, tlbLockNames[t])
		}
	case itemCommitCPU:
		if m.cfg.uncached {
			m.flushAll(s, t, x)
			if x.Labelling() {
				x.Labelf("%stcg_commit_cpu(%s): tlb_flush: tlb_flush_by_mmuidx_async_work: qemu_spin_lock(%s); flush every entry; qemu_spin_unlock", prefix, name, tlbLockNames[t])
			}
			return
		}
		g := x.Load(s.mem, m.aMap)
		x.Store(s.mem, m.aDispatch[t], g)
		m.flushAll(s, t, x)
		if x.Labelling() {
			x.Labelf("%stcg_commit_cpu(%s): tlb_flush: tlb_flush_by_mmuidx_async_work: qemu_spin_lock(%s); flush every entry; qemu_spin_unlock; "+
				"cpuas->memory_dispatch = address_space_to_dispatch(cpuas->as), generation %d", prefix, name, tlbLockNames[t], g)
		}
	}
}

// ran counts a run of vCPU t's current item's function.
func (m *machine) ran(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	v.ran++
	if v.ran > v.posted {
		x.Fail(WorkOnce, "%s runs a work item %d times, but %d were queued", cpuNames[t], v.ran, v.posted)
	}
}
