package exclusive

import (
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// Property names, with their ids (doc.go).
const (
	// PropMutualExclusion is A1-S1: no CPU is in cpu_exec while an
	// exclusive section is active.
	PropMutualExclusion = "mutual-exclusion"
	// PropSingleExclusive is A1-S2: at most one exclusive section at a time.
	PropSingleExclusive = "single-exclusive"
	// PropWorkOnce is A2-S1: every queued work item runs exactly once
	// (run_on_cpu returns only after it ran).
	PropWorkOnce = "work-once"
	// PropAssertNoWaiter and PropAssertOngoing are seed 001's own
	// assertions in start_exclusive and end_exclusive.
	PropAssertNoWaiter = "g_assert(!exclusive_waiter)"
	PropAssertOngoing  = "g_assert(exclusive_ongoing)"
	// PropStartExclusiveProceeds is A1-L1, a progress property: a thread
	// that has called start_exclusive eventually returns from it.
	PropStartExclusiveProceeds = "start-exclusive-proceeds"
	// PropExecStartProceeds is A1-L2 for cpu_exec_start: a thread that
	// has called cpu_exec_start eventually returns from it (enters
	// cpu_exec), whether it waits in exclusive_idle (upstream) or in
	// cpu_exec_exclusive_locked (seed 001).
	PropExecStartProceeds = "cpu-exec-start-proceeds"
	// PropSafeWorkRuns is A2-L2, a progress property: a safe work item
	// queued by async_safe_run_on_cpu eventually runs. It is pending from
	// the item's append to its CPU's work list until its func runs inside
	// the exclusive section: while it waits on the list, and once popped by
	// process_queued_cpu_work while its vCPU drops the BQL and waits in
	// start_exclusive. An async_run_on_cpu item (cross-work), which no
	// caller waits for either, is pending while it is on the list.
	PropSafeWorkRuns = "safe-work-runs"
	// PropVMStopped is pause_all_vcpus's contract (pause=1): when it
	// returns, every CPU in the list has stopped (cpu->stopped), so that
	// vm_stop's callers (migration, savevm, the gdbstub) see no vCPU
	// running guest code. Checked in the step where it returns.
	PropVMStopped = "vm-stop-stops"
	// PropGuestWhileStopped is what that contract is for: no vCPU runs a
	// guest TB between vm_stop's return and vm_start. Checked in the
	// step of the TB.
	PropGuestWhileStopped = "no-guest-while-stopped"
)

// inStartExclusive: some thread is inside start_exclusive (both schemes'
// pc ranges; a nested call of upstream's is one step and never rests).
func (m *machine) inStartExclusive(ms model.State) bool {
	s := ms.(*state)
	for t := range m.threads {
		if pc := s.th[t].pc; pc >= pcSXEntry && pc <= pcSXUnlock || pc >= pcCSLock && pc <= pcCSWaitWoken {
			return true
		}
	}
	return false
}

// inExecStart: some thread is inside cpu_exec_start: upstream's, or seed
// 001's, including the cpu_exec_exclusive_locked it calls (whose return
// pc is then cpu_exec_start's last step).
func (m *machine) inExecStart(ms model.State) bool {
	s := ms.(*state)
	for t := range m.threads {
		th := &s.th[t]
		switch pc := th.pc; {
		case pc >= pcXSSet && pc <= pcXSUnlock, pc == pcCXSLock, pc == pcCXSRun:
			return true
		case pc >= pcR1 && pc <= pcR2Woken:
			if th.sp > 0 && th.stack[th.sp-1] == pcCXSRun {
				return true
			}
		}
	}
	return false
}

// safeWorkPending: some safe work item has been queued and has not run
// yet. It is on its CPU's work list, or its vCPU has popped it and is on
// its way to the func: dropping the BQL (pcPSafeBQLUnlock), inside the
// start_exclusive called for it (whose return pc, pcPSafeFunc, is on the
// stack), or at the func itself. Nothing of this is new state: the
// obligation is read off the work lists and the vCPU threads' pcs.
//
// One kind of state is not judged: a vCPU inside a guest MMIO access,
// holding the BQL (io_writex, pcVMMIOUnlock). Once kicked, the item's
// vCPU leaves cpu_exec and retakes the BQL (upstream) before it reaches
// its work list, and weak fairness, the only fairness bfs assumes, lets a
// vCPU whose guest loops over MMIO accesses take and release the BQL for
// ever while that thread, enabled only between two of them, never gets
// it. The real BQL does not starve a waiter for ever, and a guest that
// makes MMIO accesses chooses to (the environment's choice per TB): every
// such cycle has its twin with TBs that touch RAM only, which is judged.
// What is given up is a non-progress cycle that needs an MMIO access in
// every iteration, which is the BQL starvation itself.
func (m *machine) safeWorkPending(ms model.State) bool {
	s := ms.(*state)
	for t := 0; t < m.nvthreads; t++ {
		if s.th[t].pc == pcVMMIOUnlock {
			return false
		}
	}
	for c := 0; c < m.ncpus; c++ {
		for k := 0; k < int(s.qlen[c]); k++ {
			if i := int(s.queue[c][k]); m.safe(i) || m.async(i) {
				return true
			}
		}
	}
	for t := 0; t < m.nvthreads; t++ {
		th := &s.th[t]
		if th.pc == pcPSafeBQLUnlock || th.pc == pcPSafeFunc {
			return true
		}
		for k := 0; k < int(th.sp); k++ {
			if th.stack[k] == pcPSafeFunc {
				return true
			}
		}
	}
	return false
}

// runnerIn is runnerOf in state s: with hotplug-thread=1 the hot-plugged CPU is
// in cpu_exec through the I/O thread's finish_safe_work (seed 001's base)
// before its own thread exists.
func (m *machine) runnerIn(s *state, c int) string {
	// The I/O thread's finish_safe_work is in cpu_exec between its
	// cpu_exec_start's return and its cpu_exec_end's first step, which
	// returns to qemu_init_vcpu (afterListAdd).
	if io := &s.th[m.io]; m.hotThread && c == m.hotCPU() && io.arg == uint8(c) &&
		io.pc == m.execEnd() && io.sp > 0 && io.stack[io.sp-1] == pcHCCreate {
		return m.threads[m.io]
	}
	return m.runnerOf(c)
}

// runnerOf names the thread that runs CPU c's code: its vCPU thread, or
// the I/O thread for the CPU it hot-plugs (finish_safe_work), or with
// hotplug-thread=1 that CPU's own thread.
func (m *machine) runnerOf(c int) string {
	if c < m.nvcpus || m.hotThread && c == m.hotCPU() {
		return m.threads[c]
	}
	return m.threads[m.io]
}

func (m *machine) mutualExclusion(ms model.State) string {
	s := ms.(*state)
	for t := range m.threads {
		if !s.active[t] {
			continue
		}
		for c := 0; c < m.ncpus; c++ {
			if s.inExec[c] {
				return fmt.Sprintf("cpu%d (%s) is inside cpu_exec while %s's exclusive section runs",
					c, m.runnerIn(s, c), m.threads[t])
			}
		}
	}
	return ""
}

func (m *machine) singleExclusive(ms model.State) string {
	s := ms.(*state)
	n := 0
	for t := range m.threads {
		if s.active[t] {
			n++
		}
	}
	if n <= 1 {
		return ""
	}
	var in []string
	for t := range m.threads {
		if s.active[t] {
			in = append(in, m.threads[t])
		}
	}
	return "exclusive sections of " + strings.Join(in, " and ") + " run at the same time"
}

// workOnce checks, once every thread has finished, that every queued
// item ran; running one twice fails at the step (run.runWork).
func (m *machine) workOnce(ms model.State) string {
	s := ms.(*state)
	for t := range m.threads {
		if !(s.th[t].pc == pcDone || m.idle(s, t)) {
			return ""
		}
	}
	for i := 0; i < m.nitems; i++ {
		if s.ran[i] != 1 {
			return fmt.Sprintf("every thread has finished but %s's func ran %d times", m.itemName(i), s.ran[i])
		}
	}
	return ""
}
