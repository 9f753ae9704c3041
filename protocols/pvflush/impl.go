package pvflush

// The real implementation: the guest's kvm_flush_tlb_others as posted in
// seed 003_cebc059dddab0bb4 (Wanpeng Li, "KVM: Add paravirt remote TLB
// flush", with Radim Krčmář's review) and as merged (858a43aae236,
// arch/x86/kernel/kvm.c kvm_flush_tlb_others, later kvm_flush_tlb_multi),
// called from flush_tlb_mm_range after inc_mm_tlb_gen, run by one or two
// initiator vCPUs; every vCPU goroutine is both the guest (accesses
// through a simulated TLB, flush_tlb_func on the call-function IPI,
// get_user_pages_fast in the walker variants) and the host thread H_t
// (arch/x86/kvm/x86.c: kvm_arch_vcpu_put -> kvm_steal_time_set_preempted,
// kvm_arch_vcpu_load, record_steal_time and its TLB flush,
// x86_emulate_insn), with the fixed host or the 2017 host (parameter
// host) and each variant's switch (variants.go). doc.go names the commits
// of the code being mirrored.
//
// # Mapping to the model
//
// Goroutines are created in the order and with the names of
// machine.Threads. Every model step is one rt scheduling point with the
// model's label:
//
//   - A vCPU's step is an Env.Choose whose alternatives are the model's, in
//     the model's order: both list them with appendActions. The Choose has
//     no common label (the alternatives are different functions), so the
//     whole label is the Note that follows.
//   - An initiator's flush is sequential code, as in the kernel. Before
//     each of its steps it calls point, which takes the vCPU's scheduling
//     points until the strategy picks the program's alternative: in
//     between, the vCPU takes IPIs, accesses the other initiator's page or
//     is preempted by the host, exactly where the model lets it.
//   - csd_lock_wait, which the model has as a blocked await for the ack,
//     is the program's alternative gated on the ack (impl_gate.go says why
//     it is not an rt Mutex or Cond, and how Guided makes the alternatives
//     of every step exactly the model's); in busy-wait it is offered and
//     spins.
//   - The RCU-sched grace period of pt-free-rcu is a goroutine of its own
//     with one gated step.
//
// The simulated machine (the PTEs, the PMD, tlb_gen, each steal_time
// byte, each csd, Q and the allocator's observers) is memory shared by
// the goroutines, held in sync/atomic words. They are not rt words
// because a vCPU's step is a Choose, and an rt word operation inside it
// would be a second scheduling point; every access happens inside a step
// whose scheduling point was taken just before, which is how the model
// folds it (the granularity rule of package model). Under the Go scheduler they are real
// sequentially consistent atomics, as the kernel's READ_ONCE, cmpxchg and
// xchg are on x86. A vCPU's TLB and the host's vcpu->arch fields are
// touched only by its own goroutine (the guest and H_t never run at
// once) and are plain fields; its mode, in-flight translation and walk
// stage are atomics because other goroutines check B-S1 and take the
// RCU snapshot against them.
//
// stale-tlb and pt-use-after-free are checked at every use, in the step
// that uses it, with the model's message; flag-shape and
// preempted-not-running after every step that can break them (a write of
// a steal_time byte, a VM entry). Env.Call and Env.Return record the
// model's history (spec.go) at the model's steps.

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// Controlled runs that choose on their own go through Guided's adapter.
func init() {
	Impl.Gate = func(s rt.Strategy) (rt.Strategy, *rt.Impl) {
		im, adapt := Guided()
		return adapt(s), im
	}
}

// Impl is the real implementation of every variant. Under a plain
// controlled strategy it replays model traces step for step; to explore it
// with the model's exact choices, use Guided.
var Impl = &rt.Impl{
	Variants: implVariants(),
	New: func(variant string, p model.Params) (rt.Body, error) {
		return newBody(variant, p, nil)
	},
}

// implVariants lists every model variant: each is a switch of the guest
// or host code.
func implVariants() []string {
	names := make([]string, len(variantList))
	for i, v := range variantList {
		names[i] = v.Name
	}
	return names
}

// actIdle is what a vCPU does with an alternative that is not offered in
// its state: only a plain strategy, without Guided, can choose one.
const actIdle action = 0xff

// hwWord is a word of the simulated machine's memory.
type hwWord struct{ v atomic.Uint32 }

func (w *hwWord) load() uint32         { return w.v.Load() }
func (w *hwWord) store(v uint32)       { w.v.Store(v) }
func (w *hwWord) xchg(v uint32) uint32 { return w.v.Swap(v) }
func (w *hwWord) add(d uint32) uint32  { return w.v.Add(d) }
func (w *hwWord) cmpxchg(old, new uint32) uint32 {
	for {
		if cur := w.v.Load(); cur != old {
			return cur
		}
		if w.v.CompareAndSwap(old, new) {
			return old
		}
	}
}

