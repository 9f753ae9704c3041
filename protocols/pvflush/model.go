package pvflush

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// machine is one instance of the protocol: a variant at a size.
type machine struct {
	v         variant
	n         int // vCPUs: vCPU0 is the initiator, 1..n-1 are targets
	flushes   int
	preempt   int
	accesses  int
	names     []string
	init      *state
	staleSeam bool // test-only: when true, uses of stale translations are not asserted (spec_test.go)
	// tso: x86-TSO memory (param memory=1); Protocol.New wraps the
	// machine in model.WithTSO.
	tso bool
	// plainClear: vCPU0 clears the PTE with a plain store instead of
	// ptep_get_and_clear's locked xchg (param pte-clear=1).
	plainClear bool
}

// memOf is the memory of a state, for model.WithTSO.
func memOf(s model.State) *model.Mem { return &s.(*state).mem }

func newMachine(v variant, p model.Params) *machine {
	m := &machine{v: v, n: p["vcpus"], flushes: p["flushes"], preempt: p["preemptions"], accesses: p["accesses"],
		tso: p["memory"] == 1, plainClear: p["pte-clear"] == 1}
	m.names = []string{"vCPU0 (initiator)"}
	words := []string{"pte[X]"}
	buffers := []string{"vCPU0"}
	for t := 1; t < m.n; t++ {
		m.names = append(m.names, fmt.Sprintf("vCPU%d", t))
		words = append(words, fmt.Sprintf("st[%d].preempted", t))
		buffers = append(buffers, fmt.Sprintf("vCPU%d", t))
	}
	s := &state{mem: model.NewMem(words...), phase: phaseZap, preempt: uint8(m.preempt), n: uint8(m.n)}
	if m.tso {
		s.mem.EnableTSO(buffers...)
	}
	// X starts mapped to frame 0 (P0); every target starts in guest mode
	// with an empty TLB and steal_time.preempted = 0.
	s.mem.Init(pteX, 1)
	for t := 1; t < m.n; t++ {
		s.tg[t] = target{mode: modeGuest, tlb: -1, inflight: -1, left: uint8(m.accesses)}
	}
	m.init = s
	return m
}

func (m *machine) Threads() []string { return m.names }
func (m *machine) Init() model.State { return m.init.Clone() }
func (m *machine) Metrics() []string { return []string{WaitSteps, IPIs} }
func (m *machine) Spec() *model.Spec { return pteSpec }
func (m *machine) Invariants() []model.Invariant {
	return []model.Invariant{{Name: FlagShape, Check: m.flagShape}}
}

// flagShape is B-S2. Bits outside the ABI (bit 2 of the shift bug) are
// allowed next to PREEMPTED: the host clears the whole byte and
// vcpu_is_preempted's whole-byte test (cmpb $0) still agrees with the
// PREEMPTED bit, so such a byte is harmless by itself; the harm of the
// shift bug is the flush the host never performs, which stale-tlb reports.
func (m *machine) flagShape(ms model.State) string {
	s := ms.(*state)
	for t := 1; t < m.n; t++ {
		b := s.mem.Peek(stAddr(t))
		if b != 0 && b&kvmVCPUPreempted == 0 {
			if b&kvmVCPUFlushTLB != 0 {
				return fmt.Sprintf("st[%d].preempted = %d: FLUSH_TLB is set but PREEMPTED is not, so vCPU%d's host will never see the flush request", t, b, t)
			}
			return fmt.Sprintf("st[%d].preempted = %d has bits set without PREEMPTED: vcpu_is_preempted (cmpb $0) calls running vCPU%d preempted", t, b, t)
		}
	}
	return ""
}

