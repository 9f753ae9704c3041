package cputlb

import (
	"github.com/protocheck/protocheck/model"
)

// The main loop committing a memory transaction (a device remaps a BAR, a
// QMP command adds memory): memory_region_transaction_commit, with the BQL
// held, switches the address space to its new FlatView and calls every
// listener's commit, among them one tcg_as_listener per vCPU address space
// (cpu_address_space_init registers them in CPU order). In the v5.0 code
// (exec.c):
//
//	tcg_commit: cpuas->memory_dispatch = address_space_to_dispatch(as)  (atomic_rcu_set)
//	            tlb_flush(cpuas->cpu)  -> another vCPU: async_run_on_cpu(tlb_flush_by_mmuidx_async_work)
//
// so the vCPU can see the new dispatch before its TLB is flushed. Since
// 0d58c660689f ("softmmu: Use async_run_on_cpu in tcg_commit", 2023):
//
//	tcg_commit: async_run_on_cpu(cpu, tcg_commit_cpu)
//	tcg_commit_cpu (on the vCPU): cpuas->memory_dispatch = address_space_to_dispatch(as); tlb_flush(cpu)
//
// Seed 000 converts the cross-CPU tlb_flush_by_mmuidx to
// async_run_on_cpu_no_bql; tcg_commit_cpu, queued by exec.c, keeps the BQL.

// Steps of the main loop (envThread.pc).
const (
	cmLock   uint8 = iota // qemu_mutex_lock_iothread; address_space_set_flatview: as->current_map = the new map
	cmCPU                 // the tcg_as_listener commit of vCPU idx (sub: cm*)
	cmUnlock              // qemu_mutex_unlock_iothread
	cmDone
	cmCallRCU // with rcu: address_space_set_flatview's flatview_unref(old map): call_rcu(flatview_destroy)
)

var commitPCNames = [...]string{"bql_lock+set flatview", "tcg_commit", "bql_unlock", "done", "call_rcu"}

// Steps of one vCPU's tcg_commit (envThread.sub, at cmCPU).
const (
	cmDispatch    uint8 = iota // v5.0: atomic_rcu_set(&cpuas->memory_dispatch, d)
	cmQueue                    // async_run_on_cpu: qemu_mutex_lock(cpu->lock), append
	cmKick                     // qemu_cpu_kick
	cmQueueUnlock              // qemu_mutex_unlock(cpu->lock)
)

func (m *machine) stepCommit(s *state, x *model.Exec) {
	e := &s.main
	switch e.pc {
	case cmLock:
		// The BQL and the switch of the map, which only BQL holders read
		// (tcg_commit, tcg_commit_cpu): Lipton.
		if bqlBusy(s, x) {
			return
		}
		x.Lock(&s.bql, "bql")
		x.Count(mBQL, 1)
		g := x.Load(s.mem, m.aMap) + 1
		x.Store(s.mem, m.aMap, g)
		if x.Labelling() {
			x.Labelf("memory_region_transaction_commit: qemu_mutex_lock_iothread; address_space_set_flatview: as->current_map = the new map (dispatch generation %d)", g)
		}
		e.idx, e.sub = 0, m.firstCommitStep()
		e.pc = cmCPU
		if m.rcu {
			e.pc = cmCallRCU
		}
	case cmCallRCU:
		callRCU(s, x)
		e.pc = cmCPU
	case cmCPU:
		m.stepTCGCommit(s, x)
	case cmUnlock:
		x.Unlock(&s.bql, "bql")
		if x.Labelling() {
			x.Label("memory_region_transaction_commit: qemu_mutex_unlock_iothread")
		}
		e.pc = cmDone
	case cmDone:
		x.Done()
	}
}

// commitItem is what tcg_commit queues on a vCPU.
func (m *machine) commitItem() item {
	switch {
	case m.cfg.commitDeferred:
		return itemCommitCPU
	case m.cfg.noBQL:
		return itemCommitNoBQL
	}
	return itemCommitBQL
}

// commitCall names tcg_commit's queueing call on vCPU c.
func (m *machine) commitCall(c int) string {
	switch {
	case m.cfg.commitDeferred:
		return "tcg_commit(" + cpuNames[c] + "): async_run_on_cpu(" + cpuNames[c] + ", tcg_commit_cpu)"
	case m.cfg.noBQL:
		return "tcg_commit(" + cpuNames[c] + "): tlb_flush: async_run_on_cpu_no_bql(" + cpuNames[c] + ", tlb_flush_by_mmuidx_async_work)"
	}
	return "tcg_commit(" + cpuNames[c] + "): tlb_flush: async_run_on_cpu(" + cpuNames[c] + ", tlb_flush_by_mmuidx_async_work)"
}