// world is one execution: the machine's shared memory and the vCPUs.
type world struct {
	e    *rt.Env
	ctl  bool // controlled: labels are built, gated points are used
	m    *machine
	nm   names
	gate gate

	pte    [maxInitiators]hwWord // frame+1 of the page Xk maps, 0: not present
	gen    hwWord                // mm->context.tlb_gen
	pmd    hwWord                // pmd of X: 1 = Q (walker variants)
	st     []hwWord              // st[t].preempted
	ipi    [maxInitiators][]hwWord
	budget atomic.Int32
	freed  [maxInitiators]atomic.Uint32 // the observers of B-SAFE
	done   [maxInitiators]atomic.Bool   // initiator k has returned from its last flush
	pt     atomic.Uint32                // Q: ptLive .. ptFreed
	// The RCU-sched grace period: qs[t] counts vCPU t's local_irq_enable
	// at the end of get_user_pages_fast (a quiescent state); call_rcu
	// records in gpNeed the vCPUs inside a walk and in gpSnap their
	// counts; the period ends when each of them has passed one since.
	qs     []atomic.Uint32
	gpSnap []uint32
	gpNeed atomic.Uint32
	vcpus  []*vcpuImpl
}

func newBody(name string, p model.Params, l *link) (rt.Body, error) {
	v, ok := variants[name]
	if !ok {
		return nil, fmt.Errorf("pvflush: unknown variant %q", name)
	}
	// The real code runs on Go's memory model, whose atomics are
	// sequentially consistent: the model's store buffers (memory=1) and
	// its plain PTE clears have no counterpart here.
	if p["memory"] != 0 || p["pte-clear"] != 0 {
		return nil, fmt.Errorf("pvflush: the real implementation runs on sequentially consistent atomics; memory=%d pte-clear=%d exist only in the model", p["memory"], p["pte-clear"])
	}
	// The return of KVM_RUN to userspace (user-exits) is in the model
	// only.
	if p["user-exits"] != 0 {
		return nil, fmt.Errorf("pvflush: user-exits=%d exists only in the model; the real implementation has no return to userspace", p["user-exits"])
	}
	m, err := newMachine(v, p)
	if err != nil {
		return nil, fmt.Errorf("pvflush: %w", err)
	}
	return func(e *rt.Env) func() *model.Violation {
		w := &world{e: e, ctl: e.IsControlled(), m: m, nm: m.nm}
		w.gate.at = make([]gatePoint, len(m.threads))
		w.st = make([]hwWord, m.n)
		for k := 0; k < m.ni; k++ {
			w.ipi[k] = make([]hwWord, m.n)
			// Xk starts mapped to its frame 0.
			w.pte[k].store(1)
		}
		w.qs = make([]atomic.Uint32, m.n)
		w.gpSnap = make([]uint32, m.n)
		w.budget.Store(int32(m.preempt))
		if v.walker {
			w.pmd.store(1)
		}
		if l != nil && w.ctl {
			l.g = &w.gate
		}
		for t := 0; t < m.n; t++ {
			c := &vcpuImpl{w: w, id: t, inflightPage: 0, tlb: [maxInitiators]int{-1, -1}}
			c.inflight.Store(-1)
			if m.targetable(t) {
				c.left = m.accesses
			}
			if t < m.ni {
				c.phase = phaseZap
			} else {
				c.phase = phaseDone
			}
			w.vcpus = append(w.vcpus, c)
		}
		for t, c := range w.vcpus {
			e.Go(m.threads[t], c.run)
		}
		if m.rcu >= 0 {
			e.Go(m.threads[m.rcu], w.rcuSched)
		}
		return nil
	}, nil
}

// note completes the current step's label (controlled mode only, so that
// the stress runs do not format strings).
func (w *world) note(format string, args ...any) {
	if w.ctl {
		w.e.Note(fmt.Sprintf(format, args...))
	}
}

// checkByte checks B-S2 and then B-S1 for vCPU t after a step that wrote
// its byte or entered the guest, in the order the model checks its
// invariants.
func (w *world) checkByte(t int) {
	b := uint64(w.st[t].load())
	if b != 0 && b&kvmVCPUPreempted == 0 {
		w.e.Fail(FlagShape, flagShapeMessage(t, b))
		return
	}
	if b&kvmVCPUPreempted == 0 {
		return
	}
	c := w.vcpus[t]
	switch {
	case c.mode.Load() == uint32(modeGuest):
		w.e.Failf(PreemptedNotRunning, "st[%d].preempted = %d while vCPU%d runs in guest mode: an initiator reading it defers vCPU%d's flush to an entry that has already happened", t, b, t, t)
	case c.inflight.Load() >= 0:
		f := c.inflight.Load()
		w.e.Failf(PreemptedNotRunning, "st[%d].preempted = %d while vCPU%d is in the middle of an emulated instruction (translation %s in flight): a deferred flush comes after the access it should precede", t, b, t, w.nm.tr(c.inflightPage, int8(f)))
	}
}

