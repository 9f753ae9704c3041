package batchunmap

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// sEnd is a continuation, not a pc: the call returns in the step that
// reaches it.
const sEnd = sDone + 1

// stepSyscall runs one step of the syscall thread on CPU1, a thread of mm0
// that makes its program's calls one after another, each on one va:
//
//   - mprotect(va, PROT_READ): do_mprotect_pkey gathers (tlb_gather_mmu),
//     change_pte_range takes the PTL, drains (flush_tlb_batched_pending),
//     write-protects a present PTE and records its flush in the gather,
//     drops the PTL; tlb_finish_mmu flushes after the PTL is dropped.
//   - munmap(va) and madvise(va, MADV_DONTNEED): zap_pte_range takes the
//     PTL, drains, clears a present PTE, records its flush and gathers
//     the page (the gather's reference keeps it from being freed), drops
//     the PTL; tlb_finish_mmu flushes, then releases the page.
//   - madvise(va, MADV_FREE): madvise_free_pte_range takes the PTL,
//     drains, and on a present PTE of a large folio drops the PTL to split
//     it, re-takes it and drains again (383c4613c67c; not before it);
//     a present dirty PTE is cleaned and its flush recorded, a swap entry
//     is freed and cleared with no flush; tlb_finish_mmu flushes after the
//     PTL is dropped.
//
// mm->tlb_flush_pending, which tlb_gather_mmu raises and tlb_finish_mmu
// lowers around the flush, is modelled with nested=1 only: its readers
// are x86's pte_accessible on PROT_NONE PTEs and KSM, which the model does
// not have, and mm_tlb_flush_nested, which needs two gathers of one mm at
// once: a second syscall thread (syscall2). With one thread its increment
// and decrement would be steps no other step observes. With two, a
// thread's tlb_finish_mmu that sees the other's gather flushes the whole
// mm (99baac21e458).
func (s *state) stepSyscall(x *model.Exec, i int) {
	c, sc := s.c, &s.sc[i]
	if sc.pc == sDone {
		x.Done()
		return
	}
	va := int(c.sysAddr[i][sc.op])
	kind := c.sysKind[i][sc.op]
	mm := c.mmOf[va]
	l := c.ptlOf(va)
	lname := c.ptlName[l]
	fn := ptlFunc[kind]
	switch sc.pc {
	case sLock:
		// A held PTL blocks the step before the call is recorded.
		if !s.ptl[l].Free() {
			s.lockPTL(x, l) // blocks
			if x.Labelling() {
				x.Labelf("%s (%s) for %s", lname, s.lockHolder(l), callName(kind, va))
			}
			return
		}
		if x.Recording() && !sc.retaken && !c.trackPending() {
			x.Call(c.tSys[i], memIn{Op: callOps[kind], VA: uint8(va)})
		}
		s.lockPTL(x, l)
		if x.Labelling() {
			if sc.retaken {
				x.Labelf("%s: pte_offset_map_lock %s%s again after split_folio", fn, lname, c.lockNote())
			} else {
				x.Labelf("%s: pte_offset_map_lock %s%s (%s)", fn, lname, c.lockNote(), callName(kind, va))
			}
		}
		sc.pc = s.afterLocks(sc)
		if kind == kMremap {
			sc.pc = sLockNew
		}

	case sLockNew:
		// move_ptes: the new address's page table has a lock of its own.
		n := c.ptls
		if !s.lockPTL(x, n) {
			if x.Labelling() {
				x.Labelf("%s (%s) for %s", c.ptlName[n], s.lockHolder(n), callName(kind, va))
			}
			return
		}
		if x.Labelling() {
			x.Labelf("move_ptes: spin_lock_nested %s%s", c.ptlName[n], c.lockNote())
		}
		sc.pc = s.afterLocks(sc)

	case sUnlockNew:
		s.unlockPTL(x, c.ptls)
		if x.Labelling() {
			x.Labelf("move_ptes: spin_unlock %s%s", c.ptlName[c.ptls], c.unlockNote())
		}
		sc.pc = sUnlock

	case sDrainRead:
		bm, ba := s.batched(mm)
		w := x.Load(bm, ba)
		sc.word = uint16(w)
		if x.Labelling() {
			x.Labelf("flush_tlb_batched_pending: atomic_read tlb_flush_batched = %s", c.describeWord(w))
		}
		sc.pc = sPTE
		if c.armed(w) {
			sc.pc = sDrainFlush
		}

	case sDrainFlush:
		x.Count(mDrain, 1)
		why := "tlb_flush_batched true"
		if !c.boolFlag && x.Labelling() {
			w := uint64(sc.word)
			why = fmt.Sprintf("pending %d != flushed %d", c.pending(w), c.flushed(w))
		}
		switch {
		case c.arch == archARM64 && c.dsbOnly:
			// arch_flush_tlb_batched_pending before 4b634918384c: a DSB on
			// this CPU, which completes only the TLBIs this CPU issued.
			x.Count(mFlushRounds, 1)
			x.Count(mDSB, 1)
			x.Touch(c.tlbName[cpuSyscall], true)
			s.noteDSBOnly()
			if x.Labelling() {
				x.Labelf("flush_tlb_batched_pending: arch_flush_tlb_batched_pending (%s): dsb(ish) on CPU1", why)
			}
			sc.pc = sDrainClear
		default:
			what := s.flushMM(x, i, mm, sDrainClear, true)
			if x.Labelling() {
				x.Labelf("flush_tlb_batched_pending: flush_tlb_mm (%s)%s", why, what)
			}
		}

	case sDrainClear:
		bm, ba := s.batched(mm)
		if c.boolFlag {
			x.Store(bm, ba, 0)
			x.Label("flush_tlb_batched_pending: mm->tlb_flush_batched = false")
			s.noteBoolCleared(l, mm)
		} else {
			w := uint64(sc.word)
			p := c.pending(w)
			want := p | p<<c.shift()
			var prev uint64
			if c.weaken == weakDrainCAS {
				prev, _, _ = x.Atomic(bm, ba, model.RMW{Op: model.RMWCAS, Expect: w, Arg: want, Order: model.Plain})
			} else {
				prev = x.CAS(bm, ba, w, want)
			}
			if x.Labelling() {
				if prev == w {
					x.Labelf("flush_tlb_batched_pending: %s → %s", c.drainCAS(), c.describeWord(want))
				} else {
					x.Labelf("flush_tlb_batched_pending: %s fails (now %s): a new deferral stays pending", c.drainCAS(), c.describeWord(prev))
				}
			}
		}
		sc.pc = sPTE

	case sPTE:
		s.stepPTE(x, i, va, kind)

	case sSplitUnlock:
		s.unlockPTL(x, l)
		if x.Labelling() {
			x.Labelf("%s: pte_unmap_unlock %s%s to split the large folio", fn, lname, c.unlockNote())
		}
		sc.pc = sSplit

	case sSplit:
		// split_folio runs with the folio locked (taken by folio_trylock
		// under the PTL): its unmap_folio, try_to_unmap_flush and
		// remap_page leave pte[va] mapping the same page, now a small
		// folio, and no other thread of the model can act on the folio
		// meanwhile (a user access waits on the migration entry, a
		// reclaimer's folio_trylock fails). So it is one step. The
		// reclaimer's folio_trylock is not a step of the model (its
		// spin_lock of the PTL stands for both): a trace may show a
		// reclaimer taking this va's PTL, and even clearing its PTE, before
		// this step. This step reads and writes nothing any reclaimer or
		// user step reads or writes (the split flag is the syscall's own),
		// so such an execution reaches the same states as the one with
		// this step first, where the real folio lock is free. Its own
		// deferral (try_to_migrate with TTU_BATCH_FLUSH) is flushed by its
		// own try_to_unmap_flush inside it; the pending generation it adds
		// to tlb_flush_batched is left out, which only removes flushes a
		// later drain would make.
		s.split = true
		s.flock &^= 1 << uint(va)
		x.Touch(c.pageName[va], true)
		if x.Labelling() {
			x.Labelf("split_folio: the large folio at va%d becomes small; folio_unlock", va)
		}
		sc.retaken = true
		sc.pc = sLock

	case sUnlock:
		s.unlockPTL(x, l)
		if x.Labelling() {
			x.Labelf("%s: pte_unmap_unlock %s%s%s", fn, lname, c.unlockNote(), s.describeAfterUnlock(i))
		}
		switch {
		case c.trackPending():
			sc.pc = sNested
		case sc.gathered:
			sc.pc = sFlush
		case sc.page:
			sc.pc = sRelease
		default:
			s.endCall(x, i)
		}

	case sGather:
		// tlb_gather_mmu: the call begins.
		if x.Recording() {
			x.Call(c.tSys[i], memIn{Op: callOps[kind], VA: uint8(va)})
		}
		n := x.FetchAdd(s.mem, c.pendingAddr(), 1) + 1
		if x.Labelling() {
			x.Labelf("%s: tlb_gather_mmu: inc_tlb_flush_pending → %d", callName(kind, va), n)
		}
		sc.pc = sLock

	case sNested:
		n := x.Load(s.mem, c.pendingAddr())
		if x.Labelling() {
			what := ""
			if n > 1 {
				what = " > 1: another gather is in flight: fullmm, freed_tables"
			}
			x.Labelf("tlb_finish_mmu: mm_tlb_flush_nested: tlb_flush_pending = %d%s", n, what)
		}
		switch {
		case n > 1:
			sc.pc = sForce
		case sc.gathered:
			sc.pc = sFlush
		case sc.page:
			sc.pc = sRelease
		default:
			sc.pc = sDec
		}

	case sForce:
		// tlb_flush_mmu with fullmm: flush_tlb_mm, the gathered range
		// included.
		owed := sc.gathered
		sc.gathered = false
		next := uint8(sDec)
		if sc.page {
			next = sRelease
		}
		what := s.flushMM(x, i, mm, next, false)
		if sc.pc == sRound {
			sc.forced = owed // the flush this call owes is in flight
		}
		if x.Labelling() {
			x.Labelf("tlb_finish_mmu: tlb_flush_mmu: flush_tlb_mm%s", what)
		}

	case sDec:
		n := x.FetchAdd(s.mem, c.pendingAddr(), ^uint64(0)) - 1
		if x.Labelling() {
			x.Labelf("tlb_finish_mmu: dec_tlb_flush_pending → %d%s", n, s.describeReturn(i, sEnd))
		}
		s.endCall(x, i)

	case sFlush:
		// tlb_finish_mmu → tlb_flush_mmu_tlbonly → flush_tlb_mm_range of
		// the gathered page, after the PTL was dropped.
		// mremap: move_ptes's flush_tlb_range of the old address, under
		// both PTLs (before eb66ae030829, after dropping them).
		sc.gathered = false
		next := s.finalPC()
		if sc.page {
			next = sRelease
		}
		what := "tlb_finish_mmu: flush_tlb_mm_range"
		if kind == kMremap {
			what = "move_ptes: flush_tlb_range"
			if !c.lateMremap {
				next = sUnlockNew
			}
		}
		switch c.arch {
		case archRISCV:
			mask := s.flushRangeMask(x, mm, va)
			if x.Labelling() {
				x.Labelf("%s va%d → CPUs %s%s", what, va, cpus(mask), s.describeReturn(i, next))
			}
		case archARM64:
			s.broadcastVA(x, va)
			if x.Labelling() {
				x.Labelf("%s va%d: tlbi vale1is; dsb(ish)%s", what, va, s.describeReturn(i, next))
			}
		default:
			st := s.x86Start(x, &sc.rnd, rkRange, mm, va, cpuSyscall, 0)
			if sc.rnd.pend != 0 {
				if x.Labelling() {
					x.Labelf("%s va%d: %s", what, va, c.describeStart(s.genNow(mm), st))
				}
				sc.ret, sc.pc = next, sRound
				return
			}
			if x.Labelling() {
				x.Labelf("%s va%d: %s%s", what, va, c.describeStart(s.genNow(mm), st), s.describeReturn(i, next))
			}
		}
		s.continueAt(x, i, next)

	case sRelease:
		// tlb_batch_pages_flush → free_pages_and_swap_cache: the gather's
		// reference goes; if the reclaimer already let go of the page,
		// this frees it.
		sc.page = false
		x.Touch("free lists", true)
		freed := s.page[va] == pgHeld
		if freed {
			s.freePage(x, va)
		}
		if x.Labelling() {
			what := "the reclaimer still holds it"
			switch {
			case freed && c.reuse:
				what = "the last reference: freed, and the allocator hands it to a new owner, who writes 9"
			case freed:
				what = "the last reference: freed"
			}
			x.Labelf("tlb_finish_mmu: free_pages_and_swap_cache page %d (%s)%s", va, what, s.describeReturn(i, s.finalPC()))
		}
		s.continueAt(x, i, s.finalPC())

	case sRound:
		h := s.x86Handle(x, &sc.rnd)
		done := sc.rnd.pend == 0
		if x.Labelling() {
			ret := ""
			if done {
				ret = s.describeReturn(i, sc.ret)
			}
			x.Labelf("%s IPI: flush_tlb_func on %s%s", roundName(h.rnd.kind), c.describeHandled(h, s.genNow(int(h.rnd.mm))), ret)
		}
		if done {
			next := sc.ret
			sc.ret, sc.forced = 0, false
			s.continueAt(x, i, next)
		}
	}
}

