package exclusive

// The I/O thread: the main loop, holding the BQL, runs its script
// (machine.planWork): it hot-plugs a CPU (cpu_list_add, when hot-plug is
// on), queues its async_safe_run_on_cpu items, makes the run-on-cpu
// parameter's synchronous run_on_cpu calls (A.2 do_run_on_cpu upstream;
// A.3 run_on_cpu in the per-CPU-lock series) and unplugs the CPU
// (cpu_list_remove).
//
// Hot-plug. cpu_list_add and cpu_list_remove are called from the CPU's
// realize and unrealize, by the thread doing device_add/device_del: the
// main loop, with the BQL. Upstream since 4.2 they only take
// qemu_cpu_list_lock (cpus-common.c @d6ea4236); QEMU up to 4.2 also ran
// finish_safe_work in cpu_list_add (finish-safe-work, H3); seed 001, on
// the per-CPU-lock branch whose cpu_list_add still has finish_safe_work,
// adds exclusive_idle() to both, because its start_exclusive walks the
// list without qemu_cpu_list_lock (noIdle takes them out again). The
// hot-plugged CPU is the one after the vCPUs; its own vCPU thread is not
// modelled (QEMU creates it stopped): finish_safe_work's cpu_exec_start
// and cpu_exec_end on it, run by the I/O thread, are the protocol's
// actions on its flags.

func (r *run) target() int { return r.m.itemCPU(int(r.th.item)) }

