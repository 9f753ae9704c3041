package cputlb

import "github.com/protocheck/protocheck/model"

const listLock = "qemu_cpu_list_lock"

// What a vCPU woken from exclusive_resume waits for until it is woken.
const waitResume = "exclusive_resume (exclusive_idle: pending_cpus == 0)"

// stepExecStart is cpu_exec_start (cpus-common.c, lock-free fast path with
// the has_waiter slow path).
func (m *machine) stepExecStart(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuNames[t]
	switch v.pc {
	case pcStart:
		x.Store(s.mem, m.aRunning[t], 1)
		if x.Labelling() {
			x.Labelf("cpu_exec_start(%s): atomic_set(running, true)", name)
		}
		v.pc = pcStartCheck
	case pcStartCheck:
		x.Fence()
		if p := x.Load(s.mem, m.aPending); p != 0 {
			if x.Labelling() {
				x.Labelf("cpu_exec_start(%s): smp_mb; pending_cpus == %d, slow path", name, p)
			}
			v.pc = pcStartLock
			return
		}
		if x.Labelling() {
			x.Labelf("cpu_exec_start(%s): smp_mb; pending_cpus == 0, enter cpu_exec", name)
		}
		v.pc = m.execEntry()
	case pcStartLock:
		if listLockBusy(s, x) {
			return
		}
		x.Lock(&s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("cpu_exec_start(%s): qemu_mutex_lock(qemu_cpu_list_lock)", name)
		}
		v.pc = pcStartWaiter
	case pcStartWaiter:
		// One step for the whole test under the lock: has_waiter is only
		// accessed under qemu_cpu_list_lock, running is only read under it
		// (start_exclusive) and pending_cpus only written under it, so no
		// other thread can tell these accesses apart from one step.
		if x.Load(s.mem, m.aHasWaiter[t]) != 0 {
			if x.Labelling() {
				x.Labelf("cpu_exec_start(%s): has_waiter: counted in pending_cpus, run until kicked", name)
			}
			v.pc = pcStartUnlock
			return
		}
		x.Store(s.mem, m.aRunning[t], 0)
		prefix := ""
		if x.Labelling() {
			prefix = "cpu_exec_start(" + name + "): not counted: atomic_set(running, false); "
		}
		m.exclusiveIdle(s, t, x, prefix)
	case pcStartRelock:
		// Woken: re-acquire and re-test. Waiting again is a step of its
		// own (pcStartRewait), as in the real code, where the wait is a
		// second condition-variable operation.
		if asleep(&s.resumeCond, t, x, waitResume) || listLockBusy(s, x) {
			return
		}
		x.Lock(&s.listLock, listLock)
		if p := x.Load(s.mem, m.aPending); p != 0 {
			if x.Labelling() {
				x.Labelf("cpu_exec_start(%s): woken, re-acquires qemu_cpu_list_lock; exclusive_idle: pending_cpus == %d", name, p)
			}
			v.pc = pcStartRewait
			return
		}
		x.Store(s.mem, m.aRunning[t], 1)
		if x.Labelling() {
			x.Labelf("cpu_exec_start(%s): woken, re-acquires qemu_cpu_list_lock; exclusive_idle: pending_cpus == 0; atomic_set(running, true)", name)
		}
		v.pc = pcStartUnlock
	case pcStartRewait:
		x.Wait(&s.resumeCond, "exclusive_resume", &s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("cpu_exec_start(%s): exclusive_idle: qemu_cond_wait(exclusive_resume) again", name)
		}
		v.pc = pcStartRelock
	case pcStartUnlock:
		x.Unlock(&s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("cpu_exec_start(%s): qemu_mutex_unlock(qemu_cpu_list_lock), enter cpu_exec", name)
		}
		v.pc = m.execEntry()
	}
}

// exclusiveIdle is cpu_exec_start's exclusive_idle() with the lock held,
// before any wait: wait on exclusive_resume if pending_cpus != 0, else
// running = true. The test reads a word written only under the lock.
// prefix starts the label (when labelling).
func (m *machine) exclusiveIdle(s *state, t int, x *model.Exec, prefix string) {
	v := &s.cpu[t]
	if p := x.Load(s.mem, m.aPending); p != 0 {
		x.Wait(&s.resumeCond, "exclusive_resume", &s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("%sexclusive_idle: pending_cpus == %d, qemu_cond_wait(exclusive_resume)", prefix, p)
		}
		v.pc = pcStartRelock
		return
	}
	x.Store(s.mem, m.aRunning[t], 1)
	if x.Labelling() {
		x.Labelf("%sexclusive_idle: pending_cpus == 0; atomic_set(running, true)", prefix)
	}
	v.pc = pcStartUnlock
}

// stepExecEnd is cpu_exec_end.
func (m *machine) stepExecEnd(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuNames[t]
	switch v.pc {
	case pcEnd:
		x.Store(s.mem, m.aRunning[t], 0)
		if x.Labelling() {
			x.Labelf("cpu_exec_end(%s): atomic_set(running, false)", name)
		}
		v.pc = pcEndCheck
	case pcEndCheck:
		x.Fence()
		if p := x.Load(s.mem, m.aPending); p != 0 {
			if x.Labelling() {
				x.Labelf("cpu_exec_end(%s): smp_mb; pending_cpus == %d, slow path", name, p)
			}
			v.pc = pcEndLock
			return
		}
		if x.Labelling() {
			x.Labelf("cpu_exec_end(%s): smp_mb; pending_cpus == 0", name)
		}
		v.pc = pcClearExit
	case pcEndLock:
		if listLockBusy(s, x) {
			return
		}
		x.Lock(&s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("cpu_exec_end(%s): qemu_mutex_lock(qemu_cpu_list_lock)", name)
		}
		v.pc = pcEndWaiter
	case pcEndWaiter:
		// has_waiter and pending_cpus are written only under the lock:
		// the test, the clear and the decrement are one step.
		if x.Load(s.mem, m.aHasWaiter[t]) == 0 {
			if x.Labelling() {
				x.Labelf("cpu_exec_end(%s): no has_waiter: not counted, pending_cpus untouched", name)
			}
			v.pc = pcEndUnlock
			return
		}
		x.Store(s.mem, m.aHasWaiter[t], 0)
		p := x.Load(s.mem, m.aPending) - 1
		x.Store(s.mem, m.aPending, p)
		if x.Labelling() {
			x.Labelf("cpu_exec_end(%s): has_waiter = false; atomic_set(pending_cpus, %d)", name, p)
		}
		v.pc = pcEndUnlock
		if p == 1 {
			v.pc = pcEndSignal
		}
	case pcEndSignal:
		// With several waiters the step draws which one is woken.
		w := x.Signal(&s.exclCond, "exclusive_cond")
		if x.Labelling() {
			if w < 0 {
				x.Labelf("cpu_exec_end(%s): qemu_cond_signal(exclusive_cond), nobody waits", name)
			} else {
				x.Labelf("cpu_exec_end(%s): qemu_cond_signal(exclusive_cond) wakes %s", name, cpuNames[w])
			}
		}
		v.pc = pcEndUnlock
	case pcEndUnlock:
		x.Unlock(&s.listLock, listLock)
		if x.Labelling() {
			x.Labelf("cpu_exec_end(%s): qemu_mutex_unlock(qemu_cpu_list_lock)", name)
		}
		v.pc = pcClearExit
	}
}
