package batchunmap

import (
	"math/bits"
	"strconv"

	"github.com/protocheck/protocheck/model"
)

// stepReclaim runs one step of reclaimer k's shrink_folio_list, which
// reclaims its pages (k, k+reclaimers, ...) in order with its own batch
// (current->tlb_ubc): try_to_unmap (TTU_BATCH_FLUSH), then, as every
// anonymous page is dirty once add_to_swap has run, try_to_unmap_flush_dirty
// and pageout, and, when the folio batch is full or at the end,
// try_to_unmap_flush and free_unref_folios. Writeback is taken to complete
// at once, so a page is freed in the pass that wrote it. The folio lock,
// which shrink_folio_list takes before try_to_unmap, is taken with the
// page-table lock here: nothing of the model happens between the two.
//
// With contend=1 the folio lock is a step of its own (folio_trylock; it
// fails while madvise's split holds the lock, and the folio is kept), a
// written folio is kept with its writeback in flight (the keep path
// unlocks it), the pass's last step frees its free batch and puts the
// kept folios back on the LRU (after try_to_unmap_flush, as
// move_folios_to_lru runs after shrink_folio_list returns), and a second
// pass isolates whatever is on the LRU, the other reclaimer's folios too:
// one whose writeback is done and that is mapped no more is removed from
// the swap cache and freed, with this reclaimer's flush, which owes it
// nothing.
func (s *state) stepReclaim(x *model.Exec, k int) {
	c, r := s.c, &s.r[k]
	if r.pc == rDone {
		x.Done()
		return
	}
	cpu := c.cpuR[k]
	va := int(r.page)
	mm := c.mmOf[va]
	_, pa, tva := s.mapping(va)
	l := int(r.ptlAt)
	lname := c.ptlName[l]
	switch r.pc {
	case rIsolate:
		x.Touch("lru", true)
		r.list, s.lru = s.lru, 0
		if x.Labelling() {
			x.Label("shrink_inactive_list: isolate_lru_folios takes " + pageSet(r.list) + " off the LRU (second pass)")
		}
		if r.list == 0 {
			r.pc = rDone
			return
		}
		s.startPage(r)

	case rTrylock:
		bit := uint8(1) << uint(va)
		x.Touch(c.pageName[va], true)
		if s.flock&bit != 0 {
			r.kept |= bit
			if c.putbackEarly {
				s.lru |= bit
			}
			if x.Labelling() {
				x.Labelf("shrink_folio_list: folio_trylock page %d fails (madvise's split_folio holds it): keep%s", va, c.describePutbackEarly())
			}
			s.nextPage(r)
			return
		}
		s.flock |= bit
		r.ptlAt = uint8(s.ptlNow(va))
		if s.page[va] == pgWriteback {
			// Unmapped and written by a pass before: folio_mapped is false,
			// so there is no try_to_unmap.
			r.pc = rRemove
			if x.Labelling() {
				x.Labelf("shrink_folio_list: folio_trylock page %d; not mapped, under writeback before", va)
			}
			return
		}
		r.pc = rLock
		if x.Labelling() {
			x.Labelf("shrink_folio_list: folio_trylock page %d", va)
		}

	case rRemove:
		s.flock &^= 1 << uint(va)
		r.queued |= 1 << uint(va)
		x.Touch(c.pageName[va], true)
		if x.Labelling() {
			x.Labelf("shrink_folio_list: writeback of page %d done, clean: __remove_mapping (swap cache), folio_unlock", va)
		}
		s.nextPage(r)

	case rLock:
		// A held PTL blocks the step; its label names the holder, as a
		// deadlock report would.
		if !s.lockPTL(x, l) {
			if x.Labelling() {
				x.Labelf("%s (%s) to unmap va%d", lname, s.lockHolder(l), va)
			}
			return
		}
		if x.Labelling() {
			if l == c.ptls {
				x.Labelf("try_to_unmap_one: spin_lock %s%s (page_vma_mapped_walk: page %d, moved by mremap)", lname, c.lockNote(), va)
			} else {
				x.Labelf("try_to_unmap_one: spin_lock %s%s (page_vma_mapped_walk va%d)", lname, c.lockNote(), va)
			}
		}
		r.pc = rClear

	case rClear:
		if ml, _, _ := s.mapping(va); ml != l {
			// mremap moved the page while the walk waited for the old
			// PTL: the old PTE no longer maps it, and the rmap walk goes
			// on to the new address.
			s.unlockPTL(x, l)
			if x.Labelling() {
				x.Labelf("try_to_unmap_one: page_vma_mapped_walk: pte[%d] no longer maps page %d (mremap moved it): spin_unlock %s%s, on to the new address", va, va, lname, c.unlockNote())
			}
			r.ptlAt, r.pc = uint8(ml), rLock
			return
		}
		if tva != va && s.note.kind == noteNone && s.mremapOwes() && s.holders(va) != 0 {
			s.note = note{kind: noteLateMremap, va: uint8(va)}
		}
		r.pteval = uint8(x.Xchg(s.mem, pa, 0))
		present := r.pteval&bPresent != 0
		if x.Labelling() {
			if present {
				x.Labelf("try_to_unmap_one: ptep_get_and_clear %s (%s)", c.memNames[pa], describePTE(r.pteval))
			} else {
				x.Labelf("try_to_unmap_one: page_vma_mapped_walk finds %s none: the page is mapped no more", c.memNames[pa])
			}
		}
		if s.page[va] == pgMapped {
			s.page[va] = pgUnmapped
		}
		switch {
		case !present:
			r.pc = rUnlock
		case !c.batched:
			x.Count(mUnmapped, 1)
			r.pc = rFlushRange
		default: // pte_accessible: a present PTE may be cached
			x.Count(mUnmapped, 1)
			r.pc = rAddPending
			if c.arch == archX86 {
				r.pc = rIncGen
			}
		}

	case rFlushRange:
		// flush_tlb_range under the PTL.
		switch c.arch {
		case archRISCV:
			mask := s.flushRangeMask(x, mm, tva)
			countRound(x, cpu, mask)
			if x.Labelling() {
				x.Labelf("try_to_unmap_one: flush_tlb_range %s → CPUs %s", c.vaName(tva), cpus(mask))
			}
			r.pc = s.afterUnmap(r)
		case archARM64:
			s.broadcastVA(x, tva)
			x.Count(mFlushRounds, 1)
			x.Count(mTLBI, 1)
			x.Count(mDSB, 1)
			if x.Labelling() {
				x.Labelf("try_to_unmap_one: flush_tlb_range %s: tlbi vale1is; dsb(ish)", c.vaName(tva))
			}
			r.pc = s.afterUnmap(r)
		default:
			st := s.x86Start(x, &r.rnd, rkRange, mm, tva, cpu, 0)
			countRound(x, cpu, st.targets)
			if x.Labelling() {
				x.Labelf("try_to_unmap_one: flush_tlb_range %s: %s", c.vaName(tva), c.describeStart(s.genNow(mm), st))
			}
			s.afterStart(r.rnd.pend, &r.pc, &r.ret, s.afterUnmap(r), rRound)
		}

	case rIncGen:
		g := s.incGen(x, mm)
		if x.Labelling() {
			x.Labelf("set_tlb_ubc_flush_pending: arch_tlbbatch_add_pending: inc_mm_tlb_gen → %d", g)
		}
		r.pc = rAddPending

	case rAddPending:
		if c.arch == archARM64 {
			// __flush_tlb_range_nosync: dsb(ishst); tlbi vale1is, with no
			// trailing DSB: the invalidation is in flight until this CPU's
			// next DSB.
			if tva == va { // a TLBI of the new address leaves no tracked entry
				r.inflight |= 1 << uint(va)
			}
			x.Touch(c.tlbName[cpu], true)
			x.Count(mTLBI, 1)
			if x.Labelling() {
				x.Labelf("set_tlb_ubc_flush_pending: arch_tlbbatch_add_pending: dsb(ishst); tlbi vale1is %s (in flight); flush_required = true", c.vaName(tva))
			}
		} else {
			mask := uint8(x.Load(s.mem, c.maskAddr(mm)))
			if x.Labelling() {
				x.Labelf("set_tlb_ubc_flush_pending: arch_tlbbatch_add_pending: batch cpumask %s |= mm_cpumask %s; flush_required = true", cpus(r.mask), cpus(mask))
			}
			r.mask |= mask
		}
		r.flushReq = true
		switch {
		case c.boolFlag:
			r.pc = rSetBool
		case !c.counter: // no tlb_flush_batched before 3ea277194daa
			s.finishDefer(r)
		case c.overflowSafe:
			r.pc = rRead
		default: // the unreset counter only needs the atomic_inc
			r.pc = rUpdate
		}

	case rRead:
		bm, ba := s.batched(mm)
		r.word = uint16(x.Load(bm, ba))
		if x.Labelling() {
			x.Labelf("set_tlb_ubc_flush_pending: atomic_read tlb_flush_batched = %s", c.describeWord(uint64(r.word)))
		}
		r.pc = rUpdate

	case rUpdate:
		w := uint64(r.word)
		bm, ba := s.batched(mm)
		if c.overflowSafe && c.pending(w) > c.large() {
			prev := x.CAS(bm, ba, w, 1)
			if prev != w {
				r.word = uint16(prev)
				if x.Labelling() {
					x.Labelf("set_tlb_ubc_flush_pending: atomic_try_cmpxchg fails (now %s): retry", c.describeWord(prev))
				}
				return
			}
			if x.Labelling() {
				x.Labelf("set_tlb_ubc_flush_pending: atomic_try_cmpxchg (pending %d > %d): reset to %s", c.pending(w), c.large(), c.describeWord(1))
			}
		} else {
			var now uint64
			if c.arm {
				// atomic_inc returns nothing: a relaxed STADD, ordered
				// before the PTL's release by the release alone.
				old, _, _ := x.Atomic(bm, ba, model.RMW{Op: model.RMWAdd, Arg: 1, NoRet: true})
				now = old + 1
			} else {
				now = x.FetchAdd(bm, ba, 1) + 1
			}
			if x.Labelling() {
				x.Labelf("set_tlb_ubc_flush_pending: atomic_inc tlb_flush_batched → %s", c.describeWord(now))
			}
			if !c.armed(now) && s.note.kind == noteNone {
				s.note = note{kind: noteWrapped, va: uint8(va), word: uint16(now)}
			}
		}
		s.finishDefer(r)

	case rSetBool:
		bm, ba := s.batched(mm)
		x.Store(bm, ba, 1)
		x.Label("set_tlb_ubc_flush_pending: mm->tlb_flush_batched = true")
		s.finishDefer(r)

	case rRestore:
		// The MADV_FREE page check: the folio was redirtied, so it is not
		// discarded: set_ptes puts the PTE back and try_to_unmap fails.
		x.Store(s.mem, pa, uint64(r.pteval))
		s.page[va] = pgMapped
		s.lazy &^= 1 << uint(va)
		if x.Labelling() {
			x.Labelf("try_to_unmap_one: lazyfree folio redirtied: set_ptes %s (%s) back, folio_set_swapbacked, walk_abort", c.memNames[pa], describePTE(r.pteval))
		}
		r.pc = rUnlock

	case rUnlock:
		s.unlockPTL(x, l)
		kept := s.page[va] == pgMapped
		if x.Labelling() {
			what := ""
			if kept {
				what = "; try_to_unmap failed: the folio is kept"
			}
			x.Label("try_to_unmap_one: spin_unlock " + lname + c.unlockNote() + what)
		}
		switch {
		case kept:
			s.keep(r)
			s.nextPage(r)
			return
		case s.discard(r):
			r.pc = rPageout // discarded, not written: no flush_dirty
		case c.flushDirty && r.writable:
			r.pc = rFlushDirty
		default:
			r.pc = rPageout
		}
		if c.rMigrate && !r.moved && r.inflight != 0 {
			// Preemptible again: the scheduler may move the reclaimer.
			r.ret, r.pc = r.pc, rMigrate
		}

	case rMigrate:
		r.pc, r.ret = r.ret, 0
		if x.Choose(2) == 0 {
			if x.Labelling() {
				x.Labelf("schedule: %s stays on %s", c.rName[k], c.cpuName[cpu])
			}
			return
		}
		r.moved = true
		to := c.reclaimerCPU(k, true)
		if c.switchNoDSB {
			for m := r.inflight; m != 0 && s.note.kind == noteNone; m &= m - 1 {
				if v := bits.TrailingZeros8(m); s.holders(v) != 0 {
					s.note = note{kind: noteSwitchNoDSB, va: uint8(v), cpu: uint8(cpu), page: uint8(k)}
				}
			}
			if x.Labelling() {
				x.Labelf("schedule: %s preempted, moves from %s to CPU%d: __switch_to without dsb(ish) (mutation): %s's TLBIs for %s stay in flight", c.rName[k], c.cpuName[cpu], to, c.cpuName[cpu], pageSet(r.inflight))
			}
			r.orphan |= r.inflight
			r.inflight = 0
			return
		}
		if x.Labelling() {
			x.Labelf("schedule: %s preempted, moves from %s to CPU%d: __switch_to: dsb(ish) completes %s's TLBIs for %s", c.rName[k], c.cpuName[cpu], to, c.cpuName[cpu], pageSet(r.inflight))
		}
		s.dsb(x, r)
		x.Count(mDSB, 1)

	case rFlushDirty:
		s.batchFlush(x, k, rPageout, "try_to_unmap_flush_dirty: writable: ")

	case rPageout:
		if s.discard(r) {
			if x.Labelling() {
				if s.lazy&(1<<uint(va)) != 0 {
					x.Labelf("shrink_folio_list: clean lazyfree folio %d discarded without pageout", va)
				} else {
					x.Labelf("shrink_folio_list: folio %d is mapped no more (zapped): freed without pageout", va)
				}
			}
			s.lazy &^= 1 << uint(va)
			s.flock &^= 1 << uint(va)
			x.Touch(c.pageName[va], true)
			r.queued |= 1 << uint(va)
			s.nextPage(r)
			return
		}
		if x.Labelling() {
			nested := ""
			if c.nestedReset {
				nested = "; bio allocation enters nested reclaim: init_tlb_ubc clears flush_required"
			}
			if c.contend {
				nested += "; folio_test_writeback: keep: folio_unlock" + c.describePutbackEarly()
			}
			x.Labelf("pageout: swap_writepage snapshots page %d (val=%d)%s", va, s.val[va], nested)
		}
		x.Touch(c.pageName[va], false)
		s.page[va] = pgWriteback
		if r.writable && !c.flushDirty && s.note.kind == noteNone {
			s.note = note{kind: noteDirtySkip, va: uint8(va)}
		}
		if c.nestedReset {
			// The last reset before the flush is the one that loses it.
			if r.flushReq && (s.note.kind == noteNone || s.note.kind == noteNestedReset) {
				s.note = note{kind: noteNestedReset, page: uint8(va)}
			}
			r.flushReq = false
		}
		if c.contend {
			if c.putbackEarly && (r.flushReq || r.inflight != 0) && s.note.kind == noteNone {
				s.note = note{kind: notePutback, va: uint8(va), cpu: uint8(k)}
			}
			s.keep(r)
		} else {
			r.queued |= 1 << uint(va)
		}
		s.nextPage(r)

	case rFlush:
		s.batchFlush(x, k, rFree, "try_to_unmap_flush: ")

	case rFree:
		if x.Labelling() {
			x.Label(s.describeFree(r))
		}
		x.Touch("free lists", true)
		for p := 0; p < c.pages; p++ {
			if r.queued&(1<<uint(p)) == 0 {
				continue
			}
			if s.gatherHolds(p) >= 0 {
				// An mmu_gather still holds a reference: the page is freed
				// when the gather releases it.
				s.page[p] = pgHeld
				continue
			}
			s.freePage(x, p)
		}
		r.queued = 0
		if r.list != 0 {
			s.startPage(r)
			return
		}
		if r.kept != 0 {
			// move_folios_to_lru: the pass's kept folios go back (the
			// mutation has put them back already).
			x.Touch("lru", true)
			s.lru |= r.kept
			r.kept = 0
		}
		s.endPass(r)

	case rRound:
		h := s.x86Handle(x, &r.rnd)
		if x.Labelling() {
			x.Labelf("%s IPI: flush_tlb_func on %s", roundName(h.rnd.kind), c.describeHandled(h, s.genNow(int(h.rnd.mm))))
		}
		if r.rnd.pend == 0 {
			r.pc, r.ret = r.ret, 0
		}
	}
}