// vcpu is vCPU t: the guest vCPU, its host thread H_t and, for an
// initiator, its flush program.
type vcpuImpl struct {
	w  *world
	id int
	// Read by other goroutines (B-S1, the RCU snapshot).
	mode     atomic.Uint32
	inflight atomic.Int32 // frame of the emulator's in-flight translation, or -1
	walk     atomic.Uint32
	// Its own.
	inflightPage int
	tlb          [maxInitiators]int // frame cached for page k, or -1
	hostCopy     uint32             // vcpu->arch.st.preempted (fixed host) or st.steal.preempted (2017)
	req          bool               // KVM_REQ_STEAL_UPDATE pending
	atBoundary   bool               // vcpu->arch.at_instruction_boundary
	rsWrites     int                // record_steal_time's write-backs still to do
	left         int                // accesses still to do
	walkPTE      uint32
	// The initiator's program: where it is, for its alternatives.
	phase uint8
	cur   int
	acts  [maxActions]action
}

// programReady mirrors machine.programReady.
func (c *vcpuImpl) programReady() bool {
	w, k := c.w, c.id
	switch {
	case c.phase == phaseDone:
		return false
	case c.phase != phaseWait || w.ipi[k][c.cur].load() == uint32(ipiAcked):
		return true
	case w.m.v.busyWait:
		return !c.pendingIPI()
	}
	return false
}

func (c *vcpuImpl) pendingIPI() bool {
	for k := 0; k < c.w.m.ni; k++ {
		if c.w.ipi[k][c.id].load() == uint32(ipiPending) {
			return true
		}
	}
	return false
}

// userMode mirrors flusher.userMode.
func (c *vcpuImpl) userMode() bool {
	return c.phase == phaseMap || c.phase == phaseZap || c.phase == phaseDone
}

// actions lists what t can do now, in the model's order.
func (c *vcpuImpl) actions() []action {
	w, m, t := c.w, c.w.m, c.id
	in := actionIn{
		mode:     uint8(c.mode.Load()),
		handling: -1,
		walking:  c.walk.Load() != 0,
		program:  t < m.ni && c.programReady(),
		accesses: c.left > 0,
		emulate:  t >= m.ni,
		gup:      m.v.walker && t >= m.ni,
		hostFail: m.v.earlyEntry && c.inflight.Load() < 0 && c.rsWrites == 0 && c.req,
		preempt:  w.budget.Load() > 0 && m.targetable(t),
	}
	switch {
	case t >= m.ni:
		in.pages = 1<<m.ni - 1
	case m.ni > 1 && c.userMode():
		in.pages = 1 << (1 - t)
	}
	for k := 0; k < m.ni; k++ {
		switch uint8(w.ipi[k][t].load()) {
		case ipiHandler:
			if in.handling < 0 {
				in.handling = k
			}
		case ipiPending:
			in.pending[k] = true
		}
	}
	return appendActions(c.acts[:0], &in)
}

// blocked is the deadlock text of a vCPU with no action, or "" when it
// is done (machine.Step: only an initiator in csd_lock_wait, in guest
// mode, is blocked).
func (c *vcpuImpl) blocked() string {
	if c.id < c.w.m.ni && c.phase == phaseWait && c.mode.Load() == uint32(modeGuest) {
		return fmt.Sprintf("vCPU%d (initiator) waits in csd_lock_wait for the ack of vCPU%d's flush_tlb_func", c.id, c.cur)
	}
	return ""
}

// finished: t will never step again. Its program is done, its guest work
// is done, no IPI is or will be pending, and the host has no preemption
// left for it.
func (c *vcpuImpl) finished() bool {
	w, m := c.w, c.w.m
	if c.phase != phaseDone || c.mode.Load() != uint32(modeGuest) || c.walk.Load() != 0 {
		return false
	}
	if c.left > 0 {
		return false
	}
	for k := 0; k < m.ni; k++ {
		if !w.done[k].Load() {
			return false
		}
		if s := uint8(w.ipi[k][c.id].load()); s == ipiPending || s == ipiHandler {
			return false
		}
	}
	return w.budget.Load() <= 0 || !m.targetable(c.id)
}

func (c *vcpuImpl) run() {
	if c.id < c.w.m.ni {
		c.flushProgram()
	}
	for !c.finished() {
		c.point()
	}
}

