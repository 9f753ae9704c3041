package pvflush

// The real implementation: the guest's kvm_flush_tlb_others as posted in
// seed 003_cebc059dddab0bb4 (Wanpeng Li, "KVM: Add paravirt remote TLB
// flush", with Radim Krčmář's review) and as merged (858a43aae236,
// arch/x86/kernel/kvm.c kvm_flush_tlb_others, later
// kvm_flush_tlb_multi), run by a vCPU0 goroutine; and target vCPU
// goroutines that are both the guest (accesses of X through a simulated
// TLB, flush_tlb_func on the call-function IPI) and the host thread H_t
// (arch/x86/kvm/x86.c: kvm_arch_vcpu_put -> kvm_steal_time_set_preempted,
// kvm_arch_vcpu_load, record_steal_time's xchg and
// kvm_vcpu_flush_tlb_guest, x86_emulate_insn), with the host fixes
// 8c6de56a42e0, b043138246a4 (CVE-2019-3016) and 6cd88243c7e0
// (CVE-2022-39189) and each variant's switch (variants.go). pvflush.md
// B.0-B.5 and Appendix C give the code being mirrored.
//
// # Mapping to the model
//
// Goroutines are created in the order and with the names of
// machine.Threads. Every model step is one rt scheduling point with the
// model's label:
//
//   - vCPU0's steps have one alternative each: an Env.Yield labelled with
//     the static part of the model's label, followed by the step's memory
//     operation and Env.Note with what it found ("X->P0); flush_tlb_mm_range
//     -> ...", "1 (PREEMPTED)", "ok, skip vCPU1 ...").
//   - A target's step is an Env.Choose whose alternatives are the model's,
//     in the model's order (machine.actions: access, emulate, take the IPI
//     or ack it, be preempted; in host mode: the next host step, the
//     early-entry failure, be preempted). The Choose has no common label
//     (the alternatives are different functions), so the whole label is
//     the Note. A scheduled-out target has the single step kvm_sched_in,
//     a Yield.
//   - csd_lock_wait, which the model has as a blocked await for the ack,
//     is a gated Yield: blocked until the target's ack (impl_gate.go says
//     why it is not an rt Mutex or Cond, and how Guided makes the
//     alternatives of every step exactly the model's).
//
// The simulated machine (the PTE of X, each steal_time.preempted byte,
// each target's IPI/csd state, the allocator's observer) is memory shared
// by the goroutines, held in sync/atomic words (hwWord). They are not rt
// words because a target's step is a Choose, and an rt word operation
// inside it would be a second scheduling point; every access happens
// inside a step whose scheduling point was taken just before, which is
// how the model folds it (DESIGN.md principle 4). Under the Go scheduler
// they are real sequentially consistent atomics, as the kernel's
// READ_ONCE, cmpxchg and xchg are on x86. A target's TLB, its in-flight
// emulator translation and the host's vcpu->arch fields are touched only
// by its own goroutine (the guest and H_t never run at once) and are
// plain fields.
//
// stale-tlb is checked at every use of a translation, in the step that
// uses it, with the model's message; flag-shape after every write of a
// steal_time byte. Env.Call and Env.Return record the model's history
// (spec.go) at the model's steps.

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// Impl is the real implementation of every variant. Under a plain
// controlled strategy it replays model traces step for step; to explore it
// with the model's exact choices, use Guided.
// Controlled runs that choose on their own go through Guided's adapter.
func init() {
	Impl.Gate = func(s rt.Strategy) (rt.Strategy, *rt.Impl) {
		im, adapt := Guided()
		return adapt(s), im
	}
}

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

// maxAlts is the largest number of alternatives a target's step can have
// (guest mode: access, emulate, take the IPI or ack it, be preempted).
const maxAlts = 4

// actIdle is what a target does with an alternative that is not offered
// in its state: only a plain strategy, without Guided, can choose one.
const actIdle = -1

// hwWord is a word of the simulated machine's memory.
type hwWord struct{ v atomic.Uint32 }

func (w *hwWord) load() uint32         { return w.v.Load() }
func (w *hwWord) store(v uint32)       { w.v.Store(v) }
func (w *hwWord) xchg(v uint32) uint32 { return w.v.Swap(v) }
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
	e        *rt.Env
	ctl      bool // controlled: labels are built, gated points are used
	v        variant
	n        int
	flushes  int
	accesses int
	gate     gate

	pte     hwWord   // frame+1 of the page X maps, 0: not present
	st      []hwWord // st[t].preempted, t >= 1
	ipi     []hwWord // vCPU0 -> t call-function IPI: ipiNone..ipiAcked
	budget  atomic.Int32
	freed   atomic.Uint32 // the observer of B-SAFE: frames below it are freed
	initEnd atomic.Bool   // vCPU0 has returned from its last flush
}