// nextPage moves the reclaimer on from its page: to its next page while
// the free batch has room, else to try_to_unmap_flush and the free (with
// contend=1 also at the end of a pass that kept a folio or owes a flush:
// the kept folios go back on the LRU after the flush).
func (s *state) nextPage(r *reclaimer) {
	c := s.c
	r.pteval = 0 // dead from here
	last := r.list == 0
	owes := c.contend && last && (r.kept != 0 || r.flushReq)
	switch {
	case bits.OnesCount8(r.queued) < c.batch && !last:
		s.startPage(r)
	case r.queued == 0 && !owes:
		// Nothing to free (the last page was kept).
		if last {
			s.endPass(r)
		} else {
			s.startPage(r)
		}
	case r.flushReq:
		r.pc = rFlush
	default: // try_to_unmap_flush returns at once: no step of its own
		r.pc = rFree
	}
}

// startPage takes up the lowest folio of the reclaimer's list.
func (s *state) startPage(r *reclaimer) {
	p := bits.TrailingZeros8(r.list)
	r.list &^= 1 << uint(p)
	r.page = uint8(p)
	r.pc = s.c.firstPC()
	r.ptlAt = uint8(s.ptlNow(p))
}

// ptlNow is the PTL under which page va is mapped now.
func (s *state) ptlNow(va int) int {
	l, _, _ := s.mapping(va)
	return l
}