// point is one scheduling point of the vCPU: the environment's choice of
// what it does next. It performs the choice and returns false, or returns
// true when the choice is the next step of its program, which the caller
// then takes.
func (c *vcpuImpl) point() bool {
	a := c.choose()
	switch a.kind() {
	case actProgram:
		return true
	default:
		c.do(a)
		return false
	}
}

// next takes scheduling points until the program's step is chosen.
func (c *vcpuImpl) next(phase uint8, cur int) {
	c.phase, c.cur = phase, cur
	for !c.point() {
	}
}

func (c *vcpuImpl) choose() action {
	w := c.w
	if !w.ctl {
		acts := c.actions()
		runtime.Gosched() // gives the other goroutines a chance to interleave
		if len(acts) == 0 {
			// Halted until an IPI comes, an ack comes or everyone is done.
			return actIdle
		}
		return acts[w.e.Choose("", len(acts))]
	}
	w.gate.at[c.id] = gatePoint{
		alts:  func() int { return len(c.actions()) },
		waits: c.blocked,
	}
	a := w.e.Choose("", maxActions)
	w.gate.at[c.id] = gatePoint{}
	// The alternatives are those of now, not of when t parked: an IPI may
	// have come, another vCPU may have used up the preemptions.
	if acts := c.actions(); a < len(acts) {
		return acts[a]
	}
	return actIdle
}

// do performs action a (anything but the program's step).
func (c *vcpuImpl) do(a action) {
	w, t := c.w, c.id
	switch a.kind() {
	case actAccess:
		c.access(a.arg())
	case actEmulate:
		c.emulate(a.arg())
	case actGUP, actWalk:
		c.gup()
	case actTakeIPI:
		// flush_tlb_func: flush the entry of the initiator's page.
		k := a.arg()
		c.tlb[k] = -1
		w.ipi[k][t].store(uint32(ipiHandler))
		if w.m.ni == 1 {
			w.note("flush_tlb_func: call-function IPI from vCPU%d taken, flush TLB", k)
		} else {
			w.note("flush_tlb_func: call-function IPI from vCPU%d taken, flush TLB entry of %s", k, w.nm.page(k))
		}
	case actAck:
		w.ipi[a.arg()][t].store(uint32(ipiAcked))
		w.note("flush_tlb_func: done, csd_unlock (ack to vCPU%d)", a.arg())
	case actPreempt:
		if !c.claimPreemption() {
			return // real mode: another vCPU took the last one
		}
		c.preempt()
	case actSchedIn:
		// kvm_sched_in -> kvm_arch_vcpu_load
		c.mode.Store(uint32(modeHost))
		c.req = true
		w.note("kvm_sched_in -> kvm_arch_vcpu_load: kvm_make_request(KVM_REQ_STEAL_UPDATE)")
	case actHost:
		c.host()
	case actHostFail:
		c.req, c.atBoundary = false, false
		w.note("vcpu_enter_guest -> record_steal_time: reading steal_time failed, return without clearing st[%d].preempted", t)
	default:
		if w.ctl {
			w.note("vCPU%d: no action (an alternative this state does not offer: run under pvflush.Guided to follow the model)", t)
		}
	}
}

// access is one guest instruction accessing page k through the TLB (a
// miss walks the PTE and fills).
func (c *vcpuImpl) access(k int) {
	w := c.w
	c.left--
	if f := c.tlb[k]; f >= 0 {
		w.note("guest: read %s through TLB entry %s", w.nm.page(k), w.nm.tr(k, int8(f)))
		c.use(k, f, false)
		return
	}
	v := w.pte[k].load()
	if v == 0 {
		w.note("guest: TLB miss, walk PTE: %s not present, page fault", w.nm.page(k))
		return
	}
	c.tlb[k] = int(v) - 1
	w.note("guest: TLB miss, walk PTE: %s, fill TLB and read", w.nm.tr(k, int8(c.tlb[k])))
	c.use(k, c.tlb[k], false)
}

// emulate is an instruction accessing page k that exits to KVM's
// emulator, which walks the PTE and holds the translation.
func (c *vcpuImpl) emulate(k int) {
	w := c.w
	c.left--
	v := w.pte[k].load()
	c.atBoundary = false
	if v == 0 {
		c.mode.Store(uint32(modeHost))
		w.note("vmx_handle_exit: instruction accessing %s exits for emulation; x86_emulate_insn walks PTE: %s not present, page fault injected", w.nm.page(k), w.nm.page(k))
		return
	}
	c.inflightPage = k
	c.inflight.Store(int32(v) - 1)
	c.mode.Store(uint32(modeHost))
	w.note("vmx_handle_exit: instruction accessing %s exits for emulation; x86_emulate_insn walks PTE: %s (translation in flight)", w.nm.page(k), w.nm.tr(k, int8(v-1)))
}

