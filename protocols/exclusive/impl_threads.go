package exclusive

import (
	"fmt"

	"github.com/protocheck/protocheck/explorer/rt"
)

// The vCPU thread, its guest, queue_work_on_cpu, process_queued_cpu_work,
// hot-plug and the I/O thread of the real implementation (vcpu.go,
// work.go and iothread.go in the model).

// threadLock is the lock a vCPU thread holds outside cpu_exec: the BQL
// upstream (mttcg_cpu_thread_fn), cpu->lock in the per-CPU-lock series
// (qemu_tcg_cpu_thread_fn).
func (th *thr) threadLock() (*rt.Mutex, string) {
	if th.w.v.cpuLock {
		return th.w.cpuLock[th.t], th.w.m.lockNames[th.t]
	}
	return th.w.bql, "bql"
}

// vcpuThread is the vCPU loop, started as in the model at the clearing
// of exit_request: qemu_wait_io_event (sleep on halt_cond while halted
// with nothing queued; process the queued work), then cpu_exec between
// cpu_exec_start and cpu_exec_end with the thread's lock dropped.
func (th *thr) vcpuThread() {
	w, t := th.w, th.t
	up := !w.v.cpuLock
	mu, mname := th.threadLock()
	if up {
		mu.Lock("mttcg_cpu_thread_fn: bql_lock()")
	} else {
		mu.Lock(fmt.Sprintf("qemu_tcg_cpu_thread_fn: cpu_mutex_lock(cpu%d)", t))
	}
	for {
		if up {
			w.e.Yield(fmt.Sprintf("mttcg_cpu_thread_fn: qatomic_set_mb(&cpu%d->exit_request, 0)", t))
		} else {
			w.e.Yield(fmt.Sprintf("qemu_tcg_cpu_thread_fn: atomic_mb_set(&cpu%d->exit_request, 0)", t))
		}
		w.exitReq[t].Store(0)
		// qemu_wait_io_event. The work list is read under the lock the
		// thread holds, which every thread that queues on it holds too;
		// the vCPU queues on itself only from its own TBs. So are
		// cpu->stop and cpu->stopped (pause=1; the VM's run state is an
		// atomic, impl_pause.go).
		for th.idle(th.workListEmpty()) {
			label := fmt.Sprintf("qemu_wait_io_event: cpu_thread_is_idle(): qemu_cond_wait(cpu%d->halt_cond, %s)", t, mname)
			if int(w.incoming[t].Load()) == w.incomingFor[t] && !w.kicksOwed(t) {
				// No other thread will ever queue on this CPU or kick it
				// again, so nothing will ever wake it: QEMU's thread
				// would sleep here until the guest's next interrupt, and
				// the model counts it as done once asleep
				// (machine.idle). The code takes the same step, the
				// wait's release of the lock, and exits, since a
				// goroutine asleep for good is a deadlock to rt.
				mu.Unlock(label)
				return
			}
			w.haltCond[t].WaitAs(label, fmt.Sprintf("qemu_wait_io_event: woken from cpu%d->halt_cond, re-acquires %s", t, mname))
		}
		if w.rs.stop[t] {
			th.cpuStop()
		}
		th.processQueuedWork()
		if !w.canRun(t) {
			continue // stopped, or the VM paused: back to the loop's top
		}
		if up {
			mu.Unlock("mttcg_cpu_thread_fn: bql_unlock() before tcg_cpus_exec")
		} else {
			mu.Unlock(fmt.Sprintf("tcg_cpu_exec: cpu_mutex_unlock(cpu%d)", t))
		}
		th.cpuExecStart(t)
		atomicExit := th.cpuExec()
		th.cpuExecEnd(t)
		if up {
			mu.Lock("mttcg_cpu_thread_fn: bql_lock() after tcg_cpus_exec")
		} else {
			mu.Lock(fmt.Sprintf("tcg_cpu_exec: cpu_mutex_lock(cpu%d)", t))
		}
		if atomicExit {
			th.stepAtomic(mu)
		}
	}
}

