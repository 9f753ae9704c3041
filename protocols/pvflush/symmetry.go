package pvflush

import "github.com/protocheck/protocheck/model"

// Symmetry reduction (model.Symmetric).
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
//     last round before the loop starts (map, zap): none, since vCPU0
//     will visit every target in id order;
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
// tg[cur] only, and cur is never free; (3) F only grows along every
// transition (the loop moves cur forward and only adds to the flushmask
// targets at or after cur; sending keeps the mask; a wait removes a
// target; return ends the last round), so π keeps permuting only free
// targets in every successor. Hence the relation {(s, π(s))} is a
// bisimulation that preserves enabledness (deadlock), the invariant
// flag-shape (a statement about every target), step assertions and
// metric deltas. Linearizability is a path property that bfs and dfs do
// not check; counterexamples remain real executions of the machine.

// freeTargets returns F(s) as a bit set over vCPU ids (bit t: vCPU t).
func (m *machine) freeTargets(s *state) uint16 {
	if int(s.round) < m.flushes-1 {
		return 0
	}
	var below int // targets 1..below-1 outside the mask are free
	switch s.phase {
	case phaseMap, phaseZap:
		return 0
	case phaseRead, phaseCAS:
		below = int(s.cur)
	default: // phaseSend, phaseWait, phaseRet, phaseDone
		below = m.n
	}
	var f uint16
	for t := 1; t < below; t++ {
		if s.mask&(1<<t) == 0 {
			f |= 1 << t
		}
	}
	return f
}

// targetRecord is the encoding of everything indexed by target t: its
// steal_time byte and its packed record (state.go).
type targetRecord [1 + targetBytes]byte

func (s *state) record(t int) targetRecord {
	g := s.tg[t].pack()
	return targetRecord{byte(s.mem.Peek(stAddr(t))), g[0], g[1], g[2]}
}

func (r targetRecord) less(o targetRecord) bool {
	for i := range r {
		if r[i] != o[i] {
			return r[i] < o[i]
		}
	}
	return false
}

// CanonicalKey implements model.Symmetric: the PTE and vCPU0's state
// verbatim, the non-free targets' records at their ids, then the free
// targets' records in sorted order (see the comment above). Symmetry is
// offered under sequential consistency only, where the memory is just
// these words (every value below 256).
func (m *machine) CanonicalKey(ms model.State, b []byte) []byte {
	s := ms.(*state)
	f := m.freeTargets(s)
	b = append(b, byte(s.mem.Peek(pteX)))
	b = s.appendInitiator(b)
	var free [maxVCPUs]targetRecord
	k := 0
	for t := 1; t < m.n; t++ {
		r := s.record(t)
		if f&(1<<t) == 0 {
			b = append(b, r[:]...)
			continue
		}
		// Insertion sort: at most maxVCPUs-1 records.
		i := k
		for ; i > 0 && r.less(free[i-1]); i-- {
			free[i] = free[i-1]
		}
		free[i] = r
		k++
	}
	for _, r := range free[:k] {
		b = append(b, r[:]...)
	}
	return b
}
