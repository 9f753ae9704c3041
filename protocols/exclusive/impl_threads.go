package exclusive

import (
	"fmt"

	"github.com/protocheck/protocheck/explorer/rt"
)

// The vCPU thread, process_queued_cpu_work and the I/O thread of the real
// implementation (vcpu.go, work.go and iothread.go in the model).

// threadLock is the lock a vCPU thread holds outside cpu_exec: the BQL
// upstream (mttcg_cpu_thread_fn), cpu->lock in the per-CPU-lock series
// (qemu_tcg_cpu_thread_fn).
func (th *thr) threadLock() (*rt.Mutex, string) {
	if th.w.v.cpuLock {
		return th.w.cpuLock[th.t], th.w.cpuLockName(th.t)
	}
	return th.w.bql, "bql"
}

// vcpuThread is the vCPU loop, rotated as in the model to start with the
// queued work: each round runs one guest TB; once the guest has halted the
// thread sleeps on halt_cond whenever its work list is empty.
func (th *thr) vcpuThread() {
	w, t := th.w, th.t
	up := !w.v.cpuLock
	mu, mname := th.threadLock()
	if up {
		mu.Lock("mttcg_cpu_thread_fn: bql_lock()")
	} else {
		mu.Lock(fmt.Sprintf("qemu_tcg_cpu_thread_fn: cpu_mutex_lock(cpu%d)", t))
	}
	th.processQueuedWork()
	for round := 0; round < w.m.rounds; round++ {
		if up {
			mu.Unlock("tcg_cpu_exec: bql_unlock()")
		} else {
			mu.Unlock(fmt.Sprintf("tcg_cpu_exec: cpu_mutex_unlock(cpu%d)", t))
		}
		th.cpuExecStart(t)
		switch {
		case w.v.fromExec && t == 0 && round == 0:
			// H6: ptw_setl_slow calls start_exclusive from inside cpu_exec.
			th.startExclusive()
			w.e.Yield("cpu_exec: ptw_setl_slow: page-table update inside start_exclusive()")
			w.obs.gen.Add(1)
			th.endExclusive()
		case up:
			// Guest code that touches a device takes the BQL inside
			// cpu_exec: the other half of H2's AB-BA.
			w.bql.Lock("cpu_exec: guest TB makes an MMIO access: bql_lock()")
			w.bql.Unlock("cpu_exec: MMIO access done: bql_unlock()")
		default:
			w.e.Yield("cpu_exec: guest TB runs")
		}
		th.cpuExecEnd(t)
		if up {
			mu.Lock("tcg_cpu_exec: bql_lock()")
		} else {
			mu.Lock(fmt.Sprintf("tcg_cpu_exec: cpu_mutex_lock(cpu%d)", t))
		}
		th.processQueuedWork()
	}
	// qemu_wait_io_event. The work list is read under the lock the thread
	// holds, which every writer of the list holds too.
	for {
		if len(w.queue[t]) > 0 {
			th.processQueuedWork()
			continue
		}
		label := fmt.Sprintf("qemu_wait_io_event: cpu_thread_is_idle(): qemu_cond_wait(cpu%d->halt_cond, %s)", t, mname)
		if w.rocQueued[t] == w.rocFor[t] {
			// No run_on_cpu call will ever aim at this CPU again, so no
			// kick will ever wake it: QEMU's thread would sleep here
			// until the next guest event, and the model counts it as
			// done once asleep (machine.idle). The code takes the same
			// step, the wait's release of the lock, and exits, since a
			// goroutine asleep for good is a deadlock to rt.
			mu.Unlock(label)
			return
		}
		w.haltCond[t].WaitAs(label, fmt.Sprintf("qemu_wait_io_event: woken from cpu%d->halt_cond, re-acquires %s", t, mname))
	}
}

// processQueuedWork is process_queued_cpu_work (upstream) or
// process_queued_cpu_work_locked (seed 001), run with the thread's lock
// held, on the thread's own work list.
func (th *thr) processQueuedWork() {
	w, t := th.w, th.t
	wm := w.cpuLock[t]
	if w.v.cpuLock {
		// The list is checked under cpu->lock, which the thread holds.
		if len(w.queue[t]) == 0 {
			return
		}
	} else {
		wm.Lock(fmt.Sprintf("process_queued_cpu_work: qemu_mutex_lock(cpu%d->work_mutex)", t))
		if len(w.queue[t]) == 0 {
			wm.Unlock(fmt.Sprintf("process_queued_cpu_work: work_list empty: qemu_mutex_unlock(cpu%d->work_mutex)", t))
			return
		}
	}
	for {
		th.runItem(th.pop())
		if len(w.queue[t]) == 0 {
			break
		}
	}
	if w.v.cpuLock {
		w.broadcast(w.cpuCond[t], fmt.Sprintf("process_queued_cpu_work_locked: qemu_cond_broadcast(cpu%d->cond)", t))
		return
	}
	wm.Unlock(fmt.Sprintf("process_queued_cpu_work: work_list empty: qemu_mutex_unlock(cpu%d->work_mutex)", t))
	w.broadcast(w.workCond, "process_queued_cpu_work: qemu_cond_broadcast(qemu_work_cond)")
}

