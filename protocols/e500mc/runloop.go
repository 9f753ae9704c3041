package e500mc

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// The host side of a loaded vCPU's run loop (arch/powerpc/kvm/booke.c
// kvmppc_vcpu_run and kvmppc_handle_exit, powerpc.c
// kvmppc_prepare_to_enter, e500_mmu_host.c kvmppc_mmu_map). Each step
// runs on the CPU the vCPU is loaded on; between two of them the vCPU is
// preemptible (interrupts and preemption enabled), so the host scheduler
// can put it there (altPut) and another CPU can load it: the next step
// then runs on that CPU. That is the window the host's safety argument
// has to cover: a request flushed on one CPU, a shadow entry written on
// another.

// hostStep is the vCPU's next host-side step on CPU c.
func (m *machine) hostStep(s *state, c int, x *model.Exec) {
	v := int(s.cpus[c].run)
	switch s.vcpus[v].pc {
	case pcGuest:
		m.ipiExit(s, c, x)
	case pcHost:
		m.prepareToEnter(s, c, x)
	case pcMap:
		m.mmuMap(s, c, x)
	case pcMapped:
		m.writeStlbe(s, c, x)
	}
}

func (m *machine) who(s *state, v int) string {
	vc := &s.vcpus[v]
	return fmt.Sprintf("vCPU %s of %s", vcpuName(vc.id), vmName(s.vms[vc.vm].id))
}

// prepareToEnter is kvmppc_prepare_to_enter with interrupts hard-disabled:
// vcpu->mode = IN_GUEST_MODE; smp_mb(); kvm_request_pending(vcpu). With no
// request pending, guest_enter_irqoff and the guest runs (pcGuest). With
// KVM_REQ_TLB_FLUSH pending it enables interrupts and handles it
// (kvmppc_core_check_requests): kvm_check_request clears the bit and
// kvmppc_core_flush_tlb runs kvmppc_e500_tlbil_all (tlbilxlpid, this CPU
// only) and clear_tlb_privs (the gtlb_priv ref loses E500_TLB_VALID);
// then the loop starts over (pcHost).
//
// Why one step:
//   - The store of mode and the load of the requests are separated only
//     by the smp_mb, with interrupts off. The host's
//     kvm_make_all_cpus_request is one step too (set the bit, read mode),
//     so under sequential consistency every interleaving of the two pairs
//     is one of the two orders of the steps: the vCPU sees the request,
//     or the host sees IN_GUEST_MODE and sends the IPI. vcpu->mode itself
//     is not kept: on booke it stays IN_GUEST_MODE until kvmppc_vcpu_run
//     returns, so the host IPIs every loaded vCPU of the VM, and only one
//     in guest mode has to act on it (ipiExit); one in the host takes it
//     at once with interrupts on.
//   - Between local_irq_enable() and the request handling the vCPU is
//     preemptible, and kvm_check_request and the flush are two
//     statements. A preemption there (the vCPU put on c, loaded on d)
//     leaves a state that differs from the vCPU put before this step only
//     in where it resumes, and both resume by handling the request on d:
//     the request bit is set until the vCPU itself clears it. A request
//     the host sets between the clear and the flush is consumed by the one
//     flush here, where the code would flush a second time: removing
//     entries, never adding one.
func (m *machine) prepareToEnter(s *state, c int, x *model.Exec) {
	v := int(s.cpus[c].run)
	vc := &s.vcpus[v]
	l := int(s.cpus[c].lpidr)
	req := x.Load(s.mem, m.requests[v])
	if req != 0 && !m.cfg.ignoreRequest {
		x.Store(s.mem, m.requests[v], 0)
		x.Touch(m.tlbName[c], true)
		*m.tlbAt(s, c, l) = entry{}
		x.Store(s.mem, m.ref[v], 0)
		x.Count(metricRequestFlushes, 1)
		if x.Labelling() {
			x.Labelf("kvmppc_prepare_to_enter: %s on CPU%d, mode = IN_GUEST_MODE, smp_mb; KVM_REQ_TLB_FLUSH pending: kvmppc_core_check_requests, kvmppc_core_flush_tlb: tlbilxlpid %d on CPU%d only, clear_tlb_privs", m.who(s, v), c, m.hwLPID(c, l), c)
		}
		return
	}
	vc.pc = pcGuest
	if x.Labelling() {
		what := "no request pending"
		if req != 0 {
			what = "KVM_REQ_TLB_FLUSH pending, ignored by this variant"
		}
		x.Labelf("kvmppc_prepare_to_enter: %s on CPU%d, mode = IN_GUEST_MODE, smp_mb; %s: guest entry (LPID %d)", m.who(s, v), c, what, m.hwLPID(c, l))
	}
}

