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
	words     []string // the shared words of model.Mem
	buffers   []string // under TSO, the store buffers' names
	props     model.Properties
	staleSeam bool // test-only: when true, uses of stale translations are not asserted (spec_test.go)
	// tso: x86-TSO memory (param memory=1); Protocol.New wraps the
	// machine in model.WithTSO.
	tso bool
	// plainClear: vCPU0 clears the PTE with a plain store instead of
	// ptep_get_and_clear's locked xchg (param pte-clear=1).
	plainClear bool
	// The objects steps Touch, by vCPU id, named once here so that a
	// step formats nothing.
	tlbName, ipiName, csdName [maxVCPUs]string
}

// memOf is the memory of a state, for model.WithTSO.
func memOf(s model.State) *model.Mem { return &s.(*state).mem }

func newMachine(v variant, p model.Params) *machine {
	m := &machine{v: v, n: p["vcpus"], flushes: p["flushes"], preempt: p["preemptions"], accesses: p["accesses"],
		tso: p["memory"] == 1, plainClear: p["pte-clear"] == 1}
	m.names = []string{"vCPU0 (initiator)"}
	m.words = []string{"pte[X]"}
	m.buffers = []string{"vCPU0"}
	for t := 1; t < m.n; t++ {
		m.names = append(m.names, fmt.Sprintf("vCPU%d", t))
		m.words = append(m.words, fmt.Sprintf("st[%d].preempted", t))
		m.buffers = append(m.buffers, fmt.Sprintf("vCPU%d", t))
		m.tlbName[t] = fmt.Sprintf("TLB(vCPU%d)", t)
		m.ipiName[t] = fmt.Sprintf("IPI vCPU%d", t)
		m.csdName[t] = fmt.Sprintf("csd vCPU%d", t)
	}
	m.props = model.Properties{
		Invariants: []model.Invariant{{Name: FlagShape, Check: m.flagShape}},
		Metrics:    []string{WaitSteps, IPIs},
		Spec:       pteSpec,
	}
	return m
}

func (m *machine) Threads() []string            { return m.names }
func (m *machine) Properties() model.Properties { return m.props }

// Init builds the initial state: X maps frame 0 (P0); every target is in
// guest mode with an empty TLB and steal_time.preempted = 0.
func (m *machine) Init() model.State {
	s := &state{mem: model.NewMem(m.words...), phase: phaseZap, preempt: uint8(m.preempt), n: uint8(m.n)}
	if m.tso {
		s.mem.EnableTSO(m.buffers...)
	}
	s.mem.Init(pteX, 1)
	for t := 1; t < m.n; t++ {
		s.tg[t] = target{mode: modeGuest, tlb: -1, inflight: -1, left: uint8(m.accesses)}
	}
	return s
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

// Target actions, in the order of the alternatives a target's step draws
// among.
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

// maxActions bounds the actions a target has in one state.
const maxActions = 4

// actions appends the actions target t can take in s, in alternative
// order.
func (m *machine) actions(s *state, t int, buf []uint8) []uint8 {
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

// Step implements model.Machine. vCPU0's step is its next action (or a
// block on the ack it busy-waits for); a target's step draws one of the
// actions it can take, and a target with none has nothing left to do
// (an IPI may still give it one later).
func (m *machine) Step(ms model.State, t int, x *model.Exec) {
	s := ms.(*state)
	// wait-steps: vCPU0 is busy-waiting for the ack of a target that is
	// scheduled out, whoever takes this step (judged before it).
	waiting := s.phase == phaseWait && s.tg[s.cur].ipi != ipiAcked && s.tg[s.cur].mode == modeDesched
	if t == 0 {
		m.stepInitiator(s, x)
	} else {
		var buf [maxActions]uint8
		as := m.actions(s, t, buf[:0])
		switch len(as) {
		case 0:
			x.Done()
			return
		case 1:
			m.stepTarget(s, t, int(as[0]), x)
		default:
			m.stepTarget(s, t, int(as[x.Choose(len(as))]), x)
		}
	}
	if waiting && x.Outcome() == model.Stepped {
		x.Count(metricWait, 1)
	}
}

// waitsFor is what vCPU0 waits for in csd_lock_wait: the deadlock text.
func (m *machine) waitsFor(s *state) string {
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
	return fmt.Sprintf("csd_lock_wait: the ack of vCPU%d's flush_tlb_func (vCPU%d is %s)", s.cur, s.cur, where)
}
