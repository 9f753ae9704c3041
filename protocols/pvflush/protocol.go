package pvflush

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// Protocol is the KVM paravirtual remote TLB flush.
var Protocol = &model.Protocol{
	Name:        "pvflush",
	Description: "KVM paravirtual remote TLB flush: the guest defers flushes of preempted vCPUs to the host through steal_time.preempted",
	Source:      seed + "; arch/x86/kernel/kvm.c kvm_flush_tlb_others; arch/x86/kvm/x86.c record_steal_time, kvm_steal_time_set_preempted",
	Variants:    variantList,
	Params: []model.Param{
		{Name: "vcpus", Default: 3, Min: 2, Max: maxVCPUs,
			Description: "vCPUs: the initiators are vCPU0 (and vCPU1), every other vCPU is a target"},
		{Name: "initiators", Default: 1, Min: 1, Max: maxInitiators,
			Description: "vCPUs that unmap a page of their own and flush it concurrently (vCPU0, vCPU1); with 2, each is also the other's target and can be preempted"},
		{Name: "flushes", Default: 1, Min: 1, Max: 4,
			Description: "unmap-and-flush rounds per initiator (round r unmaps frame r of its page, a later round maps a fresh frame first)"},
		{Name: "preemptions", Default: 2, Min: 0, Max: 8,
			Description: "host preemptions (kvm_sched_out) of vCPUs, in total"},
		{Name: "accesses", Default: 2, Min: 0, Max: 6,
			Description: "accesses per vCPU (through the TLB, emulated by KVM, or get_user_pages_fast in the walker variants); initiators access only the other initiator's page"},
		{Name: "memory", Default: 0, Min: 0, Max: 1,
			Description: "memory model: 0 sequentially consistent, 1 x86-TSO (per-vCPU store buffers; commits are steps of a \"store buffers\" thread)"},
		{Name: "pte-clear", Default: 0, Min: 0, Max: 2,
			Description: "how an initiator clears the PTE before flushing: 0 ptep_get_and_clear (locked xchg) then flush_tlb_mm_range's inc_mm_tlb_gen, as munmap; 2 a plain store then inc_mm_tlb_gen, as exit teardown; 1 HYPOTHETICAL, no caller in Linux: a plain store and no barrier at all before the PV flush"},
		{Name: "host", Default: 0, Min: 0, Max: 1,
			Description: "the host: 0 fixed (mainline: 8c6de56a42e0, b043138246a4, 6cd88243c7e0), 1 the 2017 host merged with the guest (f38a7b75267f: host copy, three write-backs, no guard, no boundary gate)"},
	},
	New: func(name string, p model.Params) (model.Machine, error) {
		v, ok := variants[name]
		if !ok {
			return nil, fmt.Errorf("unknown variant %q", name)
		}
		m, err := newMachine(v, p)
		if err != nil {
			return nil, err
		}
		if m.tso {
			return model.WithTSO(m, memOf), nil
		}
		return m, nil
	},
}