// mremapOwes reports whether the syscall thread's mremap has moved its
// page and not yet flushed the old address.
func (s *state) mremapOwes() bool {
	sc := &s.sc[0]
	return sc.pc != sDone && s.c.sysKind[0][sc.op] == kMremap && sc.gathered
}

// endPass ends shrink_folio_list's pass: with contend=1 the first pass is
// followed by a second.
func (s *state) endPass(r *reclaimer) {
	r.pc = rDone
	if s.c.contend && r.pass == 0 {
		r.pass, r.pc = 1, rIsolate
	}
}

// keep is shrink_folio_list's keep path for the reclaimer's page (contend:
// folio_unlock, the folio on ret_folios; the mutation puts it back on the
// LRU at once).
func (s *state) keep(r *reclaimer) {
	if !s.c.contend {
		return
	}
	bit := uint8(1) << r.page
	s.flock &^= bit
	r.kept |= bit
	if s.c.putbackEarly {
		s.lru |= bit
	}
}

func (c *config) describePutbackEarly() string {
	if c.putbackEarly {
		return "; back on the LRU at once (mutation)"
	}
	return ""
}

// gatherHolds is the syscall thread whose mmu_gather holds page p, or -1.
func (s *state) gatherHolds(p int) int {
	for i := range s.sc {
		if sc := &s.sc[i]; sc.page && int(s.c.sysAddr[i][sc.op]) == p {
			return i
		}
	}
	return -1
}