// claimPreemption takes one of the shared host preemptions. Under control
// actions() has just seen one left and nothing ran since.
func (c *vcpuImpl) claimPreemption() bool {
	for {
		b := c.w.budget.Load()
		if b <= 0 {
			return false
		}
		if c.w.budget.CompareAndSwap(b, b-1) {
			return true
		}
	}
}

// preempt is the host scheduler preempting H_t: kvm_sched_out ->
// kvm_arch_vcpu_put -> kvm_steal_time_set_preempted. From guest mode the
// exit on the host's timer interrupt comes first, in the same step (it
// writes nothing shared; an IPI sent in between stays pending).
func (c *vcpuImpl) preempt() {
	w := c.w
	fromGuest := c.mode.Load() == uint32(modeGuest)
	if fromGuest {
		c.atBoundary = true
	}
	c.mode.Store(uint32(modeDesched))
	switch {
	case w.m.host2017:
		// f38a7b75267f: no boundary gate and no guard.
		c.setPreempted(fromGuest, "vcpu->arch.st.steal.preempted = 1; kvm_write_guest_offset_cached: ")
	case !c.atBoundary && !w.m.v.noBoundary:
		// 6cd88243c7e0: only report a preemption at an instruction
		// boundary.
		w.note("%s: not at an instruction boundary, preemption not reported", preemptPrefix(fromGuest))
	case c.hostCopy != 0 && !w.m.v.noGuard:
		// 8c6de56a42e0: if (vcpu->arch.st.preempted) return;
		w.note("%s: already reported (host st.preempted = %d), nothing stored", preemptPrefix(fromGuest), c.hostCopy)
	default:
		c.setPreempted(fromGuest, "")
	}
}

func (c *vcpuImpl) setPreempted(fromGuest bool, how string) {
	w, t := c.w, c.id
	var old uint32
	if w.ctl {
		old = w.st[t].load() // for the label only
	}
	w.st[t].store(kvmVCPUPreempted)
	c.hostCopy = kvmVCPUPreempted
	if w.ctl {
		lost, where := "", ""
		if old&kvmVCPUFlushTLB != 0 {
			lost = fmt.Sprintf(" (was %d: FLUSH_TLB lost)", old)
		}
		if c.inflight.Load() >= 0 {
			where = " in the middle of an emulated instruction"
		}
		w.note("%s: %sstore st[%d].preempted = 1%s%s", preemptPrefix(fromGuest), how, t, lost, where)
	}
	w.checkByte(t)
}

// host is H_t's next step in KVM_RUN, in program order: finish an emulated
// instruction, finish record_steal_time, process KVM_REQ_STEAL_UPDATE,
// enter the guest.
func (c *vcpuImpl) host() {
	w, t := c.w, c.id
	switch {
	case c.inflight.Load() >= 0:
		f, k := int(c.inflight.Load()), c.inflightPage
		c.inflight.Store(-1)
		c.inflightPage = 0
		w.note("x86_emulate_insn: complete the access to %s through the in-flight translation %s", w.nm.page(k), w.nm.tr(k, int8(f)))
		c.use(k, f, true)

	case c.rsWrites > 0:
		if !w.m.host2017 {
			// host-copy: the copy, cleared, is written back over whatever
			// the guest set in between.
			w.st[t].store(0)
			c.rsWrites = 0
			w.note("record_steal_time: kvm_write_guest_cached: write back the host copy, st[%d].preempted = 0", t)
		} else {
			v := c.hostCopy
			w.st[t].store(v)
			n := 4 - c.rsWrites
			c.rsWrites--
			w.note("record_steal_time: kvm_write_guest_cached (write %d of 3, %s): st[%d].preempted = %d (host copy)", n, [...]string{"", "version", "steal", "version"}[n], t, v)
		}
		w.checkByte(t)

	case c.req:
		// vcpu_run's "at_instruction_boundary = false" folds in here.
		c.req, c.atBoundary = false, false
		var v uint32
		switch {
		case w.m.host2017:
			// f38a7b75267f: kvm_read_guest_cached into the host copy,
			// xchg on the copy, three write-backs.
			v = w.st[t].load()
			c.rsWrites = 3
		case w.m.v.hostCopy:
			v = w.st[t].load()
			c.rsWrites = 1
		default:
			// b043138246a4: xchg on the guest's byte itself.
			v = w.st[t].xchg(0)
		}
		c.hostCopy = 0
		if v&kvmVCPUFlushTLB != 0 {
			// kvm_vcpu_flush_tlb(_guest)
			c.tlb = [maxInitiators]int{-1, -1}
		}
		if w.ctl {
			w.e.Note(recordStealTimeLabel(w.m.host2017, w.m.v.hostCopy, t, uint64(v)))
		}

	default:
		c.atBoundary = false
		c.mode.Store(uint32(modeGuest))
		w.note("vcpu_enter_guest: VM entry")
		w.checkByte(t)
	}
}