func newBody(name string, p model.Params, l *link) (rt.Body, error) {
	v, ok := variants[name]
	if !ok {
		return nil, fmt.Errorf("pvflush: unknown variant %q", name)
	}
	n := p["vcpus"]
	if n < 2 || n > maxVCPUs {
		return nil, fmt.Errorf("pvflush: vcpus=%d is outside [2, %d]", n, maxVCPUs)
	}
	// The real code runs on Go's memory model, whose atomics are
	// sequentially consistent: the model's store buffers (memory=1) and
	// its barrier-less PTE clear have no counterpart here.
	if p["memory"] != 0 || p["pte-clear"] != 0 {
		return nil, fmt.Errorf("pvflush: the real implementation runs on sequentially consistent atomics; memory=%d pte-clear=%d exist only in the model", p["memory"], p["pte-clear"])
	}
	return func(e *rt.Env) func() *model.Violation {
		w := &world{e: e, ctl: e.IsControlled(), v: v, n: n, flushes: p["flushes"], accesses: p["accesses"]}
		w.gate.at = make([]gatePoint, n)
		w.st = make([]hwWord, n)
		w.ipi = make([]hwWord, n)
		w.budget.Store(int32(p["preemptions"]))
		// X starts mapped to P0; every target starts in guest mode with an
		// empty TLB and steal_time.preempted = 0.
		w.pte.store(1)
		if l != nil && w.ctl {
			l.g = &w.gate
		}
		e.Go("vCPU0 (initiator)", w.initiator)
		for t := 1; t < n; t++ {
			c := &vcpu{w: w, id: t, mode: modeGuest, tlb: -1, inflight: -1, left: w.accesses}
			e.Go(fmt.Sprintf("vCPU%d", t), c.run)
		}
		return nil
	}, nil
}

// yield is a scheduling point of vCPU0 with label. Under the Go
// scheduler it gives the other goroutines a chance to run: without it a
// goroutine usually runs its whole program before the others start, and a
// stress run hardly interleaves at all.
func (w *world) yield(label string) {
	if w.ctl {
		w.e.Yield(label)
		return
	}
	runtime.Gosched()
}

// note completes the current step's label (controlled mode only, so that
// the stress runs do not format strings).
func (w *world) note(format string, args ...any) {
	if w.ctl {
		w.e.Note(fmt.Sprintf(format, args...))
	}
}

