package exclusive

import (
	"fmt"
	"sync/atomic"

	"github.com/protocheck/protocheck/explorer/rt"
)

// vm_stop and vm_start in the real implementation (pause=1), the model's
// pause.go step for step: upstream's pause_all_vcpus on qemu_pause_cond
// (system/cpus.c @05927e9d), seed 001's branch's on cpu->cond (cota/qemu
// cpus.c @031cfd04) and the series' v9 (cpu-lock-pause-recheck), and the
// vCPU's side: cpu_can_run, cpu_thread_is_idle's stopped CPU and paused
// VM, and qemu_wait_io_event_common's stop.

// runState is the CPUs' run state: cpu->stop and cpu->stopped under the
// lock the vCPU thread holds outside cpu_exec (the BQL upstream,
// cpu->lock in seed 001's branch), which every writer holds too; the VM's
// run state, written under the BQL and read by seed 001's vCPUs under
// cpu->lock only (an atomic here, a racy plain read in QEMU); and whether
// the CPU has been resumed, after which no kick comes from vm_stop or
// vm_start again.
type runState struct {
	stop, stopped, resumed []bool
	paused                 atomic.Bool
	qemuPauseCond          *rt.Cond // upstream, with the BQL
	// vmStopped: vm_stop has returned and vm_start has not resumed a CPU
	// (the model's vmStopped), for no-guest-while-stopped.
	vmStopped atomic.Bool
}

func (w *world) initRunState() {
	n := w.m.ncpus
	w.rs.stop, w.rs.stopped, w.rs.resumed = make([]bool, n), make([]bool, n), make([]bool, n)
	if !w.v.cpuLock {
		w.rs.qemuPauseCond = w.e.Cond("qemu_pause_cond", w.bql)
	}
}

// cpuStopped is cpu->stopped of CPU c for all_vcpus_paused: the
// hot-plugged CPU, which has no thread here, counts as stopped
// (qemu_init_vcpu creates it so), as in the model's run.stopped.
func (w *world) cpuStopped(c int) bool {
	return c == w.m.hotCPU() || w.rs.stopped[c]
}

// listed is CPU_FOREACH: the CPUs in the list, in order (nextCPU's walk).
func (w *world) listed() []int {
	var out []int
	for c := w.nextCPU(0); c < w.m.ncpus; c = w.nextCPU(c + 1) {
		out = append(out, c)
	}
	return out
}

// firstRunning is the first listed CPU that has not stopped, or -1.
func (w *world) firstRunning() int {
	for _, c := range w.listed() {
		if !w.cpuStopped(c) {
			return c
		}
	}
	return -1
}

// canRun is cpu_can_run, read under the vCPU thread's lock.
func (w *world) canRun(t int) bool {
	return !w.rs.stop[t] && !w.rs.stopped[t] && !w.rs.paused.Load()
}

// idle is cpu_thread_is_idle for the vCPU's own CPU, under its lock,
// with the work list read as empty or not.
func (th *thr) idle(empty bool) bool {
	w, t := th.w, th.t
	return !w.rs.stop[t] && empty && (th.halted || w.rs.stopped[t] || w.rs.paused.Load())
}

// kicksOwed: a kick from vm_stop or vm_start may still come to CPU t.
func (w *world) kicksOwed(t int) bool { return w.m.pause && !w.rs.resumed[t] }

// cpuStop is qemu_wait_io_event_common's stop (the model's pcVStop).
func (th *thr) cpuStop() {
	w, t := th.w, th.t
	w.rs.stop[t] = false
	w.rs.stopped[t] = true
	if w.v.cpuLock {
		w.broadcast(w.cpuCond[t], fmt.Sprintf("qemu_wait_io_event_common: cpu%d->stop: cpu->stop = false; cpu->stopped = true; qemu_cond_broadcast(cpu%d->cond)", t, t))
		return
	}
	w.broadcast(w.rs.qemuPauseCond, fmt.Sprintf("qemu_wait_io_event_common: cpu%d->stop: qemu_cpu_stop(): cpu->stopped = true; qemu_cond_broadcast(&qemu_pause_cond)", t))
}

// resume is cpu_resume(cpu c) with the lock its fields are under held.
func (w *world) resume(c int, prefix string) {
	w.rs.stop[c], w.rs.stopped[c] = false, false
	w.rs.resumed[c] = true
	w.kick(c, fmt.Sprintf("%scpu_resume(cpu%d): cpu->stop = false; cpu->stopped = false; ", prefix, c))
}

