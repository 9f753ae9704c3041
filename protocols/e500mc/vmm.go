package e500mc

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// The VMM thread: each cycle destroys one VM whose vCPUs are all put,
// creates a VM in its place (which gets the lowest free LPID, i.e. the one
// just freed) and then its vCPUs (which get the lowest free slots, i.e.
// the freed vCPUs' addresses). Reuse is what makes the ABA reachable.

func (m *machine) vmmStep(s *state, x *model.Exec) {
	if int(s.vmm.cycle) >= m.cfg.cycles {
		x.Done()
		return
	}
	switch s.vmm.phase {
	case phaseDestroy:
		// Alternative k*cpus+c: destroy VM slot k with the teardown on
		// CPU c (identities, not positions).
		var set uint64
		for k := 0; k < maxVMs; k++ {
			if !s.vms[k].live || m.anyLoaded(s, k) || m.notifierBusy(s, k) {
				continue
			}
			set |= (uint64(1)<<uint(m.cfg.cpus) - 1) << uint(k*m.cfg.cpus)
		}
		if set == 0 {
			x.Block()
			if m.mm < 0 {
				x.Label("every vCPU of the VM it destroys to be put")
			} else {
				x.Label("every vCPU of the VM it destroys to be put, and the MMU notifier to be done with it")
			}
			return
		}
		alt := x.ChooseFrom(set)
		m.destroyVM(s, alt/m.cfg.cpus, alt%m.cfg.cpus, x)
	case phaseCreateVM:
		m.createVM(s, x)
	case phaseCreateVCPU:
		m.createVCPU(s, x)
	}
}

// notifierBusy reports whether an MMU-notifier invalidation of VM slot k
// is in progress: kvm_destroy_vm's mmu_notifier_unregister waits for it
// (the notifier's callbacks run under the mm's notifier SRCU, which
// unregister synchronizes).
func (m *machine) notifierBusy(s *state, k int) bool {
	return s.host.phase != hostIdle && int(s.host.vm) == k
}

func (m *machine) anyLoaded(s *state, k int) bool {
	for v := range s.vcpus {
		if vc := &s.vcpus[v]; vc.live && int(vc.vm) == k && (vc.cpu >= 0 || vc.midLoad != midNone) {
			return true
		}
	}
	return false
}

// destroyVM is kvm_destroy_vm for VM slot k on CPU c: for each vCPU,
// kvmppc_core_vcpu_free_e500mc -> kvmppc_e500_tlb_uninit -> free_gtlb ->
// kvmppc_core_flush_tlb, a tlbilxlpid on CPU c only; then
// kvmppc_core_destroy_vm_e500mc frees the LPID. Nothing clears any CPU's
// last_vcpu_of_lpid. One step: every vCPU of the VM is put and can never
// load again, so the only steps that could interleave are other CPUs'
// steps for other VMs, which touch other LPIDs' entries and slots, and
// the LPID is freed last, so no VM can get it before the teardown is done.
func (m *machine) destroyVM(s *state, k, c int, x *model.Exec) {
	vm := &s.vms[k]
	l := x.Load(s.mem, m.kvmLPID[k])
	x.Touch(m.tlbName[c], true)
	*m.tlbAt(s, c, int(l)) = entry{}
	freed := ""
	for v := range s.vcpus {
		if vc := &s.vcpus[v]; vc.live && int(vc.vm) == k {
			vc.live = false
			if x.Labelling() {
				freed += fmt.Sprintf(" %s (slot%d)", vcpuName(vc.id), v)
			}
		}
	}
	inuse := x.Load(s.mem, m.lpidInuse)
	x.Store(s.mem, m.lpidInuse, inuse&^(1<<l))
	vm.live = false
	s.vmm.phase, s.vmm.vm, s.vmm.toCreate = phaseCreateVM, uint8(k), vm.nv
	if x.Labelling() {
		x.Labelf("kvm_destroy_vm: %s on CPU%d frees vCPUs%s (tlbilxlpid %d on CPU%d only) and LPID %d", vmName(vm.id), c, freed, m.hwLPID(c, int(l)), c, l)
	}
}

// createVM is kvmppc_core_init_vm_e500mc: kvmppc_alloc_lpid gives the
// lowest free LPID (find_first_zero_bit/test_and_set_bit, now an IDA: only
// the VMM allocates here, so reading and setting the bitmap is one step).
func (m *machine) createVM(s *state, x *model.Exec) {
	inuse := x.Load(s.mem, m.lpidInuse)
	l := 1
	for ; l <= m.cfg.lpids && inuse&(1<<l) != 0; l++ {
	}
	if l > m.cfg.lpids {
		x.Fail(LPIDExhausted, "kvmppc_alloc_lpid: no free LPID among 1..%d", m.cfg.lpids)
		return
	}
	x.FetchOr(s.mem, m.lpidInuse, 1<<l)
	k := int(s.vmm.vm)
	x.Store(s.mem, m.kvmLPID[k], uint64(l))
	s.vms[k] = vmState{live: true, id: s.nextVM, nv: s.vmm.toCreate}
	s.nextVM++
	s.vmm.phase = phaseCreateVCPU
	if x.Labelling() {
		x.Labelf("kvmppc_core_init_vm_e500mc: %s gets LPID %d (lowest free)", vmName(s.vms[k].id), l)
	}
}

// createVCPU is kvmppc_core_vcpu_create_e500mc: kmem_cache_zalloc gives
// the lowest free slot (possibly a freed vCPU's address), and oldpir gets
// its initial value.
func (m *machine) createVCPU(s *state, x *model.Exec) {
	v := 0
	for ; s.vcpus[v].live; v++ {
	}
	k := int(s.vmm.vm)
	s.vcpus[v] = vcpuState{live: true, vm: uint8(k), id: s.nextVCPU, cpu: -1, pc: pcHost}
	s.nextVCPU++
	x.Store(s.mem, m.gtlb[v], uint64(m.bootPage()))
	x.Store(s.mem, m.ref[v], 0)
	x.Store(s.mem, m.requests[v], 0)
	x.Store(s.mem, m.oldpir[v], m.cfg.oldpirInit)
	if s.vmm.toCreate--; s.vmm.toCreate == 0 {
		s.vmm.cycle++
		s.vmm.phase = phaseDestroy
	}
	if x.Labelling() {
		x.Labelf("kvmppc_core_vcpu_create_e500mc: vCPU %s of %s at slot%d, oldpir = %s", vcpuName(s.vcpus[v].id), vmName(s.vms[k].id), v, pirString(m.cfg.oldpirInit))
	}
}