// use is an access of page k through frame f (a TLB entry, or the
// emulator's in-flight translation): a read of the PTE register, and
// B-SAFE against the allocator's observer.
func (c *vcpuImpl) use(k, f int, emulated bool) {
	w, t := c.w, c.id
	w.e.Call(t, pteOp{Page: k})
	w.e.Return(t, f+1)
	if uint32(f) >= w.freed[k].Load() {
		return
	}
	page, fr, owner := w.nm.page(k), w.nm.tr(k, int8(f)), w.nm.frame(k, int8(f))
	if emulated {
		w.e.Failf(StaleTLB, "vCPU%d's emulated instruction accessed %s through the translation %s that KVM's emulator obtained before vCPU%d's flush of %s returned; %s has been freed and reused by another process", t, page, fr, k, page, owner)
		return
	}
	w.e.Failf(StaleTLB, "vCPU%d read %s through a TLB entry %s cached before vCPU%d's flush of %s returned; %s has been freed and reused by another process", t, page, fr, k, page, owner)
}

// gup is vCPU t's next step of get_user_pages_fast (walker.go).
func (c *vcpuImpl) gup() {
	w, t := c.w, c.id
	switch uint8(c.walk.Load()) {
	case 0:
		c.left--
		if w.pmd.load() == 0 {
			c.walk.Store(uint32(walkIRQOn))
			w.note("get_user_pages_fast: local_irq_disable; gup_pmd_range: READ_ONCE(pmd of %s) = none, fall back to the slow path", w.nm.page(0))
			return
		}
		c.walk.Store(uint32(walkPTE))
		w.note("get_user_pages_fast: local_irq_disable; gup_pmd_range: READ_ONCE(pmd of %s) = Q", w.nm.page(0))
	case walkPTE:
		v := w.pte[0].load()
		if c.freedTable("READ_ONCE(pte)") {
			return
		}
		if v == 0 {
			c.walk.Store(uint32(walkIRQOn))
			w.note("gup_pte_range: READ_ONCE(pte of %s) in Q: not present, goto pte_unmap", w.nm.page(0))
			return
		}
		c.walkPTE = v
		c.walk.Store(uint32(walkRecheck))
		w.note("gup_pte_range: READ_ONCE(pte of %s) in Q: %s", w.nm.page(0), w.nm.pte(0, uint64(v)))
	case walkRecheck:
		v := w.pte[0].load()
		if c.freedTable("re-check of the pte") {
			return
		}
		if v == c.walkPTE {
			w.note("gup_pte_range: page_cache_get_speculative(%s); pte_val(pte) == pte_val(*ptep) in Q: page pinned", w.nm.frame(0, int8(c.walkPTE-1)))
		} else {
			w.note("gup_pte_range: page_cache_get_speculative(%s); pte changed in Q (now %s): put_page", w.nm.frame(0, int8(c.walkPTE-1)), w.nm.pte(0, uint64(v)))
		}
		c.walkPTE = 0
		c.walk.Store(uint32(walkIRQOn))
	case walkIRQOn:
		// local_irq_enable: a quiescent state for RCU-sched. The walk ends
		// before the count moves. call_rcu_sched (freeTable) reads the
		// count, then whether the vCPU walks: in the other order it could
		// read the new count while the walk still showed, and wait for a
		// second quiescent state that a vCPU with no walk left never
		// passes (the model clears the vCPU's bit of gpWait in one step).
		c.walk.Store(0)
		w.qs[t].Add(1)
		w.note("get_user_pages_fast: local_irq_enable (pending IPIs and the RCU-sched grace period may proceed)")
	}
}

func (c *vcpuImpl) freedTable(what string) bool {
	w := c.w
	if w.pt.Load() != uint32(ptFreed) {
		return false
	}
	w.note("gup_pte_range: %s in Q, which has been freed", what)
	w.e.Failf(PTUseAfterFree, "vCPU%d's get_user_pages_fast (%s) read page-table page Q after vCPU0 freed it: the walker, inside its IRQ-off section, held Q across the flush that unlinked it", c.id, what)
	return true
}

