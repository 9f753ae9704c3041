package pvflush

import "github.com/protocheck/protocheck/model"

// The lockless page-table walker of B11: get_user_pages_fast
// (mm/gup.c) on a vCPU that is not an initiator, walking X (X0 with two
// initiators), whose page-table page Q vCPU0's last unmap frees.
//
//	local_irq_disable();            // blocks the IPIs of a native flush
//	gup_pmd_range: pmd = READ_ONCE(*pmdp); if (pmd_none(pmd)) return 0;
//	gup_pte_range: ptep = pte_offset_map(&pmd, addr);   // into Q
//	               pte = READ_ONCE(*ptep);               // reads Q
//	               if (!pte_present(pte)) goto pte_unmap;
//	               page_cache_get_speculative(page);
//	               if (pte_val(pte) != pte_val(*ptep))   // reads Q again
//	                       put_page(page);
//	local_irq_enable();
//
// Steps: local_irq_disable folds into the PMD read (nothing shared
// happens between them, and an IPI taken just before the disable is the
// same as one taken before the walk); the PTE read; the speculative
// reference and the re-check (the reference is on the data page, which
// the model does not track: a walk that read a present PTE pins the page
// it names, so that page is not reused under it); local_irq_enable. The
// host may preempt the vCPU between any two of them, which is the point:
// a vCPU preempted with interrupts off is reported PREEMPTED and the PV
// flush skips it, where a native flush would wait for its ack, which
// comes only after local_irq_enable.
const (
	walkPTE     uint8 = 1 + iota // interrupts off, PMD read: next, read the PTE from Q
	walkRecheck                  // next, pin the page and re-read the PTE from Q
	walkIRQOn                    // next, local_irq_enable
)

var walkNames = [...]string{"-", "IRQs off, next: read PTE from Q", "IRQs off, next: pin page, re-read PTE from Q", "IRQs off, next: local_irq_enable"}

// stepWalk is vCPU t's next step of get_user_pages_fast (the first one
// when it is outside).
func (m *machine) stepWalk(s *state, t int, x *model.Exec) {
	g := &s.v[t]
	switch g.walk {
	case 0:
		g.left--
		pmd := x.Load(s.mem, m.pmdAddr)
		if pmd == 0 {
			g.walk = walkIRQOn
			if x.Labelling() {
				x.Labelf("get_user_pages_fast: local_irq_disable; gup_pmd_range: READ_ONCE(pmd of %s) = none, fall back to the slow path", m.nm.page(0))
			}
			return
		}
		g.walk = walkPTE
		if x.Labelling() {
			x.Labelf("get_user_pages_fast: local_irq_disable; gup_pmd_range: READ_ONCE(pmd of %s) = Q", m.nm.page(0))
		}

	case walkPTE:
		v := x.Load(s.mem, m.pteAddr[0])
		if m.readFreedTable(s, t, x, "READ_ONCE(pte)") {
			return
		}
		if v == 0 {
			g.walk = walkIRQOn
			if x.Labelling() {
				x.Labelf("gup_pte_range: READ_ONCE(pte of %s) in Q: not present, goto pte_unmap", m.nm.page(0))
			}
			return
		}
		g.walk, g.walkPTE = walkRecheck, uint8(v)
		if x.Labelling() {
			x.Labelf("gup_pte_range: READ_ONCE(pte of %s) in Q: %s", m.nm.page(0), m.nm.pte(0, v))
		}

	case walkRecheck:
		v := x.Load(s.mem, m.pteAddr[0])
		if m.readFreedTable(s, t, x, "re-check of the pte") {
			return
		}
		same := v == uint64(g.walkPTE)
		if x.Labelling() {
			if same {
				x.Labelf("gup_pte_range: page_cache_get_speculative(%s); pte_val(pte) == pte_val(*ptep) in Q: page pinned", m.nm.frame(0, int8(g.walkPTE-1)))
			} else {
				x.Labelf("gup_pte_range: page_cache_get_speculative(%s); pte changed in Q (now %s): put_page", m.nm.frame(0, int8(g.walkPTE-1)), m.nm.pte(0, v))
			}
		}
		g.walk, g.walkPTE = walkIRQOn, 0

	case walkIRQOn:
		g.walk = 0
		s.gpWait &^= 1 << t
		x.Label("get_user_pages_fast: local_irq_enable (pending IPIs and the RCU-sched grace period may proceed)")
	}
}

// readFreedTable asserts B11 at a read through Q: it reports (and fails
// pt-use-after-free) when Q has been freed.
func (m *machine) readFreedTable(s *state, t int, x *model.Exec, what string) bool {
	if s.pt != ptFreed {
		return false
	}
	if x.Labelling() {
		x.Labelf("gup_pte_range: %s in Q, which has been freed", what)
	}
	x.Fail(PTUseAfterFree, "vCPU%d's get_user_pages_fast (%s) read page-table page Q after vCPU0 freed it: the walker, inside its IRQ-off section, held Q across the flush that unlinked it", t, what)
	return true
}