// continueAt moves syscall thread i on to pc next, ending the call in
// this step when next is sEnd.
func (s *state) continueAt(x *model.Exec, i int, next uint8) {
	if next == sEnd {
		s.endCall(x, i)
		return
	}
	s.sc[i].pc = next
}

// afterLocks is where a call goes once it holds its PTLs: the drain, or
// (none, or madvise after a re-take without it) the PTE.
func (s *state) afterLocks(sc *syscaller) uint8 {
	if s.c.drain && (!sc.retaken || s.c.retakeDrain) {
		return sDrainRead
	}
	return sPTE
}

// finalPC is where tlb_finish_mmu goes once the flush and the release
// are done: the return, or with nested gathers dec_tlb_flush_pending.
func (s *state) finalPC() uint8 {
	if s.c.trackPending() {
		return sDec
	}
	return sEnd
}

// describeReturn is the tail of the label of the step that ends a call.
func (s *state) describeReturn(i int, next uint8) string {
	if next != sEnd {
		return ""
	}
	c, op := s.c, s.sc[i].op
	return "; " + callName(c.sysKind[i][op], int(c.sysAddr[i][op])) + " returns"
}

func (s *state) describeAfterUnlock(i int) string {
	if sc := &s.sc[i]; sc.gathered || sc.page || s.c.trackPending() {
		return ""
	}
	return s.describeReturn(i, sEnd)
}