// checkStopped is vm-stop-stops where pause_all_vcpus returns.
func (th *thr) checkStopped() {
	w := th.w
	if o := w.firstRunning(); o >= 0 {
		w.e.Failf(PropVMStopped, "%s: pause_all_vcpus returns while cpu%d has not stopped (cpu->stopped = false)", th.name(), o)
	}
	w.rs.vmStopped.Store(true)
}

// checkGuestStopped is no-guest-while-stopped, at a guest TB.
func (th *thr) checkGuestStopped() {
	if th.w.rs.vmStopped.Load() {
		th.w.e.Failf(PropGuestWhileStopped, "%s: the guest runs a TB after vm_stop returned and before vm_start", th.name())
	}
}

// vmStopStart runs vm_stop then vm_start, called with the BQL held.
func (th *thr) vmStopStart() {
	switch {
	case th.w.v.pauseRecheck:
		th.pauseV9()
	case th.w.v.cpuLock:
		th.pauseSeed()
	default:
		th.pauseUpstream()
	}
}

// pauseUpstream: system/cpus.c @05927e9d (the model's pauseStep).
func (th *thr) pauseUpstream() {
	w := th.w
	for i, c := range w.listed() {
		pre := ""
		if i == 0 {
			pre = "vm_stop: runstate_set(RUN_STATE_PAUSED); pause_all_vcpus: "
			w.rs.paused.Store(true)
		}
		w.rs.stop[c] = true
		w.kick(c, fmt.Sprintf("%scpu_pause(cpu%d): cpu->stop = true; ", pre, c))
	}
	for {
		o := w.firstRunning()
		if o < 0 {
			break
		}
		th.wait(w.rs.qemuPauseCond, fmt.Sprintf("pause_all_vcpus: !all_vcpus_paused() (cpu%d->stopped = false): qemu_cond_wait(&qemu_pause_cond, &bql)", o),
			"pause_all_vcpus", "pause_all_vcpus: woken from qemu_pause_cond, re-acquires bql")
		for _, c := range w.listed() {
			w.kick(c, "pause_all_vcpus: ")
		}
	}
	w.bql.Unlock("pause_all_vcpus: all_vcpus_paused(); bql_unlock(); replay_mutex_lock()")
	w.bql.Lock("pause_all_vcpus: bql_lock(); vm_stop returns")
	th.checkStopped()
	for i, c := range w.listed() {
		pre := ""
		if i == 0 {
			pre = "vm_start: runstate_set(RUN_STATE_RUNNING); resume_all_vcpus: "
		}
		w.resumeFirst(i, c, pre)
	}
}

// resumeFirst resumes CPU c; the first one also ends the stopped window
// and the paused run state, in the step of its kick (upstream's
// runstate_set(RUN_STATE_RUNNING) shares it): after the kick's
// scheduling point, so that they belong to that step and not to the one
// before.
func (w *world) resumeFirst(i, c int, pre string) {
	w.resume(c, pre)
	if i == 0 {
		w.rs.vmStopped.Store(false)
		w.rs.paused.Store(false)
	}
}

// pauseSeed: seed 001's branch (the model's seedPauseStep without
// pauseRecheck).
func (th *thr) pauseSeed() {
	w := th.w
	w.bql.Unlock("do_vm_stop: pause_all_vcpus: qemu_mutex_unlock_iothread()")
	th.stopEach()
	cpus := w.listed()
	for _, c := range cpus {
		for _, k := range w.listed() {
			w.kick(k, fmt.Sprintf("pause_all_vcpus: waiting for cpu%d: CPU_FOREACH(cs) ", c))
		}
		w.cpuLock[c].Lock(fmt.Sprintf("pause_all_vcpus: cpu_mutex_lock(cpu%d)", c))
		if w.cpuStopped(c) {
			w.cpuLock[c].Unlock(fmt.Sprintf("pause_all_vcpus: cpu%d->stopped: cpu_mutex_unlock(cpu%d)", c, c))
			continue
		}
		th.wait(w.cpuCond[c], fmt.Sprintf("pause_all_vcpus: if (!cpu%d->stopped) qemu_cond_wait(%s, %s)", c, w.m.condNames[c], w.m.lockNames[c]),
			"pause_all_vcpus", fmt.Sprintf("pause_all_vcpus: woken from %s, re-acquires %s", w.m.condNames[c], w.m.lockNames[c]))
		w.cpuLock[c].Unlock(fmt.Sprintf("pause_all_vcpus: cpu_mutex_unlock(cpu%d)", c))
	}
	w.bql.Lock("pause_all_vcpus: qemu_mutex_lock_iothread(); pause_all_vcpus returns")
	th.checkStopped()
	th.runstateAndResume()
}