// describeFree is the label of the step that frees the free batch and, at
// the end of a pass with contend=1, puts the kept folios back.
func (s *state) describeFree(r *reclaimer) string {
	out := "free_unref_folios: free " + pageSet(r.queued) + s.describeHeld(r.queued)
	if r.queued == 0 {
		out = "shrink_folio_list returns"
	}
	if r.list == 0 && r.kept != 0 && !s.c.putbackEarly {
		out += "; move_folios_to_lru puts " + pageSet(r.kept) + " back on the LRU"
	}
	return out
}

// discard reports whether the reclaimer frees its page without pageout:
// a clean lazyfree folio (MADV_FREE) is discarded, and a folio whose PTE
// a zap already cleared has no mapping left to swap it back in for, so
// whether it is written out changes nothing anyone can read.
func (s *state) discard(r *reclaimer) bool {
	return s.lazy&(1<<r.page) != 0 || r.pteval&bPresent == 0
}

// afterUnmap is where try_to_unmap_one goes once the PTE is cleared and its
// flush deferred or done: the MADV_FREE page check restores the PTE of a
// redirtied lazyfree folio.
func (s *state) afterUnmap(r *reclaimer) uint8 {
	if s.lazy&(1<<r.page) != 0 && r.pteval&bDirty != 0 {
		return rRestore
	}
	return rUnlock
}