// stepAtomic is the thread function's case EXCP_ATOMIC: drop the
// thread's lock, cpu_exec_step_atomic (the one-instruction TB inside the
// thread's own exclusive section), retake the lock (the model's
// pcVAtomicUnlock, pcVAtomicTB, pcVAtomicRelock).
func (th *thr) stepAtomic(mu *rt.Mutex) {
	w, t := th.w, th.t
	up := !w.v.cpuLock
	if up {
		mu.Unlock("mttcg_cpu_thread_fn: EXCP_ATOMIC: bql_unlock(); cpu_exec_step_atomic()")
	} else {
		mu.Unlock(fmt.Sprintf("qemu_tcg_cpu_thread_fn: EXCP_ATOMIC: cpu_mutex_unlock(cpu%d); cpu_exec_step_atomic()", t))
	}
	th.startExclusive()
	run := "cpu_exec_step_atomic: "
	if up {
		run += "cpu->running = true; "
	}
	run += "cpu_tb_exec: the atomic instruction runs alone"
	mmio := 0
	if w.m.mmio {
		mmio = w.e.Choose(run, 2)
	} else {
		w.e.Yield(run)
	}
	w.obs.gen.Add(1)
	end := ""
	if up {
		end = "; cpu->running = false"
	}
	if mmio == 0 {
		w.e.Note(", touching RAM only" + end)
	} else {
		w.e.Note(" and makes an MMIO access")
		w.bql.Lock("io_writex: qemu_mutex_lock_iothread()")
		if up {
			w.bql.Unlock("io_writex: memory_region_dispatch_write(); qemu_mutex_unlock_iothread(); cpu_exec_step_atomic: cpu->running = false")
		} else {
			w.bql.Unlock("io_writex: memory_region_dispatch_write(); qemu_mutex_unlock_iothread()")
		}
	}
	th.endExclusive()
	if up {
		mu.Lock("mttcg_cpu_thread_fn: bql_lock() after cpu_exec_step_atomic")
	} else {
		mu.Lock(fmt.Sprintf("qemu_tcg_cpu_thread_fn: cpu_mutex_lock(cpu%d) after cpu_exec_step_atomic", t))
	}
}

// cpuExec is cpu_exec: cpu_handle_halt, then TBs until
// cpu_handle_interrupt sees exit_request or the guest halts; it reports
// whether it returns EXCP_ATOMIC (step-atomic).
func (th *thr) cpuExec() (atomicExit bool) {
	w, t := th.w, th.t
	if th.halted {
		return false // cpu_handle_halt: EXCP_HALTED
	}
	for {
		w.e.Yield(fmt.Sprintf("cpu_handle_interrupt: %s(&cpu%d->exit_request) = ", w.m.atomicRead, t))
		v := w.exitReq[t].Load()
		w.e.Notef("%d", v)
		if v != 0 {
			w.e.Yield(fmt.Sprintf("cpu_handle_interrupt: %s(&cpu%d->exit_request, 0); cpu_exec returns EXCP_INTERRUPT", w.m.atomicSet, t))
			w.exitReq[t].Store(0)
			return false
		}
		switch {
		case w.v.fromExec && t == 0 && !th.ptwDone:
			// H6: ptw_setl_slow calls start_exclusive from inside cpu_exec.
			th.ptwDone = true
			th.startExclusive()
			w.e.Yield("cpu_exec: ptw_setl_slow: page-table update inside start_exclusive()")
			w.obs.gen.Add(1)
			th.endExclusive()
		case th.queued < len(w.m.own[t]):
			// The TB's helper queues safe work on its own CPU and ends
			// the TB.
			i := int(w.m.own[t][th.queued])
			th.queued++
			th.queueItem(i)
		case w.m.atomic[t] && !th.atomicDone:
			// cpu_loop_exit_atomic: the instruction needs a serial context.
			w.e.Yield("cpu_tb_exec: the guest's atomic instruction cannot run in parallel: cpu_loop_exit_atomic(): cpu_exec returns EXCP_ATOMIC")
			th.atomicDone = true
			return true
		case w.m.tbs > 0 && th.round >= w.m.tbs:
			w.e.Yield("helper_wfi: cpu->halted = 1; cpu_loop_exit(EXCP_HLT): cpu_exec returns")
			th.halted = true
			return false
		default:
			mmio := 0
			if w.m.mmio {
				mmio = w.e.Choose("cpu_tb_exec: the guest's TB ", 2)
			} else {
				w.e.Yield("cpu_tb_exec: the guest's TB ")
			}
			th.checkGuestStopped()
			if w.m.tbs > 0 {
				th.round++
			}
			if mmio == 0 {
				w.e.Note("runs, touching RAM only")
				th.tbRan()
				continue
			}
			w.e.Note("makes an MMIO access")
			// Guest code that touches a device takes the BQL inside
			// cpu_exec: the other half of H2's AB-BA.
			w.bql.Lock("io_writex: qemu_mutex_lock_iothread()")
			w.bql.Unlock("io_writex: memory_region_dispatch_write(); qemu_mutex_unlock_iothread()")
			th.tbRan()
		}
	}
}

