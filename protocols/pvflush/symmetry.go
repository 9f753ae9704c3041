package pvflush

import (
	"bytes"
	"encoding/binary"

	"github.com/protocheck/protocheck/model"
)

// Symmetry reduction (model.Symmetric): two symmetries, one for each
// number of initiators. The walker variants have none (the walker walks
// X0's table, which only vCPU0 frees, and the grace period's set gpWait
// names vCPUs by id); their canonical key is the key.
//
// # One initiator: free targets
//
// The targets vCPU1..n-1 run the same program, but the machine as a whole
// is not symmetric under every permutation of them: vCPU0 visits its
// targets in id order (the PV loop reads st[1], st[2], ...; the IPIs are
// sent and their acks awaited in flushmask order). Swapping the records of
// targets 1 and 2 before the loop changes which record is read first, and
// nothing relates the two futures step by step. So the canonical form
// permutes only the targets that vCPU0 will never refer to again, the
// free targets F(s):
//
//   - while another flush round follows (round < flushes-1), or in the
//     last round before the loop starts (map, zap, inc-tlb-gen): none,
//     since vCPU0 will visit every target in id order;
//   - in the PV loop of the last round (read, cmpxchg at cur): the targets
//     below cur that are not in the flushmask (skipped: their flush was
//     deferred to the host). Targets from cur on will be read in order,
//     and the ones in the flushmask will be sent IPIs and awaited;
//   - from send-ipi on in the last round (send-ipi, wait-ack, return,
//     done): the targets not in the flushmask. Those in it are the ones
//     still to be sent an IPI or awaited (a wait clears the bit).
//
// F(s) is a function of vCPU0's control state (phase, cur, round, mask),
// which the key keeps verbatim, so two states with equal keys have the
// same F; the non-free targets are kept at their ids and the free ones'
// records (every per-target word: st[t].preempted, mode, IPI state, TLB,
// in-flight translation, host copy, host flags, accesses left) are sorted.
// Equal keys therefore mean s2 = π(s1) for a permutation π of F(s1) that
// fixes every other target.
//
// Why such a π is a symmetry of everything reachable from s1: (1) a
// target's steps read and write only its own record, its own st word, the
// PTE (loads), the shared preemption budget and the observer freed, all
// either per-target or global, so π maps a step of t to the same step of
// π(t) with the same label up to the name, the same assertion outcome
// (stale-tlb depends only on the frame used and freed) and the same
// events; (2) vCPU0's steps touch only cur and the flushmask members,
// which π fixes, and the global words; the wait-steps metric looks at
// vCPU cur only, and cur is never free; (3) F only grows along every
// transition (the loop moves cur forward and only adds to the flushmask
// targets at or after cur; sending keeps the mask; a wait removes a
// target; return ends the last round), so π keeps permuting only free
// targets in every successor. Hence the relation {(s, π(s))} is a
// bisimulation that preserves enabledness (deadlock), the invariants
// flag-shape and preempted-not-running (statements about every target),
// step assertions and metric deltas. Linearizability is a path property
// that bfs and dfs do not check; counterexamples remain real executions
// of the machine.
//
// # Two initiators: the swap
//
// vCPU0 and vCPU1 run the same program on their own pages, and swapping
// them (vCPU0 <-> vCPU1, X0 <-> X1 with their frames, st[0] <-> st[1],
// each vCPU's per-initiator fields ipi[k] and tlb[k], its in-flight
// page) maps every state to one that behaves the same: each initiator's
// PV loop reads the other initiator first and then the targets (ids 2 and
// up) in id order, and sends and waits in flushmask order, so the swap
// maps initiator 0's next step onto initiator 1's and back; targets treat
// the two pages and the two IPIs alike; the preemption budget, tlb_gen,
// the invariants and the metrics are sums or "for every" over vCPUs and
// pages. A step of the swapped state is the swapped step (its
// alternative may be numbered differently: the pages' order in a
// target's draw is fixed), with the same assertion outcome and metric
// deltas, so {(s, swap(s))} is a bisimulation, and the canonical key is
// the smaller of the keys of s and swap(s).

// freeTargets returns F(s) as a bit set over vCPU ids (bit t: vCPU t).
// It is empty with two initiators (their symmetry is the swap) and in the
// walker variants.
func (m *machine) freeTargets(s *state) uint16 {
	if m.ni > 1 || m.v.walker {
		return 0
	}
	f0 := &s.in[0]
	if int(f0.round) < m.flushes-1 {
		return 0
	}
	var below int // targets 1..below-1 outside the mask are free
	switch f0.phase {
	case phaseMap, phaseZap, phasePmdClear, phaseGen:
		return 0
	case phaseRead, phaseCAS:
		below = int(f0.cur)
	default: // phaseSend, phaseWait, phaseRet, phaseDone
		below = m.n
	}
	var f uint16
	for t := 1; t < below; t++ {
		if f0.mask&(1<<t) == 0 {
			f |= 1 << t
		}
	}
	return f
}

