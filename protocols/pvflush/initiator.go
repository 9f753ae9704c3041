package pvflush

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// stepInitiator takes initiator k's next program step. Each step is one
// shared access (a PTE, the PMD, mm->context.tlb_gen, one steal_time
// byte), one IPI send or one ack observed; the loop bookkeeping (cursor,
// flushmask) is local and folds into them.
func (m *machine) stepInitiator(s *state, k int, x *model.Exec) {
	f := &s.in[k]
	fn := "kvm_flush_tlb_others"
	if m.v.native {
		fn = "native_flush_tlb_others"
	}
	pte := m.pteAddr[k]
	t := int(f.cur)
	switch f.phase {
	case phaseMap:
		// A later round maps X to a fresh page, so that the next flush
		// has something to protect.
		x.Store(s.mem, pte, uint64(f.round)+1)
		if x.Recording() {
			x.Call(k, pteOp{Page: k, Write: true, Value: int(f.round) + 1})
			x.Return(k, nil)
		}
		if x.Labelling() {
			x.Labelf("set_pte_at: map %s", m.nm.tr(k, int8(f.round)))
		}
		f.phase = phaseZap

	case phaseZap:
		m.stepZap(s, k, x)

	case phasePmdClear:
		// free_pgtables -> free_pte_range: pmd_clear is a plain store;
		// pte_free_tlb only queues Q in the mmu_gather (local).
		x.Store(s.mem, m.pmdAddr, 0)
		s.pt = ptUnlinked
		if x.Labelling() {
			how := "tlb_remove_table: Q queued in the table batch"
			if m.v.tablePage {
				how = "tlb_remove_page: Q queued with the pages to free"
			}
			x.Labelf("free_pgtables -> free_pte_range: pmd_clear(pmd of %s); pte_free_tlb(Q) -> %s", m.nm.page(k), how)
		}
		f.phase = phaseGen

	case phaseGen:
		// flush_tlb_mm_range: "This is also a barrier that synchronizes
		// with switch_mm()": a locked RMW, which under TSO drains the
		// store buffer before the flush reads steal_time.
		gen := x.FetchAdd(s.mem, m.genAddr, 1) + 1
		if x.Labelling() {
			x.Labelf("flush_tlb_mm_range: inc_mm_tlb_gen: mm->context.tlb_gen = %d -> %s", gen, fn)
		}
		m.startFlush(s, k)

	case phaseRead:
		v := x.Load(s.mem, m.stAddr[t])
		if v&kvmVCPUPreempted != 0 {
			if x.Labelling() {
				x.Labelf("%s: read st[%d].preempted = %d (PREEMPTED)", fn, t, v)
			}
			f.phase, f.seen = phaseCAS, uint8(v)
			return
		}
		if x.Labelling() {
			x.Labelf("%s: read st[%d].preempted = %d, vCPU%d stays in flushmask", fn, t, v, t)
		}
		f.mask |= 1 << t
		m.nextRead(s, k)

	case phaseCAS:
		m.stepCAS(s, k, x, fn, t)
		f.seen = 0
		m.nextRead(s, k)

	case phaseSend:
		if m.tso {
			// smp_call_function_many queues the csd with llist_add, a
			// locked cmpxchg, before the IPI: the initiator's store
			// buffer drains (under SC the fence is left out, keeping
			// footprints as they were).
			x.Fence(s.mem)
		}
		s.v[t].ipi[k] = ipiPending
		x.Touch(m.ipiName[k][t], true)
		x.Count(metricIPIs, 1)
		if x.Labelling() {
			x.Labelf("native_flush_tlb_others: send call-function IPI to vCPU%d", t)
		}
		if u := m.nextInMask(f, t+1); u >= 0 {
			f.cur = uint8(u)
			return
		}
		f.phase, f.cur = phaseWait, uint8(m.nextInMask(f, 0))

	case phaseWait:
		g := &s.v[t]
		if g.ipi[k] != ipiAcked {
			// Only busy-wait gets here (programReady): one iteration of
			// csd_lock_wait's spin, which reads the csd and changes
			// nothing.
			x.Touch(m.csdName[k][t], false)
			if x.Labelling() {
				x.Labelf("native_flush_tlb_others: csd_lock_wait: no ack from vCPU%d yet, cpu_relax (vCPU%d is %s)", t, t, m.whereIs(s, k))
			}
			return
		}
		g.ipi[k] = ipiNone
		f.mask &^= 1 << t
		x.Touch(m.csdName[k][t], false)
		if x.Labelling() {
			x.Labelf("native_flush_tlb_others: csd_lock_wait: vCPU%d acked", t)
		}
		if u := m.nextInMask(f, t+1); u >= 0 {
			f.cur = uint8(u)
			return
		}
		f.phase, f.cur = phaseRet, 0

	case phaseRet:
		m.stepReturn(s, k, x, fn)
	}
}