func (r *run) ioStep() {
	s, th := r.s, r.th
	tc := r.target()
	item := int(th.item)
	switch th.pc {
	case pcIOStart:
		if !r.lock(&s.bql, "bql") {
			return
		}
		r.label(r.m.mainLock)
		th.pc = pcIONext
	case pcIOEnd:
		r.unlock(&s.bql, "bql")
		r.x.ExitMem(s.mem) // the thread's script is over
		r.label(r.m.mainUnlock)
		th.pc = pcDone

	// cpu_list_add
	case pcHPLock:
		if !r.lock(&s.listLock, "qemu_cpu_list_lock") {
			return
		}
		r.label("cpu_list_add: qemu_mutex_lock(qemu_cpu_list_lock)")
		if r.m.v.cpuLock && !r.m.v.noIdle {
			th.pc = pcHPIdle
		} else {
			th.pc = pcHPInsert
		}
	case pcHPIdle:
		if s.workOngoing {
			r.wait(&s.resumeCond, "exclusive_resume", &s.listLock, "qemu_cpu_list_lock")
			r.label("cpu_list_add: exclusive_idle: exclusive_work_ongoing: qemu_cond_wait(exclusive_resume)")
			th.pc = pcHPIdleWoken
			return
		}
		r.insert("cpu_list_add: exclusive_idle: !exclusive_work_ongoing; ")
	case pcHPIdleWoken:
		if !r.wokenRelock(&s.resumeCond, "exclusive_resume", &s.listLock, "qemu_cpu_list_lock", "cpu_list_add: exclusive_idle") {
			return
		}
		r.label("cpu_list_add: exclusive_idle: woken, re-acquires qemu_cpu_list_lock")
		th.pc = pcHPIdle
	case pcHPInsert:
		r.insert("")

	// cpu_list_remove
	case pcHRLock:
		if !r.lock(&s.listLock, "qemu_cpu_list_lock") {
			return
		}
		r.label("cpu_list_remove: qemu_mutex_lock(qemu_cpu_list_lock)")
		if r.m.v.cpuLock && !r.m.v.noIdle {
			th.pc = pcHRIdle
		} else {
			th.pc = pcHRRemove
		}
	case pcHRIdle:
		if s.workOngoing {
			r.wait(&s.resumeCond, "exclusive_resume", &s.listLock, "qemu_cpu_list_lock")
			r.label("cpu_list_remove: exclusive_idle: exclusive_work_ongoing: qemu_cond_wait(exclusive_resume)")
			th.pc = pcHRIdleWoken
			return
		}
		r.remove("cpu_list_remove: exclusive_idle: !exclusive_work_ongoing; ")
	case pcHRIdleWoken:
		if !r.wokenRelock(&s.resumeCond, "exclusive_resume", &s.listLock, "qemu_cpu_list_lock", "cpu_list_remove: exclusive_idle") {
			return
		}
		r.label("cpu_list_remove: exclusive_idle: woken, re-acquires qemu_cpu_list_lock")
		th.pc = pcHRIdle
	case pcHRRemove:
		r.remove("")
	case pcPSPause, pcPSCheck, pcPSWoken, pcPSKick, pcPSUnlock, pcPSRelock, pcPSResume:
		r.pauseStep()
	case pcCPUnlockBQL, pcCPStopLock, pcCPStop, pcCPStopUnlock, pcCPKick, pcCPWaitLock, pcCPWait, pcCPWoken,
		pcCPUnlock, pcCPRelockBQL, pcCPRunstate, pcCPStart, pcCPResumeLock, pcCPResume, pcCPResumeUnlock,
		pcCPV9Wait, pcCPCheckLock, pcCPCheckUnlock:
		r.seedPauseStep()
	case pcHCCreate, pcHCUnlockBQL, pcHCLock, pcHCWait, pcHCWoken, pcHCRelockBQL, pcHCResumeLock, pcHCResume,
		pcHCResumeUnlock, pcHXUnlockBQL, pcHXLock, pcHXStop, pcHXJoin, pcHXWoken, pcHXRelockBQL:
		r.hotIOStep()

	// upstream do_run_on_cpu, called with the BQL held
	case pcRQLock:
		if !r.lock(&s.cpuLock[tc], r.cpuLockName(tc)) {
			return
		}
		if r.labelling() {
			r.labelf("run_on_cpu: queue_work_on_cpu: qemu_mutex_lock(cpu%d->work_mutex)", tc)
		}
		th.pc = pcRQAppend
	case pcRQAppend:
		r.enqueue(tc, item)
		r.unlock(&s.cpuLock[tc], r.cpuLockName(tc))
		if r.labelling() {
			r.labelf("run_on_cpu: queue_work_on_cpu: append %s; qemu_mutex_unlock(cpu%d->work_mutex)", r.m.itemName(item), tc)
		}
		th.pc = pcRKick
	case pcRKick:
		if k := r.kick(tc); r.labelling() {
			r.labelf("run_on_cpu: queue_work_on_cpu: %s", k)
		}
		th.pc = pcRWait
	case pcRWait:
		// wi.done is stored by the vCPU while it holds the BQL, which this
		// thread holds too: the load cannot race with the store.
		if r.loadDone(item) != 0 {
			if r.labelling() {
				r.labelf("run_on_cpu: qatomic_load_acquire(&%s.done) = true: run_on_cpu returns", r.m.itemName(item))
			}
			r.rocReturn()
			return
		}
		r.wait(&s.workCond, "qemu_work_cond", &s.bql, "bql")
		if r.labelling() {
			r.labelf("run_on_cpu: !%s.done: qemu_cond_wait(qemu_work_cond, bql)", r.m.itemName(item))
		}
		th.pc = pcRWoken
	case pcRWoken:
		if !r.wokenRelock(&s.workCond, "qemu_work_cond", &s.bql, "bql", "run_on_cpu") {
			return
		}
		r.label("run_on_cpu: woken from qemu_work_cond, re-acquires bql")
		th.pc = pcRWait

	// seed 001's do_run_on_cpu
	case pcRCUnlockBQL:
		r.unlock(&s.bql, "bql")
		r.label("run_on_cpu: qemu_mutex_unlock_iothread() before sleeping on the CPU lock")
		th.pc = pcRCLock
	case pcRCLock:
		if !r.lock(&s.cpuLock[tc], r.cpuLockName(tc)) {
			return
		}
		if r.labelling() {
			r.labelf("run_on_cpu: cpu_mutex_lock(cpu%d)", tc)
		}
		th.pc = pcRCQueue
	case pcRCQueue:
		// The append is a plain access under cpu->lock; the kick is the
		// step's one visible action.
		r.enqueue(tc, item)
		if k := r.kick(tc); r.labelling() {
			r.labelf("run_on_cpu: queue_work_on_cpu_locked: append %s; %s", r.m.itemName(item), k)
		}
		th.pc = pcRCWait
	case pcRCWait:
		// wi.done is set under cpu->lock, held here.
		if r.loadDone(item) != 0 {
			r.unlock(&s.cpuLock[tc], r.cpuLockName(tc))
			if r.labelling() {
				r.labelf("run_on_cpu: atomic_mb_read(&%s.done) = true: cpu_mutex_unlock(cpu%d)", r.m.itemName(item), tc)
			}
			th.pc = pcRCLockBQL
			return
		}
		r.wait(&s.cpuCond[tc], r.condName(tc), &s.cpuLock[tc], r.cpuLockName(tc))
		if r.labelling() {
			r.labelf("run_on_cpu: while (!%s.done) qemu_cond_wait(cpu%d->cond)", r.m.itemName(item), tc)
		}
		th.pc = pcRCWoken
	case pcRCWoken:
		if !r.wokenRelock(&s.cpuCond[tc], r.condName(tc), &s.cpuLock[tc], r.cpuLockName(tc), "run_on_cpu") {
			return
		}
		if r.labelling() {
			r.labelf("run_on_cpu: woken from cpu%d->cond, re-acquires cpu%d->lock", tc, tc)
		}
		th.pc = pcRCWait
	case pcRCLockBQL:
		if !r.lock(&s.bql, "bql") {
			return
		}
		r.label("run_on_cpu: qemu_mutex_lock_iothread(); run_on_cpu returns")
		r.rocReturn()
	}
}

