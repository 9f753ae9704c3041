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
			Description: "vCPUs: vCPU0 initiates the flush, the others are its targets"},
		{Name: "flushes", Default: 1, Min: 1, Max: 4,
			Description: "unmap-and-flush rounds of vCPU0 (round r unmaps page Pr, a later round maps a fresh page first)"},
		{Name: "preemptions", Default: 2, Min: 0, Max: 8,
			Description: "host preemptions (kvm_sched_out) of target vCPUs, in total"},
		{Name: "accesses", Default: 2, Min: 0, Max: 6,
			Description: "accesses of X per target (each in guest mode through the TLB, or emulated by KVM)"},
		{Name: "memory", Default: 0, Min: 0, Max: 1,
			Description: "memory model: 0 sequentially consistent, 1 x86-TSO (per-vCPU store buffers; commits are steps of a \"store buffers\" thread)"},
		{Name: "pte-clear", Default: 0, Min: 0, Max: 1,
			Description: "how vCPU0 clears the PTE: 0 locked xchg (ptep_get_and_clear, a full barrier, as Linux), 1 plain store with no barrier before the flush (pvflush.md B2(a))"},
	},
	New: func(name string, p model.Params) (model.Machine, error) {
		v, ok := variants[name]
		if !ok {
			return nil, fmt.Errorf("unknown variant %q", name)
		}
		m := newMachine(v, p)
		if m.tso {
			return model.WithTSO(m, memOf), nil
		}
		return m, nil
	},
}
