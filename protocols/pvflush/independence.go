package pvflush

import "github.com/protocheck/protocheck/model"

// Partial-order reduction (model.Independence).
//
// The explorer asks only about steps of different threads whose
// footprints do not conflict, so the memory words (the PTE, st[t]) and the
// touched objects (TLB(t), "IPI vCPUt", "csd vCPUt") are already covered.
// What footprints cannot see is the state kept outside the memory layer:
//
//   - the preemption budget s.preempt, decremented by every preemption and
//     tested by every target's step (whether it can be preempted);
//   - the observer freed, written by vCPU0's return step and read by every
//     use of a translation (the stale-tlb assertion);
//   - vCPU0's control state (phase, cur, mask), which decides the
//     wait-steps metric of every step (vCPU0 waits for vCPU cur, which is
//     scheduled out), and vCPU cur's ipi, which vCPU0's send-ipi step sets
//     to pending (a new alternative of vCPU cur) and its wait step resets;
//   - the alternative numbering: a target's step draws among the list
//     actions builds from its own record and from s.preempt > 0 (the
//     preemption is always the last alternative).
//
// Only the machine with one initiator, no walker, no spin and no return
// to userspace (user-exits=0) is analysed
// (every pair of anything else is dependent, which is always sound).
// Independent returns true only for pairs for which none of these can
// tell the order apart. Two target steps (t != u) read and write only
// their own records, plus the budget and freed: they commute unless both
// are preemptions with fewer than two left (the second would be
// disabled), or vCPU0 is waiting for one of them and that step schedules
// it out or back in (the other step's wait-steps delta would differ).
// vCPU0's steps commute with a target step when footprints do and:
//
//   - map, zap, inc-tlb-gen, read, cmpxchg: always. They lead to zap,
//     inc-tlb-gen, read, cmpxchg, send-ipi or return, never to wait-ack,
//     so wait-steps stays 0 in either order, and they change no target's
//     record.
//   - send-ipi to cur: not with a step of cur (its alternatives change);
//     with another target only when it is not the last send (the last one
//     starts the wait, which can switch wait-steps on).
//   - wait-ack (enabled only once vCPU cur acked, so wait-steps is 0 at
//     s): only when it is the last wait (it leads to return); a wait that
//     moves on to the next target can switch wait-steps on. Resetting
//     cur's ipi from acked to none changes none of cur's alternatives.
//   - return: not with a step that uses a translation (a guest access, or
//     the completion of an emulated one), whose stale-tlb outcome depends
//     on freed.
//
// Sleep sets and symmetry. With Options.Symmetry, dfs stores a state's
// sleep set under its canonical key as choices of the representative it
// first met, and applies them on a later visit to whichever member of the
// orbit it meets then. A choice of a free target (symmetry.go) names a
// different step in another member of the orbit (the permutation moves
// that target), so a sleep set holding one could skip a step that was
// never taken. Independent therefore never puts a free target to sleep:
// it returns false when either step is by a target that is free in s or
// in the successor (vCPU0's cmpxchg that skips cur, or its wait that
// retires cur, frees cur). Sleep sets then hold only choices of vCPU0 and
// of non-free targets, which every permutation of the orbit fixes, so the
// stored choices mean the same steps in every member. The price is no
// reduction among free targets (mostly after the last round's flush
// returned); see the report in independence_test.go.
//
// independence_test.go checks each promise (both orders enabled, equal
// keys, labels, footprints, assertions, events and metric deltas) on
// every pair this returns true for, at every reachable state.
func (m *machine) Independent(ms model.State, a, b model.Choice) bool {
	s := ms.(*state)
	// Only the one-initiator machine without a walker or a spin is
	// analysed; anything else is dependent, which is always sound.
	if m.ni > 1 || m.v.walker || m.v.busyWait || m.uexits > 0 {
		return false
	}
	if a.Thread == b.Thread {
		return false
	}
	if b.Thread == 0 {
		a, b = b, a
	}
	// Never a free target (symmetry.go), nor one the initiator's step
	// may free (a cmpxchg that skips cur, a wait that retires it): see
	// "Sleep sets and symmetry" above.
	f0 := &s.in[0]
	free := m.freeTargets(s)
	if a.Thread == 0 && (f0.phase == phaseCAS || f0.phase == phaseWait) && int(f0.round) >= m.flushes-1 {
		free |= 1 << f0.cur
	}
	if free&(1<<b.Thread) != 0 || a.Thread != 0 && free&(1<<a.Thread) != 0 {
		return false
	}
	bact, ok := m.action(s, b)
	if !ok {
		return false
	}
	if a.Thread == 0 {
		return m.initiatorCommutes(s, b.Thread, bact)
	}
	aact, ok := m.action(s, a)
	if !ok {
		return false
	}
	if aact == actPreempt && bact == actPreempt && s.preempt < 2 {
		return false
	}
	if f0.phase == phaseWait && (m.togglesWait(s, a.Thread, aact) || m.togglesWait(s, b.Thread, bact)) {
		return false
	}
	return true
}

// action returns the action kind of target choice c in s: the
// alternative c.Alt of its step's draw.
func (m *machine) action(s *state, c model.Choice) (int, bool) {
	if c.Thread <= 0 || c.Thread >= m.n {
		return 0, false
	}
	var buf [maxActions]action
	as := m.actions(s, c.Thread, buf[:0])
	if c.Alt < 0 || c.Alt >= len(as) {
		return 0, false
	}
	return as[c.Alt].kind(), true
}

// togglesWait reports whether action act of target t can change whether
// vCPU0 is waiting for a scheduled-out target (the wait-steps metric):
// only by scheduling out or in the target vCPU0 waits for.
func (m *machine) togglesWait(s *state, t, act int) bool {
	return t == int(s.in[0].cur) && (act == actPreempt || act == actSchedIn)
}

// initiatorCommutes reports whether vCPU0's next step commutes with
// action act of target t in s (given disjoint footprints).
func (m *machine) initiatorCommutes(s *state, t, act int) bool {
	f0 := &s.in[0]
	switch f0.phase {
	case phaseMap, phaseZap, phaseGen, phaseRead, phaseCAS:
		return true
	case phaseSend:
		return t != int(f0.cur) && m.nextInMask(f0, int(f0.cur)+1) >= 0
	case phaseWait:
		return m.nextInMask(f0, int(f0.cur)+1) < 0
	case phaseRet:
		return !m.usesTranslation(s, t, act)
	}
	return false
}

// usesTranslation reports whether action act of target t accesses X
// through a translation (and so asserts stale-tlb against freed).
func (m *machine) usesTranslation(s *state, t, act int) bool {
	switch act {
	case actAccess:
		return true
	case actHost:
		return s.v[t].inflight >= 0
	}
	return false
}
