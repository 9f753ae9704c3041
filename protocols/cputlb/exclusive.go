package cputlb

import "github.com/protocheck/protocheck/model"

// stepExclusive runs a safe work item: start_exclusive, the flush,
// end_exclusive (upstream lock-free protocol). In the per-CPU-lock branch
// the vCPU loop holds no BQL, so there is no bql_unlock around it.
// protocols/exclusive models this protocol fully (several initiators,
// nesting, its known bugs); here the initiators are the sources, one or
// two.
func (m *machine) stepExclusive(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuNames[t]
	switch v.pc {
	case pcExclLock:
		if listLockBusy(s, x) {
			return
		}
		x.Lock(&s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("start_exclusive(%s): qemu_mutex_lock(qemu_cpu_list_lock)", name)
		}
		v.pc = pcExclIdle
	case pcExclIdle, pcExclIdleRelock:
		// exclusive_idle's test and the store of pending_cpus = 1 are one
		// step: every write of pending_cpus holds the lock, and lock-free
		// readers see only the store.
		relock := v.pc == pcExclIdleRelock
		if relock {
			if asleep(&s.resumeCond, t, x, waitResume) || listLockBusy(s, x) {
				return
			}
			x.Lock(&s.listLock, listLock)
		}
		prefix := ""
		if x.Labelling() {
			prefix = "start_exclusive(" + name + "): "
			if relock {
				prefix += "woken, re-acquires qemu_cpu_list_lock; "
			}
		}
		if p := x.Load(s.mem, m.aPending); p != 0 {
			if relock {
				// Waiting again is a step of its own.
				if x.Labelling() {
					x.Labelf("%sexclusive_idle: pending_cpus == %d", prefix, p)
				}
				v.pc = pcExclIdleRewait
				return
			}
			x.Wait(&s.resumeCond, "exclusive_resume", &s.listLock, listLock)
			if x.Labelling() {
				x.Labelf("%sexclusive_idle: pending_cpus == %d, qemu_cond_wait(exclusive_resume)", prefix, p)
			}
			v.pc = pcExclIdleRelock
			return
		}
		x.Store(s.mem, m.aPending, 1)
		if x.Labelling() {
			x.Labelf("%sexclusive_idle: pending_cpus == 0; atomic_set(pending_cpus, 1)", prefix)
		}
		v.count = 0
		v.idx = uint8(m.nextOther(t, 0))
		v.pc = pcExclScan
		if int(v.idx) == m.n {
			v.pc = pcExclPending
		}
	case pcExclScan:
		// CPU_FOREACH includes the caller, whose running is false (it is
		// outside cpu_exec, the precondition of start_exclusive): that
		// read is skipped.
		o := int(v.idx)
		x.Fence()
		if x.Load(s.mem, m.aRunning[o]) != 0 {
			// has_waiter is only accessed under the lock.
			x.Store(s.mem, m.aHasWaiter[o], 1)
			v.count++
			if x.Labelling() {
				x.Labelf("start_exclusive(%s): smp_mb; atomic_read(%s->running) == true: has_waiter = true, running_cpus = %d", name, cpuNames[o], v.count)
			}
			v.pc = pcExclKick
			return
		}
		if x.Labelling() {
			x.Labelf("start_exclusive(%s): smp_mb; atomic_read(%s->running) == false", name, cpuNames[o])
		}
		m.scanNext(t, v)
	case pcExclKick:
		o := int(v.idx)
		m.kick(s, o, x)
		if x.Labelling() {
			x.Labelf("start_exclusive(%s): qemu_cpu_kick(%s)", name, cpuNames[o])
		}
		m.scanNext(t, v)
	case pcExclPending:
		p := uint64(v.count) + 1
		v.count = 0 // running_cpus is a local of start_exclusive
		x.Store(s.mem, m.aPending, p)
		if x.Labelling() {
			x.Labelf("start_exclusive(%s): atomic_set(pending_cpus, %d)", name, p)
		}
		v.pc = pcExclUnlock
		if p > 1 {
			v.pc = pcExclWait
		}
	case pcExclWait:
		x.Wait(&s.exclCond, "exclusive_cond", &s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("start_exclusive(%s): pending_cpus > 1, qemu_cond_wait(exclusive_cond)", name)
		}
		v.pc = pcExclRelock
	case pcExclRelock:
		// Re-acquire and re-test (pending_cpus is written only under the
		// lock); waiting again is a step of its own (pcExclRewait).
		if s.exclCond.Waiting(t) {
			x.Block()
			if x.Labelling() {
				x.Labelf("exclusive_cond (start_exclusive: pending_cpus == 1, it is %d)", s.mem.Peek(m.aPending))
			}
			return
		}
		if listLockBusy(s, x) {
			return
		}
		x.Lock(&s.listLock, listLock)
		p := x.Load(s.mem, m.aPending)
		if p > 1 {
			if x.Labelling() {
				x.Labelf("start_exclusive(%s): woken, re-acquires qemu_cpu_list_lock; pending_cpus == %d > 1", name, p)
			}
			v.pc = pcExclRewait
			return
		}
		if x.Labelling() {
			x.Labelf("start_exclusive(%s): woken, re-acquires qemu_cpu_list_lock; pending_cpus == %d", name, p)
		}
		v.pc = pcExclUnlock
	case pcExclRewait:
		x.Wait(&s.exclCond, "exclusive_cond", &s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("start_exclusive(%s): pending_cpus > 1, qemu_cond_wait(exclusive_cond) again", name)
		}
		v.pc = pcExclRelock
	case pcExclIdleRewait:
		x.Wait(&s.resumeCond, "exclusive_resume", &s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("start_exclusive(%s): exclusive_idle: qemu_cond_wait(exclusive_resume) again", name)
		}
		v.pc = pcExclIdleRelock
	case pcExclUnlock:
		x.Unlock(&s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("start_exclusive(%s): qemu_mutex_unlock(qemu_cpu_list_lock): exclusive section begins", name)
		}
		v.pc = pcSafeRun
	case pcSafeRun:
		// The source's own flush, inside its exclusive section.
		m.runFunc(s, t, x, "")
		v.pc = pcEndExclLock
	case pcEndExclLock:
		if listLockBusy(s, x) {
			return
		}
		x.Lock(&s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("end_exclusive(%s): qemu_mutex_lock(qemu_cpu_list_lock)", name)
		}
		v.pc = pcEndExclStore
	case pcEndExclStore:
		// The store and the broadcast are one step: exclusive_resume's
		// waiters re-test pending_cpus only after re-acquiring the lock.
		x.Store(s.mem, m.aPending, 0)
		x.Broadcast(&s.resumeCond, "exclusive_resume")
		if x.Labelling() {
			x.Labelf("end_exclusive(%s): atomic_set(pending_cpus, 0); qemu_cond_broadcast(exclusive_resume)", name)
		}
		v.pc = pcEndExclUnlock
	case pcEndExclUnlock:
		x.Unlock(&s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("end_exclusive(%s): qemu_mutex_unlock(qemu_cpu_list_lock)", name)
		}
		v.pc = pcItemDone
	}
}

// nextOther returns the first CPU index >= from other than t (m.n if none).
func (m *machine) nextOther(t, from int) int {
	for o := from; o < m.n; o++ {
		if o != t {
			return o
		}
	}
	return m.n
}

// scanNext moves start_exclusive's CPU_FOREACH to the next CPU.
func (m *machine) scanNext(t int, v *vcpu) {
	v.idx = uint8(m.nextOther(t, int(v.idx)+1))
	v.pc = pcExclScan
	if int(v.idx) == m.n {
		v.idx = 0
		v.pc = pcExclPending
	}
}
