package exclusive

import "github.com/protocheck/protocheck/model"

// process_queued_cpu_work (A.2 (c), upstream) and
// process_queued_cpu_work_locked (A.3 (c), seed 001's branch), run by the
// vCPU thread on its own work list. Upstream holds the BQL throughout
// except around a safe item; the per-CPU-lock branch holds cpu->lock,
// drops it around each item, and takes the BQL for wi->bql items
// (run_on_cpu's), since its vCPU thread does not hold the BQL.

// pop takes the head of the thread's work list and releases the list's
// lock. Removing the head is a plain access under that lock, invisible to
// others until the unlock, so it shares the unlock's step.
func (r *run) pop() {
	s, th, t := r.s, r.th, r.t
	i := s.queue[t][0]
	copy(s.queue[t][:], s.queue[t][1:s.qlen[t]])
	s.qlen[t]--
	s.queue[t][s.qlen[t]] = 0
	th.item = i
	r.unlock(&s.cpuLock[t], r.cpuLockName(t))
	if r.labelling() {
		if r.m.v.cpuLock {
			r.labelf("process_queued_cpu_work_locked: pop %s; cpu_mutex_unlock(cpu%d)", r.m.itemName(int(i)), t)
		} else {
			r.labelf("process_queued_cpu_work: pop %s; qemu_mutex_unlock(cpu%d->work_mutex)", r.m.itemName(int(i)), t)
		}
	}
	switch {
	case r.m.safe(int(i)) && !r.m.v.cpuLock && !r.m.v.bqlHeld:
		th.pc = pcPSafeBQLUnlock
	case r.m.safe(int(i)):
		// H2 (bql-held) keeps the BQL; seed 001's vCPU has none to drop.
		r.callStartExclusive(pcPSafeFunc)
	case r.m.v.cpuLock:
		th.pc = pcPFuncBQL
	default:
		th.pc = pcPFunc
	}
}

// queueStep is async_safe_run_on_cpu(cpu, func) = queue_work_on_cpu on
// a heap item: upstream, lock work_mutex; append; unlock; qemu_cpu_kick
// after the unlock (cpus-common.c @d6ea4236); in the per-CPU-lock series,
// cpu_mutex_lock; queue_work_on_cpu_locked (append, then qemu_cpu_kick
// with the lock held); cpu_mutex_unlock (cota/qemu @09addeed). The append
// and wi->done = false are plain writes under the lock, invisible until
// the unlock, and share a step with the next lock operation or kick.
func (r *run) queueStep() {
	s, th := r.s, r.th
	i := int(th.item)
	c := r.m.itemCPU(i)
	fn := "async_safe_run_on_cpu"
	if r.m.async(i) {
		fn = "async_run_on_cpu"
	}
	switch th.pc {
	case pcQLock:
		if !r.lock(&s.cpuLock[c], r.cpuLockName(c)) {
			return
		}
		if r.labelling() {
			if r.m.v.cpuLock {
				r.labelf("%s(cpu%d): queue_work_on_cpu: cpu_mutex_lock(cpu%d)", fn, c, c)
			} else {
				r.labelf("%s(cpu%d): queue_work_on_cpu: qemu_mutex_lock(cpu%d->work_mutex)", fn, c, c)
			}
		}
		th.pc = pcQAppend
	case pcQAppend:
		r.enqueue(c, i)
		if r.m.v.cpuLock {
			if k := r.kick(c); r.labelling() {
				r.labelf("%s(cpu%d): queue_work_on_cpu_locked: append %s; %s", fn, c, r.m.itemName(i), k)
			}
			th.pc = pcQUnlock
			return
		}
		r.unlock(&s.cpuLock[c], r.cpuLockName(c))
		if r.m.v.noSafeKick && r.m.safe(i) {
			// The mutation: no qemu_cpu_kick after the append.
			if r.labelling() {
				r.labelf("%s(cpu%d): queue_work_on_cpu: append %s; qemu_mutex_unlock(cpu%d->work_mutex) (no qemu_cpu_kick)", fn, c, r.m.itemName(i), c)
			}
			r.ret()
			return
		}
		if r.labelling() {
			r.labelf("%s(cpu%d): queue_work_on_cpu: append %s; qemu_mutex_unlock(cpu%d->work_mutex)", fn, c, r.m.itemName(i), c)
		}
		th.pc = pcQKick
	case pcQKick:
		if k := r.kick(c); r.labelling() {
			r.labelf("%s(cpu%d): queue_work_on_cpu: %s", fn, c, k)
		}
		r.ret()
	case pcQUnlock:
		r.unlock(&s.cpuLock[c], r.cpuLockName(c))
		if r.labelling() {
			r.labelf("%s(cpu%d): queue_work_on_cpu: cpu_mutex_unlock(cpu%d)", fn, c, c)
		}
		r.ret()
	}
}

