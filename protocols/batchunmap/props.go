package batchunmap

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// The harm properties (no-use-after-free, no-lost-write,
// syscall-postcondition) are checked inside the access step that does the
// harm. The bookkeeping properties below are invariants that fail earlier,
// where the bookkeeping is lost; they are checked when the bookkeeping
// parameter is 1.
func (m *machine) invariants() []model.Invariant {
	if !m.c.bookkeeping {
		return nil
	}
	invs := []model.Invariant{{Name: FlushBeforeFree, Check: checkFlushBeforeFree}}
	if m.c.counter || m.c.boolFlag {
		invs = append(invs, model.Invariant{Name: CounterSound, Check: checkCounterSound})
	}
	return invs
}

// checkFlushBeforeFree is P4(a): no page is freed while a TLB maps it, and
// no writeback snapshot is taken while a TLB holds a writable dirty entry
// (a clean writable entry must walk the cleared PTE to write, and faults).
// An x86 entry of an mm its CPU does not run, behind the mm's tlb_gen, is
// dead: the CPU flushes it before it runs the mm again.
func checkFlushBeforeFree(st model.State) string {
	s := st.(*state)
	for p := 0; p < s.c.pages; p++ {
		switch s.page[p] {
		case pgFreed, pgReused:
			if h := s.holders(p); h != 0 {
				return fmt.Sprintf("page %d is %s while CPUs %s still cache va%d: %s", p, pageStateNames[s.page[p]], cpus(h), p, s.cause())
			}
		case pgWriteback:
			var h uint8
			for i := 0; i < s.c.userCPUs; i++ {
				cpu := s.c.userCPU0 + i
				if e := s.entry(cpu, p); e&bWrite != 0 && e&bDirty != 0 && s.live(cpu, p) {
					h |= 1 << uint(cpu)
				}
			}
			if h != 0 {
				return fmt.Sprintf("pageout snapshotted page %d while CPUs %s cache a writable dirty entry for va%d: %s", p, cpus(h), p, s.cause())
			}
		}
	}
	return ""
}

// checkCounterSound is P5: whenever a CPU caches a va beyond what its PTE
// allows, nobody holds that va's page-table lock (so a syscall could take
// it and inspect the PTE), and the syscall thread's own gather does not
// owe that va a flush, tlb_flush_batched must ask for a flush.
func checkCounterSound(st model.State) string {
	s := st.(*state)
	c := s.c
	for va := 0; va < c.pages; va++ {
		l := c.ptlOf(va)
		h := s.staleCPUs(va)
		if h == 0 || !s.ptl[l].Free() || s.syscallOwes(va) {
			continue
		}
		mm := c.mmOf[va]
		if mem, a := s.batched(mm); !c.armed(mem.Peek(a)) {
			w := mem.Peek(a)
			return fmt.Sprintf("CPUs %s cache va%d although pte[%d] is %s and PTL%d is free, yet tlb_flush_batched = %s, so flush_tlb_batched_pending under PTL%d would not flush: %s",
				cpus(h), va, va, describePTE(uint8(s.mem.Peek(c.pteAddr(va)))), l, c.describeWord(w), l, s.cause())
		}
	}
	return ""
}

// syscallOwes reports whether a syscall thread's call has changed
// pte[va] and not yet finished flushing it.
func (s *state) syscallOwes(va int) bool {
	for i := range s.sc {
		sc := &s.sc[i]
		if sc.pc == sDone || int(s.c.sysAddr[i][sc.op]) != va {
			continue
		}
		if sc.gathered || sc.pc == sRound && (sc.rnd.kind == rkRange || sc.forced) {
			return true
		}
	}
	return false
}

// cause explains, from the first recorded loss, why a stale entry
// survived.
func (s *state) cause() string { return s.c.cause(s.note) }