// mmuMap is kvmppc_mmu_map for EA 0 on CPU c, after a DTLB miss exit or
// from tlbwe's premap. With the gtlb_priv ref still E500_TLB_VALID it
// builds the shadow entry from the ref's page and writes it at once
// (kvmppc_e500_setup_stlbe, write_stlbe with preemption disabled);
// otherwise kvmppc_e500_tlb0_map calls kvmppc_e500_shadow_map: under
// kvm->mmu_lock, mmu_invalidate_retry (an invalidation of the VM's memory
// in progress) gives -EAGAIN and the guest resumes to fault again;
// otherwise the ref takes the page the host maps now (its generation) and
// the lock is dropped before write_stlbe, a step of its own (pcMapped).
// The page lookup (__kvm_faultin_pfn) and the retry check are one step:
// a lookup that raced with an invalidation is exactly what the check
// under the lock refuses, so splitting them only adds retries. The lock
// itself is not kept: the notifier's request step and this one are
// atomic, and a shadow_map that would wait for the lock finds the
// invalidation in progress when it gets it.
func (m *machine) mmuMap(s *state, c int, x *model.Exec) {
	v := int(s.cpus[c].run)
	vc := &s.vcpus[v]
	ref := x.Load(s.mem, m.ref[v])
	if ref != 0 {
		g := x.Load(s.mem, m.gtlb[v])
		m.install(s, c, v, uint8(g), uint8(ref-1), x)
		vc.pc = pcHost
		if x.Labelling() {
			x.Labelf("kvmppc_mmu_map: %s on CPU%d, gtlb_priv ref valid (host pages gen %d): write_stlbe EA 0 -> page %d into CPU%d's TLB (LPID %d)", m.who(s, v), c, ref-1, g, c, m.hwLPID(c, int(s.cpus[c].lpidr)))
		}
		return
	}
	k := vc.vm
	if x.Load(s.mem, m.inProgress[k]) != 0 {
		vc.pc = pcHost
		if x.Labelling() {
			x.Labelf("kvmppc_e500_shadow_map: %s, mmu_invalidate_retry: an invalidation of %s's memory is in progress, -EAGAIN (the guest faults again)", m.who(s, v), vmName(s.vms[k].id))
		}
		return
	}
	gen := s.vms[k].gen
	x.Store(s.mem, m.ref[v], uint64(gen)+1)
	vc.pc = pcMapped
	if x.Labelling() {
		x.Labelf("kvmppc_e500_shadow_map: %s looks up EA 0's guest page in %s's memory (host pages gen %d); ref E500_TLB_VALID; mmu_lock dropped, write_stlbe next", m.who(s, v), vmName(s.vms[k].id), gen)
	}
}

// writeStlbe is write_stlbe after kvmppc_e500_shadow_map: with preemption
// disabled, tlbwe of the shadow entry into the TLB of the CPU the vCPU
// runs on now (which may not be the one shadow_map ran on).
func (m *machine) writeStlbe(s *state, c int, x *model.Exec) {
	v := int(s.cpus[c].run)
	ref := x.Load(s.mem, m.ref[v])
	g := x.Load(s.mem, m.gtlb[v])
	m.install(s, c, v, uint8(g), uint8(ref-1), x)
	s.vcpus[v].pc = pcHost
	if x.Labelling() {
		x.Labelf("write_stlbe: %s writes EA 0 -> page %d (host pages gen %d) into CPU%d's TLB (LPID %d)", m.who(s, v), g, ref-1, c, m.hwLPID(c, int(s.cpus[c].lpidr)))
	}
}

// install writes vCPU v's shadow entry for EA 0 (guest page g, host page
// generation gen) into CPU c's TLB under its LPIDR. The model's TLB holds
// one entry per (LPID, EA), so the write replaces any entry with that tag.
func (m *machine) install(s *state, c, v int, g, gen uint8, x *model.Exec) {
	vc := &s.vcpus[v]
	x.Touch(m.tlbName[c], true)
	*m.tlbAt(s, c, int(s.cpus[c].lpidr)) = entry{creator: vc.id + 1, vm: s.vms[vc.vm].id, rpn: g, gen: gen}
}

// ipiExit is the guest exit the host's IPI forces (smp_call_function_many
// from kvm_flush_remote_tlbs): the external interrupt exits the guest,
// kvmppc_restart_interrupt runs the IPI handler (ack_flush), and the
// vCPU is in the host (it resumes through kvmppc_prepare_to_enter). With
// the IPI pending this is the only step the guest can take: the interrupt
// is taken before its next instruction, and what the guest could have
// done in the meantime it could have done before the host's request,
// with which its steps commute.
func (m *machine) ipiExit(s *state, c int, x *model.Exec) {
	v := int(s.cpus[c].run)
	s.vcpus[v].pc = pcHost
	s.host.ipi &^= 1 << uint(c)
	if x.Labelling() {
		x.Labelf("guest exit on CPU%d: external interrupt (kvm_flush_remote_tlbs's IPI), ack_flush; %s is in the host", c, m.who(s, v))
	}
}