// stopEach is the first CPU_FOREACH of seed 001's pause_all_vcpus: each
// CPU's stop and kick under its cpu->lock.
func (th *thr) stopEach() {
	w := th.w
	for _, c := range w.listed() {
		w.cpuLock[c].Lock(fmt.Sprintf("pause_all_vcpus: cpu_mutex_lock(cpu%d)", c))
		w.rs.stop[c] = true
		w.kick(c, fmt.Sprintf("pause_all_vcpus: cpu%d->stop = true; ", c))
		w.cpuLock[c].Unlock(fmt.Sprintf("pause_all_vcpus: cpu_mutex_unlock(cpu%d)", c))
	}
}

// runstateAndResume: do_vm_stop's runstate_set after pause_all_vcpus,
// then vm_start, in seed 001's branch.
func (th *thr) runstateAndResume() {
	w := th.w
	w.e.Yield("do_vm_stop: runstate_set(RUN_STATE_PAUSED); vm_stop returns")
	w.rs.paused.Store(true)
	w.e.Yield("vm_start: vm_prepare_start: runstate_set(RUN_STATE_RUNNING)")
	w.rs.paused.Store(false)
	w.rs.vmStopped.Store(false)
	for _, c := range w.listed() {
		w.cpuLock[c].Lock(fmt.Sprintf("resume_all_vcpus: cpu_resume(cpu%d): cpu_mutex_lock(cpu%d)", c, c))
		w.resume(c, "")
		w.cpuLock[c].Unlock(fmt.Sprintf("cpu_resume(cpu%d): cpu_mutex_unlock(cpu%d)", c, c))
	}
}

// pauseV9: the series' v9 pause_all_vcpus (cpu-lock-pause-recheck).
func (th *thr) pauseV9() {
	w := th.w
	th.stopEach()
	for {
		// drop_locks_and_stop_all_vcpus:
		w.bql.Unlock("pause_all_vcpus: drop_locks_and_stop_all_vcpus: qemu_mutex_unlock_iothread()")
		for _, c := range w.listed() {
			w.cpuLock[c].Lock(fmt.Sprintf("pause_all_vcpus: cpu_mutex_lock(cpu%d)", c))
			if w.cpuStopped(c) {
				w.cpuLock[c].Unlock(fmt.Sprintf("pause_all_vcpus: cpu%d->stopped: cpu_mutex_unlock(cpu%d)", c, c))
				continue
			}
			w.rs.stop[c] = true
			w.kick(c, fmt.Sprintf("pause_all_vcpus: !cpu%d->stopped: cpu->stop = true; ", c))
			th.wait(w.cpuCond[c], fmt.Sprintf("pause_all_vcpus: qemu_cond_wait(%s, %s)", w.m.condNames[c], w.m.lockNames[c]),
				"pause_all_vcpus", fmt.Sprintf("pause_all_vcpus: woken from %s, re-acquires %s", w.m.condNames[c], w.m.lockNames[c]))
			w.cpuLock[c].Unlock(fmt.Sprintf("pause_all_vcpus: cpu_mutex_unlock(cpu%d)", c))
		}
		w.bql.Lock("pause_all_vcpus: qemu_mutex_lock_iothread()")
		if th.recheck() {
			break
		}
	}
	th.runstateAndResume()
}

// recheck is v9's CPU_FOREACH after retaking the BQL: it reports whether
// every CPU has stopped (pause_all_vcpus returns) or one has not (goto
// drop_locks_and_stop_all_vcpus).
func (th *thr) recheck() bool {
	w := th.w
	cpus := w.listed()
	for i, c := range cpus {
		w.cpuLock[c].Lock(fmt.Sprintf("pause_all_vcpus: a CPU might have been hot-plugged: cpu_mutex_lock(cpu%d)", c))
		stopped := w.cpuStopped(c)
		switch {
		case !stopped:
			w.cpuLock[c].Unlock(fmt.Sprintf("pause_all_vcpus: stopped = cpu%d->stopped = false; cpu_mutex_unlock(cpu%d); goto drop_locks_and_stop_all_vcpus", c, c))
			return false
		case i < len(cpus)-1:
			w.cpuLock[c].Unlock(fmt.Sprintf("pause_all_vcpus: stopped = cpu%d->stopped = true; cpu_mutex_unlock(cpu%d)", c, c))
		default:
			w.cpuLock[c].Unlock(fmt.Sprintf("pause_all_vcpus: stopped = cpu%d->stopped = true; cpu_mutex_unlock(cpu%d); pause_all_vcpus returns", c, c))
			th.checkStopped()
		}
	}
	return true
}