// Target actions, in the order Enabled lists them as alternatives.
const (
	actAccess   = iota // guest: access X through the TLB (miss: walk and fill)
	actEmulate         // guest: an instruction accessing X exits to KVM's emulator
	actTakeIPI         // guest: flush_tlb_func flushes the TLB
	actAck             // guest: flush_tlb_func done, csd unlock
	actPreempt         // host scheduler preempts H_t (from guest: interrupt exit + vcpu_put)
	actSchedIn         // kvm_sched_in: vcpu_load
	actHost            // the next step of H_t in KVM_RUN
	actHostFail        // early-entry: record_steal_time fails its cache refresh
)

// actions appends the actions target t can take in s.
func (m *machine) actions(s *state, t int, buf []int) []int {
	g := &s.tg[t]
	switch g.mode {
	case modeGuest:
		if g.left > 0 && g.ipi != ipiHandler {
			buf = append(buf, actAccess, actEmulate)
		}
		switch g.ipi {
		case ipiPending:
			buf = append(buf, actTakeIPI)
		case ipiHandler:
			buf = append(buf, actAck)
		}
	case modeHost:
		buf = append(buf, actHost)
		if m.v.earlyEntry && g.inflight < 0 && !g.rsFlush && !g.rsWrite && g.req {
			buf = append(buf, actHostFail)
		}
	case modeDesched:
		return append(buf, actSchedIn)
	}
	if s.preempt > 0 {
		buf = append(buf, actPreempt)
	}
	return buf
}

// initiatorEnabled: vCPU0 can step unless it is done or busy-waits for an
// ack that has not come. The busy-wait is a blocked await, not a
// self-loop, so that the state graph stays acyclic.
func (m *machine) initiatorEnabled(s *state) bool {
	switch s.phase {
	case phaseDone:
		return false
	case phaseWait:
		return s.tg[s.cur].ipi == ipiAcked
	}
	return true
}

func (m *machine) Enabled(ms model.State, buf []model.Choice) []model.Choice {
	s := ms.(*state)
	if m.initiatorEnabled(s) {
		buf = append(buf, model.Choice{Thread: 0})
	}
	var acts [8]int
	for t := 1; t < m.n; t++ {
		for i := range m.actions(s, t, acts[:0]) {
			buf = append(buf, model.Choice{Thread: t, Alt: i})
		}
	}
	return buf
}

func (m *machine) Step(ms model.State, c model.Choice, x *model.Exec) model.State {
	s := ms.(*state)
	n := s.Clone().(*state)
	// wait-steps: vCPU0 is busy-waiting for the ack of a target that is
	// scheduled out, whoever takes this step.
	if s.phase == phaseWait && s.tg[s.cur].ipi != ipiAcked && s.tg[s.cur].mode == modeDesched {
		x.Count(metricWait, 1)
	}
	if c.Thread == 0 {
		m.stepInitiator(n, x)
		return n
	}
	var acts [8]int
	as := m.actions(s, c.Thread, acts[:0])
	if c.Alt < 0 || c.Alt >= len(as) {
		x.Fail("model", "vCPU%d has no alternative %d", c.Thread, c.Alt)
		return n
	}
	m.stepTarget(n, c.Thread, as[c.Alt], x)
	return n
}

func (m *machine) Status(ms model.State, t int) model.Status {
	s := ms.(*state)
	if t == 0 {
		if s.phase == phaseDone {
			return model.Status{Done: true}
		}
		if s.phase == phaseWait {
			g := &s.tg[s.cur]
			where := "IPI not yet taken"
			switch {
			case g.mode == modeDesched:
				where = "scheduled out by the host"
			case g.mode == modeHost:
				where = "in host mode"
			case g.ipi == ipiHandler:
				where = "inside flush_tlb_func"
			}
			return model.Status{WaitsFor: fmt.Sprintf("csd_lock_wait: the ack of vCPU%d's flush_tlb_func (vCPU%d is %s)", s.cur, s.cur, where)}
		}
		return model.Status{}
	}
	g := &s.tg[t]
	if g.mode == modeGuest && g.left == 0 && (g.ipi == ipiNone || g.ipi == ipiAcked) {
		return model.Status{Done: true}
	}
	return model.Status{}
}
