package pvflush

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// stepAccess is one guest instruction accessing page k through vCPU t's
// TLB. Its walk (on a miss), fill and use are one step because an
// instruction is atomic with respect to the interrupts that flush this
// TLB; nothing else touches TLB(t).
func (m *machine) stepAccess(s *state, t, k int, x *model.Exec) {
	g := &s.v[t]
	g.left--
	if f := g.tlb[k]; f >= 0 {
		x.Touch(m.tlbName[t], false)
		if x.Labelling() {
			x.Labelf("guest: read %s through TLB entry %s", m.nm.page(k), m.nm.tr(k, f))
		}
		m.use(s, x, t, k, f, false)
		return
	}
	v := x.Load(s.mem, m.pteAddr[k])
	x.Touch(m.tlbName[t], true)
	if v == 0 {
		if x.Labelling() {
			x.Labelf("guest: TLB miss, walk PTE: %s not present, page fault", m.nm.page(k))
		}
		return
	}
	g.tlb[k] = int8(v - 1)
	if x.Labelling() {
		x.Labelf("guest: TLB miss, walk PTE: %s, fill TLB and read", m.nm.tr(k, g.tlb[k]))
	}
	m.use(s, x, t, k, g.tlb[k], false)
}

// stepEmulate is an instruction accessing page k that exits to KVM for
// emulation. The exit itself is local to H_t; the emulator's page walk is
// the shared access. Not an interrupt exit: at_instruction_boundary stays
// false.
func (m *machine) stepEmulate(s *state, t, k int, x *model.Exec) {
	g := &s.v[t]
	g.left--
	v := x.Load(s.mem, m.pteAddr[k])
	g.mode, g.atBoundary = modeHost, false
	if v == 0 {
		if x.Labelling() {
			x.Labelf("vmx_handle_exit: instruction accessing %s exits for emulation; x86_emulate_insn walks PTE: %s not present, page fault injected", m.nm.page(k), m.nm.page(k))
		}
		return
	}
	g.inflight, g.inflightPage = int8(v-1), uint8(k)
	if x.Labelling() {
		x.Labelf("vmx_handle_exit: instruction accessing %s exits for emulation; x86_emulate_insn walks PTE: %s (translation in flight)", m.nm.page(k), m.nm.tr(k, g.inflight))
	}
}

// stepTakeIPI is flush_tlb_func for initiator k's IPI: it flushes the
// entry of k's page (flush_tlb_func_common's partial flush). Its tlb_gen
// bookkeeping, which may turn this into a full flush or into nothing
// because an earlier flush on this vCPU after k's inc_mm_tlb_gen covered
// it, is left out: it flushes at least as much as the model's at every
// point where it matters (doc.go).
func (m *machine) stepTakeIPI(s *state, t, k int, x *model.Exec) {
	g := &s.v[t]
	x.Touch(m.tlbName[t], true)
	g.tlb[k], g.ipi[k] = -1, ipiHandler
	if x.Labelling() {
		if m.ni == 1 {
			x.Labelf("flush_tlb_func: call-function IPI from vCPU%d taken, flush TLB", k)
		} else {
			x.Labelf("flush_tlb_func: call-function IPI from vCPU%d taken, flush TLB entry of %s", k, m.nm.page(k))
		}
	}
}

func (m *machine) stepAck(s *state, t, k int, x *model.Exec) {
	x.Touch(m.csdName[k][t], true)
	s.v[t].ipi[k] = ipiAcked
	if x.Labelling() {
		x.Labelf("flush_tlb_func: done, csd_unlock (ack to vCPU%d)", k)
	}
}

// stepPreempt is the host scheduler preempting H_t: kvm_sched_out ->
// kvm_arch_vcpu_put -> kvm_steal_time_set_preempted. From guest mode the
// exit on the host's timer interrupt is folded in: the exit writes nothing
// shared, and an IPI sent between the exit and the put stays pending just
// as one sent before the exit would.
func (m *machine) stepPreempt(s *state, t int, x *model.Exec) {
	g := &s.v[t]
	s.preempt--
	fromGuest := g.mode == modeGuest
	if fromGuest {
		g.atBoundary = true
	}
	g.mode = modeDesched
	m.setPreempted(s, t, x, preemptPrefix(fromGuest))
}

