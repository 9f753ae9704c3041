package pvflush

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// How an initiator clears a PTE before it flushes (parameter pte-clear).
const (
	// clearLocked is ptep_get_and_clear (a locked xchg), then
	// flush_tlb_mm_range, whose inc_mm_tlb_gen is a second full barrier:
	// Linux's munmap/zap path.
	clearLocked = 0
	// clearNoBarrier is hypothetical: a plain store, then the PV flush
	// with no barrier in between (no inc_mm_tlb_gen). No caller in Linux
	// does this (README, doc.go).
	clearNoBarrier = 1
	// clearPlain is a plain store (native_local_ptep_get_and_clear, or the
	// set_pte_at that commits an mprotect), then flush_tlb_mm_range with
	// its inc_mm_tlb_gen: the only barrier is the one Linux always has.
	clearPlain = 2
)

// machine is one instance of the protocol: a variant at a size.
type machine struct {
	v        variant
	n        int // vCPUs
	ni       int // initiators: vCPU0 .. vCPU(ni-1)
	flushes  int
	preempt  int
	uexits   int // parameter user-exits: returns of KVM_RUN to userspace, in total
	accesses int
	lay      *layout
	nm       names
	threads  []string
	words    []string // the shared words of model.Mem
	buffers  []string // under TSO, the store buffers' names
	props    model.Properties
	// staleSeam, test-only: when true, uses of stale translations are not
	// asserted (spec_test.go).
	staleSeam bool
	// noEmulation, test-only: no instruction exits for emulation, which
	// takes the B5 schedules away to show what else a host allows
	// (host2017_test.go).
	noEmulation bool
	// keepAll, test-only: the PV loop never drops a vCPU from the
	// flushmask, which deletes the optimisation (matrix_test.go).
	keepAll bool
	// tso: x86-TSO memory (param memory=1); Protocol.New wraps the
	// machine in model.WithTSO.
	tso   bool
	clear int // parameter pte-clear
	// host2017: the host as merged with the guest (f38a7b75267f, until
	// the CVE-2019-3016 fixes): parameter host=1.
	host2017 bool
	// Addresses in model.Mem.
	pteAddr [maxInitiators]model.Addr
	genAddr model.Addr
	pmdAddr model.Addr
	stAddr  [maxVCPUs]model.Addr // -1: the vCPU has no byte anyone reads (the lone initiator)
	// rcu is the thread id of the RCU-sched grace period (pt-free-rcu),
	// or -1.
	rcu int
	// The objects steps Touch, named once here so that a step formats
	// nothing.
	tlbName [maxVCPUs]string
	ipiName [maxInitiators][maxVCPUs]string
	csdName [maxInitiators][maxVCPUs]string
}

// memOf is the memory of a state, for model.WithTSO.
func memOf(s model.State) *model.Mem { return &s.(*state).mem }

