package batchunmap

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// stepSyscall runs one step of the syscall thread on CPU1: a sequence of
// mprotect(va, PROT_READ) calls, each one change_pte_range over one PTE
// under its page-table lock. The range flush is issued under the lock; the
// kernel issues it after dropping the lock (with mm->tlb_flush_pending
// raised), which changes nothing for the properties checked here because
// reclaim only ever removes rights.
func (s *state) stepSyscall(x *model.Exec) {
	c, sc := s.c, &s.s
	if sc.pc == sDone {
		x.Done()
		return
	}
	va := c.sysAddrs[sc.op]
	mm := c.mmOf[va]
	l := c.ptlOf(va)
	lname := c.ptlName[l]
	switch sc.pc {
	case sLock:
		// A held PTL blocks the step before mprotect's call is recorded.
		if !s.ptl[l].Free() {
			x.Block()
			if x.Labelling() {
				x.Labelf("%s (%s) for mprotect", lname, s.lockHolder(l))
			}
			return
		}
		if x.Recording() {
			x.Call(c.tSyscall, memIn{Op: opMprotect, VA: uint8(va)})
		}
		x.Lock(&s.ptl[l], lname)
		if x.Labelling() {
			x.Labelf("change_pte_range: spin_lock %s (mprotect va%d PROT_READ)", lname, va)
		}
		sc.pc = sPTE
		if c.drain {
			sc.pc = sDrainRead
		}

	case sDrainRead:
		w := x.Load(s.mem, c.batchedAddr(mm))
		sc.word = uint16(w)
		if x.Labelling() {
			x.Labelf("flush_tlb_batched_pending: atomic_read tlb_flush_batched = %s", c.describeWord(w))
		}
		sc.pc = sPTE
		if c.armed(w) {
			sc.pc = sDrainFlush
		}

	case sDrainFlush:
		mask := uint8(x.Load(s.mem, c.maskAddr(mm)))
		s.flushMM(x, mm, mask)
		round(x, cpuSyscall, mask)
		x.Count(mDrain, 1)
		if x.Labelling() {
			why := "tlb_flush_batched true"
			if !c.boolFlag {
				w := uint64(sc.word)
				why = fmt.Sprintf("pending %d != flushed %d", c.pending(w), c.flushed(w))
			}
			x.Labelf("flush_tlb_batched_pending: flush_tlb_mm (%s) → CPUs %s", why, cpus(mask))
		}
		sc.pc = sDrainClear

	case sDrainClear:
		if c.boolFlag {
			x.Store(s.mem, c.batchedAddr(mm), 0)
			x.Label("flush_tlb_batched_pending: mm->tlb_flush_batched = false")
			s.noteBoolCleared(l, mm)
		} else {
			w := uint64(sc.word)
			p := c.pending(w)
			want := p | p<<c.shift()
			prev := x.CAS(s.mem, c.batchedAddr(mm), w, want)
			if x.Labelling() {
				if prev == w {
					x.Labelf("flush_tlb_batched_pending: atomic_cmpxchg → %s", c.describeWord(want))
				} else {
					x.Labelf("flush_tlb_batched_pending: atomic_cmpxchg fails (now %s): a new deferral stays pending", c.describeWord(prev))
				}
			}
		}
		sc.pc = sPTE

	case sPTE:
		// ptep_modify_prot_start/commit as one step: both run under the
		// PTL, and the start's xchg keeps a hardware dirty-bit update, so
		// no other thread can tell them apart.
		old := uint8(x.Load(s.mem, c.pteAddr(va)))
		sc.needFlush = false
		switch {
		case old&bPresent == 0:
			if x.Labelling() {
				x.Labelf("change_pte_range: pte[%d] none (swap entry): nothing to change, nothing to flush", va)
			}
			s.noteSkipped(va)
		case old&bWrite == 0:
			if x.Labelling() {
				x.Labelf("change_pte_range: pte[%d] already ro", va)
			}
		default:
			x.CAS(s.mem, c.pteAddr(va), uint64(old), uint64(old&^bWrite))
			if x.Recording() {
				x.Call(protectClient, memIn{Op: opProtect, VA: uint8(va)})
				x.Return(protectClient, memOut{Res: resOK})
			}
			if x.Labelling() {
				x.Labelf("change_pte_range: pte[%d] %s → %s", va, describePTE(old), describePTE(old&^bWrite))
			}
			sc.needFlush = true
		}
		sc.pc = sUnlock
		if sc.needFlush {
			sc.pc = sFlush
		}

	case sFlush:
		mask := uint8(x.Load(s.mem, c.maskAddr(mm)))
		s.flushVA(x, va, mask)
		if x.Labelling() {
			x.Labelf("change_pte_range: flush_tlb_range va%d → CPUs %s", va, cpus(mask))
		}
		sc.pc = sUnlock

	case sUnlock:
		x.Unlock(&s.ptl[l], lname)
		if x.Recording() {
			x.Return(c.tSyscall, memOut{Res: resOK})
		}
		if x.Labelling() {
			x.Labelf("change_pte_range: spin_unlock %s; mprotect(va%d) returns", lname, va)
		}
		sc.returned |= 1 << uint(va)
		sc.op++
		sc.pc = sLock
		if int(sc.op) == c.syscalls {
			sc.pc = sDone
		}
	}
}

// noteBoolCleared records the bool-flag loss: the drain, holding PTL l,
// stores false while a va under another lock has a stale entry whose
// deferral already set the flag.
func (s *state) noteBoolCleared(l, mm int) {
	if s.note.kind != noteNone {
		return
	}
	for va := 0; va < s.c.pages; va++ {
		if s.c.mmOf[va] != mm || s.c.ptlOf(va) == l || s.staleCPUs(va) == 0 {
			continue
		}
		if int(s.r.page) == va && (s.r.pc == rAddPending || s.r.pc == rSetBool) {
			continue // the flag is set after this store: nothing lost yet
		}
		s.note = note{kind: noteBoolCleared, va: uint8(va), ptl: uint8(l)}
		return
	}
}

// noteSkipped records that mprotect trusted a none PTE while a CPU still
// caches va.
func (s *state) noteSkipped(va int) {
	if s.note.kind != noteNone || s.staleCPUs(va) == 0 {
		return
	}
	kind := uint8(noteNoFlush)
	if !s.c.drain {
		kind = noteNoDrain
	}
	s.note = note{kind: kind, va: uint8(va), word: s.s.word}
}