// setPreempted is kvm_steal_time_set_preempted as the host has it; prefix
// is the call chain that reached it, for the label.
func (m *machine) setPreempted(s *state, t int, x *model.Exec, prefix string) {
	g := &s.v[t]
	if m.host2017 {
		// f38a7b75267f: no boundary gate, no guard; the host copy is set
		// and the byte written on every put.
		m.storePreempted(s, t, x, prefix, "vcpu->arch.st.steal.preempted = 1; kvm_write_guest_offset_cached: ")
		return
	}
	switch {
	case !g.atBoundary && !m.v.noBoundary:
		if x.Labelling() {
			x.Labelf("%s: not at an instruction boundary, preemption not reported", prefix)
		}
	case g.hostCopy != 0 && !m.v.noGuard:
		if x.Labelling() {
			x.Labelf("%s: already reported (host st.preempted = %d), nothing stored", prefix, g.hostCopy)
		}
	default:
		m.storePreempted(s, t, x, prefix, "")
	}
}

// storePreempted is set_preempted's store of PREEMPTED into the byte (and
// the host copy).
func (m *machine) storePreempted(s *state, t int, x *model.Exec, prefix, how string) {
	g := &s.v[t]
	var old uint64
	if x.Labelling() {
		old = s.mem.PeekThread(t, m.stAddr[t]) // for the label only
	}
	x.Store(s.mem, m.stAddr[t], kvmVCPUPreempted)
	g.hostCopy = kvmVCPUPreempted
	if x.Labelling() {
		lost := ""
		if old&kvmVCPUFlushTLB != 0 {
			lost = fmt.Sprintf(" (was %d: FLUSH_TLB lost)", old)
		}
		where := ""
		if g.inflight >= 0 {
			where = " in the middle of an emulated instruction"
		}
		x.Labelf("%s: %sstore st[%d].preempted = 1%s%s", prefix, how, t, lost, where)
	}
}

// preemptPrefix is the call chain of a preemption, from guest mode with
// the exit on the host's timer interrupt in front.
func preemptPrefix(fromGuest bool) string {
	const put = "kvm_sched_out -> kvm_arch_vcpu_put -> kvm_steal_time_set_preempted"
	if fromGuest {
		return "VM exit on host timer interrupt (at_instruction_boundary = true); " + put
	}
	return put
}

// userExitReady reports whether KVM_RUN of vCPU t may return to userspace
// now: while the budget user-exits lasts, from guest mode (the exit is
// folded in, as for a preemption) or from host mode outside
// record_steal_time (a request or a signal before VM entry, or the MMIO
// exit of an emulated instruction).
func (m *machine) userExitReady(s *state, t int) bool {
	g := &s.v[t]
	if s.uexit == 0 || !m.targetable(t) {
		return false
	}
	return g.mode == modeGuest || g.mode == modeHost && g.rsWrites == 0
}

// stepUserExit is KVM_RUN returning to userspace; kvm_arch_vcpu_ioctl_run
// ends with vcpu_put -> kvm_arch_vcpu_put. With an emulated instruction in
// flight it is the MMIO exit (KVM_EXIT_MMIO): the emulator has translated
// the address and hands the access to the VMM; complete_userspace_io
// finishes the instruction at the next KVM_RUN, before vcpu_run, through
// the translation obtained before the exit (the gpa of each
// vcpu->mmio_fragments). From guest mode the exit is folded in as for a
// preemption (it writes nothing shared); it is taken at an instruction
// boundary (KVM_EXIT_INTR: a host interrupt with a signal pending), the
// case in which the later hosts' gate would report it.
//
// What the put does depends on the host. Since 54aa83c90198 ("KVM: x86:
// do not set st->preempted when going back to user space")
// kvm_arch_vcpu_put calls kvm_steal_time_set_preempted only if
// vcpu->preempted, which kvm_sched_out sets for a task preempted while
// runnable and a return to userspace does not: nothing is reported. Before
// it every put reported: the 2017 host (host=1) and the host of
// mid-instruction (userPut), with their own set_preempted.
func (m *machine) stepUserExit(s *state, t int, x *model.Exec) {
	g := &s.v[t]
	s.uexit--
	var prefix string
	switch {
	case g.mode == modeGuest:
		g.atBoundary = true
		prefix = "VM exit to userspace (KVM_EXIT_INTR, at_instruction_boundary = true); kvm_arch_vcpu_ioctl_run returns -> vcpu_put -> kvm_arch_vcpu_put"
	case g.inflight >= 0:
		if x.Labelling() {
			prefix = fmt.Sprintf("KVM_EXIT_MMIO: x86_emulate_insn hands the access to %s (translation %s) to userspace; kvm_arch_vcpu_ioctl_run returns -> vcpu_put -> kvm_arch_vcpu_put", m.nm.page(int(g.inflightPage)), m.nm.tr(int(g.inflightPage), g.inflight))
		}
	default:
		prefix = "kvm_arch_vcpu_ioctl_run returns to userspace before VM entry -> vcpu_put -> kvm_arch_vcpu_put"
	}
	g.mode = modeUser
	if !m.host2017 && !m.v.userPut {
		if x.Labelling() {
			x.Labelf("%s: vcpu->preempted is false, steal_time not touched", prefix)
		}
		return
	}
	m.setPreempted(s, t, x, prefix+" -> kvm_steal_time_set_preempted")
}

