package exclusive

// The I/O thread: the main loop, holding the BQL, makes the run-on-cpu
// parameter's synchronous run_on_cpu calls (A.2 do_run_on_cpu upstream;
// A.3 run_on_cpu in the per-CPU-lock series) and, in finish-safe-work,
// first hot-plugs a CPU with QEMU <= 4.2's cpu_list_add (H3).

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
		r.label("main_loop: bql_lock()")
		th.pc = pcIONext
	case pcIOEnd:
		r.unlock(&s.bql, "bql")
		r.label("main_loop: bql_unlock()")
		th.pc = pcDone

	// cpu_list_add + finish_safe_work (H3)
	case pcHPLock:
		if !r.lock(&s.listLock, "qemu_cpu_list_lock") {
			return
		}
		r.label("cpu_list_add: qemu_mutex_lock(qemu_cpu_list_lock)")
		th.pc = pcHPInsert
	case pcHPInsert:
		n := r.m.nvcpus
		s.inList[n] = true
		r.unlock(&s.listLock, "qemu_cpu_list_lock")
		if r.labelling() {
			r.labelf("cpu_list_add: cpu_get_free_index() = %d; QTAILQ_INSERT_TAIL_RCU(&cpus, cpu%d); qemu_mutex_unlock(qemu_cpu_list_lock)", n, n)
		}
		th.arg = uint8(n)
		r.call(r.m.execStart(), pcHPEnd)

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
		// exit_request is not modelled (a TB always ends); the broadcast
		// is what wakes a halted vCPU.
		if ws := r.broadcast(&s.haltCond[tc], r.haltName(tc)); r.labelling() {
			r.labelf("run_on_cpu: qemu_cpu_kick(cpu%d): qemu_cond_broadcast(cpu%d->halt_cond) %s", tc, tc, r.wakesAll(ws))
		}
		th.pc = pcRWait
	case pcRWait:
		// wi.done is stored by the vCPU while it holds the BQL, which this
		// thread holds too: the load cannot race with the store.
		if r.x.Load(s.mem, r.m.aDone[item]) != 0 {
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
		if !r.woken(&s.workCond, "qemu_work_cond") || !r.reacquire(&s.bql, "bql") {
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
		// The append is a plain access under cpu->lock; the kick's
		// broadcast of halt_cond is the step's one visible action.
		r.enqueue(tc, item)
		if ws := r.broadcast(&s.haltCond[tc], r.haltName(tc)); r.labelling() {
			r.labelf("run_on_cpu: queue_work_on_cpu_locked: append %s; qemu_cpu_kick(cpu%d): qemu_cond_broadcast(cpu%d->halt_cond) %s",
				r.m.itemName(item), tc, tc, r.wakesAll(ws))
		}
		th.pc = pcRCWait
	case pcRCWait:
		// wi.done is set under cpu->lock, held here.
		if r.x.Load(s.mem, r.m.aDone[item]) != 0 {
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
		if !r.woken(&s.cpuCond[tc], r.condName(tc)) || !r.reacquire(&s.cpuLock[tc], r.cpuLockName(tc)) {
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
	if r.x.Recording() {
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
	r.th.round++
	r.th.pc = pcIONext
}

func (r *run) ioDecide() {
	th := r.th
	switch th.pc {
	case pcIONext:
		switch {
		case r.m.v.finishSafeWork && !r.s.inList[r.m.nvcpus]:
			th.pc = pcHPLock
		case int(th.round) < r.m.nroc:
			th.item = uint8(r.m.nsafe + int(th.round))
			if r.m.v.cpuLock {
				th.pc = pcRCUnlockBQL
			} else {
				th.pc = pcRQLock
			}
		default:
			th.pc = pcIOEnd
		}
	case pcHPEnd:
		// finish_safe_work: cpu_exec_start(cpu); cpu_exec_end(cpu).
		r.call(r.m.execEnd(), pcIONext)
	}
}