func newMachine(v variant, p model.Params) (*machine, error) {
	m := &machine{v: v, n: p["vcpus"], ni: p["initiators"], flushes: p["flushes"], preempt: p["preemptions"],
		accesses: p["accesses"], tso: p["memory"] == 1, clear: p["pte-clear"], host2017: p["host"] == 1, uexits: p["user-exits"], rcu: -1}
	if m.ni > m.n {
		return nil, fmt.Errorf("initiators=%d needs at least as many vCPUs (vcpus=%d)", m.ni, m.n)
	}
	if v.walker && m.n-m.ni < 1 {
		return nil, fmt.Errorf("the page-table walker runs on a vCPU that is not an initiator: vcpus=%d initiators=%d leaves none", m.n, m.ni)
	}
	m.nm = names{ni: m.ni}
	m.lay = newLayout(m.n, m.ni, v.walker, m.uexits > 0)
	for t := 0; t < m.n; t++ {
		name := fmt.Sprintf("vCPU%d", t)
		if t < m.ni {
			name += " (initiator)"
		}
		m.threads = append(m.threads, name)
		m.buffers = append(m.buffers, fmt.Sprintf("vCPU%d", t))
		m.tlbName[t] = fmt.Sprintf("TLB(vCPU%d)", t)
		for k := 0; k < m.ni; k++ {
			if m.ni == 1 {
				m.ipiName[k][t] = fmt.Sprintf("IPI vCPU%d", t)
				m.csdName[k][t] = fmt.Sprintf("csd vCPU%d", t)
			} else {
				m.ipiName[k][t] = fmt.Sprintf("IPI vCPU%d->vCPU%d", k, t)
				m.csdName[k][t] = fmt.Sprintf("csd vCPU%d->vCPU%d", k, t)
			}
		}
	}
	if v.walker && !v.tablePage {
		m.rcu = m.n
		m.threads = append(m.threads, "rcu_sched")
	}
	for k := 0; k < m.ni; k++ {
		m.pteAddr[k] = model.Addr(len(m.words))
		m.words = append(m.words, fmt.Sprintf("pte[%s]", m.nm.page(k)))
	}
	m.genAddr = model.Addr(len(m.words))
	m.words = append(m.words, "mm.context.tlb_gen")
	m.pmdAddr = -1
	if v.walker {
		m.pmdAddr = model.Addr(len(m.words))
		m.words = append(m.words, fmt.Sprintf("pmd[%s]", m.nm.page(0)))
	}
	for t := 0; t < m.n; t++ {
		m.stAddr[t] = -1
		if m.targetable(t) {
			m.stAddr[t] = model.Addr(len(m.words))
			m.words = append(m.words, fmt.Sprintf("st[%d].preempted", t))
		}
	}
	m.props = model.Properties{
		Invariants: []model.Invariant{
			{Name: FlagShape, Check: m.flagShape},
			{Name: PreemptedNotRunning, Check: m.preemptedNotRunning},
		},
		Assertions: []string{StaleTLB, PTUseAfterFree, FlagShape},
		Progress:   []model.Progress{{Name: FlushReturns, Pending: m.flushPending}},
		Metrics:    []string{WaitSteps, IPIs},
		Spec:       pteSpec,
	}
	return m, nil
}

// targetable reports whether some initiator can flush vCPU t: every vCPU
// but the lone initiator. (With one initiator, vCPU0 is not a target of
// anyone, so its preemptions and its steal_time byte could only stutter:
// it is never preempted and has no byte in the model.)
func (m *machine) targetable(t int) bool { return m.ni > 1 || t != 0 }

func (m *machine) Threads() []string            { return m.threads }
func (m *machine) Properties() model.Properties { return m.props }