func (r *run) enqueue(c, item int) {
	s := r.s
	s.queue[c][s.qlen[c]] = uint8(item)
	s.qlen[c]++
	if !r.m.safe(item) && !r.m.async(item) && r.x.Recording() {
		r.x.Call(clientRunOnCPU+item, rocOp{Item: r.m.itemName(item)})
	}
}

// rocReturn: run_on_cpu returns; wi's func must have run exactly once.
func (r *run) rocReturn() {
	item := int(r.th.item)
	if r.s.ran[item] != 1 {
		r.x.Fail(PropWorkOnce, "%s: run_on_cpu returns but %s's func ran %d times",
			r.name(r.t), r.m.itemName(item), r.s.ran[item])
	}
	if r.x.Recording() {
		r.x.Return(clientRunOnCPU+item, int(r.s.ran[item]))
	}
	r.th.pc = pcIONext
}

// insert is the rest of cpu_list_add under qemu_cpu_list_lock: the new
// CPU takes the index after the vCPUs' and goes to the tail of the list
// (plain writes under the lock), and the lock is released. Seed 001's
// base (cota/qemu @09addeed) and QEMU up to 4.2 (finish-safe-work) then
// run finish_safe_work(cpu): cpu_exec_start(cpu); cpu_exec_end(cpu), with
// the BQL held.
func (r *run) insert(prefix string) {
	s, th := r.s, r.th
	n := r.m.hotCPU()
	s.inList[n] = true
	r.unlock(&s.listLock, "qemu_cpu_list_lock")
	if r.labelling() {
		r.labelf("%scpu_list_add: cpu_get_free_index() = %d; QTAILQ_INSERT_TAIL_RCU(&cpus, cpu%d); qemu_mutex_unlock(qemu_cpu_list_lock)", prefix, n, n)
	}
	if r.m.v.cpuLock || r.m.v.finishSafeWork {
		th.arg = uint8(n)
		r.call(r.m.execStart(), pcHPEnd)
		return
	}
	th.pc = r.afterListAdd()
}

// remove is the rest of cpu_list_remove under qemu_cpu_list_lock.
func (r *run) remove(prefix string) {
	s := r.s
	n := r.m.hotCPU()
	s.inList[n] = false
	r.unlock(&s.listLock, "qemu_cpu_list_lock")
	if r.labelling() {
		r.labelf("%scpu_list_remove: QTAILQ_REMOVE_RCU(&cpus, cpu%d); cpu_index = UNASSIGNED_CPU_INDEX; qemu_mutex_unlock(qemu_cpu_list_lock)", prefix, n)
	}
	r.th.pc = pcIONext
}

func (r *run) ioDecide() {
	th := r.th
	switch th.pc {
	case pcIONext:
		if int(th.round) >= len(r.m.ioScript) {
			th.pc = pcIOEnd
			return
		}
		a := r.m.ioScript[th.round]
		th.round++
		switch a.kind {
		case ioHotAdd:
			th.pc = pcHPLock
		case ioSafe:
			th.item = a.item
			r.call(pcQLock, pcIONext)
		case ioRunOnCPU:
			th.item = a.item
			if r.m.v.cpuLock {
				th.pc = pcRCUnlockBQL
			} else {
				th.pc = pcRQLock
			}
		case ioPause:
			if r.m.v.pauseRecheck {
				// v9 sets cpu->stop with the BQL held, and drops it after.
				th.iter = r.nextCPU(0)
				th.pc = pcCPStopLock
				return
			}
			if r.m.v.cpuLock {
				th.pc = pcCPUnlockBQL
				return
			}
			th.iter = r.nextCPU(0)
			th.pc = pcPSPause
		case ioHotRemove:
			switch {
			case !r.m.hotThread:
				th.pc = pcHRLock
			case r.m.v.cpuLock:
				th.pc = pcHXUnlockBQL
			default:
				th.pc = pcHXStop
			}
		}
	case pcHPEnd:
		// finish_safe_work: cpu_exec_start(cpu); cpu_exec_end(cpu).
		r.call(r.m.execEnd(), r.afterListAdd())
	}
}
