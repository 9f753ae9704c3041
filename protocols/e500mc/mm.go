package e500mc

import (
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// The host's memory management (kswapd, a munmap, a migration: whatever
// makes the primary MMU drop pages backing a guest) calls KVM's MMU
// notifier (virt/kvm/kvm_main.c). On e500 kvm_unmap_gfn_range returns true
// for any range ("Flush all shadow tlb entries everywhere. This is slow,
// but we are 100% sure that we catch the to be unmapped page",
// e500_mmu_host.c), so the generic code calls kvm_flush_remote_tlbs,
// which only posts KVM_REQ_TLB_FLUSH to every vCPU of the VM and IPIs the
// CPUs of those that may be in guest mode; each vCPU flushes the CPU it
// next enters on (runloop.go, checkRequests). Entries it left on other
// CPUs stay: only the load-time check of whoever next runs that LPID
// there removes them. That is why the load-time check is part of the
// host's memory safety, which the invariant host-memory-safety checks.
//
// The model invalidates a whole VM's memory at a time: its host pages
// become a new generation and the old ones are freed. Since e500 flushes
// everything for any range, the range only decides which surviving
// entries point to freed pages; taking all of them is the strictest
// reading of S3. The thread runs on a CPU of its own (the model's CPUs
// run vCPUs), so every CPU of the model is a possible IPI target.
//
// Steps, for a live VM k:
//  1. kvm_mmu_notifier_invalidate_range_start, under kvm->mmu_lock:
//     mmu_invalidate_in_progress++; kvm_flush_remote_tlbs ->
//     kvm_make_all_cpus_request(KVM_REQ_TLB_FLUSH): for each vCPU,
//     kvm_make_request (set_bit) and, if it is loaded (vcpu->cpu != -1)
//     and not OUTSIDE_GUEST_MODE, its CPU joins the IPI mask; then
//     smp_call_function_many(mask, ack_flush, wait). One step: the
//     per-vCPU requests touch disjoint words (each vCPU's requests, cpu
//     and mode) and commute with every step of other threads but the
//     vCPU's own prepareToEnter and put/load, which see either all of
//     them or none in some order of the same steps.
//  2. smp_call_function_many returns once every IPI was taken (a guest
//     exit on each target CPU, ipiExit); spin_unlock(mmu_lock);
//     invalidate_range_start returns; the primary MMU clears the PTEs and
//     frees the pages, and kvm_mmu_notifier_invalidate_range_end
//     (mmu_invalidate_seq++, mmu_invalidate_in_progress--): the VM's host
//     pages are a new generation. When no CPU was IPIed, this is part of
//     step 1.
//
// Freeing the pages the moment invalidate_range_start returns is the
// earliest any primary-MMU path could (zap_page_range frees them at
// tlb_finish_mmu, after invalidate_range_end; reclaim after try_to_unmap
// returns): it checks S3 at its strictest. What the later free and the
// separate invalidate_range_end would add is a window in which a
// kvmppc_e500_shadow_map retries (-EAGAIN, the guest faults again) and
// guest loads still reach the old, not yet freed pages: retries and safe
// loads, which the model's schedules already contain at other times.

// mmStep is the host MM thread's step.
func (m *machine) mmStep(s *state, x *model.Exec) {
	h := &s.host
	switch h.phase {
	case hostWaiting:
		if h.ipi != 0 {
			x.Block()
			if x.Labelling() {
				x.Labelf("%s to take kvm_flush_remote_tlbs's IPI (smp_call_function_many waits)", cpuList(h.ipi))
			}
			return
		}
		m.rangeEnd(s, x)
		if x.Labelling() {
			vm := &s.vms[h.vm]
			x.Labelf("kvm_flush_remote_tlbs: smp_call_function_many returns, every IPI taken; invalidate_range_start returns; %s", freed(vm.id, vm.gen))
		}
		return
	}
	if int(h.done) >= m.cfg.unmaps {
		x.Done()
		return
	}
	var set uint64
	for k := range s.vms {
		if s.vms[k].live {
			set |= 1 << uint(k)
		}
	}
	if set == 0 {
		x.Block()
		x.Label("a live VM whose memory to unmap")
		return
	}
	m.rangeStart(s, x.ChooseFrom(set), x)
}

// rangeStart is step 1 for VM slot k (alternatives are VM slots).
func (m *machine) rangeStart(s *state, k int, x *model.Exec) {
	h := &s.host
	x.Store(s.mem, m.inProgress[k], 1)
	var ipi uint8
	var names []string
	for v := range s.vcpus {
		vc := &s.vcpus[v]
		if !vc.live || int(vc.vm) != k {
			continue
		}
		x.FetchOr(s.mem, m.requests[v], 1)
		if x.Labelling() {
			names = append(names, vcpuName(vc.id))
		}
		if vc.cpu >= 0 && vc.pc == pcGuest {
			ipi |= 1 << uint(vc.cpu)
		}
	}
	h.vm, h.ipi = uint8(k), ipi
	h.phase = hostWaiting
	for c := 0; c < m.cfg.cpus; c++ {
		if ipi&(1<<uint(c)) != 0 {
			x.Count(metricIPIs, 1)
		}
	}
	if ipi == 0 {
		m.rangeEnd(s, x)
	}
	if x.Labelling() {
		send := "no vCPU in guest mode, no IPI to wait for: invalidate_range_start returns; " + freed(s.vms[k].id, s.vms[k].gen)
		if ipi != 0 {
			send = "IPI " + cpuList(ipi) + " (a vCPU in guest mode) and wait"
		}
		x.Labelf("kvm_mmu_notifier_invalidate_range_start: %s's memory, mmu_invalidate_in_progress = 1; kvm_flush_remote_tlbs: KVM_REQ_TLB_FLUSH to vCPUs %s; %s", vmName(s.vms[k].id), strings.Join(names, ", "), send)
	}
}

// freed describes rangeEnd's effect on VM incarnation id, whose host
// pages are now of generation gen.
func freed(id, gen uint8) string {
	return fmt.Sprintf("the primary MMU frees %s's host pages of gen %d; kvm_mmu_notifier_invalidate_range_end: mmu_invalidate_in_progress = 0 (new faults get gen %d)", vmName(id), gen-1, gen)
}

// rangeEnd frees the invalidated VM's host pages and ends the
// invalidation (the second half of step 2).
func (m *machine) rangeEnd(s *state, x *model.Exec) {
	h := &s.host
	k := int(h.vm)
	s.vms[k].gen++
	x.Store(s.mem, m.inProgress[k], 0)
	h.phase = hostIdle
	h.done++
}