func (r *run) workStep() {
	s, th, t := r.s, r.th, r.t
	item := int(th.item)
	switch th.pc {
	case pcPLock:
		if !r.lock(&s.cpuLock[t], r.cpuLockName(t)) {
			return
		}
		if r.labelling() {
			r.labelf("process_queued_cpu_work: qemu_mutex_lock(cpu%d->work_mutex)", t)
		}
		th.pc = pcPPop
	case pcPPop:
		if s.qlen[t] == 0 { // upstream only: seed 001 checks under the lock it already holds
			r.unlock(&s.cpuLock[t], r.cpuLockName(t))
			if r.labelling() {
				r.labelf("process_queued_cpu_work: work_list empty: qemu_mutex_unlock(cpu%d->work_mutex)", t)
			}
			r.ret()
			return
		}
		r.pop()
	case pcPNext: // upstream; a decision in seed 001
		if s.qlen[t] > 0 {
			r.pop()
			return
		}
		r.unlock(&s.cpuLock[t], r.cpuLockName(t))
		if r.labelling() {
			r.labelf("process_queued_cpu_work: work_list empty: qemu_mutex_unlock(cpu%d->work_mutex)", t)
		}
		th.pc = pcPBcast
	case pcPSafeBQLUnlock:
		r.unlock(&s.bql, "bql")
		r.label("process_queued_cpu_work: bql_unlock() before exclusive work")
		r.callStartExclusive(pcPSafeFunc)
	case pcPSafeFunc:
		r.runWork(item)
		s.gen++
		switch {
		case r.m.v.finishSafeWork:
			if r.labelling() {
				r.labelf("process_queued_cpu_work: wi->func() = async_synic_update for %s, inside the exclusive section", r.m.itemName(item))
			}
			th.pc = pcPSynicLock
		case r.m.nests():
			if r.labelling() {
				r.labelf("process_queued_cpu_work: wi->func() for %s, inside the exclusive section, calls start_exclusive() again", r.m.itemName(item))
			}
			r.callStartExclusive(pcPNestedEnd)
		default:
			if r.labelling() {
				r.labelf("process_queued_cpu_work: wi->func() for %s runs inside the exclusive section", r.m.itemName(item))
			}
			r.callEndExclusive(pcPSafeDone)
		}
	case pcPSynicLock:
		if !r.lock(&s.bql, "bql") {
			return
		}
		r.label("async_synic_update: qemu_mutex_lock_iothread()")
		th.pc = pcPSynicUnlock
	case pcPSynicUnlock:
		r.unlock(&s.bql, "bql")
		r.label("async_synic_update: qemu_mutex_unlock_iothread()")
		r.callEndExclusive(pcPSafeDone)
	case pcPSafeBQLLock:
		if !r.lock(&s.bql, "bql") {
			return
		}
		r.label("process_queued_cpu_work: bql_lock() after exclusive work")
		th.pc = pcPRelock
	case pcPFuncBQL:
		if !r.lock(&s.bql, "bql") {
			return
		}
		r.label("process_queued_cpu_work_locked: wi->bql: qemu_mutex_lock_iothread()")
		th.pc = pcPFunc
	case pcPFunc:
		r.runWork(item)
		if r.m.v.cpuLock {
			// The func only touches the observer; the unlock that follows
			// it is the step's one shared action.
			r.unlock(&s.bql, "bql")
			if r.labelling() {
				r.labelf("process_queued_cpu_work_locked: wi->func() for %s runs; qemu_mutex_unlock_iothread()", r.m.itemName(item))
			}
		} else if r.labelling() {
			r.labelf("process_queued_cpu_work: wi->func() for %s runs with the BQL held", r.m.itemName(item))
		}
		th.pc = pcPRelock
	case pcPRelock:
		if !r.lock(&s.cpuLock[t], r.cpuLockName(t)) {
			return
		}
		if r.labelling() {
			free := ""
			if r.m.safe(item) || r.m.async(item) {
				free = "; g_free(wi)" // thread-local
			}
			if r.m.v.cpuLock {
				r.labelf("process_queued_cpu_work_locked: cpu_mutex_lock(cpu%d)%s", t, free)
			} else {
				r.labelf("process_queued_cpu_work: qemu_mutex_lock(cpu%d->work_mutex)%s", t, free)
			}
		}
		if r.m.safe(item) || r.m.async(item) {
			th.pc = pcPNext
		} else {
			th.pc = pcPDone
		}
	case pcPDone:
		r.storeDone(item)
		if r.labelling() {
			if r.m.v.cpuLock {
				r.labelf("process_queued_cpu_work_locked: atomic_mb_set(&%s.done, true)", r.m.itemName(item))
			} else {
				r.labelf("process_queued_cpu_work: qatomic_store_release(&%s.done, true)", r.m.itemName(item))
			}
		}
		th.pc = pcPNext
	case pcPBcast:
		if r.m.v.cpuLock {
			if ws := r.broadcast(&s.cpuCond[t], r.condName(t)); r.labelling() {
				r.labelf("process_queued_cpu_work_locked: qemu_cond_broadcast(cpu%d->cond) %s", t, r.wakesAll(ws))
			}
		} else if ws := r.broadcast(&s.workCond, "qemu_work_cond"); r.labelling() {
			r.labelf("process_queued_cpu_work: qemu_cond_broadcast(qemu_work_cond) %s", r.wakesAll(ws))
		}
		r.ret()
	}
}

