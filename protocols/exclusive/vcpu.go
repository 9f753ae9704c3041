package exclusive

import "github.com/protocheck/protocheck/model"

// The vCPU thread (A.2): mttcg_cpu_thread_fn upstream, which holds the BQL
// outside cpu_exec; qemu_tcg_cpu_thread_fn in the per-CPU-lock series,
// which holds cpu->lock instead (cota/qemu cpus.c @031cfd04). The model
// rotates the loop to start at the work processing: QEMU's first
// iteration runs with exit_request set, so its cpu_exec returns at once,
// and the code paths it would take recur in the rounds that follow. Each
// round runs one guest TB; after the rounds parameter the guest halts and
// the thread sleeps on halt_cond whenever its work list is empty.

func (m *machine) execStart() uint8 {
	if m.v.cpuLock {
		return pcCXSLock
	}
	return pcXSSet
}

func (m *machine) execEnd() uint8 {
	if m.v.cpuLock {
		return pcCXELock
	}
	return pcXESet
}

func (r *run) callStartExclusive(ret uint8) {
	r.th.iter = 0
	if r.m.v.cpuLock {
		r.call(pcCSLock, ret)
		return
	}
	r.call(pcSXEntry, ret)
}

func (r *run) callEndExclusive(ret uint8) {
	r.th.iter = 0
	if r.m.v.cpuLock {
		r.call(pcCELock, ret)
		return
	}
	r.call(pcEXEntry, ret)
}

// threadLock is the lock a vCPU thread holds outside cpu_exec.
func (r *run) threadLock() (*model.Mutex, string) {
	if r.m.v.cpuLock {
		return &r.s.cpuLock[r.t], r.cpuLockName(r.t)
	}
	return &r.s.bql, "bql"
}

func (r *run) vcpuStep() {
	s, th, t := r.s, r.th, r.t
	up := !r.m.v.cpuLock
	mu, mname := r.threadLock()
	switch th.pc {
	case pcVStart:
		if !r.lock(mu, mname) {
			return
		}
		if up {
			r.label("mttcg_cpu_thread_fn: bql_lock()")
		} else if r.labelling() {
			r.labelf("qemu_tcg_cpu_thread_fn: cpu_mutex_lock(cpu%d)", t)
		}
		r.call(pcPEntry, pcVTop)
	case pcVExecUnlock:
		r.unlock(mu, mname)
		if up {
			r.label("tcg_cpu_exec: bql_unlock()")
		} else if r.labelling() {
			r.labelf("tcg_cpu_exec: cpu_mutex_unlock(cpu%d)", t)
		}
		th.arg = uint8(t)
		r.call(r.m.execStart(), pcVTB)
	case pcVTB:
		if up {
			// Guest code that touches a device takes the BQL inside
			// cpu_exec: the other half of H2's AB-BA.
			if !r.lock(&s.bql, "bql") {
				return
			}
			r.label("cpu_exec: guest TB makes an MMIO access: bql_lock()")
			th.pc = pcVTBMMIO
			return
		}
		r.label("cpu_exec: guest TB runs")
		r.call(r.m.execEnd(), pcVRelock)
	case pcVTBMMIO:
		r.unlock(&s.bql, "bql")
		r.label("cpu_exec: MMIO access done: bql_unlock()")
		r.call(r.m.execEnd(), pcVRelock)
	case pcVTBExclBody:
		s.gen++
		r.label("cpu_exec: ptw_setl_slow: page-table update inside start_exclusive()")
		r.callEndExclusive(pcVTBExclEnd)
	case pcVRelock:
		if !r.lock(mu, mname) {
			return
		}
		if up {
			r.label("tcg_cpu_exec: bql_lock()")
		} else if r.labelling() {
			r.labelf("tcg_cpu_exec: cpu_mutex_lock(cpu%d)", t)
		}
		th.round++
		r.call(pcPEntry, pcVTop)
	case pcVHalt:
		r.wait(&s.haltCond[t], r.haltName(t), mu, mname)
		if r.labelling() {
			r.labelf("qemu_wait_io_event: cpu_thread_is_idle(): qemu_cond_wait(cpu%d->halt_cond, %s)", t, mname)
		}
		th.pc = pcVHaltWoken
	case pcVHaltWoken:
		if !r.woken(&s.haltCond[t], r.haltName(t)) || !r.reacquire(mu, mname) {
			return
		}
		if r.labelling() {
			r.labelf("qemu_wait_io_event: woken from cpu%d->halt_cond, re-acquires %s", t, mname)
		}
		th.pc = pcVIdle
	}
}

func (r *run) haltName(c int) string { return r.m.haltNames[c] }

func (r *run) vcpuDecide() {
	th := r.th
	switch th.pc {
	case pcVTop:
		if int(th.round) < r.m.rounds {
			th.pc = pcVExecUnlock
		} else {
			th.pc = pcVIdle
		}
	case pcVTB:
		// H6: ptw_setl_slow calls start_exclusive from inside cpu_exec.
		r.callStartExclusive(pcVTBExclBody)
	case pcVTBExclEnd:
		r.call(r.m.execEnd(), pcVRelock)
	case pcVIdle:
		// The thread holds the lock that protects the queue's writers
		// here (the BQL upstream, whose holder is the only thread that
		// queues; cpu->lock in seed 001), so reading it is no race.
		if r.s.qlen[r.t] == 0 {
			th.pc = pcVHalt
		} else {
			r.call(pcPEntry, pcVIdle)
		}
	}
}
