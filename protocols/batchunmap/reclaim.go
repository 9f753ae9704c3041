package batchunmap

import (
	"math/bits"

	"github.com/protocheck/protocheck/model"
)

// stepReclaim runs one step of shrink_folio_list on CPU0, which reclaims
// pages 0, 1, ... in order: try_to_unmap (TTU_BATCH_FLUSH), then, as every
// anonymous page is dirty once add_to_swap has run, try_to_unmap_flush_dirty
// and pageout, and, when the folio batch is full or at the end,
// try_to_unmap_flush and free_unref_folios. Writeback is taken to complete
// at once, so a page is freed in the pass that wrote it.
func (s *state) stepReclaim(x *model.Exec) {
	c, r := s.c, &s.r
	if r.pc == rDone {
		x.Done()
		return
	}
	va := int(r.page)
	mm := c.mmOf[va]
	l := c.ptlOf(va)
	lname := c.ptlName[l]
	switch r.pc {
	case rLock:
		// A held PTL blocks the step; its label names the holder, as a
		// deadlock report would.
		if !s.ptl[l].Free() {
			x.Block()
			if x.Labelling() {
				x.Labelf("%s (%s) to unmap va%d", lname, s.lockHolder(l), va)
			}
			return
		}
		x.Lock(&s.ptl[l], lname)
		if x.Labelling() {
			x.Labelf("try_to_unmap_one: spin_lock %s (page_vma_mapped_walk va%d)", lname, va)
		}
		r.pc = rClear

	case rClear:
		r.pteval = uint8(x.Xchg(s.mem, c.pteAddr(va), 0))
		if x.Labelling() {
			x.Labelf("try_to_unmap_one: ptep_get_and_clear pte[%d] (%s)", va, describePTE(r.pteval))
		}
		s.page[va] = pgUnmapped
		present := r.pteval&bPresent != 0
		if present {
			x.Count(mUnmapped, 1)
		}
		switch {
		case !c.batched:
			r.pc = rFlushRange
		case present: // pte_accessible: only a present PTE can be cached
			r.pc = rAddPending
		default:
			r.pc = rUnlock
		}

	case rFlushRange:
		mask := uint8(x.Load(s.mem, c.maskAddr(mm)))
		s.flushVA(x, va, mask)
		round(x, cpuReclaim, mask)
		if x.Labelling() {
			x.Labelf("try_to_unmap_one: flush_tlb_range va%d → CPUs %s", va, cpus(mask))
		}
		r.pc = rUnlock

	case rAddPending:
		mask := uint8(x.Load(s.mem, c.maskAddr(mm)))
		if x.Labelling() {
			x.Labelf("set_tlb_ubc_flush_pending: arch_tlbbatch_add_pending: batch cpumask %s |= mm_cpumask %s; flush_required = true", cpus(r.mask), cpus(mask))
		}
		r.mask |= mask
		r.flushReq = true
		switch {
		case c.boolFlag:
			r.pc = rSetBool
		case !c.counter: // no tlb_flush_batched before 3ea277194daa
			s.finishDefer()
		case c.overflowSafe:
			r.pc = rRead
		default: // the unreset counter only needs the atomic_inc
			r.pc = rUpdate
		}

	case rRead:
		r.word = uint16(x.Load(s.mem, c.batchedAddr(mm)))
		if x.Labelling() {
			x.Labelf("set_tlb_ubc_flush_pending: atomic_read tlb_flush_batched = %s", c.describeWord(uint64(r.word)))
		}
		r.pc = rUpdate

	case rUpdate:
		w := uint64(r.word)
		if c.overflowSafe && c.pending(w) > c.large() {
			prev := x.CAS(s.mem, c.batchedAddr(mm), w, 1)
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
			now := x.FetchAdd(s.mem, c.batchedAddr(mm), 1) + 1
			if x.Labelling() {
				x.Labelf("set_tlb_ubc_flush_pending: atomic_inc tlb_flush_batched → %s", c.describeWord(now))
			}
			if !c.armed(now) && s.note.kind == noteNone {
				s.note = note{kind: noteWrapped, va: uint8(va), word: uint16(now)}
			}
		}
		s.finishDefer()

	case rSetBool:
		x.Store(s.mem, c.batchedAddr(mm), 1)
		x.Label("set_tlb_ubc_flush_pending: mm->tlb_flush_batched = true")
		s.finishDefer()

	case rUnlock:
		x.Unlock(&s.ptl[l], lname)
		if x.Labelling() {
			x.Label("try_to_unmap_one: spin_unlock " + lname)
		}
		r.pc = rPageout
		if c.flushDirty && r.writable {
			r.pc = rFlushDirty
		}

	case rFlushDirty:
		if x.Labelling() {
			x.Label("try_to_unmap_flush_dirty: writable: arch_tlbbatch_flush → CPUs " + cpus(r.mask))
		}
		s.batchFlush(x)
		r.pc = rPageout

	case rPageout:
		if x.Labelling() {
			nested := ""
			if c.nestedReset {
				nested = "; bio allocation enters nested reclaim: init_tlb_ubc clears flush_required"
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
		r.queued |= 1 << uint(va)
		switch {
		case bits.OnesCount8(r.queued) < c.batch && va+1 < c.pages:
			r.page++
			r.pc = rLock
		case r.flushReq:
			r.pc = rFlush
		default: // try_to_unmap_flush returns at once: no step of its own
			r.pc = rFree
		}

	case rFlush:
		if x.Labelling() {
			x.Label("try_to_unmap_flush: arch_tlbbatch_flush → CPUs " + cpus(r.mask))
		}
		s.batchFlush(x)
		r.pc = rFree

	case rFree:
		if x.Labelling() {
			x.Label("free_unref_folios: free " + pageSet(r.queued))
		}
		x.Touch("free lists", true)
		for p := 0; p < c.pages; p++ {
			if r.queued&(1<<uint(p)) != 0 {
				s.page[p] = pgFreed
			}
		}
		r.queued = 0
		r.page++
		r.pc = rLock
		if int(r.page) == c.pages {
			r.pc = rDone
		}
	}
}

// finishDefer ends set_tlb_ubc_flush_pending: a dirty PTE makes the batch
// writable, so that try_to_unmap_flush_dirty flushes before IO starts.
func (s *state) finishDefer() {
	if s.r.pteval&bDirty != 0 {
		s.r.writable = true
	}
	s.r.pc = rUnlock
}

// batchFlush is arch_tlbbatch_flush on the batch cpumask followed by the
// reset of the batch (riscv before 3951f6add519 keeps the cpumask).
func (s *state) batchFlush(x *model.Exec) {
	r := &s.r
	s.flushAll(x, r.mask)
	round(x, cpuReclaim, r.mask)
	x.Count(mBatchTargets, int64(bits.OnesCount8(r.mask)))
	if !s.c.stickyMask {
		r.mask = 0
	}
	r.flushReq, r.writable = false, false
}