// cause explains a violation from note n, the first recorded loss.
func (c *config) cause(n note) string {
	va := int(n.va)
	switch n.kind {
	case noteBoolCleared:
		return fmt.Sprintf("the pending flush for va%d was lost: the syscall thread, holding PTL%d in flush_tlb_batched_pending, stored tlb_flush_batched = false after its flush_tlb_mm, over the true a reclaimer had stored holding PTL%d after clearing pte[%d]",
			va, n.ptl, c.ptlOf(va), va)
	case noteWrapped:
		return fmt.Sprintf("the pending flushes were lost when a reclaimer's atomic_inc for va%d wrapped the %d-bit pending field onto flushed (%s) with no overflow reset",
			va, c.width, c.describeWord(uint64(n.word)))
	case noteNoDrain:
		return fmt.Sprintf("%s found pte[%d] none (cleared by try_to_unmap_one, flush deferred to a reclaimer's batch) and flushed nothing: this kernel has no flush_tlb_batched_pending", callName(n.op, va), va)
	case noteNoFlush:
		return fmt.Sprintf("%s found pte[%d] none and flushed nothing, because flush_tlb_batched_pending read tlb_flush_batched = %s", callName(n.op, va), va, c.describeWord(uint64(n.word)))
	case noteRetake:
		return fmt.Sprintf("madvise(MADV_FREE) dropped PTL%d to split the large folio and, after re-taking it, found pte[%d] none (a reclaimer cleared it meanwhile and deferred its flush) without calling flush_tlb_batched_pending again, so it flushed nothing", c.ptlOf(va), va)
	case noteNestedReset:
		return fmt.Sprintf("try_to_unmap_flush found nothing to flush because the nested reclaim entered from pageout of page %d ran init_tlb_ubc and cleared flush_required while flushes were deferred", n.page)
	case noteDirtySkip:
		return fmt.Sprintf("pageout of page %d started with tlb_ubc.writable set and no try_to_unmap_flush_dirty", va)
	case noteMaskCleared:
		return fmt.Sprintf("switch_mm on CPU%d cleared CPU%d from %s's mm_cpumask without flushing its TLB (the ASID keeps its entries), so flushes sent to mm_cpumask, the reclaimer's batch included, missed it", n.cpu, n.cpu, c.mmLabel(int(n.op)))
	case noteNoCatchUp:
		return fmt.Sprintf("CPU%d left %s (switch_mm cleared its mm_cpumask bit, so flushes since then skipped it) and came back on the ASID it had kept, behind the mm's tlb_gen, without the tlb_gen comparison that would have flushed it", n.cpu, c.mmLabel(int(n.op)))
	case noteGenZero:
		return fmt.Sprintf("arch_tlbbatch_flush's flush_tlb_func on CPU%d compared the batch's f->new_tlb_gen, 0 (TLB_GENERATION_INVALID), with its local tlb_gen, found it not newer and returned without flushing", n.cpu)
	case notePutback:
		return fmt.Sprintf("reclaimer%d put folio %d back on the LRU before its try_to_unmap_flush, the flush of its unmapping still deferred in its batch, and the reclaimer that isolated it next freed it after a flush of its own batch, which owed that folio nothing", n.cpu, va)
	case noteLateMremap:
		return fmt.Sprintf("mremap moved page %d and dropped both PTLs before its flush_tlb_range of va%d (before eb66ae030829); reclaim took the new address's PTL, unmapped the page there and flushed only the new address, so va%d's entry outlived the free", va, va, va)
	case noteSwitchNoDSB:
		return fmt.Sprintf("reclaimer%d migrated from CPU%d without __switch_to's dsb(ish): its tlbi for va%d, issued there, stays in flight, and arch_tlbbatch_flush's dsb(ish) on its new CPU completes only the TLBIs that CPU issued", n.page, n.cpu, va)
	case noteDSBOnly:
		return fmt.Sprintf("flush_tlb_batched_pending found a flush pending and ran dsb(ish) on CPU1, which completes only the TLBIs CPU1 issued: the reclaimer's tlbi vale1is for va%d, issued on CPU%d, was still in flight", va, n.cpu)
	}
	return "the entry survived every flush so far"
}