// freePage drops the last reference to page p: it goes back to the
// allocator, and with reuse a new owner overwrites it at once (the
// earliest a reused page can change: a stale access to a freed page
// already violates no-use-after-free, and a separate allocator step would
// only let a stale read return the old contents a little longer).
func (s *state) freePage(x *model.Exec, p int) {
	x.Touch(s.c.pageName[p], true)
	s.page[p] = pgFreed
	if s.c.reuse {
		s.page[p] = pgReused
		s.val[p] = reusedVal
	}
}

// reusedVal is what a page's new owner writes; no user task writes it.
const reusedVal = 9

func (s *state) describeHeld(queued uint8) string {
	for p := 0; p < s.c.pages; p++ {
		if i := s.gatherHolds(p); i >= 0 && queued&(1<<uint(p)) != 0 {
			return " (the mmu_gather of " + callName(s.c.sysKind[i][s.sc[i].op], p) + " still holds page " + strconv.Itoa(p) + ")"
		}
	}
	if s.c.reuse {
		return "; the allocator hands them to a new owner, who writes 9"
	}
	return ""
}

// finishDefer ends set_tlb_ubc_flush_pending: a dirty PTE makes the batch
// writable, so that try_to_unmap_flush_dirty flushes before IO starts.
func (s *state) finishDefer(r *reclaimer) {
	if r.pteval&bDirty != 0 {
		r.writable = true
	}
	r.word = 0 // dead from here: forgotten, so states differ only in what matters
	r.pc = s.afterUnmap(r)
}