// flushMM is flush_tlb_mm(mm) by syscall thread i (the drain's, counted
// as a reclaim-caused round, or tlb_finish_mmu's), which goes on at next
// (x86: after its handlers); it returns what the flush did, for the
// label.
func (s *state) flushMM(x *model.Exec, i, mm int, next uint8, drain bool) string {
	c, sc := s.c, &s.sc[i]
	sc.pc = next
	switch c.arch {
	case archRISCV:
		mask := s.flushMMMask(x, mm)
		if drain {
			countRound(x, cpuSyscall, mask)
		}
		return " → CPUs " + cpus(mask)
	case archARM64:
		s.broadcastMM(x, mm)
		if drain {
			x.Count(mFlushRounds, 1)
			x.Count(mTLBI, 1)
			x.Count(mDSB, 1)
		}
		return ": dsb(ishst); tlbi aside1is; dsb(ish)"
	}
	st := s.x86Start(x, &sc.rnd, rkMM, mm, 0, cpuSyscall, 0)
	if drain {
		countRound(x, cpuSyscall, st.targets)
	}
	s.afterStart(sc.rnd.pend, &sc.pc, &sc.ret, next, sRound)
	if !x.Labelling() {
		return ""
	}
	return ": " + c.describeStart(s.genNow(mm), st)
}

