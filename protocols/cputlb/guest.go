package cputlb

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// The source's guest program, one TB: clear the PTE of page X, execute the
// broadcast invalidate (the helper calls the flush function), and then the
// next instruction, which is the synchronisation point of no-stale-
// translation (in H9's litmus test: *memP = 1 after tlbie; tlbsync;
// ptesync).
const (
	gClearPTE    uint8 = iota // *pte = 0
	gQueue                    // flush_all_helper: one remote job per target (idx): cpu->lock, append
	gQueueKick                // ... qemu_cpu_kick
	gQueueUnlock              // ... unlock
	gOwn                      // the source's own flush: safe work, or at once
	gTBEnd                    // cpu_loop_exit, or fall through to the next instruction
	gNext                     // the next instruction, in a later TB (after cpu_loop_exit)
	gSrcDone                  // the guest halts
)

// programDone: the guest has nothing left to execute and will halt.
func (m *machine) programDone(t int, v *vcpu) bool {
	if t == src {
		return v.guest == gSrcDone
	}
	return v.guest == m.accesses
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
	if v.pc == pcExec {
		switch {
		case v.halted:
			if x.Labelling() {
				x.Labelf("cpu_exec(%s): cpu->halted, return EXCP_HALTED", name)
			}
			v.pc = pcEnd
		case x.Load(s.mem, wExitReq(t)) != 0:
			if x.Labelling() {
				x.Labelf("cpu_exec(%s): exit_request set, leave cpu_exec", name)
			}
			v.pc = pcEnd
		case m.programDone(t, v):
			v.halted = true
			if x.Labelling() {
				x.Labelf("cpu_exec(%s): exit_request clear; the guest waits for an interrupt, cpu->halted = 1, EXCP_HLT", name)
			}
			v.pc = pcEnd
		default:
			if x.Labelling() {
				x.Labelf("cpu_exec(%s): exit_request clear, run the next TB", name)
			}
			v.pc = pcGuest
		}
		return
	}
	if t == src {
		m.stepSource(s, x)
		return
	}
	m.stepTarget(s, t, x)
}

// stepTarget is one guest access to page X by a target vCPU: a TLB hit
// uses the cached translation; a miss walks the page table (tlb_fill) and
// either fills the TLB (the use is the next step) or raises a page fault.
func (m *machine) stepTarget(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuNames[t]
	if v.tlb {
		x.Touch(tlbNames[t], false)
		if x.Recording() {
			x.Call(t, access{})
			x.Return(t, mapped)
		}
		if x.Labelling() {
			x.Labelf("cpu_exec(%s): guest load from page X hits the softmmu TLB entry X->P", name)
		}
		if s.resumed {
			x.Fail(NoStaleTranslation, "%s translates page X with the TLB entry X->P cached before cpu0 cleared the PTE, "+
				"after cpu0 executed the instruction following %s: %s's flush item has not run (%s)",
				name, m.flushName(), name, m.staleCause(s, t))
		}
		v.guest++
		v.pc = pcExec
		return
	}
	if x.Load(s.mem, wPTE) != 0 {
		x.Touch(tlbNames[t], true)
		v.tlb = true
		if x.Labelling() {
			x.Labelf("tlb_fill(%s): page walk finds pte(X) -> P, fill the TLB", name)
		}
		return
	}
	if x.Recording() {
		x.Call(t, access{})
		x.Return(t, fault)
	}
	if x.Labelling() {
		x.Labelf("tlb_fill(%s): page walk finds pte(X) clear: guest page fault", name)
	}
	v.guest++
	v.pc = pcExec
}

// staleCause says where the target's flush item is, for the message.
func (m *machine) staleCause(s *state, t int) string {
	v := &s.cpu[t]
	switch {
	case v.qlen > 0 && s.mem.Peek(wExitReq(t)) == 0:
		return "it sits on the work list and exit_request is clear, so cpu_exec keeps running TBs"
	case v.qlen > 0:
		return "it sits on the work list; exit_request is set but the TB runs before the next check"
	case v.posted == 0:
		return "it has not even been queued"
	}
	return "it is being run"
}