// batchFlush is try_to_unmap_flush's arch_tlbbatch_flush and the reset of
// the batch; the reclaimer continues at next. riscv flushes every ASID on
// the batch cpumask and clears it (not before 3951f6add519); x86 sends its
// flush_tlb_func IPIs to the batch cpumask, a step per target; arm64's
// dsb(ish) completes the TLBIs this CPU issued. The step's label is
// caller's words followed by what arch_tlbbatch_flush did.
func (s *state) batchFlush(x *model.Exec, k int, next uint8, caller string) {
	c, r := s.c, &s.r[k]
	cpu := c.cpuR[k]
	r.pc = next
	var st started
	inflight := r.inflight
	switch c.arch {
	case archRISCV:
		s.flushAllMask(x, r.mask)
		countRound(x, cpu, r.mask)
	case archARM64:
		s.dsb(x, r)
		x.Count(mFlushRounds, 1)
		x.Count(mDSB, 1)
	default:
		st = s.x86Start(x, &r.rnd, rkBatch, 0, 0, cpu, r.mask)
		countRound(x, cpu, st.targets)
		s.afterStart(r.rnd.pend, &r.pc, &r.ret, next, rRound)
	}
	if x.Labelling() {
		x.Label(caller + c.describeBatchFlush(r.mask, inflight, st))
	}
	x.Count(mBatchTargets, int64(bits.OnesCount8(r.mask)))
	if !c.stickyMask {
		r.mask = 0
	}
	r.flushReq, r.writable = false, false
}

// afterStart moves a thread that started an x86 round to its handler
// steps, or on to next when no handler is left to run.
func (s *state) afterStart(pend uint8, pc, ret *uint8, next, round uint8) {
	*pc = next
	if pend != 0 {
		*ret, *pc = next, round
	}
}

// describeBatchFlush says what arch_tlbbatch_flush did with the batch
// cpumask mask, arm64's TLBIs in flight, or x86's round st.
func (c *config) describeBatchFlush(mask, inflight uint8, st started) string {
	switch c.arch {
	case archARM64:
		return "arch_tlbbatch_flush: dsb(ish) completes this CPU's TLBIs for " + pageSet(inflight)
	case archX86:
		return "arch_tlbbatch_flush(batch cpumask " + cpus(mask) + ", mm NULL, full): " + c.describeTargets(st)
	}
	return "arch_tlbbatch_flush → CPUs " + cpus(mask)
}

// describeStart is the label of an x86 round's first step that flushes
// an mm.
func (c *config) describeStart(gen int, st started) string {
	return "inc_mm_tlb_gen → " + strconv.Itoa(gen) + ", " + c.describeTargets(st)
}

// describeTargets names the IPIs of an x86 round.
func (c *config) describeTargets(st started) string {
	fn := "flush_tlb_multi"
	if c.x86Era == eraV414 || c.x86Era == eraV420 {
		fn = "flush_tlb_others"
	}
	s := fn + " → CPUs " + cpus(st.targets)
	if st.skipped != 0 {
		s += ", lazy CPUs " + cpus(st.skipped) + " skipped"
	}
	if st.trimmed {
		s += " (should_trim_cpumask)"
	}
	return s
}