// Functions that take the PTL, per syscall kind.
var ptlFunc = [...]string{"change_pte_range", "madvise_free_pte_range", "zap_pte_range", "zap_pte_range", "madvise_cold_or_pageout_pte_range", "madvise_cold_or_pageout_pte_range", "move_ptes"}

// stepPTE examines and changes pte[va] under its PTL.
func (s *state) stepPTE(x *model.Exec, i, va int, kind uint8) {
	c, sc := s.c, &s.sc[i]
	a := c.pteAddr(va)
	old := uint8(x.Load(s.mem, a))
	sc.pc = sUnlock
	if kind == kMremap {
		sc.pc = sUnlockNew
	}
	fn := ptlFunc[kind]
	if old&bPresent == 0 {
		// None, or the swap entry reclaim left: nothing to change and
		// nothing to flush ("PTE none ⇒ not cached"), which only the
		// drain makes true.
		if x.Labelling() {
			what := "nothing to change, nothing to flush"
			switch kind {
			case kMadvFree, kMunmap, kMadvDontneed:
				what = "free_swap_and_cache_nr, clear_not_present_full_ptes, nothing to flush"
			case kMadvCold, kMadvPageout:
				what = "!pte_present: next"
			}
			x.Labelf("%s: pte[%d] none (swap entry): %s", fn, va, what)
		}
		if promises(kind) {
			s.mark(va, kind)
			s.noteSkipped(sc, va, kind)
		}
		return
	}
	if splits(kind) && va == c.largeVA && !s.split {
		// folio_trylock succeeds: a reclaimer holds the folio lock only
		// while it holds this PTL, or after it cleared the PTE (with
		// contend=1 the folio lock is state: it fails while a reclaimer
		// holds it, and madvise goes on to the next PTE, here none).
		x.Touch(c.pageName[va], true)
		if c.contend {
			bit := uint8(1) << uint(va)
			if s.flock&bit != 0 {
				if x.Labelling() {
					x.Labelf("%s: pte[%d] (%s) maps part of a large folio: folio_trylock fails (reclaim holds it): skip it", fn, va, describePTE(old))
				}
				return
			}
			s.flock |= bit
		}
		if x.Labelling() {
			x.Labelf("%s: pte[%d] (%s) maps part of a large folio: folio_trylock, split it", fn, va, describePTE(old))
		}
		sc.pc = sSplitUnlock
		return
	}
	switch kind {
	case kMprotect:
		if old&bWrite == 0 {
			if x.Labelling() {
				x.Labelf("change_pte_range: pte[%d] already ro", va)
			}
			break
		}
		// ptep_modify_prot_start/commit as one step: both run under the
		// PTL, and the start's get-and-clear keeps a hardware dirty-bit
		// update, so no other thread can tell them apart.
		x.CAS(s.mem, a, uint64(old), uint64(old&^bWrite))
		if x.Recording() {
			x.Call(protectClient, memIn{Op: opProtect, VA: uint8(va)})
			x.Return(protectClient, memOut{Res: resOK})
		}
		if x.Labelling() {
			x.Labelf("change_pte_range: pte[%d] %s → %s; tlb_flush_pte_range records va%d", va, describePTE(old), describePTE(old&^bWrite), va)
		}
		sc.gathered = true
	case kMunmap, kMadvDontneed:
		x.Xchg(s.mem, a, 0)
		if x.Labelling() {
			x.Labelf("zap_pte_range: ptep_get_and_clear_full pte[%d] (%s); tlb_remove_tlb_entry records va%d; the mmu_gather takes page %d", va, describePTE(old), va, va)
		}
		sc.gathered, sc.page = true, true
	case kMremap:
		// get_and_clear the old PTE, set_ptes at the new address; a
		// present PTE forces the flush of the old address.
		x.Xchg(s.mem, a, 0)
		x.Store(s.mem, c.dstPTE, uint64(old))
		s.moved = true
		if x.Labelling() {
			x.Labelf("move_ptes: get_and_clear pte[%d] (%s), set_ptes pte[new]: force_flush", va, describePTE(old))
		}
		sc.gathered = true
		sc.pc = sFlush
		if c.lateMremap {
			sc.pc = sUnlockNew
		}
	case kMadvCold, kMadvPageout:
		// The folio is skipped unless it is on the LRU: with contend=0
		// every folio is isolated by its reclaimer from the start.
		x.Touch("lru", false)
		if !c.contend || s.lru&(1<<uint(va)) == 0 {
			if x.Labelling() {
				x.Labelf("%s: pte[%d] (%s): !folio_test_lru (reclaim has isolated it): next", fn, va, describePTE(old))
			}
			return
		}
		// MADV_COLD on a young PTE (the model keeps no accessed bit:
		// every present PTE is young); MADV_PAGEOUT with contend=1 is
		// refused by the configuration.
		if x.Labelling() {
			x.Labelf("%s: clear_young_dirty_ptes(CYDP_CLEAR_YOUNG) pte[%d]; tlb_remove_tlb_entries records va%d; folio_deactivate", fn, va, va)
		}
		sc.gathered = true
		return
	case kMadvFree:
		s.lazy |= 1 << uint(va)
		if old&bDirty == 0 {
			if x.Labelling() {
				x.Labelf("madvise_free_pte_range: pte[%d] %s, clean: folio_mark_lazyfree, nothing to flush", va, describePTE(old))
			}
			break
		}
		x.CAS(s.mem, a, uint64(old), uint64(old&^bDirty))
		if x.Labelling() {
			x.Labelf("madvise_free_pte_range: clear_young_dirty_ptes pte[%d] %s → %s; tlb_remove_tlb_entries records va%d; folio_mark_lazyfree", va, describePTE(old), describePTE(old&^bDirty), va)
		}
		sc.gathered = true
	}
	s.mark(va, kind)
}

