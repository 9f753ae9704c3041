package exclusive

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// What each step needs before it can run, derived from the pc alone so
// that Enabled and Status agree with Step.

// acquires returns the mutex thread t's next step takes, or nil.
func (m *machine) acquires(s *state, t int) *model.Mutex {
	th := &s.th[t]
	own := &s.bql
	if m.v.cpuLock && t < m.nvcpus {
		own = &s.cpuLock[t]
	}
	switch th.pc {
	case pcVStart, pcVRelock, pcVHaltWoken:
		return own
	case pcVTB:
		if !m.v.cpuLock {
			return &s.bql
		}
	case pcPLock, pcPRelock:
		return &s.cpuLock[t]
	case pcPSynicLock, pcPSafeBQLLock, pcPFuncBQL, pcIOStart, pcRCLockBQL, pcRWoken:
		return &s.bql
	case pcSXLock, pcEXLock, pcXSLock, pcXELock, pcCSLock, pcCEListLock, pcHPLock,
		pcSXIdleWoken, pcXSIdleWoken, pcCSIdleWoken, pcSXWoken:
		return &s.listLock
	case pcCSMarkLock, pcCSWaitLock, pcCELock, pcCSWaitWoken:
		return &s.cpuLock[th.iter]
	case pcCXSLock, pcCXELock, pcR2Woken:
		return &s.cpuLock[th.arg]
	case pcRQLock, pcRCLock, pcRCWoken:
		return &s.cpuLock[m.itemCPU(int(th.item))]
	}
	return nil
}

// waitCond returns the condition variable thread t sleeps on (or was
// woken from and must now re-acquire its mutex for), or nil.
func (m *machine) waitCond(s *state, t int) *model.Cond {
	th := &s.th[t]
	switch th.pc {
	case pcVHaltWoken:
		return &s.haltCond[t]
	case pcSXIdleWoken, pcXSIdleWoken, pcCSIdleWoken:
		return &s.resumeCond
	case pcSXWoken:
		return &s.exclusiveCond
	case pcCSWaitWoken:
		return &s.cpuCond[th.iter]
	case pcR2Woken:
		return &s.cpuCond[th.arg]
	case pcRWoken:
		return &s.workCond
	case pcRCWoken:
		return &s.cpuCond[m.itemCPU(int(th.item))]
	}
	return nil
}

// signals returns the condition variable that thread t's next step
// signals, when that step has one alternative per waiter.
func (m *machine) signals(s *state, t int) *model.Cond {
	th := &s.th[t]
	switch th.pc {
	case pcXESignal:
		return &s.exclusiveCond
	case pcEXWake:
		if m.v.endSignalsResume {
			return &s.resumeCond
		}
	case pcCEWake:
		if !m.v.broadcast {
			return &s.cpuCond[th.iter]
		}
	case pcR1Signal:
		if !m.v.broadcast {
			return &s.cpuCond[th.arg]
		}
	}
	return nil
}

// waitsFor says, in QEMU's words, what a thread that cannot step waits
// for, and whether its predicate already holds (a lost wake-up).
func (m *machine) waitsFor(s *state, t int) string {
	th := &s.th[t]
	if c := m.waitCond(s, t); c != nil && c.Waiting(t) {
		return m.sleepsOn(s, t)
	}
	if mu := m.acquires(s, t); mu != nil && !mu.Free() {
		what := "a mutex"
		switch {
		case mu == &s.bql:
			what = "the BQL"
		case mu == &s.listLock:
			what = "qemu_cpu_list_lock"
		default:
			for c := range s.cpuLock {
				if mu == &s.cpuLock[c] {
					what = fmt.Sprintf("cpu%d->lock", c)
					if !m.v.cpuLock {
						what = fmt.Sprintf("cpu%d->work_mutex", c)
					}
				}
			}
		}
		return fmt.Sprintf("%s, held by %s (at %s)", what, m.threads[mu.Holder()], pcName(th.pc))
	}
	return "nothing (at " + pcName(th.pc) + ")"
}

func holds(b bool) string {
	if b {
		return "already true: a lost wake-up"
	}
	return "still false"
}

func (m *machine) sleepsOn(s *state, t int) string {
	th := &s.th[t]
	switch th.pc {
	case pcVHaltWoken:
		return fmt.Sprintf("cpu%d->halt_cond in qemu_wait_io_event, with %d work items queued", t, s.qlen[t])
	case pcSXIdleWoken:
		return fmt.Sprintf("exclusive_resume in start_exclusive's exclusive_idle for pending_cpus == 0 (%s)",
			holds(s.mem.Peek(m.aPending) == 0))
	case pcXSIdleWoken:
		return fmt.Sprintf("exclusive_resume in cpu_exec_start(cpu%d)'s exclusive_idle for pending_cpus == 0 (%s)",
			th.arg, holds(s.mem.Peek(m.aPending) == 0))
	case pcCSIdleWoken:
		return fmt.Sprintf("exclusive_resume in start_exclusive's exclusive_idle for !exclusive_work_ongoing (%s)",
			holds(!s.workOngoing))
	case pcSXWoken:
		return fmt.Sprintf("exclusive_cond in start_exclusive for pending_cpus <= 1 (pending_cpus = %d)",
			s.mem.Peek(m.aPending))
	case pcCSWaitWoken:
		return fmt.Sprintf("cpu%d->cond in start_exclusive for !cpu%d->exclusive_waiter (%s)",
			th.iter, th.iter, holds(!s.exclusiveWaiter[th.iter]))
	case pcR2Woken:
		fn := "cpu_exec_start"
		if th.sp > 0 && th.stack[th.sp-1] == pcCXEUnlock {
			fn = "cpu_exec_end"
		}
		return fmt.Sprintf("cpu%d->cond in %s for !cpu%d->exclusive_ongoing (%s)",
			th.arg, fn, th.arg, holds(!s.exclusiveOngoing[th.arg]))
	case pcRWoken:
		return fmt.Sprintf("qemu_work_cond in run_on_cpu for %s.done (%s)",
			m.itemName(int(th.item)), holds(s.mem.Peek(m.aDone[th.item]) != 0))
	case pcRCWoken:
		c := m.itemCPU(int(th.item))
		return fmt.Sprintf("cpu%d->cond in run_on_cpu for %s.done (%s)",
			c, m.itemName(int(th.item)), holds(s.mem.Peek(m.aDone[th.item]) != 0))
	}
	return "a condition variable (at " + pcName(th.pc) + ")"
}