// stepZap clears the PTE of page k, the unmap whose flush follows.
func (m *machine) stepZap(s *state, k int, x *model.Exec) {
	f := &s.in[k]
	pte := m.pteAddr[k]
	var old uint64
	switch m.clear {
	case clearLocked:
		// ptep_get_and_clear is a locked xchg.
		old = x.Xchg(s.mem, pte, 0)
	default:
		if x.Labelling() {
			old = s.mem.PeekThread(k, pte) // for the label only
		}
		x.Store(s.mem, pte, 0)
	}
	if x.Recording() {
		x.Call(k, pteOp{Page: k, Write: true, Value: 0})
	}
	if x.Labelling() {
		switch m.clear {
		case clearLocked:
			x.Labelf("ptep_get_and_clear: clear PTE of %s (was %s)", m.nm.page(k), m.nm.pte(k, old))
		case clearPlain:
			x.Labelf("native_local_ptep_get_and_clear (plain store): clear PTE of %s (was %s)", m.nm.page(k), m.nm.pte(k, old))
		default:
			x.Labelf("pte_clear (plain store; hypothetical caller, no barrier before the PV flush): clear PTE of %s (was %s)", m.nm.page(k), m.nm.pte(k, old))
		}
	}
	switch {
	case m.v.walker && k == 0 && int(f.round) == m.flushes-1:
		f.phase = phasePmdClear
	case m.clear == clearNoBarrier:
		// The hypothetical caller enters the PV flush directly, without
		// flush_tlb_mm_range's inc_mm_tlb_gen.
		m.startFlush(s, k)
	default:
		f.phase = phaseGen
	}
}

// startFlush begins kvm_flush_tlb_others (the PV loop over every other
// vCPU in cpu order) or, for native, native_flush_tlb_others with every
// other vCPU in the flushmask.
func (m *machine) startFlush(s *state, k int) {
	f := &s.in[k]
	if m.v.native {
		for u := 0; u < m.n; u++ {
			if u != k {
				f.mask |= 1 << u
			}
		}
		m.startSend(s, k)
		return
	}
	f.phase, f.cur = phaseRead, uint8(m.nextTarget(k, 0))
}

// nextTarget returns the first vCPU >= from that initiator k flushes
// remotely (every vCPU but itself), or -1.
func (m *machine) nextTarget(k, from int) int {
	for u := from; u < m.n; u++ {
		if u != k {
			return u
		}
	}
	return -1
}

// stepCAS is G2b: set FLUSH_TLB in a byte read as PREEMPTED and decide
// whether the target leaves the flushmask.
func (m *machine) stepCAS(s *state, k int, x *model.Exec, fn string, t int) {
	f := &s.in[k]
	seen := uint64(f.seen)
	want := seen | kvmVCPUFlushTLB
	if m.v.shiftBug {
		want = seen | shiftedFlush
	}
	if m.v.plainStore {
		x.Store(s.mem, m.stAddr[t], want)
		if x.Labelling() {
			x.Labelf("%s: plain store st[%d].preempted = %d, skip vCPU%d (flush deferred to the host)", fn, t, want, t)
		}
		return
	}
	prev := x.CAS(s.mem, m.stAddr[t], seen, want)
	ok := prev == seen
	var skip bool
	switch {
	case m.v.alwaysSkip:
		skip = true
	case m.v.uncompared:
		skip = prev != 0 // if (cmpxchg(...)), as posted
	default:
		skip = ok // cmpxchg(...) == state, later try_cmpxchg
	}
	if m.keepAll {
		skip = false
	}
	if x.Labelling() {
		res := "ok"
		if !ok {
			res = fmt.Sprintf("failed (found %d)", prev)
		}
		what := fmt.Sprintf("keep vCPU%d in flushmask", t)
		if skip {
			what = fmt.Sprintf("skip vCPU%d (flush deferred to the host)", t)
		}
		x.Labelf("%s: cmpxchg st[%d].preempted %d->%d %s, %s", fn, t, seen, want, res, what)
	}
	if !skip {
		f.mask |= 1 << t
	}
}