// label formats a scheduling point's label, or returns "" in real mode,
// where labels are not used.
func (w *world) label(format string, args ...any) string {
	if !w.ctl {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

// flagShape is B-S2 on the byte just written, with the model's messages:
// the model checks it after every step, and only the written byte can
// have changed.
func (w *world) flagShape(t int, b uint32) {
	if b == 0 || b&kvmVCPUPreempted != 0 {
		return
	}
	if b&kvmVCPUFlushTLB != 0 {
		w.e.Failf(FlagShape, "st[%d].preempted = %d: FLUSH_TLB is set but PREEMPTED is not, so vCPU%d's host will never see the flush request", t, b, t)
		return
	}
	w.e.Failf(FlagShape, "st[%d].preempted = %d has bits set without PREEMPTED: vcpu_is_preempted (cmpb $0) calls running vCPU%d preempted", t, b, t)
}

// initiator is vCPU0: per round, (map X to a fresh page,) clear the PTE,
// kvm_flush_tlb_others, free the page.
func (w *world) initiator() {
	fn := "kvm_flush_tlb_others"
	if w.v.native {
		fn = "native_flush_tlb_others"
	}
	for round := 0; round < w.flushes; round++ {
		if round > 0 {
			// set_pte_at: a later round maps X to a fresh page, so that
			// its flush has something to protect. The write is called
			// before the store and returns after it, so that under the
			// Go scheduler no access can see the page before the map is
			// called.
			w.yield(w.label("set_pte_at: map X->P%d", round))
			w.e.Call(0, pteOp{Write: true, Value: round + 1})
			w.pte.store(uint32(round) + 1)
			w.e.Return(0, nil)
		}

		// ptep_get_and_clear is a locked xchg: a full barrier before
		// the flush reads steal_time (pvflush.md B2 note).
		w.yield("ptep_get_and_clear: clear PTE of X (was ")
		w.e.Call(0, pteOp{Write: true, Value: 0})
		old := w.pte.xchg(0)
		w.note("%s); flush_tlb_mm_range -> %s", pteName(uint64(old)), fn)

		// flushmask: the targets to IPI and wait for.
		var mask uint32
		if w.v.native {
			mask = 1<<w.n - 2
		} else {
			for t := 1; t < w.n; t++ {
				if w.pvFlush(fn, t) {
					mask |= 1 << t
				}
			}
		}

		// native_flush_tlb_others (smp_call_function_many, wait=1):
		// send every IPI, then wait for every ack in cpu order.
		for t := 1; t < w.n; t++ {
			if mask&(1<<t) != 0 {
				w.yield(w.label("native_flush_tlb_others: send call-function IPI to vCPU%d", t))
				w.ipi[t].store(uint32(ipiPending))
			}
		}
		for t := 1; t < w.n; t++ {
			if mask&(1<<t) != 0 {
				w.csdLockWait(t)
				w.ipi[t].store(uint32(ipiNone))
			}
		}

		// The allocator is folded into the return: from here on the
		// frame of this round belongs to another process.
		w.yield(w.label("%s returns; free_page(P%d): the page is reused by another process", fn, round))
		w.e.Return(0, nil)
		w.freed.Store(uint32(round) + 1)
		if round+1 == w.flushes {
			w.initEnd.Store(true)
		}
	}
}

// pvFlush is the loop body of kvm_flush_tlb_others for target t: two steps
// (READ_ONCE, then cmpxchg) for a target read as PREEMPTED, one otherwise.
// It reports whether t stays in the flushmask.
func (w *world) pvFlush(fn string, t int) bool {
	st := &w.st[t]
	w.yield(w.label("%s: read st[%d].preempted = ", fn, t))
	seen := st.load()
	if seen&kvmVCPUPreempted == 0 {
		w.note("%d, vCPU%d stays in flushmask", seen, t)
		return true
	}
	w.note("%d (PREEMPTED)", seen)

	want := seen | kvmVCPUFlushTLB
	if w.v.shiftBug {
		want = seen | shiftedFlush // state | 1 << KVM_VCPU_SHOULD_FLUSH
	}
	if w.v.plainStore {
		w.yield(w.label("%s: plain store st[%d].preempted = %d, skip vCPU%d (flush deferred to the host)", fn, t, want, t))
		st.store(want)
		w.flagShape(t, want)
		return false
	}
	w.yield(w.label("%s: cmpxchg st[%d].preempted %d->%d ", fn, t, seen, want))
	prev := st.cmpxchg(seen, want)
	ok := prev == seen
	if ok {
		w.flagShape(t, want)
	}
	var skip bool
	switch {
	case w.v.alwaysSkip:
		skip = true
	case w.v.uncompared:
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
		w.e.Note(res + ", " + what)
	}
	return !skip
}

// csdLockWait busy-waits for t's ack (csd_lock_wait: cpu_relax until the
// target's flush_tlb_func unlocks the csd). Under the Go scheduler that is
// a real spin. Under control it is one step, enabled once the ack is
// there, as the model's blocked await.
func (w *world) csdLockWait(t int) {
	acked := func() bool { return w.ipi[t].load() == uint32(ipiAcked) }
	if !w.ctl {
		for !acked() {
			runtime.Gosched()
		}
		return
	}
	label := fmt.Sprintf("native_flush_tlb_others: csd_lock_wait: vCPU%d", t)
	for {
		w.gate.at[0] = gatePoint{
			alts: func() int {
				if acked() {
					return 1
				}
				return 0
			},
			waits: func() string {
				return fmt.Sprintf("vCPU0 (initiator) waits in csd_lock_wait for the ack of vCPU%d's flush_tlb_func", t)
			},
		}
		w.e.Yield(label)
		w.gate.at[0] = gatePoint{}
		if acked() {
			w.e.Note(" acked")
			return
		}
		// Only without Guided: the spin the gate hides.
		w.e.Note(": not acked yet, spin (cpu_relax)")
	}
}

// vcpu is target vCPU t: the guest vCPU and its host thread H_t.
type vcpu struct {
	w    *world
	id   int
	mode uint8
	tlb  int // frame of the cached translation of X, or -1
	// inflight is the frame of the translation KVM's emulator obtained
	// and has not used yet, or -1 (Appendix C note 4).
	inflight   int
	hostCopy   uint32 // vcpu->arch.st.preempted: "already reported"
	req        bool   // KVM_REQ_STEAL_UPDATE pending
	atBoundary bool   // vcpu->arch.at_instruction_boundary
	rsFlush    bool   // record_steal_time saw FLUSH_TLB; the flush is next
	rsWrite    bool   // host-copy: the write-back of the copy is next
	left       int    // guest accesses of X still to do
	acts       [maxAlts]int
}

// actions lists what t can do now, in the model's order
// (machine.actions).
func (c *vcpu) actions() []int {
	buf := c.acts[:0]
	ipi := uint8(c.w.ipi[c.id].load())
	switch c.mode {
	case modeGuest:
		if c.left > 0 && ipi != ipiHandler {
			buf = append(buf, actAccess, actEmulate)
		}
		switch ipi {
		case ipiPending:
			buf = append(buf, actTakeIPI)
		case ipiHandler:
			buf = append(buf, actAck)
		}
	case modeHost:
		buf = append(buf, actHost)
		if c.w.v.earlyEntry && c.inflight < 0 && !c.rsFlush && !c.rsWrite && c.req {
			buf = append(buf, actHostFail)
		}
	case modeDesched:
		return append(buf, actSchedIn)
	}
	if c.w.budget.Load() > 0 {
		buf = append(buf, actPreempt)
	}
	return buf
}

// finished: t will never step again. Its guest work is done, no IPI is
// or will be pending, and the host has no preemption left.
func (c *vcpu) finished() bool {
	ipi := uint8(c.w.ipi[c.id].load())
	return c.mode == modeGuest && c.left == 0 && ipi != ipiPending && ipi != ipiHandler &&
		c.w.budget.Load() == 0 && c.w.initEnd.Load()
}

func (c *vcpu) run() {
	for !c.finished() {
		if c.mode == modeDesched {
			// kvm_sched_in -> kvm_arch_vcpu_load: the only thing a
			// scheduled-out vCPU does.
			c.w.e.Yield("kvm_sched_in -> kvm_arch_vcpu_load: kvm_make_request(KVM_REQ_STEAL_UPDATE)")
			c.mode, c.req = modeHost, true
			continue
		}
		c.step(c.choose())
	}
}

// choose is the environment's choice of what t does next: one scheduling
// point, whose alternatives are actions().
func (c *vcpu) choose() int {
	w := c.w
	if !w.ctl {
		acts := c.actions()
		if len(acts) == 0 {
			// Halted until an IPI comes or vCPU0 is done.
			runtime.Gosched()
			return actIdle
		}
		runtime.Gosched() // as vCPU0's yield
		return acts[w.e.Choose("", len(acts))]
	}
	w.gate.at[c.id] = gatePoint{
		alts:  func() int { return len(c.actions()) },
		waits: func() string { return "" }, // no alternative left: done
	}
	a := w.e.Choose("", maxAlts)
	w.gate.at[c.id] = gatePoint{}
	// The alternatives are those of now, not of when t parked: an IPI may
	// have come, another target may have used up the preemptions.
	if acts := c.actions(); a < len(acts) {
		return acts[a]
	}
	return actIdle
}

// step performs action a: guest code, the IPI handler, or H_t.
func (c *vcpu) step(a int) {
	w, t := c.w, c.id
	switch a {
	case actIdle:
		if w.ctl {
			w.note("vCPU%d: no action (an alternative this state does not offer: run under pvflush.Guided to follow the model)", t)
		}

	case actAccess:
		// One guest instruction: walk (on a miss), fill and use are one
		// step, as an instruction is atomic with respect to the
		// interrupts that flush this TLB.
		c.left--
		if c.tlb >= 0 {
			w.note("guest: read X through TLB entry X->P%d", c.tlb)
			c.use(c.tlb, false)
			return
		}
		v := w.pte.load()
		if v == 0 {
			w.note("guest: TLB miss, walk PTE: X not present, page fault")
			return
		}
		c.tlb = int(v) - 1
		w.note("guest: TLB miss, walk PTE: X->P%d, fill TLB and read", c.tlb)
		c.use(c.tlb, false)

	case actEmulate:
		// The exit itself is local to H_t; x86_emulate_insn's page walk
		// is the shared access. Not an interrupt exit, so not at an
		// instruction boundary.
		c.left--
		v := w.pte.load()
		c.mode, c.atBoundary = modeHost, false
		if v == 0 {
			w.note("vmx_handle_exit: instruction accessing X exits for emulation; x86_emulate_insn walks PTE: X not present, page fault injected")
			return
		}
		c.inflight = int(v) - 1
		w.note("vmx_handle_exit: instruction accessing X exits for emulation; x86_emulate_insn walks PTE: X->P%d (translation in flight)", c.inflight)

	case actTakeIPI:
		c.tlb = -1
		w.ipi[t].store(uint32(ipiHandler))
		w.note("flush_tlb_func: call-function IPI from vCPU0 taken, flush TLB")

	case actAck:
		w.ipi[t].store(uint32(ipiAcked))
		w.note("flush_tlb_func: done, csd_unlock (ack to vCPU0)")

	case actPreempt:
		if !c.claimPreemption() {
			return // real mode: another target took the last one
		}
		c.preempt()

	case actHost:
		c.host()

	case actHostFail:
		c.req, c.atBoundary = false, false
		w.note("vcpu_enter_guest -> record_steal_time: steal-time cache refresh failed, return without clearing st[%d].preempted", t)
	}
}

// claimPreemption takes one of the shared host preemptions. Under control
// actions() has just seen one left and nothing ran since.
func (c *vcpu) claimPreemption() bool {
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
func (c *vcpu) preempt() {
	w, t := c.w, c.id
	prefix := "kvm_sched_out -> kvm_arch_vcpu_put -> kvm_steal_time_set_preempted"
	if c.mode == modeGuest {
		prefix = "VM exit on host timer interrupt (at_instruction_boundary = true); " + prefix
		c.atBoundary = true
	}
	c.mode = modeDesched
	switch {
	case !c.atBoundary && !w.v.noBoundary:
		// 6cd88243c7e0: only report a preemption at an instruction
		// boundary.
		w.note("%s: not at an instruction boundary, preemption not reported", prefix)
	case c.hostCopy != 0 && !w.v.noGuard:
		// 8c6de56a42e0: if (vcpu->arch.st.preempted) return;
		w.note("%s: already reported (host st.preempted = %d), nothing stored", prefix, c.hostCopy)
	default:
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
			if c.inflight >= 0 {
				where = " in the middle of an emulated instruction"
			}
			w.note("%s: store st[%d].preempted = 1%s%s", prefix, t, lost, where)
		}
	}
}

// host is H_t's next step in KVM_RUN, in program order: finish an emulated
// instruction, finish record_steal_time, process KVM_REQ_STEAL_UPDATE,
// enter the guest.
func (c *vcpu) host() {
	w, t := c.w, c.id
	switch {
	case c.inflight >= 0:
		f := c.inflight
		c.inflight = -1
		w.note("x86_emulate_insn: complete the access to X through the in-flight translation X->P%d", f)
		c.use(f, true)

	case c.rsFlush:
		// kvm_vcpu_flush_tlb_guest
		c.tlb, c.rsFlush = -1, false
		w.note("record_steal_time: FLUSH_TLB was set -> kvm_vcpu_flush_tlb_guest: flush TLB")

	case c.rsWrite:
		// host-copy: the copy, cleared, is written back over whatever
		// the guest set in between.
		w.st[t].store(0)
		c.rsWrite = false
		w.note("record_steal_time: kvm_write_guest_cached: write back the host copy, st[%d].preempted = 0", t)

	case c.req:
		// vcpu_run's "at_instruction_boundary = false" folds in here.
		c.req, c.atBoundary, c.hostCopy = false, false, 0
		if w.v.hostCopy {
			v := w.st[t].load()
			c.rsFlush, c.rsWrite = v&kvmVCPUFlushTLB != 0, true
			w.note("vcpu_enter_guest -> record_steal_time: kvm_read_guest_cached: host copy of st[%d].preempted = %d; xchg(host copy, 0)", t, v)
			return
		}
		// b043138246a4: xchg on the guest's byte itself.
		v := w.st[t].xchg(0)
		c.rsFlush = v&kvmVCPUFlushTLB != 0
		w.note("vcpu_enter_guest -> record_steal_time: xchg st[%d].preempted %d->0", t, v)

	default:
		c.mode, c.atBoundary = modeGuest, false
		w.note("vcpu_enter_guest: VM entry")
	}
}

// use is an access of X through frame f (a TLB entry, or the emulator's
// in-flight translation): a read of the PTE register, and B-SAFE against
// the allocator's observer.
func (c *vcpu) use(f int, emulated bool) {
	w, t := c.w, c.id
	w.e.Call(t, pteOp{})
	w.e.Return(t, f+1)
	if uint32(f) >= w.freed.Load() {
		return
	}
	if emulated {
		w.e.Failf(StaleTLB, "vCPU%d's emulated instruction accessed X through the translation X->P%d that KVM's emulator obtained before vCPU0's flush of X returned; P%d has been freed and reused by another process", t, f, f)
		return
	}
	w.e.Failf(StaleTLB, "vCPU%d read X through a TLB entry X->P%d cached before vCPU0's flush of X returned; P%d has been freed and reused by another process", t, f, f)
}
