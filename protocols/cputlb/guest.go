package cputlb

import (
	"github.com/protocheck/protocheck/model"
)

// A source's guest program, one TB: clear the PTE of its page X_s, execute
// the broadcast invalidate (the helper calls the flush function), and then
// the next instruction, which is the synchronisation point of
// no-stale-translation (in H9's litmus test: *memP = 1 after tlbie;
// tlbsync; ptesync).
const (
	gClearPTE    uint8 = iota // *pte = 0
	gQueue                    // flush_all_helper: one remote job per other vCPU (idx): cpu->lock, append
	gQueueKick                // ... qemu_cpu_kick
	gQueueUnlock              // ... unlock
	gOwn                      // the source's own flush: async_safe_run_on_cpu (lock, append), or at once
	gOwnKick                  // ... qemu_cpu_kick(self)
	gOwnUnlock                // ... unlock
	gTBEnd                    // cpu_loop_exit, or fall through to the next instruction
	gNext                     // the next instruction, in a later TB (after cpu_loop_exit)
	gSrcDone                  // the guest halts
)

// A target's guest program is a list of accesses, one per TB: loads from
// the sources' pages, and, on the first target, an MMIO read of M (when
// the main loop commits a transaction) and two stores to D (when the
// migration thread syncs the dirty bitmap): the first races the sync (a
// store through the writable entry, through notdirty_write after a reset,
// or through tlb_fill after a flush), the second, after the migration
// thread has sent D, is the one a lost dirty bit loses.
type op uint8

const (
	opLoadX0 op = iota
	opLoadX1
	opMMIO
	opStoreD
	opBARThenM // vcpu-commit: a store to a device's BAR that commits a transaction, then a load from M (vcpucommit.go)
)

func (m *machine) targetProgram(c int) []op {
	var prog []op
	for i := 0; i < int(m.accesses); i++ {
		prog = append(prog, opLoadX0+op(i%m.sources))
	}
	if c == m.envCPU {
		if m.commits > 0 {
			prog = append(prog, opMMIO)
		}
		if m.vcpuCommit {
			prog = append(prog, opBARThenM)
		}
		if m.rounds > 0 {
			prog = append(prog, opStoreD, opStoreD)
		}
	}
	return prog
}

// programDone: the guest has nothing left to execute and will halt.
func (m *machine) programDone(t int, v *vcpu) bool {
	if m.isSource(t) {
		return v.guest == gSrcDone
	}
	return int(v.guest) == len(m.program[t])
}

func (m *machine) flushName() string {
	if m.cfg.synced {
		return "tlb_flush_page_by_mmuidx_all_cpus_synced"
	}
	return "tlb_flush_page_by_mmuidx_all_cpus"
}

// stepExec is cpu_exec: before each TB the exit request is tested; then the
// TB's steps (each guest access through the TLB, each helper action) run.
func (m *machine) stepExec(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuNames[t]
	switch v.pc {
	case pcRCULock, pcRCUUnlock, pcIRQInstall:
		m.stepReadSection(s, t, x)
		return
	}
	if v.pc == pcExec {
		switch {
		case v.halted:
			// Only without rcu: with it, cpu_handle_halt returns before
			// the read section (pcRCULock).
			if x.Labelling() {
				x.Labelf("cpu_exec(%s): cpu->halted, return EXCP_HALTED", name)
			}
			v.pc = pcEnd
		case v.irq:
			m.deliverIRQ(s, t, x)
		case x.Load(s.mem, m.aExitReq[t]) != 0:
			if x.Labelling() {
				x.Labelf("cpu_exec(%s): exit_request set, leave cpu_exec", name)
			}
			v.pc = m.execExit()
		case m.programDone(t, v):
			v.halted = true
			if x.Labelling() {
				x.Labelf("cpu_exec(%s): exit_request clear; the guest waits for an interrupt, cpu->halted = 1, EXCP_HLT", name)
			}
			v.pc = m.execExit()
		default:
			if x.Labelling() {
				x.Labelf("cpu_exec(%s): exit_request clear, run the next TB", name)
			}
			v.sub, v.reg = 0, 0
			v.pc = pcGuest
		}
		return
	}
	if m.isSource(t) {
		m.stepSource(s, t, x)
		return
	}
	var finished bool
	switch o := m.program[t][v.guest]; o {
	case opLoadX0, opLoadX1:
		finished = m.stepLoad(s, t, int(o-opLoadX0), x)
	case opMMIO:
		finished = m.stepMMIO(s, t, x)
	case opStoreD:
		finished = m.stepStore(s, t, x)
	case opBARThenM:
		finished = m.stepBARThenM(s, t, x)
	}
	if finished {
		v.guest++
		v.sub, v.reg = 0, 0
		v.pc = pcExec
	}
}

// staleCause says where vCPU t's flush of page X_p is, for the message.
func (m *machine) staleCause(s *state, t, p int) string {
	v := &s.cpu[t]
	queued := false
	for i := 0; i < int(v.qlen); i++ {
		if k := v.queue[i]; k.src() == p && (k.kind() == itemRemoteBQL || k.kind() == itemRemoteNoBQL) {
			queued = true
		}
	}
	switch {
	case queued && s.mem.Peek(m.aExitReq[t]) == 0:
		return "it sits on the work list and exit_request is clear, so cpu_exec keeps running TBs"
	case queued:
		return "it sits on the work list; exit_request is set but the TB runs before the next check"
	case s.cpu[p].guest <= gQueue && s.cpu[p].idx <= uint8(t):
		return "it has not even been queued"
	}
	return "it is being run"
}