// queueItem is async_safe_run_on_cpu(cpu, func), or async_run_on_cpu for
// an item one vCPU queues on another (cross-work): queue_work_on_cpu of
// a heap item (queueStep in the model).
func (th *thr) queueItem(i int) {
	w := th.w
	c, name := w.m.itemCPU(i), w.m.itemName(i)
	fn := "async_safe_run_on_cpu"
	if w.m.async(i) {
		fn = "async_run_on_cpu"
	}
	if w.v.cpuLock {
		w.cpuLock[c].Lock(fmt.Sprintf("%s(cpu%d): queue_work_on_cpu: cpu_mutex_lock(cpu%d)", fn, c, c))
		w.enqueue(c, i)
		w.kick(c, fmt.Sprintf("%s(cpu%d): queue_work_on_cpu_locked: append %s; ", fn, c, name))
		w.kicked(th.t, c)
		w.cpuLock[c].Unlock(fmt.Sprintf("%s(cpu%d): queue_work_on_cpu: cpu_mutex_unlock(cpu%d)", fn, c, c))
		return
	}
	w.cpuLock[c].Lock(fmt.Sprintf("%s(cpu%d): queue_work_on_cpu: qemu_mutex_lock(cpu%d->work_mutex)", fn, c, c))
	w.enqueue(c, i)
	if w.v.noSafeKick && w.m.safe(i) {
		// safe-work-no-kick: no qemu_cpu_kick after the append.
		w.unlockPublish(c, fmt.Sprintf("%s(cpu%d): queue_work_on_cpu: append %s; qemu_mutex_unlock(cpu%d->work_mutex) (no qemu_cpu_kick)", fn, c, name, c))
		w.kicked(th.t, c)
		return
	}
	w.unlockPublish(c, fmt.Sprintf("%s(cpu%d): queue_work_on_cpu: append %s; qemu_mutex_unlock(cpu%d->work_mutex)", fn, c, name, c))
	w.kick(c, fmt.Sprintf("%s(cpu%d): queue_work_on_cpu: ", fn, c))
	w.kicked(th.t, c)
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
	w.qlen[t].Add(-1)
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
	if w.m.safe(i) || w.m.async(i) {
		free = "; g_free(wi)"
	}
	if w.v.cpuLock {
		w.cpuLock[t].Lock(fmt.Sprintf("process_queued_cpu_work_locked: cpu_mutex_lock(cpu%d)%s", t, free))
	} else {
		w.cpuLock[t].Lock(fmt.Sprintf("process_queued_cpu_work: qemu_mutex_lock(cpu%d->work_mutex)%s", t, free))
	}
	if w.m.async(i) {
		w.itemCompleted() // no one waits for it: done once its func ran
	}
	if w.m.safe(i) || w.m.async(i) {
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
	w.itemCompleted() // its section has ended
}

// ioThread is the main loop: with the BQL held it runs its script
// (machine.planWork): hot-plug, safe work, run_on_cpu calls, unplug.
func (th *thr) ioThread() {
	w := th.w
	w.bql.Lock(w.m.mainLock)
	for _, a := range w.m.ioScript {
		i := int(a.item)
		switch a.kind {
		case ioHotAdd:
			th.cpuListAdd()
		case ioSafe:
			th.queueItem(i)
		case ioRunOnCPU:
			if w.v.cpuLock {
				th.runOnCPULocked(i)
			} else {
				th.runOnCPU(i)
			}
		case ioPause:
			th.vmStopStart()
		case ioHotRemove:
			th.cpuListRemove()
		}
	}
	w.bql.Unlock(w.m.mainUnlock)
	w.prog.ioDone.Store(true)
}

// cpuListAdd is cpu_list_add of the CPU after the vCPUs: with seed 001's
// exclusive_idle() in the seed-001 family (but cpu-lock-no-idle), and
// followed by finish_safe_work where the code has it (seed 001's base,
// QEMU <= 4.2 in finish-safe-work).
func (th *thr) cpuListAdd() {
	w := th.w
	n := w.m.hotCPU()
	w.listLock.Lock("cpu_list_add: qemu_mutex_lock(qemu_cpu_list_lock)")
	prefix := th.exclusiveIdle("cpu_list_add")
	w.listUpdate(n, true, fmt.Sprintf("%scpu_list_add: cpu_get_free_index() = %d; QTAILQ_INSERT_TAIL_RCU(&cpus, cpu%d); qemu_mutex_unlock(qemu_cpu_list_lock)", prefix, n, n))
	if w.v.cpuLock || w.v.finishSafeWork {
		th.cpuExecStart(n)
		th.cpuExecEnd(n)
	}
}

// cpuListRemove is cpu_list_remove of the hot-plugged CPU.
func (th *thr) cpuListRemove() {
	w := th.w
	n := w.m.hotCPU()
	w.listLock.Lock("cpu_list_remove: qemu_mutex_lock(qemu_cpu_list_lock)")
	prefix := th.exclusiveIdle("cpu_list_remove")
	w.listUpdate(n, false, fmt.Sprintf("%scpu_list_remove: QTAILQ_REMOVE_RCU(&cpus, cpu%d); cpu_index = UNASSIGNED_CPU_INDEX; qemu_mutex_unlock(qemu_cpu_list_lock)", prefix, n))
}

// listUpdate inserts CPU n in the list or removes it, and releases
// qemu_cpu_list_lock, in one step, as the model does. Seed 001's walks
// read the list without the lock, so when the write happens matters: code
// between two of rt's scheduling points runs as part of the first, so
// under control the write comes after the unlock's point, in its step;
// under the Go scheduler it comes before the unlock, under the lock, as
// in QEMU.
func (w *world) listUpdate(n int, in bool, label string) {
	if w.ctl {
		w.listLock.Unlock(label)
		w.inList[n].Store(in)
		return
	}
	w.inList[n].Store(in)
	w.listLock.Unlock(label)
}

// exclusiveIdle is seed 001's exclusive_idle() in cpu_list_add and
// cpu_list_remove (fn), with qemu_cpu_list_lock held; it returns the
// prefix of the step that goes on (the model's pcHPIdle / pcHRIdle).
func (th *thr) exclusiveIdle(fn string) string {
	w := th.w
	if !w.v.cpuLock || w.v.noIdle {
		return ""
	}
	for w.workOngoing {
		th.wait(w.resumeCond, fn+": exclusive_idle: exclusive_work_ongoing: qemu_cond_wait(exclusive_resume)",
			fn+": exclusive_idle", fn+": exclusive_idle: woken, re-acquires qemu_cpu_list_lock")
	}
	return fn + ": exclusive_idle: !exclusive_work_ongoing; "
}

// workListEmpty is cpu_work_list_empty for the vCPU's own list in
// cpu_thread_is_idle. Where a vCPU queues on another without the BQL
// (cross-work, upstream: machine.racyIdle) the read races with the
// append and is a step of its own, labelled with what it read.
func (th *thr) workListEmpty() bool {
	w, t := th.w, th.t
	if !w.m.racyIdle() {
		return w.qlen[t].Load() == 0
	}
	w.e.Yield(fmt.Sprintf("qemu_wait_io_event: cpu_thread_is_idle(): cpu_work_list_empty(cpu%d) = ", t))
	empty := w.qlen[t].Load() == 0
	w.e.Notef("%v", empty)
	return empty
}

// enqueue appends item i to CPU c's list, under the list's lock. The
// length that cpu_thread_is_idle reads is published with it where the
// reader holds the same lock (seed 001's branch), and by unlockPublish
// upstream.
func (w *world) enqueue(c, i int) {
	w.prog.queued[i].Store(true)
	w.queue[c] = append(w.queue[c], i)
	if w.v.cpuLock {
		w.qlen[c].Add(1)
	}
}

// unlockPublish is upstream's qemu_mutex_unlock(work_mutex) after an
// append: the step in which the model makes the item visible, which
// matters where a vCPU reads its list without that lock (cross-work). As
// in listUpdate, under control the length is published after the
// unlock's scheduling point, so that it belongs to that step; under the
// Go scheduler before the unlock, under the lock, as in QEMU.
func (w *world) unlockPublish(c int, label string) {
	if w.ctl {
		w.cpuLock[c].Unlock(label)
		w.qlen[c].Add(1)
		return
	}
	w.qlen[c].Add(1)
	w.cpuLock[c].Unlock(label)
}

// kicked: the queuer by has kicked CPU c after queuing on it (or, with
// safe-work-no-kick, will not): from then on the item's arrival can wake
// c no more, which is what vcpuThread's test for sleeping for good needs.
func (w *world) kicked(by, c int) {
	if by != c {
		w.incoming[c].Add(1)
	}
}

// runOnCPU is upstream's do_run_on_cpu, called with the BQL held.
func (th *thr) runOnCPU(i int) {
	w := th.w
	tc, name := w.m.itemCPU(i), w.m.itemName(i)
	w.cpuLock[tc].Lock(fmt.Sprintf("run_on_cpu: queue_work_on_cpu: qemu_mutex_lock(cpu%d->work_mutex)", tc))
	w.enqueue(tc, i)
	w.unlockPublish(tc, fmt.Sprintf("run_on_cpu: queue_work_on_cpu: append %s; qemu_mutex_unlock(cpu%d->work_mutex)", name, tc))
	w.e.Call(clientRunOnCPU+i, rocOp{Item: name})
	w.kick(tc, "run_on_cpu: queue_work_on_cpu: ")
	w.kicked(th.t, tc)
	// wi.done is stored by the vCPU while it holds the BQL, which this
	// thread holds here too: the test cannot race with the store.
	for !w.doneL[i] {
		th.wait(w.workCond, fmt.Sprintf("run_on_cpu: !%s.done: qemu_cond_wait(qemu_work_cond, bql)", name),
			"run_on_cpu", "run_on_cpu: woken from qemu_work_cond, re-acquires bql")
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
	// cpu->lock; the kick is the step's visible action.
	w.enqueue(tc, i)
	w.kick(tc, fmt.Sprintf("run_on_cpu: queue_work_on_cpu_locked: append %s; ", name))
	w.kicked(th.t, tc)
	w.e.Call(clientRunOnCPU+i, rocOp{Item: name})
	for !w.doneL[i] {
		th.wait(w.cpuCond[tc], fmt.Sprintf("run_on_cpu: while (!%s.done) qemu_cond_wait(cpu%d->cond)", name, tc),
			"run_on_cpu", fmt.Sprintf("run_on_cpu: woken from cpu%d->cond, re-acquires cpu%d->lock", tc, tc))
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
	w.itemCompleted()
}