// stepKVMRun is the VMM calling KVM_RUN again: kvm_arch_vcpu_ioctl_run's
// vcpu_load -> kvm_arch_vcpu_load makes KVM_REQ_STEAL_UPDATE, as a
// sched-in does; then complete_userspace_io (stepHost's completion of the
// access in flight) runs before vcpu_run.
func (m *machine) stepKVMRun(s *state, t int, x *model.Exec) {
	g := &s.v[t]
	g.mode, g.req = modeHost, true
	x.Label("KVM_RUN: kvm_arch_vcpu_ioctl_run -> vcpu_load -> kvm_arch_vcpu_load: kvm_make_request(KVM_REQ_STEAL_UPDATE)")
}

func (m *machine) stepSchedIn(s *state, t int, x *model.Exec) {
	g := &s.v[t]
	g.mode, g.req = modeHost, true
	x.Label("kvm_sched_in -> kvm_arch_vcpu_load: kvm_make_request(KVM_REQ_STEAL_UPDATE)")
}

// stepHost is H_t's next step in KVM_RUN, in program order: finish an
// emulated instruction, finish record_steal_time (its write-backs),
// process KVM_REQ_STEAL_UPDATE, enter the guest.
// record_steal_time runs with preemption enabled (vcpu_enter_guest's
// request processing precedes preempt_disable), and a request made by a
// sched-in meanwhile cancels the entry ("kvm_request_pending(vcpu) ...
// goto cancel_injection"): the loop runs record_steal_time again.
func (m *machine) stepHost(s *state, t int, x *model.Exec) {
	g := &s.v[t]
	switch {
	case g.inflight >= 0:
		f, k := g.inflight, int(g.inflightPage)
		g.inflight, g.inflightPage = -1, 0
		if x.Labelling() {
			x.Labelf("x86_emulate_insn: complete the access to %s through the in-flight translation %s", m.nm.page(k), m.nm.tr(k, f))
		}
		m.use(s, x, t, k, f, true)

	case g.rsWrites > 0:
		m.stepWriteBack(s, t, x)

	case g.req:
		// "vcpu_run: at_instruction_boundary = false" is local and folds
		// in here. So does the TLB flush record_steal_time does when it
		// finds FLUSH_TLB: it changes only TLB(t), which nothing but
		// vCPU t's guest code reads, and t runs no guest code between
		// the read of the byte and the flush (it is in host mode, or
		// scheduled out, until the entry after both), so no interleaving
		// anyone can observe is lost.
		g.req, g.atBoundary = false, false
		var v uint64
		switch {
		case m.host2017:
			// kvm_read_guest_cached reads the whole struct into the host
			// copy; xchg(&vcpu->arch.st.steal.preempted, 0) is on that
			// copy, local; three write-backs follow.
			v = x.Load(s.mem, m.stAddr[t])
			g.rsWrites = 3
		case m.v.hostCopy:
			v = x.Load(s.mem, m.stAddr[t])
			g.rsWrites = 1
		default:
			v = x.Xchg(s.mem, m.stAddr[t], 0)
		}
		g.hostCopy = 0
		flush := v&kvmVCPUFlushTLB != 0
		if flush {
			x.Touch(m.tlbName[t], true)
			g.tlb = [maxInitiators]int8{-1, -1}
		}
		if x.Labelling() {
			x.Label(recordStealTimeLabel(m.host2017, m.v.hostCopy, t, v))
		}

	default:
		if m.tso {
			// Between request processing and the entry, vcpu_enter_guest
			// does srcu_read_unlock(), whose __srcu_read_unlock has an
			// smp_mb() (smp_mb__after_srcu_read_unlock relies on it): the
			// host thread's store buffer is empty when the guest runs.
			// (Under SC the fence is left out, keeping footprints as they
			// were.)
			x.Fence(s.mem)
		}
		g.mode, g.atBoundary = modeGuest, false
		x.Label("vcpu_enter_guest: VM entry")
	}
}