// Init builds the initial state: each page Xk maps its frame 0; every
// vCPU is in guest mode with an empty TLB and steal_time.preempted = 0.
func (m *machine) Init() model.State {
	s := &state{mem: model.NewMem(m.words...), preempt: uint8(m.preempt), uexit: uint8(m.uexits), lay: m.lay}
	if m.tso {
		s.mem.EnableTSO(m.buffers...)
	}
	for k := 0; k < m.ni; k++ {
		s.mem.Init(m.pteAddr[k], 1)
		s.in[k].phase = phaseZap
	}
	if m.v.walker {
		s.mem.Init(m.pmdAddr, 1) // pmd[X] points to Q
	}
	for t := 0; t < m.n; t++ {
		g := &s.v[t]
		*g = vcpu{mode: modeGuest, inflight: -1, tlb: [maxInitiators]int8{-1, -1}}
		if m.targetable(t) {
			g.left = uint8(m.accesses)
		}
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
	for t := 0; t < m.n; t++ {
		if m.stAddr[t] < 0 {
			continue
		}
		if b := s.mem.Peek(m.stAddr[t]); b != 0 && b&kvmVCPUPreempted == 0 {
			return flagShapeMessage(t, b)
		}
	}
	return ""
}

func flagShapeMessage(t int, b uint64) string {
	if b&kvmVCPUFlushTLB != 0 {
		return fmt.Sprintf("st[%d].preempted = %d: FLUSH_TLB is set but PREEMPTED is not, so vCPU%d's host will never see the flush request", t, b, t)
	}
	return fmt.Sprintf("st[%d].preempted = %d has bits set without PREEMPTED: vcpu_is_preempted (cmpb $0) calls running vCPU%d preempted", t, b, t)
}

// preemptedNotRunning is B-S1: a byte with PREEMPTED set belongs to a vCPU
// that is not in guest mode and holds no translation in flight in KVM's
// emulator (since 6cd88243c7e0, a vCPU outside an instruction boundary is
// not reported). It reads memory, not store buffers: under TSO a buffered
// store of the byte is not yet what an initiator can read.
func (m *machine) preemptedNotRunning(ms model.State) string {
	s := ms.(*state)
	for t := 0; t < m.n; t++ {
		if m.stAddr[t] < 0 {
			continue
		}
		b := s.mem.Peek(m.stAddr[t])
		if b&kvmVCPUPreempted == 0 {
			continue
		}
		if msg := m.bs1Message(s, t, b); msg != "" {
			return msg
		}
	}
	return ""
}

func (m *machine) bs1Message(s *state, t int, b uint64) string {
	g := &s.v[t]
	switch {
	case g.mode == modeGuest:
		return fmt.Sprintf("st[%d].preempted = %d while vCPU%d runs in guest mode: an initiator reading it defers vCPU%d's flush to an entry that has already happened", t, b, t, t)
	case g.inflight >= 0:
		return fmt.Sprintf("st[%d].preempted = %d while vCPU%d is in the middle of an emulated instruction (translation %s in flight): a deferred flush comes after the access it should precede", t, b, t, m.nm.tr(int(g.inflightPage), g.inflight))
	}
	return ""
}

// flushPending is the obligation of flush-returns: some initiator's flush
// is in flight (its PTE cleared, its flush not returned).
func (m *machine) flushPending(ms model.State) bool {
	s := ms.(*state)
	for k := 0; k < m.ni; k++ {
		if s.in[k].inFlight() {
			return true
		}
	}
	return false
}

// An action is what a vCPU's step does: a kind and, for some kinds, an
// argument (a page or an initiator).
type action uint8

// Action kinds, in the order of the alternatives a vCPU's step draws
// among.
const (
	actProgram  = iota // an initiator's next step of its unmap and flush
	actAccess          // guest: access page arg through the TLB (miss: walk and fill)
	actEmulate         // guest: an instruction accessing page arg exits to KVM's emulator
	actGUP             // guest kernel: get_user_pages_fast on X starts (IRQs off, PMD read)
	actWalk            // guest kernel: the next step of get_user_pages_fast
	actTakeIPI         // guest: flush_tlb_func for initiator arg flushes the TLB entry
	actAck             // guest: flush_tlb_func for initiator arg done, csd unlock
	actPreempt         // host scheduler preempts H_t (from guest: interrupt exit + vcpu_put)
	actSchedIn         // kvm_sched_in: vcpu_load
	actHost            // the next step of H_t in KVM_RUN
	actHostFail        // early-entry: record_steal_time fails to read steal_time
	actUserExit        // KVM_RUN returns to userspace: vcpu_put -> kvm_arch_vcpu_put
	actKVMRun          // userspace calls KVM_RUN again: vcpu_load
)

func mkAction(kind, arg int) action { return action(kind<<2 | arg) }
func (a action) kind() int          { return int(a >> 2) }
func (a action) arg() int           { return int(a & 3) }

// maxActions bounds the actions a vCPU has in one state: program, two
// pages accessed two ways, get_user_pages_fast, two IPIs, preemption,
// return to userspace.
const maxActions = 9

// handling returns the initiator whose IPI vCPU t is handling, or -1.
func (m *machine) handling(s *state, t int) int {
	for k := 0; k < m.ni; k++ {
		if s.v[t].ipi[k] == ipiHandler {
			return k
		}
	}
	return -1
}

// pendingIPI reports whether an IPI to vCPU t waits to be taken.
func (m *machine) pendingIPI(s *state, t int) bool {
	for k := 0; k < m.ni; k++ {
		if s.v[t].ipi[k] == ipiPending {
			return true
		}
	}
	return false
}

// programReady reports whether initiator t's next program step can be
// taken now that it runs in guest mode with interrupts to it handled.
func (m *machine) programReady(s *state, t int) bool {
	f := &s.in[t]
	switch {
	case f.phase == phaseDone:
		return false
	case f.phase != phaseWait || s.v[f.cur].ipi[t] == ipiAcked:
		return true
	case m.v.busyWait:
		// The spin iterates unless an interrupt is pending: x86 takes a
		// pending, unmasked interrupt at the next instruction boundary,
		// and the spin loop executes instructions. (Without this rule
		// weak fairness would let a spinning vCPU ignore an IPI forever.)
		return !m.pendingIPI(s, t)
	}
	return false
}

// accessible returns the pages vCPU t may access now, as a bit set: a
// target every initiator's page; an initiator, between its own unmaps,
// the other initiator's page.
func (m *machine) accessible(s *state, t int) int {
	if t >= m.ni {
		return 1<<m.ni - 1
	}
	if m.ni == 1 || !s.in[t].userMode() {
		return 0
	}
	return 1 << (1 - t)
}

// actionIn is what decides the actions of a vCPU: the model fills it
// from a state, the real implementation from its own variables, and both
// list the actions with appendActions, so that their alternatives are
// numbered alike.
type actionIn struct {
	mode     uint8
	handling int  // the initiator whose IPI the vCPU is handling, or -1
	walking  bool // inside get_user_pages_fast (interrupts off)
	program  bool // an initiator whose next program step can be taken
	accesses bool // accesses left
	pages    int  // the pages it may access (bit k: page k)
	emulate  bool // accesses may exit for emulation
	gup      bool // may start get_user_pages_fast
	pending  [maxInitiators]bool
	hostFail bool // record_steal_time may fail here (early-entry)
	preempt  bool // the host may preempt it now
	userExit bool // KVM_RUN may return to userspace now
}

// appendActions appends the actions of in, in alternative order.
func appendActions(buf []action, in *actionIn) []action {
	switch in.mode {
	case modeGuest:
		switch {
		case in.handling >= 0:
			// Inside flush_tlb_func: interrupts are off until it acks.
			buf = append(buf, mkAction(actAck, in.handling))
		case in.walking:
			// Inside get_user_pages_fast with interrupts off.
			buf = append(buf, mkAction(actWalk, 0))
		default:
			if in.program {
				buf = append(buf, mkAction(actProgram, 0))
			}
			if in.accesses {
				for k := 0; k < maxInitiators; k++ {
					if in.pages&(1<<k) != 0 {
						buf = append(buf, mkAction(actAccess, k))
						if in.emulate {
							buf = append(buf, mkAction(actEmulate, k))
						}
					}
				}
				if in.gup {
					buf = append(buf, mkAction(actGUP, 0))
				}
			}
			for k := 0; k < maxInitiators; k++ {
				if in.pending[k] {
					buf = append(buf, mkAction(actTakeIPI, k))
				}
			}
		}
	case modeHost:
		buf = append(buf, mkAction(actHost, 0))
		if in.hostFail {
			buf = append(buf, mkAction(actHostFail, 0))
		}
	case modeDesched:
		return append(buf, mkAction(actSchedIn, 0))
	case modeUser:
		// The VMM's thread: no preempt notifier is registered outside
		// vcpu_load .. vcpu_put, so its only step here is KVM_RUN.
		return append(buf, mkAction(actKVMRun, 0))
	}
	if in.preempt {
		buf = append(buf, mkAction(actPreempt, 0))
	}
	// Last, so that with user-exits=0 every alternative keeps its number.
	if in.userExit {
		buf = append(buf, mkAction(actUserExit, 0))
	}
	return buf
}

// actions appends the actions vCPU t can take in s, in alternative order.
func (m *machine) actions(s *state, t int, buf []action) []action {
	g := &s.v[t]
	in := actionIn{
		mode:     g.mode,
		handling: m.handling(s, t),
		walking:  g.walk != 0,
		program:  t < m.ni && m.programReady(s, t),
		accesses: g.left > 0,
		pages:    m.accessible(s, t),
		emulate:  !m.noEmulation && t >= m.ni,
		gup:      m.v.walker && t >= m.ni,
		hostFail: m.v.earlyEntry && g.inflight < 0 && g.rsWrites == 0 && g.req,
		preempt:  s.preempt > 0 && m.targetable(t),
		userExit: m.userExitReady(s, t),
	}
	for k := 0; k < m.ni; k++ {
		in.pending[k] = g.ipi[k] == ipiPending
	}
	return appendActions(buf, &in)
}

// waiting counts the initiators that run (guest mode) and busy-wait for
// the ack of a vCPU that is scheduled out: the wait-steps of one step.
func (m *machine) waiting(s *state) int64 {
	var w int64
	for k := 0; k < m.ni; k++ {
		f := &s.in[k]
		if f.phase == phaseWait && s.v[k].mode == modeGuest && s.v[f.cur].ipi[k] != ipiAcked && s.v[f.cur].mode == modeDesched {
			w++
		}
	}
	return w
}

// Step implements model.Machine. A vCPU's step draws one of the actions
// it can take; with none, an initiator in csd_lock_wait is blocked on the
// ack and any other vCPU has nothing left to do (an IPI may still give it
// something later).
func (m *machine) Step(ms model.State, t int, x *model.Exec) {
	s := ms.(*state)
	if t == m.rcu {
		m.stepRCU(s, x)
		return
	}
	// wait-steps: initiators busy-waiting for a scheduled-out vCPU,
	// whoever takes this step (judged before it).
	waiting := m.waiting(s)
	var buf [maxActions]action
	as := m.actions(s, t, buf[:0])
	var a action
	switch len(as) {
	case 0:
		if t < m.ni && s.in[t].phase == phaseWait && s.v[t].mode == modeGuest {
			x.Block()
			if x.Labelling() {
				x.Label(m.waitsFor(s, t))
			}
			return
		}
		x.Done()
		return
	case 1:
		a = as[0]
	default:
		a = as[x.Choose(len(as))]
	}
	m.do(s, t, a, x)
	if waiting > 0 && x.Outcome() == model.Stepped {
		x.Count(metricWait, waiting)
	}
}

// do takes action a of vCPU t.
func (m *machine) do(s *state, t int, a action, x *model.Exec) {
	switch a.kind() {
	case actProgram:
		m.stepInitiator(s, t, x)
	case actAccess:
		m.stepAccess(s, t, a.arg(), x)
	case actEmulate:
		m.stepEmulate(s, t, a.arg(), x)
	case actGUP, actWalk:
		m.stepWalk(s, t, x)
	case actTakeIPI:
		m.stepTakeIPI(s, t, a.arg(), x)
	case actAck:
		m.stepAck(s, t, a.arg(), x)
	case actPreempt:
		m.stepPreempt(s, t, x)
	case actSchedIn:
		m.stepSchedIn(s, t, x)
	case actHost:
		m.stepHost(s, t, x)
	case actHostFail:
		m.stepHostFail(s, t, x)
	case actUserExit:
		m.stepUserExit(s, t, x)
	case actKVMRun:
		m.stepKVMRun(s, t, x)
	}
}

// waitsFor is what initiator k waits for in csd_lock_wait: the deadlock
// text.
func (m *machine) waitsFor(s *state, k int) string {
	t := s.in[k].cur
	return fmt.Sprintf("csd_lock_wait: the ack of vCPU%d's flush_tlb_func (vCPU%d is %s)", t, t, m.whereIs(s, k))
}

// whereIs says where the vCPU initiator k waits for is.
func (m *machine) whereIs(s *state, k int) string {
	g := &s.v[s.in[k].cur]
	switch {
	case g.mode == modeDesched:
		return "scheduled out by the host"
	case g.mode == modeHost:
		return "in host mode"
	case g.mode == modeUser:
		return "in userspace, out of KVM_RUN"
	case g.ipi[k] == ipiHandler:
		return "inside flush_tlb_func"
	case g.walk != 0:
		return "inside get_user_pages_fast with interrupts off"
	case m.handling(s, int(s.in[k].cur)) >= 0:
		return "handling another IPI"
	}
	return "IPI not yet taken"
}