// stepSource is source t's TB.
func (m *machine) stepSource(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	fn := m.flushName()
	switch v.guest {
	case gClearPTE:
		x.Store(s.mem, m.aPTE[t], 0)
		if x.Recording() {
			x.Call(t, clearPTE{t})
			x.Return(t, done)
			x.Call(t, invalidate{t})
		}
		if x.Labelling() {
			x.Labelf("cpu_exec(%s): guest clears pte(%s) (*pte = 0; ptesync), then executes the broadcast invalidate", cpuNames[t], pageNames[t])
		}
		v.guest = gQueue
		v.idx = uint8(m.nextOther(t, 0))
	case gQueue:
		// queue_work_on_cpu on another vCPU: lock its cpu->lock and
		// append, kick, unlock (work.go).
		c := int(v.idx)
		if cpuLockBusy(s, c, x) {
			return
		}
		it := pageItem(itemRemoteBQL, t)
		if m.cfg.noBQL {
			it = pageItem(itemRemoteNoBQL, t)
		}
		m.queueLock(s, c, it, x)
		if x.Labelling() {
			x.Labelf("%s: qemu_mutex_lock(%s), append to %s", m.queueCall(t, c, true), cpuLockNames[c], workLists[c])
		}
		v.guest = gQueueKick
		if !m.cfg.kickQueue {
			v.guest = gQueueUnlock
		}
	case gQueueKick:
		c := int(v.idx)
		m.kick(s, c, x)
		if x.Labelling() {
			x.Label(m.queueCall(t, c, false) + ": " + kickLabel(c))
		}
		v.guest = gQueueUnlock
	case gQueueUnlock:
		c := int(v.idx)
		x.Unlock(&s.cpuLock[c], cpuLockNames[c])
		if x.Labelling() {
			if m.cfg.kickQueue {
				x.Labelf("%s: qemu_mutex_unlock(%s)", m.queueCall(t, c, false), cpuLockNames[c])
			} else {
				x.Labelf("%s: qemu_mutex_unlock(%s) without a kick", m.queueCall(t, c, false), cpuLockNames[c])
			}
		}
		v.idx = uint8(m.nextOther(t, c+1))
		v.guest = gQueue
		if int(v.idx) == m.n {
			v.idx = 0
			v.guest = gOwn
		}
	case gOwn:
		if m.cfg.synced {
			if cpuLockBusy(s, t, x) {
				return
			}
			m.queueLock(s, t, pageItem(itemSafe, t), x)
			if x.Labelling() {
				x.Labelf("%s: async_safe_run_on_cpu(%s, %s, %s): qemu_mutex_lock(%s), append to %s", fn, cpuNames[t], flushFn, pageNames[t], cpuLockNames[t], workLists[t])
			}
			v.guest = gOwnKick
			return
		}
		// The non-synced helper flushes the source at once
		// (tlb_flush_page_by_mmuidx_async_0), not through a work item.
		m.flushPage(s, t, t, x)
		if x.Labelling() {
			x.Labelf("%s: tlb_flush_page_by_mmuidx_async_0(%s): qemu_spin_lock(%s); flush page %s at once; qemu_spin_unlock", fn, cpuNames[t], tlbLockNames[t], pageNames[t])
		}
		v.guest = gTBEnd
	case gOwnKick:
		m.kick(s, t, x)
		if x.Labelling() {
			x.Labelf("%s: async_safe_run_on_cpu(%s): %s", fn, cpuNames[t], kickLabel(t))
		}
		v.guest = gOwnUnlock
	case gOwnUnlock:
		x.Unlock(&s.cpuLock[t], cpuLockNames[t])
		if x.Labelling() {
			x.Labelf("%s: async_safe_run_on_cpu(%s): qemu_mutex_unlock(%s)", fn, cpuNames[t], cpuLockNames[t])
		}
		v.guest = gTBEnd
	case gTBEnd:
		if m.cfg.endTB {
			if x.Labelling() {
				x.Labelf("cpu_loop_exit(%s): the helper ends the TB, leave cpu_exec", cpuNames[t])
			}
			v.guest = gNext
			v.pc = m.execExit()
			return
		}
		m.nextInstruction(s, t, x, "the TB goes on: ")
	case gNext:
		m.nextInstruction(s, t, x, "")
	}
}

// queueCall names flush_all_helper's async_run_on_cpu call of source src
// on vCPU c, with the function queued in the first of its steps.
func (m *machine) queueCall(src, c int, withFn bool) string {
	async := "async_run_on_cpu"
	if m.cfg.noBQL {
		async = "async_run_on_cpu_no_bql"
	}
	if withFn {
		return m.flushName() + ": flush_all_helper: " + async + "(" + cpuNames[c] + ", " + flushFn + ", " + pageNames[src] + ")"
	}
	return m.flushName() + ": flush_all_helper: " + async + "(" + cpuNames[c] + ")"
}

// nextInstruction is source t's guest instruction after the invalidate:
// from here on no vCPU may use a translation of X_t cached before it.
func (m *machine) nextInstruction(s *state, t int, x *model.Exec, how string) {
	v := &s.cpu[t]
	x.Touch("frame P", true)
	if x.Recording() {
		x.Return(t, done)
	}
	s.resumed |= 1 << uint(t)
	if x.Labelling() {
		x.Labelf("cpu_exec(%s): %sguest executes the instruction after the invalidate (*memP = 1): the flush must be complete", cpuNames[t], how)
	}
	v.guest = gSrcDone
	v.pc = pcExec
}

// flushInProgress: source s has cleared its PTE and started its
// broadcast invalidate, and has not yet executed the next instruction.
func (m *machine) flushInProgress(s *state, src int) bool {
	g := s.cpu[src].guest
	return g > gClearPTE && g < gSrcDone
}