// flushProgram is initiator k: per round, (map its page to a fresh
// frame,) clear the PTE, (free the page table,) flush_tlb_mm_range ->
// kvm_flush_tlb_others, free the page.
func (c *vcpuImpl) flushProgram() {
	w, m, k := c.w, c.w.m, c.id
	fn := "kvm_flush_tlb_others"
	if m.v.native {
		fn = "native_flush_tlb_others"
	}
	page := w.nm.page(k)
	for round := 0; round < m.flushes; round++ {
		if round > 0 {
			// set_pte_at: a later round maps the page to a fresh frame.
			// The write is called before the store and returns after it,
			// so that under the Go scheduler no access can see the frame
			// before the map is called.
			c.next(phaseMap, 0)
			w.e.Call(k, pteOp{Page: k, Write: true, Value: round + 1})
			w.pte[k].store(uint32(round) + 1)
			w.e.Return(k, nil)
			w.note("set_pte_at: map %s", w.nm.tr(k, int8(round)))
		}

		// ptep_get_and_clear is a locked xchg.
		c.next(phaseZap, 0)
		w.e.Call(k, pteOp{Page: k, Write: true, Value: 0})
		old := w.pte[k].xchg(0)
		w.note("ptep_get_and_clear: clear PTE of %s (was %s)", page, w.nm.pte(k, uint64(old)))

		if m.v.walker && k == 0 && round == m.flushes-1 {
			// free_pgtables -> free_pte_range.
			c.next(phasePmdClear, 0)
			w.pmd.store(0)
			w.pt.Store(uint32(ptUnlinked))
			how := "tlb_remove_table: Q queued in the table batch"
			if m.v.tablePage {
				how = "tlb_remove_page: Q queued with the pages to free"
			}
			w.note("free_pgtables -> free_pte_range: pmd_clear(pmd of %s); pte_free_tlb(Q) -> %s", page, how)
		}

		// flush_tlb_mm_range: inc_mm_tlb_gen, a full barrier.
		c.next(phaseGen, 0)
		gen := w.gen.add(1)
		w.note("flush_tlb_mm_range: inc_mm_tlb_gen: mm->context.tlb_gen = %d -> %s", gen, fn)

		// flushmask: the vCPUs to IPI and wait for.
		var mask uint32
		for t := 0; t < m.n; t++ {
			if t == k {
				continue
			}
			if m.v.native || c.keep(fn, t) {
				mask |= 1 << t
			}
		}

		// native_flush_tlb_others (smp_call_function_many, wait=1):
		// queue the csd and send the IPI to each, then wait for each ack
		// in cpu order.
		for t := 0; t < m.n; t++ {
			if mask&(1<<t) != 0 {
				c.next(phaseSend, t)
				w.ipi[k][t].store(uint32(ipiPending))
				w.note("native_flush_tlb_others: send call-function IPI to vCPU%d", t)
			}
		}
		for t := 0; t < m.n; t++ {
			if mask&(1<<t) != 0 {
				c.csdLockWait(t)
				w.ipi[k][t].store(uint32(ipiNone))
			}
		}

		c.next(phaseRet, 0)
		w.e.Return(k, nil)
		w.freed[k].Store(uint32(round) + 1)
		c.freeTable(fn, round)
		if round+1 == m.flushes {
			c.phase = phaseDone
			w.done[k].Store(true)
		}
	}
	c.phase = phaseDone
}

// freeTable is the return step's label and what tlb_finish_mmu does with
// Q: free it with the pages (tlb_remove_page) or hand it to
// call_rcu_sched (tlb_remove_table), which takes the grace period's
// snapshot.
func (c *vcpuImpl) freeTable(fn string, round int) {
	w, m, k := c.w, c.w.m, c.id
	frame := w.nm.frame(k, int8(round))
	if !m.v.walker || k != 0 || w.pt.Load() != uint32(ptUnlinked) {
		w.note("%s returns; free_page(%s): the page is reused by another process", fn, frame)
		return
	}
	if m.v.tablePage {
		w.pt.Store(uint32(ptFreed))
		w.note("%s returns; tlb_flush_mmu_free: free_page(Q) and free_page(%s): the pages are reused", fn, frame)
		return
	}
	var need uint32
	for u := 0; u < m.n; u++ {
		w.gpSnap[u] = w.qs[u].Load()
		if w.vcpus[u].walk.Load() != 0 {
			need |= 1 << u
		}
	}
	w.gpNeed.Store(need)
	w.pt.Store(uint32(ptRCU))
	w.note("%s returns; tlb_table_flush: call_rcu_sched(Q); free_page(%s): the page is reused by another process", fn, frame)
}

