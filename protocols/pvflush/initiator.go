package pvflush

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// stepInitiator takes vCPU0's next step. Each step is one shared access
// (the PTE, one steal_time byte), one IPI send or one ack observed; the
// loop bookkeeping (cursor, flushmask) is local and folds into them.
func (m *machine) stepInitiator(s *state, x *model.Exec) {
	fn := "kvm_flush_tlb_others"
	if m.v.native {
		fn = "native_flush_tlb_others"
	}
	t := int(s.cur)
	switch s.phase {
	case phaseDone:
		x.Done()

	case phaseMap:
		// A later round maps X to a fresh page, so that the next flush
		// has something to protect.
		x.Store(s.mem, pteX, uint64(s.round)+1)
		if x.Recording() {
			x.Call(0, pteOp{Write: true, Value: int(s.round) + 1})
			x.Return(0, nil)
		}
		if x.Labelling() {
			x.Labelf("set_pte_at: map X->P%d", s.round)
		}
		s.phase = phaseZap

	case phaseZap:
		if m.plainClear {
			// The B2(a) model: a plain store with no barrier before the
			// flush reads steal_time; under TSO it can stay in vCPU0's
			// store buffer past those reads.
			var old uint64
			if x.Labelling() {
				old = s.mem.PeekThread(0, pteX) // for the label only
			}
			x.Store(s.mem, pteX, 0)
			if x.Recording() {
				x.Call(0, pteOp{Write: true, Value: 0})
			}
			if x.Labelling() {
				x.Labelf("pte_clear (plain store, no barrier): clear PTE of X (was %s); flush_tlb_mm_range -> %s", pteName(old), fn)
			}
		} else {
			// ptep_get_and_clear is a locked xchg: a full barrier before
			// the flush reads steal_time (pvflush.md B2 note).
			old := x.Xchg(s.mem, pteX, 0)
			if x.Recording() {
				x.Call(0, pteOp{Write: true, Value: 0})
			}
			if x.Labelling() {
				x.Labelf("ptep_get_and_clear: clear PTE of X (was %s); flush_tlb_mm_range -> %s", pteName(old), fn)
			}
		}
		if m.v.native {
			for u := 1; u < m.n; u++ {
				s.mask |= 1 << u
			}
			m.startSend(s)
			return
		}
		s.phase, s.cur = phaseRead, 1

	case phaseRead:
		v := x.Load(s.mem, stAddr(t))
		if v&kvmVCPUPreempted != 0 {
			if x.Labelling() {
				x.Labelf("%s: read st[%d].preempted = %d (PREEMPTED)", fn, t, v)
			}
			s.phase, s.seen = phaseCAS, uint8(v)
			return
		}
		if x.Labelling() {
			x.Labelf("%s: read st[%d].preempted = %d, vCPU%d stays in flushmask", fn, t, v, t)
		}
		s.mask |= 1 << t
		m.nextRead(s)

	case phaseCAS:
		m.stepCAS(s, x, fn, t)
		s.seen = 0
		m.nextRead(s)

	case phaseSend:
		if m.tso {
			// smp_call_function_many queues the csd with llist_add, a
			// locked cmpxchg, before the IPI: vCPU0's store buffer drains
			// (under SC the fence is left out, keeping footprints as
			// they were).
			x.Fence(s.mem)
		}
		s.tg[t].ipi = ipiPending
		x.Touch(m.ipiName[t], true)
		x.Count(metricIPIs, 1)
		if x.Labelling() {
			x.Labelf("native_flush_tlb_others: send call-function IPI to vCPU%d", t)
		}
		if u := nextInMask(s, t+1, m.n); u > 0 {
			s.cur = uint8(u)
			return
		}
		s.phase, s.cur = phaseWait, uint8(nextInMask(s, 1, m.n))

	case phaseWait:
		// csd_lock_wait busy-waits for the ack: a blocked await, not a
		// self-loop, so that the state graph stays acyclic.
		if s.tg[t].ipi != ipiAcked {
			x.Block()
			if x.Labelling() {
				x.Label(m.waitsFor(s))
			}
			return
		}
		s.tg[t].ipi = ipiNone
		s.mask &^= 1 << t
		x.Touch(m.csdName[t], false)
		if x.Labelling() {
			x.Labelf("native_flush_tlb_others: csd_lock_wait: vCPU%d acked", t)
		}
		if u := nextInMask(s, t+1, m.n); u > 0 {
			s.cur = uint8(u)
			return
		}
		s.phase, s.cur = phaseRet, 0

	case phaseRet:
		// The allocator is folded into the return: from here on frame
		// s.round belongs to another process.
		if x.Recording() {
			x.Return(0, nil)
		}
		if x.Labelling() {
			x.Labelf("%s returns; free_page(P%d): the page is reused by another process", fn, s.round)
		}
		s.freed = s.round + 1
		s.round++
		s.phase = phaseDone
		if int(s.round) < m.flushes {
			s.phase = phaseMap
		}
	}
}

// stepCAS is G2b: set FLUSH_TLB in a byte read as PREEMPTED and decide
// whether the target leaves the flushmask.
func (m *machine) stepCAS(s *state, x *model.Exec, fn string, t int) {
	seen := uint64(s.seen)
	want := seen | kvmVCPUFlushTLB
	if m.v.shiftBug {
		want = seen | shiftedFlush
	}
	if m.v.plainStore {
		x.Store(s.mem, stAddr(t), want)
		if x.Labelling() {
			x.Labelf("%s: plain store st[%d].preempted = %d, skip vCPU%d (flush deferred to the host)", fn, t, want, t)
		}
		return
	}
	prev := x.CAS(s.mem, stAddr(t), seen, want)
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
		s.mask |= 1 << t
	}
}

// nextRead moves the PV loop to the next target, or on to
// native_flush_tlb_others with the remaining flushmask.
func (m *machine) nextRead(s *state) {
	if int(s.cur)+1 < m.n {
		s.phase, s.cur = phaseRead, s.cur+1
		return
	}
	m.startSend(s)
}

func (m *machine) startSend(s *state) {
	if u := nextInMask(s, 1, m.n); u > 0 {
		s.phase, s.cur = phaseSend, uint8(u)
		return
	}
	s.phase, s.cur = phaseRet, 0
}

// nextInMask returns the first vCPU >= from in the flushmask, or 0.
func nextInMask(s *state, from, n int) int {
	for u := from; u < n; u++ {
		if s.mask&(1<<u) != 0 {
			return u
		}
	}
	return 0
}
