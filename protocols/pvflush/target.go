package pvflush

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// stepTarget takes action a of target vCPU t: its guest code, its IPI
// handler, or its host thread H_t (the same thread in host mode).
func (m *machine) stepTarget(s *state, t, a int, x *model.Exec) {
	g := &s.tg[t]
	switch a {
	case actAccess:
		// One guest instruction: walk (on a miss), fill and use are one
		// step because an instruction is atomic with respect to the
		// interrupts that flush this TLB; nothing else touches TLB(t).
		g.left--
		if g.tlb >= 0 {
			x.Touch(m.tlbName[t], false)
			if x.Labelling() {
				x.Labelf("guest: read X through TLB entry X->P%d", g.tlb)
			}
			m.use(s, x, t, g.tlb, false)
			return
		}
		v := x.Load(s.mem, pteX)
		x.Touch(m.tlbName[t], true)
		if v == 0 {
			x.Label("guest: TLB miss, walk PTE: X not present, page fault")
			return
		}
		g.tlb = int8(v - 1)
		if x.Labelling() {
			x.Labelf("guest: TLB miss, walk PTE: X->P%d, fill TLB and read", g.tlb)
		}
		m.use(s, x, t, g.tlb, false)

	case actEmulate:
		// The exit itself is local to H_t; the emulator's page walk is the
		// shared access. Not an interrupt exit: at_instruction_boundary
		// stays false.
		g.left--
		v := x.Load(s.mem, pteX)
		g.mode, g.atBoundary = modeHost, false
		if v == 0 {
			x.Label("vmx_handle_exit: instruction accessing X exits for emulation; x86_emulate_insn walks PTE: X not present, page fault injected")
			return
		}
		g.inflight = int8(v - 1)
		if x.Labelling() {
			x.Labelf("vmx_handle_exit: instruction accessing X exits for emulation; x86_emulate_insn walks PTE: X->P%d (translation in flight)", g.inflight)
		}

	case actTakeIPI:
		x.Touch(m.tlbName[t], true)
		g.tlb, g.ipi = -1, ipiHandler
		x.Label("flush_tlb_func: call-function IPI from vCPU0 taken, flush TLB")

	case actAck:
		x.Touch(m.csdName[t], true)
		g.ipi = ipiAcked
		x.Label("flush_tlb_func: done, csd_unlock (ack to vCPU0)")

	case actPreempt:
		m.stepPreempt(s, x, t)

	case actSchedIn:
		g.mode, g.req = modeHost, true
		x.Label("kvm_sched_in -> kvm_arch_vcpu_load: kvm_make_request(KVM_REQ_STEAL_UPDATE)")

	case actHost:
		m.stepHost(s, x, t)

	case actHostFail:
		g.req, g.atBoundary = false, false
		if x.Labelling() {
			x.Labelf("vcpu_enter_guest -> record_steal_time: steal-time cache refresh failed, return without clearing st[%d].preempted", t)
		}
	}
}

// stepPreempt is the host scheduler preempting H_t: kvm_sched_out ->
// kvm_arch_vcpu_put -> kvm_steal_time_set_preempted. From guest mode the
// exit on the host's timer interrupt is folded in: the exit writes nothing
// shared, and an IPI sent between the exit and the put stays pending just
// as one sent before the exit would.
func (m *machine) stepPreempt(s *state, x *model.Exec, t int) {
	g := &s.tg[t]
	s.preempt--
	fromGuest := g.mode == modeGuest
	if fromGuest {
		g.atBoundary = true
	}
	g.mode = modeDesched
	switch {
	case !g.atBoundary && !m.v.noBoundary:
		if x.Labelling() {
			x.Labelf("%s: not at an instruction boundary, preemption not reported", preemptPrefix(fromGuest))
		}
	case g.hostCopy != 0 && !m.v.noGuard:
		if x.Labelling() {
			x.Labelf("%s: already reported (host st.preempted = %d), nothing stored", preemptPrefix(fromGuest), g.hostCopy)
		}
	default:
		var old uint64
		if x.Labelling() {
			old = s.mem.Peek(stAddr(t)) // for the label only
		}
		x.Store(s.mem, stAddr(t), kvmVCPUPreempted)
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
			x.Labelf("%s: store st[%d].preempted = 1%s%s", preemptPrefix(fromGuest), t, lost, where)
		}
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

// stepHost is H_t's next step in KVM_RUN, in program order: finish an
// emulated instruction, finish record_steal_time, process
// KVM_REQ_STEAL_UPDATE, enter the guest. Preemption between
// record_steal_time's xchg and VM entry is modelled (the request is made
// again and record_steal_time reruns), as in vcpu_enter_guest.
func (m *machine) stepHost(s *state, x *model.Exec, t int) {
	g := &s.tg[t]
	switch {
	case g.inflight >= 0:
		f := g.inflight
		g.inflight = -1
		if x.Labelling() {
			x.Labelf("x86_emulate_insn: complete the access to X through the in-flight translation X->P%d", f)
		}
		m.use(s, x, t, f, true)

	case g.rsFlush:
		x.Touch(m.tlbName[t], true)
		g.tlb, g.rsFlush = -1, false
		x.Label("record_steal_time: FLUSH_TLB was set -> kvm_vcpu_flush_tlb_guest: flush TLB")

	case g.rsWrite:
		x.Store(s.mem, stAddr(t), 0)
		g.rsWrite = false
		if x.Labelling() {
			x.Labelf("record_steal_time: kvm_write_guest_cached: write back the host copy, st[%d].preempted = 0", t)
		}

	case g.req:
		// "vcpu_run: at_instruction_boundary = false" is local and folds
		// in here.
		g.req, g.atBoundary, g.hostCopy = false, false, 0
		if m.v.hostCopy {
			v := x.Load(s.mem, stAddr(t))
			g.rsFlush, g.rsWrite = v&kvmVCPUFlushTLB != 0, true
			if x.Labelling() {
				x.Labelf("vcpu_enter_guest -> record_steal_time: kvm_read_guest_cached: host copy of st[%d].preempted = %d; xchg(host copy, 0)", t, v)
			}
			return
		}
		v := x.Xchg(s.mem, stAddr(t), 0)
		g.rsFlush = v&kvmVCPUFlushTLB != 0
		if x.Labelling() {
			x.Labelf("vcpu_enter_guest -> record_steal_time: xchg st[%d].preempted %d->0", t, v)
		}

	default:
		g.mode, g.atBoundary = modeGuest, false
		x.Label("vcpu_enter_guest: VM entry")
	}
}

// use is an access of X through frame f (a TLB entry, or the emulator's
// in-flight translation): a read of the PTE register for the spec, and
// the B-SAFE check against the observer.
func (m *machine) use(s *state, x *model.Exec, t int, f int8, emulated bool) {
	if x.Recording() {
		x.Call(t, pteOp{})
		x.Return(t, int(f)+1)
	}
	if m.staleSeam || f >= int8(s.freed) {
		return
	}
	if emulated {
		x.Fail(StaleTLB, "vCPU%d's emulated instruction accessed X through the translation X->P%d that KVM's emulator obtained before vCPU0's flush of X returned; P%d has been freed and reused by another process", t, f, f)
		return
	}
	x.Fail(StaleTLB, "vCPU%d read X through a TLB entry X->P%d cached before vCPU0's flush of X returned; P%d has been freed and reused by another process", t, f, f)
}