// keep is the loop body of kvm_flush_tlb_others for vCPU t: two steps
// (READ_ONCE, then cmpxchg) for a vCPU read as PREEMPTED, one otherwise.
// It reports whether t stays in the flushmask.
func (c *vcpuImpl) keep(fn string, t int) bool {
	w := c.w
	st := &w.st[t]
	c.next(phaseRead, t)
	seen := st.load()
	if seen&kvmVCPUPreempted == 0 {
		w.note("%s: read st[%d].preempted = %d, vCPU%d stays in flushmask", fn, t, seen, t)
		return true
	}
	w.note("%s: read st[%d].preempted = %d (PREEMPTED)", fn, t, seen)

	want := seen | kvmVCPUFlushTLB
	if w.m.v.shiftBug {
		want = seen | shiftedFlush // state | 1 << KVM_VCPU_SHOULD_FLUSH
	}
	c.next(phaseCAS, t)
	if w.m.v.plainStore {
		st.store(want)
		w.note("%s: plain store st[%d].preempted = %d, skip vCPU%d (flush deferred to the host)", fn, t, want, t)
		w.checkByte(t)
		return false
	}
	prev := st.cmpxchg(seen, want)
	ok := prev == seen
	var skip bool
	switch {
	case w.m.v.alwaysSkip:
		skip = true
	case w.m.v.uncompared:
		skip = prev != 0 // if (cmpxchg(...)), as posted
	default:
		skip = ok // cmpxchg(...) == state, later try_cmpxchg
	}
	if w.ctl {
		res := "ok"
		if !ok {
			res = fmt.Sprintf("failed (found %d)", prev)
		}
		what := fmt.Sprintf("keep vCPU%d in flushmask", t)
		if skip {
			what = fmt.Sprintf("skip vCPU%d (flush deferred to the host)", t)
		}
		w.note("%s: cmpxchg st[%d].preempted %d->%d %s, %s", fn, t, seen, want, res, what)
	}
	if ok {
		w.checkByte(t)
	}
	return !skip
}

// csdLockWait waits for t's ack (csd_lock_wait: cpu_relax until the
// target's flush_tlb_func unlocks the csd). Under the Go scheduler that
// is a real spin between scheduling points. Under control the program's
// alternative is offered only once the ack is there, as the model's
// blocked await; in busy-wait it is offered and each pick that finds no
// ack is one spin.
func (c *vcpuImpl) csdLockWait(t int) {
	w, k := c.w, c.id
	for {
		c.next(phaseWait, t)
		if w.ipi[k][t].load() == uint32(ipiAcked) {
			w.note("native_flush_tlb_others: csd_lock_wait: vCPU%d acked", t)
			return
		}
		if w.ctl {
			w.note("native_flush_tlb_others: csd_lock_wait: no ack from vCPU%d yet, cpu_relax (vCPU%d is %s)", t, t, c.whereIs(t))
		}
	}
}

// whereIs mirrors machine.whereIs for the vCPU initiator c waits for.
func (c *vcpuImpl) whereIs(t int) string {
	w := c.w
	g := w.vcpus[t]
	switch {
	case g.mode.Load() == uint32(modeDesched):
		return "scheduled out by the host"
	case g.mode.Load() == uint32(modeHost):
		return "in host mode"
	case w.ipi[c.id][t].load() == uint32(ipiHandler):
		return "inside flush_tlb_func"
	case g.walk.Load() != 0:
		return "inside get_user_pages_fast with interrupts off"
	}
	for k := 0; k < w.m.ni; k++ {
		if w.ipi[k][t].load() == uint32(ipiHandler) {
			return "handling another IPI"
		}
	}
	return "IPI not yet taken"
}

// rcuSched is the RCU-sched grace period after call_rcu_sched(Q): it ends
// once every vCPU that was inside get_user_pages_fast has left it, and
// tlb_remove_table_rcu frees Q.
func (w *world) rcuSched() {
	ready := func() bool {
		if w.pt.Load() != uint32(ptRCU) {
			return false
		}
		need := w.gpNeed.Load()
		for u := 0; u < w.m.n; u++ {
			if need&(1<<u) != 0 && w.qs[u].Load() == w.gpSnap[u] {
				return false
			}
		}
		return true
	}
	if !w.ctl {
		for !ready() {
			runtime.Gosched()
		}
		w.pt.Store(uint32(ptFreed))
		return
	}
	for {
		w.gate.at[w.m.rcu] = gatePoint{
			alts: func() int {
				if ready() {
					return 1
				}
				return 0
			},
			waits: func() string {
				if w.pt.Load() != uint32(ptRCU) {
					return ""
				}
				return "rcu_sched grace period waits for a vCPU inside get_user_pages_fast"
			},
		}
		w.e.Yield("rcu_sched grace period ends -> tlb_remove_table_rcu: free_page(Q)")
		w.gate.at[w.m.rcu] = gatePoint{}
		if ready() {
			w.pt.Store(uint32(ptFreed))
			return
		}
		// Only without Guided: the wait the gate hides.
		w.e.Note(": not yet")
	}
}