// nextRead moves the PV loop to the next vCPU, or on to
// native_flush_tlb_others with the remaining flushmask.
func (m *machine) nextRead(s *state, k int) {
	f := &s.in[k]
	if u := m.nextTarget(k, int(f.cur)+1); u >= 0 {
		f.phase, f.cur = phaseRead, uint8(u)
		return
	}
	m.startSend(s, k)
}

func (m *machine) startSend(s *state, k int) {
	f := &s.in[k]
	if u := m.nextInMask(f, 0); u >= 0 {
		f.phase, f.cur = phaseSend, uint8(u)
		return
	}
	f.phase, f.cur = phaseRet, 0
}

// nextInMask returns the first vCPU >= from in the flushmask, or -1.
func (m *machine) nextInMask(f *flusher, from int) int {
	for u := from; u < m.n; u++ {
		if f.mask&(1<<u) != 0 {
			return u
		}
	}
	return -1
}

// stepReturn is the flush's return and what tlb_finish_mmu does after it:
// tlb_table_flush hands the page-table page to call_rcu_sched (or, with
// tlb_remove_page, it is freed with the pages), and the data page is
// freed and reused. All of it is local or the allocator's, folded into
// one step.
func (m *machine) stepReturn(s *state, k int, x *model.Exec, fn string) {
	f := &s.in[k]
	if x.Recording() {
		x.Return(k, nil)
	}
	table := ""
	if m.v.walker && s.pt == ptUnlinked && k == 0 {
		if m.v.tablePage {
			s.pt = ptFreed
			table = "page"
		} else {
			table = "rcu"
			s.pt = ptRCU
			// The grace period waits for every vCPU inside an IRQ-off
			// section now (RCU-sched: disabling interrupts holds it
			// off).
			var w uint8
			for u := 0; u < m.n; u++ {
				if s.v[u].walk != 0 {
					w |= 1 << u
				}
			}
			s.gpWait = w
			x.Touch("Q", true)
		}
	}
	if x.Labelling() {
		switch table {
		case "page":
			x.Labelf("%s returns; tlb_flush_mmu_free: free_page(Q) and free_page(%s): the pages are reused", fn, m.nm.frame(k, int8(f.round)))
		case "rcu":
			x.Labelf("%s returns; tlb_table_flush: call_rcu_sched(Q); free_page(%s): the page is reused by another process", fn, m.nm.frame(k, int8(f.round)))
		default:
			x.Labelf("%s returns; free_page(%s): the page is reused by another process", fn, m.nm.frame(k, int8(f.round)))
		}
	}
	s.freed[k] = f.round + 1
	f.round++
	f.phase = phaseDone
	if int(f.round) < m.flushes {
		f.phase = phaseMap
	}
}

// stepRCU is the RCU-sched grace period that ends after call_rcu_sched(Q)
// once every vCPU that was in an IRQ-off section has left it; its
// callback, tlb_remove_table_rcu, frees Q.
func (m *machine) stepRCU(s *state, x *model.Exec) {
	if s.pt != ptRCU {
		x.Done()
		return
	}
	if s.gpWait != 0 {
		x.Block()
		if x.Labelling() {
			var u int
			for u = 0; s.gpWait&(1<<u) == 0; u++ {
			}
			x.Labelf("rcu_sched grace period: waits for vCPU%d to leave its IRQ-off section", u)
		}
		return
	}
	s.pt = ptFreed
	x.Touch("Q", true)
	x.Label("rcu_sched grace period ends -> tlb_remove_table_rcu: free_page(Q)")
}