// pop takes the head of the work list and releases the list's lock (one
// step: removing the head is invisible until the unlock).
func (th *thr) pop() int {
	w, t := th.w, th.t
	i := w.queue[t][0]
	w.queue[t] = w.queue[t][1:]
	if w.v.cpuLock {
		w.cpuLock[t].Unlock(fmt.Sprintf("process_queued_cpu_work_locked: pop %s; cpu_mutex_unlock(cpu%d)", w.m.itemName(i), t))
	} else {
		w.cpuLock[t].Unlock(fmt.Sprintf("process_queued_cpu_work: pop %s; qemu_mutex_unlock(cpu%d->work_mutex)", w.m.itemName(i), t))
	}
	return i
}

// runItem runs one popped item and retakes the list's lock; a run_on_cpu
// item is then marked done.
func (th *thr) runItem(i int) {
	w, t := th.w, th.t
	name := w.m.itemName(i)
	switch {
	case w.m.safe(i):
		if !w.v.cpuLock && !w.v.bqlHeld {
			w.bql.Unlock("process_queued_cpu_work: bql_unlock() before exclusive work")
		}
		// H2 (bql-held) keeps the BQL; seed 001's vCPU has none to drop.
		th.safeWork(i)
		if !w.v.cpuLock && !w.v.bqlHeld {
			w.bql.Lock("process_queued_cpu_work: bql_lock() after exclusive work")
		}
	case w.v.cpuLock:
		// The per-CPU-lock vCPU thread does not hold the BQL: wi->bql
		// items take it around the func.
		w.bql.Lock("process_queued_cpu_work_locked: wi->bql: qemu_mutex_lock_iothread()")
		w.bql.Unlock(fmt.Sprintf("process_queued_cpu_work_locked: wi->func() for %s runs; qemu_mutex_unlock_iothread()", name))
		th.runWork(i)
	default:
		w.e.Yield(fmt.Sprintf("process_queued_cpu_work: wi->func() for %s runs with the BQL held", name))
		th.runWork(i)
	}
	free := ""
	if w.m.safe(i) {
		free = "; g_free(wi)"
	}
	if w.v.cpuLock {
		w.cpuLock[t].Lock(fmt.Sprintf("process_queued_cpu_work_locked: cpu_mutex_lock(cpu%d)%s", t, free))
	} else {
		w.cpuLock[t].Lock(fmt.Sprintf("process_queued_cpu_work: qemu_mutex_lock(cpu%d->work_mutex)%s", t, free))
	}
	if w.m.safe(i) {
		return
	}
	if w.v.cpuLock {
		w.done[i].Store(fmt.Sprintf("process_queued_cpu_work_locked: atomic_mb_set(&%s.done, true)", name), 1)
	} else {
		w.done[i].Store(fmt.Sprintf("process_queued_cpu_work: qatomic_store_release(&%s.done, true)", name), 1)
	}
	w.doneL[i] = true
}

// safeWork runs a safe work item inside start_exclusive/end_exclusive.
func (th *thr) safeWork(i int) {
	w := th.w
	name := w.m.itemName(i)
	th.startExclusive()
	switch {
	case w.v.finishSafeWork:
		w.e.Yield(fmt.Sprintf("process_queued_cpu_work: wi->func() = async_synic_update for %s, inside the exclusive section", name))
		th.runWork(i)
		w.obs.gen.Add(1)
		w.bql.Lock("async_synic_update: qemu_mutex_lock_iothread()")
		w.bql.Unlock("async_synic_update: qemu_mutex_unlock_iothread()")
		th.endExclusive()
	case w.m.nests():
		// linux-user's dump_core_and_abort: the func enters an exclusive
		// section again (H5).
		w.e.Yield(fmt.Sprintf("process_queued_cpu_work: wi->func() for %s, inside the exclusive section, calls start_exclusive() again", name))
		th.runWork(i)
		w.obs.gen.Add(1)
		th.startExclusive()
		th.endExclusive()
		th.endExclusive()
	default:
		w.e.Yield(fmt.Sprintf("process_queued_cpu_work: wi->func() for %s runs inside the exclusive section", name))
		th.runWork(i)
		w.obs.gen.Add(1)
		th.endExclusive()
	}
}