// recordStealTimeLabel is the label of record_steal_time's read or xchg
// of the byte (value v) and the flush it may do.
func recordStealTimeLabel(host2017, hostCopy bool, t int, v uint64) string {
	var l string
	switch {
	case host2017:
		l = fmt.Sprintf("vcpu_enter_guest -> record_steal_time: kvm_read_guest_cached: host copy st.steal.preempted = %d; xchg(host copy, 0)", v)
	case hostCopy:
		l = fmt.Sprintf("vcpu_enter_guest -> record_steal_time: kvm_read_guest_cached: host copy of st[%d].preempted = %d; xchg(host copy, 0)", t, v)
	default:
		l = fmt.Sprintf("vcpu_enter_guest -> record_steal_time: xchg st[%d].preempted %d->0", t, v)
	}
	if v&kvmVCPUFlushTLB == 0 {
		return l
	}
	if host2017 {
		return l + "; FLUSH_TLB was set -> kvm_vcpu_flush_tlb: flush TLB"
	}
	return l + "; FLUSH_TLB was set -> kvm_vcpu_flush_tlb_guest: flush TLB"
}

// stepWriteBack is one kvm_write_guest_cached of the host copy: the
// host-copy variant's single write-back of the cleared copy, or one of the
// three whole-struct writes of the 2017 host, each writing the copy as it
// is then (a put in between has set it to PREEMPTED).
func (m *machine) stepWriteBack(s *state, t int, x *model.Exec) {
	g := &s.v[t]
	if !m.host2017 {
		x.Store(s.mem, m.stAddr[t], 0)
		g.rsWrites = 0
		if x.Labelling() {
			x.Labelf("record_steal_time: kvm_write_guest_cached: write back the host copy, st[%d].preempted = 0", t)
		}
		return
	}
	v := uint64(g.hostCopy)
	x.Store(s.mem, m.stAddr[t], v)
	n := 4 - g.rsWrites
	g.rsWrites--
	if x.Labelling() {
		what := [...]string{"", "version", "steal", "version"}[n]
		x.Labelf("record_steal_time: kvm_write_guest_cached (write %d of 3, %s): st[%d].preempted = %d (host copy)", n, what, t, v)
	}
}

// stepHostFail is record_steal_time's early return: kvm_read_guest_cached
// (2017) or the cache refresh / mapping (later hosts) fails, the byte is
// left as it is, and vcpu_enter_guest goes on to enter.
func (m *machine) stepHostFail(s *state, t int, x *model.Exec) {
	g := &s.v[t]
	g.req, g.atBoundary = false, false
	if x.Labelling() {
		x.Labelf("vcpu_enter_guest -> record_steal_time: reading steal_time failed, return without clearing st[%d].preempted", t)
	}
}

// use is an access of page k through frame f (a TLB entry, or the
// emulator's in-flight translation): a read of the PTE register for the
// spec, and the B-SAFE check against the observer.
func (m *machine) use(s *state, x *model.Exec, t, k int, f int8, emulated bool) {
	if x.Recording() {
		x.Call(t, pteOp{Page: k})
		x.Return(t, int(f)+1)
	}
	if m.staleSeam || f >= int8(s.freed[k]) {
		return
	}
	page, fr, owner := m.nm.page(k), m.nm.tr(k, f), m.nm.frame(k, f)
	if emulated {
		x.Fail(StaleTLB, "vCPU%d's emulated instruction accessed %s through the translation %s that KVM's emulator obtained before vCPU%d's flush of %s returned; %s has been freed and reused by another process", t, page, fr, k, page, owner)
		return
	}
	x.Fail(StaleTLB, "vCPU%d read %s through a TLB entry %s cached before vCPU%d's flush of %s returned; %s has been freed and reused by another process", t, page, fr, k, page, owner)
}
