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
			for cpu := 1; cpu < s.c.ncpu; cpu++ {
				if e := s.entry(cpu, p); e&bWrite != 0 && e&bDirty != 0 {
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
// allows and nobody holds that va's page-table lock (so a syscall could
// take it and inspect the PTE), tlb_flush_batched must ask for a flush.
func checkCounterSound(st model.State) string {
	s := st.(*state)
	c := s.c
	for va := 0; va < c.pages; va++ {
		l := c.ptlOf(va)
		h := s.staleCPUs(va)
		if h == 0 || !s.ptl[l].Free() {
			continue
		}
		mm := c.mmOf[va]
		if w := s.mem.Peek(c.batchedAddr(mm)); !c.armed(w) {
			return fmt.Sprintf("CPUs %s cache va%d although pte[%d] is %s and PTL%d is free, yet tlb_flush_batched = %s, so flush_tlb_batched_pending under PTL%d would not flush: %s",
				cpus(h), va, va, describePTE(uint8(s.mem.Peek(c.pteAddr(va)))), l, c.describeWord(w), l, s.cause())
		}
	}
	return ""
}

// cause explains, from the first recorded loss, why a stale entry
// survived.
func (s *state) cause() string { return s.c.cause(s.note) }

// cause explains a violation from note n, the first recorded loss.
func (c *config) cause(n note) string {
	va := int(n.va)
	switch n.kind {
	case noteBoolCleared:
		return fmt.Sprintf("the pending flush for va%d was lost: the syscall thread, holding PTL%d in flush_tlb_batched_pending, stored tlb_flush_batched = false after its flush_tlb_mm, over the true the reclaimer had stored holding PTL%d after clearing pte[%d]",
			va, n.ptl, c.ptlOf(va), va)
	case noteWrapped:
		return fmt.Sprintf("the pending flushes were lost when the reclaimer's atomic_inc for va%d wrapped the %d-bit pending field onto flushed (%s) with no overflow reset",
			va, c.width, c.describeWord(uint64(n.word)))
	case noteNoDrain:
		return fmt.Sprintf("mprotect found pte[%d] none (cleared by try_to_unmap_one, flush deferred to the reclaimer's batch) and flushed nothing: this kernel has no flush_tlb_batched_pending", va)
	case noteNoFlush:
		return fmt.Sprintf("mprotect found pte[%d] none and flushed nothing, because flush_tlb_batched_pending read tlb_flush_batched = %s", va, c.describeWord(uint64(n.word)))
	case noteNestedReset:
		return fmt.Sprintf("try_to_unmap_flush found nothing to flush because the nested reclaim entered from pageout of page %d ran init_tlb_ubc and cleared flush_required while flushes were deferred", n.page)
	case noteDirtySkip:
		return fmt.Sprintf("pageout of page %d started with tlb_ubc.writable set and no try_to_unmap_flush_dirty", va)
	}
	return "the entry survived every flush so far"
}
