package exclusive

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// What a blocked step says it waits for: the label of a step that
// blocks, which is how a deadlock report names every blocked thread. The
// step blocks in run.lock (its mutex is held) or run.woken (it still
// sleeps on its condition variable); these texts say, in QEMU's words,
// what for, and whether a sleeper's predicate already holds (a lost
// wake-up). They are only built when labels are wanted.

// lockWait says what thread t, which cannot take mu, waits for.
func (m *machine) lockWait(s *state, t int, mu *model.Mutex) string {
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
	return fmt.Sprintf("%s, held by %s (at %s)", what, m.threads[mu.Holder()], pcName(s.th[t].pc))
}

// createdCond names the condition variable that qemu_init_vcpu and
// cpu_remove_sync wait on for the hot-plugged CPU's cpu->created.
func (m *machine) createdCond() string {
	if m.v.cpuLock {
		return m.condNames[m.hotCPU()]
	}
	return "qemu_cpu_cond"
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
	case pcHPIdleWoken:
		return fmt.Sprintf("exclusive_resume in cpu_list_add's exclusive_idle for !exclusive_work_ongoing (%s)",
			holds(!s.workOngoing))
	case pcHRIdleWoken:
		return fmt.Sprintf("exclusive_resume in cpu_list_remove's exclusive_idle for !exclusive_work_ongoing (%s)",
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
	case pcHCWoken:
		return fmt.Sprintf("%s in qemu_init_vcpu for cpu%d->created (%s)", m.createdCond(), m.hotCPU(),
			holds(s.ctl[m.hotCPU()]&cCreated != 0))
	case pcHXWoken:
		return fmt.Sprintf("%s in cpu_remove_sync for !cpu%d->created (%s)", m.createdCond(), m.hotCPU(),
			holds(s.ctl[m.hotCPU()]&cCreated == 0))
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