// recordBytes bounds a target's record: its steal_time byte and its
// packed vcpu fields.
const recordBytes = 1 + 4

// targetRecord is the encoding of everything indexed by target t.
type targetRecord [recordBytes]byte

func (m *machine) record(s *state, t int) targetRecord {
	var r targetRecord
	r[0] = byte(s.mem.Peek(m.stAddr[t]))
	v, _ := m.lay.vcpuWord(&s.v[t])
	for i := 1; i < recordBytes; i++ {
		r[i] = byte(v >> (8 * (i - 1)))
	}
	return r
}

func (r targetRecord) less(o targetRecord) bool {
	for i := range r {
		if r[i] != o[i] {
			return r[i] < o[i]
		}
	}
	return false
}

// CanonicalKey implements model.Symmetric. Symmetry is offered under
// sequential consistency only (model.WithTSO does not pass it on), where
// the memory is just its words.
func (m *machine) CanonicalKey(ms model.State, b []byte) []byte {
	s := ms.(*state)
	switch {
	case m.v.walker:
		return s.AppendKey(b)
	case m.ni > 1:
		start := len(b)
		b = s.AppendKey(b)
		mid := len(b)
		b = m.appendSwapped(b, s)
		if bytes.Compare(b[mid:], b[start:mid]) < 0 {
			copy(b[start:mid], b[mid:])
		}
		return b[:mid]
	}
	return m.freeKey(s, b)
}

// freeKey is the one-initiator canonical key: the words that belong to no
// target (the PTE, tlb_gen) and the globals and initiator verbatim, the
// non-free targets' records at their ids, then the free targets' records
// in sorted order.
func (m *machine) freeKey(s *state, b []byte) []byte {
	f := m.freeTargets(s)
	b = append(b, byte(s.mem.Peek(m.pteAddr[0])), byte(s.mem.Peek(m.genAddr)))
	w := bitWriter{b: b}
	m.lay.putGlobals(&w, s)
	putFlusher(&w, &s.in[0])
	b = w.done()
	var free [maxVCPUs]targetRecord
	n := 0
	for t := m.lay.first(); t < m.n; t++ {
		r := m.record(s, t)
		if f&(1<<t) == 0 {
			b = append(b, r[:]...)
			continue
		}
		// Insertion sort: at most maxVCPUs-1 records.
		i := n
		for ; i > 0 && r.less(free[i-1]); i-- {
			free[i] = free[i-1]
		}
		free[i] = r
		n++
	}
	for _, r := range free[:n] {
		b = append(b, r[:]...)
	}
	return b
}

// swapID maps a vCPU id under the swap of the two initiators.
func swapID(t int) int {
	if t < 2 {
		return 1 - t
	}
	return t
}

// swapFlusher is initiator f under the swap: cur names a vCPU only in the
// phases that use it (read to wait-ack); elsewhere it is 0 in every
// state, and stays 0.
func swapFlusher(f flusher) flusher {
	if f.phase >= phaseRead && f.phase <= phaseWait {
		f.cur = uint8(swapID(int(f.cur)))
	}
	f.mask = swapMask(f.mask)
	return f
}

// swapMask swaps bits 0 and 1 of a set of vCPUs.
func swapMask(m uint8) uint8 { return m&^3 | m&1<<1 | m>>1&1 }

// appendSwapped appends the key AppendKey gives the swapped state, without
// building it: the same layout, every index mapped.
func (m *machine) appendSwapped(b []byte, s *state) []byte {
	// The memory (SC): pte[X1], pte[X0], tlb_gen, st[1], st[0], st[2]...
	b = binary.AppendUvarint(b, s.mem.Peek(m.pteAddr[1]))
	b = binary.AppendUvarint(b, s.mem.Peek(m.pteAddr[0]))
	b = binary.AppendUvarint(b, s.mem.Peek(m.genAddr))
	for t := 0; t < m.n; t++ {
		b = binary.AppendUvarint(b, s.mem.Peek(m.stAddr[swapID(t)]))
	}
	w := bitWriter{b: b}
	w.put(uint64(s.preempt)|uint64(s.freed[1])<<4|uint64(s.freed[0])<<(4+bitsFrame), 4+2*bitsFrame)
	if m.lay.uexits {
		w.put(uint64(s.uexit), bitsUexit)
	}
	for k := 0; k < 2; k++ {
		f := swapFlusher(s.in[1-k])
		putFlusher(&w, &f)
	}
	for t := 0; t < m.n; t++ {
		g := s.v[swapID(t)]
		g.ipi[0], g.ipi[1] = g.ipi[1], g.ipi[0]
		g.tlb[0], g.tlb[1] = g.tlb[1], g.tlb[0]
		if g.inflight >= 0 {
			g.inflightPage = 1 - g.inflightPage
		}
		m.lay.putVCPU(&w, &g)
	}
	return w.done()
}