// mark records, on every TLB entry of va with more rights than the
// syscall leaves it, that the entry is older than the syscall: a write
// (mprotect, MADV_FREE) or an access (munmap, MADV_DONTNEED) through it
// after the call returns breaks the call's postcondition.
func (s *state) mark(va int, kind uint8) {
	if !promises(kind) {
		return
	}
	for i := 0; i < s.c.userCPUs; i++ {
		p := &s.tlb[i*s.c.pages+va]
		if *p == 0 {
			continue
		}
		switch kind {
		case kMprotect:
			if *p&bWrite == 0 {
				continue
			}
		case kMadvFree:
			if *p&(bWrite|bDirty) != bWrite|bDirty {
				continue
			}
		}
		*p |= bCur
	}
}

// endCall is the return of the current call to user space: the entries
// its PTE change left behind now break its postcondition.
func (s *state) endCall(x *model.Exec, i int) {
	c, sc := s.c, &s.sc[i]
	va := int(c.sysAddr[i][sc.op])
	level := uint8(bNoWrite)
	k := c.sysKind[i][sc.op]
	if k == kMunmap || k == kMadvDontneed || k == kMremap {
		level = bNoAccess
	}
	for j := 0; j < c.userCPUs && promises(k); j++ {
		p := &s.tlb[j*c.pages+va]
		if *p&bCur != 0 {
			*p = *p&^bCur | level
		}
	}
	if x.Recording() {
		x.Return(c.tSys[i], memOut{Res: resOK})
	}
	sc.retaken, sc.word = false, 0
	sc.op++
	sc.pc = c.callStart()
	if int(sc.op) == len(c.sysKind[i]) {
		sc.pc = sDone
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
		if s.deferring(va) {
			continue // the flag is set after this store: nothing lost yet
		}
		s.note = note{kind: noteBoolCleared, va: uint8(va), ptl: uint8(l)}
		return
	}
}