func (r *run) workDecide() {
	th := r.th
	switch th.pc {
	case pcPEntry:
		switch {
		case !r.m.v.cpuLock:
			th.pc = pcPLock
		case r.s.qlen[r.t] == 0: // checked under cpu->lock, held
			r.ret()
		default:
			th.pc = pcPPop
		}
	case pcPNestedEnd:
		r.callEndExclusive(pcPOuterEnd)
	case pcPOuterEnd:
		r.callEndExclusive(pcPSafeDone)
	case pcPSafeDone:
		if !r.m.v.cpuLock && !r.m.v.bqlHeld {
			th.pc = pcPSafeBQLLock
		} else {
			th.pc = pcPRelock
		}
	case pcPNext: // seed 001: the list is checked under cpu->lock, held
		if r.s.qlen[r.t] > 0 {
			th.pc = pcPPop
		} else {
			th.pc = pcPBcast
		}
	}
}

// storeDone sets wi.done: qatomic_store_release upstream, atomic_mb_set
// (a release store, then smp_mb()) on seed 001's branch. Under sequential
// consistency and TSO a plain store, as before memory=2: the wait that
// reads it holds the lock the store is made under.
func (r *run) storeDone(item int) {
	if !r.m.arm {
		r.x.Store(r.s.mem, r.m.aDone[item], 1)
		return
	}
	r.x.StoreDep(r.s.mem, r.m.aDone[item], 1, model.Release, model.Dep{}, model.Dep{})
	if r.m.v.cpuLock {
		r.x.Fence(r.s.mem)
	}
}

// loadDone reads wi.done: qatomic_load_acquire upstream, atomic_mb_read
// (an acquire load) on seed 001's branch.
func (r *run) loadDone(item int) uint64 {
	v, _ := r.x.LoadDep(r.s.mem, r.m.aDone[item], model.Acquire, model.Dep{})
	return v
}