// stepSource is the source's TB.
func (m *machine) stepSource(s *state, x *model.Exec) {
	v := &s.cpu[src]
	fn := m.flushName()
	switch v.guest {
	case gClearPTE:
		x.Store(s.mem, wPTE, 0)
		if x.Recording() {
			x.Call(src, clearPTE{})
			x.Return(src, done)
			x.Call(src, invalidate{})
		}
		x.Label("cpu_exec(cpu0): guest clears pte(X) (*pte = 0; ptesync), then executes the broadcast invalidate")
		v.guest = gQueue
		v.idx = 1
	case gQueue:
		// queue_work_on_cpu on a target: lock its cpu->lock and append,
		// kick, unlock (work.go).
		c := int(v.idx)
		if cpuLockBusy(s, c, x) {
			return
		}
		it := itemRemoteBQL
		if m.cfg.noBQL {
			it = itemRemoteNoBQL
		}
		m.queueLock(s, c, it, x)
		if x.Labelling() {
			x.Labelf("%s: qemu_mutex_lock(%s), append to %s", m.queueCall(c, true), cpuLockNames[c], workLists[c])
		}
		v.guest = gQueueKick
		if !m.cfg.kickQueue {
			v.guest = gQueueUnlock
		}
	case gQueueKick:
		c := int(v.idx)
		m.kick(s, c, x)
		if x.Labelling() {
			x.Labelf("%s: qemu_cpu_kick(%s): qemu_cond_broadcast(%s->halt_cond), cpu_exit", m.queueCall(c, false), cpuNames[c], cpuNames[c])
		}
		v.guest = gQueueUnlock
	case gQueueUnlock:
		c := int(v.idx)
		m.queueUnlock(s, c, x)
		if x.Labelling() {
			if m.cfg.kickQueue {
				x.Labelf("%s: qemu_mutex_unlock(%s)", m.queueCall(c, false), cpuLockNames[c])
			} else {
				x.Labelf("%s: qemu_mutex_unlock(%s) without a kick", m.queueCall(c, false), cpuLockNames[c])
			}
		}
		v.idx++
		v.guest = gQueue
		if int(v.idx) == m.n {
			v.idx = 0
			v.guest = gOwn
		}
	case gOwn:
		if m.cfg.synced {
			// On its own cpu->lock, which only the source takes (and
			// not while it runs guest code): one step (work.go). The
			// lock is free here; were it not, the step would wait.
			if cpuLockBusy(s, src, x) {
				return
			}
			m.queueLock(s, src, itemSafe, x)
			m.kick(s, src, x)
			m.queueUnlock(s, src, x)
			if x.Labelling() {
				x.Labelf("%s: async_safe_run_on_cpu(cpu0, %s), qemu_cpu_kick(cpu0)", fn, flushFn)
			}
		} else {
			// The non-synced helper flushes the source at once
			// (tlb_flush_page_by_mmuidx_async_0), not through a work item.
			x.Touch(tlbNames[src], true)
			v.tlb = false
			if x.Labelling() {
				x.Labelf("%s: tlb_flush_page_by_mmuidx_async_0(cpu0): flush page X from cpu0's TLB at once", fn)
			}
		}
		v.guest = gTBEnd
	case gTBEnd:
		if m.cfg.endTB {
			x.Label("cpu_loop_exit(cpu0): the helper ends the TB, leave cpu_exec")
			v.guest = gNext
			v.pc = pcEnd
			return
		}
		m.nextInstruction(s, x, "the TB goes on: ")
	case gNext:
		m.nextInstruction(s, x, "")
	}
}

// queueCall names flush_all_helper's async_run_on_cpu call on target c,
// with the function queued in the first of its steps.
func (m *machine) queueCall(c int, withFn bool) string {
	async := "async_run_on_cpu"
	if m.cfg.noBQL {
		async = "async_run_on_cpu_no_bql"
	}
	if withFn {
		return fmt.Sprintf("%s: flush_all_helper: %s(%s, %s)", m.flushName(), async, cpuNames[c], flushFn)
	}
	return fmt.Sprintf("%s: flush_all_helper: %s(%s)", m.flushName(), async, cpuNames[c])
}

// nextInstruction is the source's guest instruction after the invalidate:
// from here on no vCPU may use a translation cached before it.
func (m *machine) nextInstruction(s *state, x *model.Exec, how string) {
	v := &s.cpu[src]
	x.Touch("frame P", true)
	if x.Recording() {
		x.Return(src, done)
	}
	s.resumed = true
	if x.Labelling() {
		x.Labelf("cpu_exec(cpu0): %sguest executes the instruction after the invalidate (*memP = 1): the flush must be complete", how)
	}
	v.guest = gSrcDone
	v.pc = pcExec
}