// ioThread is the main loop: with the BQL held it hot-plugs a CPU
// (finish-safe-work) and makes the run_on_cpu calls.
func (th *thr) ioThread() {
	w := th.w
	w.bql.Lock("main_loop: bql_lock()")
	if w.v.finishSafeWork {
		// cpu_list_add of QEMU <= 4.2, with its finish_safe_work.
		n := w.m.nvcpus
		w.listLock.Lock("cpu_list_add: qemu_mutex_lock(qemu_cpu_list_lock)")
		w.inList[n] = true
		w.listLock.Unlock(fmt.Sprintf("cpu_list_add: cpu_get_free_index() = %d; QTAILQ_INSERT_TAIL_RCU(&cpus, cpu%d); qemu_mutex_unlock(qemu_cpu_list_lock)", n, n))
		th.cpuExecStart(n)
		th.cpuExecEnd(n)
	}
	for k := 0; k < w.m.nroc; k++ {
		if w.v.cpuLock {
			th.runOnCPULocked(w.m.nsafe + k)
		} else {
			th.runOnCPU(w.m.nsafe + k)
		}
	}
	w.bql.Unlock("main_loop: bql_unlock()")
}

// enqueue appends item i to CPU c's list, under the list's lock.
func (w *world) enqueue(c, i int) {
	w.queue[c] = append(w.queue[c], i)
	w.rocQueued[c]++
}

// runOnCPU is upstream's do_run_on_cpu, called with the BQL held.
func (th *thr) runOnCPU(i int) {
	w := th.w
	tc, name := w.m.itemCPU(i), w.m.itemName(i)
	w.cpuLock[tc].Lock(fmt.Sprintf("run_on_cpu: queue_work_on_cpu: qemu_mutex_lock(cpu%d->work_mutex)", tc))
	w.enqueue(tc, i)
	w.cpuLock[tc].Unlock(fmt.Sprintf("run_on_cpu: queue_work_on_cpu: append %s; qemu_mutex_unlock(cpu%d->work_mutex)", name, tc))
	w.e.Call(clientRunOnCPU+i, rocOp{Item: name})
	// qemu_cpu_kick: exit_request is not modelled (a TB always ends); the
	// broadcast is what wakes a halted vCPU.
	w.broadcast(w.haltCond[tc], fmt.Sprintf("run_on_cpu: qemu_cpu_kick(cpu%d): qemu_cond_broadcast(cpu%d->halt_cond)", tc, tc))
	// wi.done is stored by the vCPU while it holds the BQL, which this
	// thread holds here too: the test cannot race with the store.
	for !w.doneL[i] {
		w.workCond.WaitAs(fmt.Sprintf("run_on_cpu: !%s.done: qemu_cond_wait(qemu_work_cond, bql)", name),
			"run_on_cpu: woken from qemu_work_cond, re-acquires bql")
	}
	w.done[i].Load(fmt.Sprintf("run_on_cpu: qatomic_load_acquire(&%s.done) = true: run_on_cpu returns", name))
	th.rocReturn(i)
}

// runOnCPULocked is seed 001's do_run_on_cpu: drop the BQL, sleep on the
// target's cpu->cond for wi.done.
func (th *thr) runOnCPULocked(i int) {
	w := th.w
	tc, name := w.m.itemCPU(i), w.m.itemName(i)
	w.bql.Unlock("run_on_cpu: qemu_mutex_unlock_iothread() before sleeping on the CPU lock")
	w.cpuLock[tc].Lock(fmt.Sprintf("run_on_cpu: cpu_mutex_lock(cpu%d)", tc))
	// queue_work_on_cpu_locked: the append is a plain access under
	// cpu->lock; the kick's broadcast is the step's visible action.
	w.enqueue(tc, i)
	w.broadcast(w.haltCond[tc], fmt.Sprintf("run_on_cpu: queue_work_on_cpu_locked: append %s; qemu_cpu_kick(cpu%d): qemu_cond_broadcast(cpu%d->halt_cond)", name, tc, tc))
	w.e.Call(clientRunOnCPU+i, rocOp{Item: name})
	for !w.doneL[i] {
		w.cpuCond[tc].WaitAs(fmt.Sprintf("run_on_cpu: while (!%s.done) qemu_cond_wait(cpu%d->cond)", name, tc),
			fmt.Sprintf("run_on_cpu: woken from cpu%d->cond, re-acquires cpu%d->lock", tc, tc))
	}
	w.cpuLock[tc].Unlock(fmt.Sprintf("run_on_cpu: atomic_mb_read(&%s.done) = true: cpu_mutex_unlock(cpu%d)", name, tc))
	w.bql.Lock("run_on_cpu: qemu_mutex_lock_iothread(); run_on_cpu returns")
	th.rocReturn(i)
}

// rocReturn: run_on_cpu returns; its item's func must have run once.
func (th *thr) rocReturn(i int) {
	w := th.w
	n := w.obs.ran[i].Load()
	if n != 1 {
		w.e.Failf(PropWorkOnce, "%s: run_on_cpu returns but %s's func ran %d times", th.name(), w.m.itemName(i), n)
	}
	w.e.Return(clientRunOnCPU+i, int(n))
}