// stepTCGCommit is the main loop's tcg_as_listener commit of vCPU
// e.idx, and the move to the next vCPU.
func (m *machine) stepTCGCommit(s *state, x *model.Exec) {
	e := &s.main
	if m.tcgCommit(s, x, -1, &e.idx, &e.sub) {
		e.idx, e.sub = 0, 0
		e.pc = cmUnlock
	}
}

// Steps of tcg_commit on the committing vCPU itself in the v5.0 code
// (vcpucommit.go), after cmDispatch.
const (
	cmSelfFlush = cmQueueUnlock + 1 + iota // tlb_flush on its own thread: at once
	cmReload                               // cpu_reloading_memory_map: rcu_read_unlock; rcu_read_lock
)

// tcgCommit is the tcg_as_listener commit of vCPU *idx (its step *sub)
// by the thread committing the transaction, the main loop (self = -1)
// or vCPU self, which holds the BQL; it moves to the next vCPU, and
// reports whether every vCPU's commit is done. On its own vCPU the v5.0
// code flushes at once (tlb_flush_by_mmuidx runs the work itself when
// qemu_cpu_is_self) and, with rcu, splits the vCPU's read section
// (cpu_reloading_memory_map, removed by 0d58c660689f); async_run_on_cpu
// has no such shortcut, so since 0d58c660689f the committing vCPU
// queues tcg_commit_cpu on itself like on the others.
func (m *machine) tcgCommit(s *state, x *model.Exec, self int, idx, sub *uint8) bool {
	c := int(*idx)
	switch *sub {
	case cmDispatch:
		g := x.Load(s.mem, m.aMap)
		x.Store(s.mem, m.aDispatch[c], g)
		if x.Labelling() {
			x.Labelf("tcg_commit(%s): atomic_rcu_set(&cpuas->memory_dispatch, address_space_to_dispatch(as)) (generation %d)", cpuNames[c], g)
		}
		*sub = cmQueue
		if c == self {
			*sub = cmSelfFlush
		}
		return false
	case cmSelfFlush:
		m.flushAll(s, c, x)
		if x.Labelling() {
			x.Labelf("tcg_commit(%s): tlb_flush(%s) on its own thread: tlb_flush_by_mmuidx_async_work at once: qemu_spin_lock(%s); flush every entry; qemu_spin_unlock",
				cpuNames[c], cpuNames[c], tlbLockNames[c])
		}
		if !m.rcu {
			return m.nextCommit(idx, sub)
		}
		*sub = cmReload
		return false
	case cmReload:
		// Two writes of the vCPU's own reader state with nothing between
		// them: one step, in which any grace period that waited for the
		// vCPU sees it quiescent.
		v := &s.cpu[c]
		x.Touch(readerObj(c), true)
		if x.Labelling() {
			x.Labelf("tcg_commit(%s): cpu_reloading_memory_map: rcu_read_unlock; rcu_read_lock", cpuNames[c])
		}
		v.gpWait = false
		return m.nextCommit(idx, sub)
	case cmQueue:
		if cpuLockBusy(s, c, x) {
			return false
		}
		m.queueLock(s, c, m.commitItem(), x)
		if x.Labelling() {
			x.Labelf("%s: qemu_mutex_lock(%s), append to %s", m.commitCall(c), cpuLockNames[c], workLists[c])
		}
		*sub = cmKick
	case cmKick:
		m.kick(s, c, x)
		if x.Labelling() {
			x.Label(m.commitCall(c) + ": " + kickLabel(c))
		}
		*sub = cmQueueUnlock
	case cmQueueUnlock:
		x.Unlock(&s.cpuLock[c], cpuLockNames[c])
		if x.Labelling() {
			x.Labelf("%s: qemu_mutex_unlock(%s)", m.commitCall(c), cpuLockNames[c])
		}
		return m.nextCommit(idx, sub)
	}
	return false
}

// nextCommit moves a commit to the next vCPU's tcg_commit and reports
// whether there is none.
func (m *machine) nextCommit(idx, sub *uint8) bool {
	*idx++
	*sub = m.firstCommitStep()
	return int(*idx) == m.n
}

// firstCommitStep is the first step of one vCPU's tcg_commit.
func (m *machine) firstCommitStep() uint8 {
	if m.cfg.commitDeferred {
		return cmQueue
	}
	return cmDispatch
}