// deferring reports whether a reclaimer has cleared va's PTE and not yet
// set tlb_flush_batched for it.
func (s *state) deferring(va int) bool {
	for k := range s.r {
		r := &s.r[k]
		if int(r.page) == va && (r.pc == rAddPending || r.pc == rIncGen || r.pc == rSetBool) {
			return true
		}
	}
	return false
}

// noteDSBOnly records the arm64 loss: the drain's DSB ran on the syscall
// thread's CPU while a reclaimer's TLBI, issued on its own CPU, was still
// in flight.
func (s *state) noteDSBOnly() {
	if s.note.kind != noteNone {
		return
	}
	for k := range s.r {
		if m := s.r[k].inflight; m != 0 {
			va := 0
			for m&(1<<uint(va)) == 0 {
				va++
			}
			s.note = note{kind: noteDSBOnly, va: uint8(va), cpu: uint8(s.c.cpuR[k])}
			return
		}
	}
}

// noteSkipped records that a syscall trusted a none PTE while a CPU still
// caches va.
func (s *state) noteSkipped(sc *syscaller, va int, kind uint8) {
	if s.note.kind != noteNone || s.staleCPUs(va) == 0 {
		return
	}
	n := note{kind: noteNoFlush, va: uint8(va), word: sc.word, op: kind}
	switch {
	case !s.c.drain:
		n.kind = noteNoDrain
	case sc.retaken && !s.c.retakeDrain:
		n.kind = noteRetake
	}
	s.note = n
}
