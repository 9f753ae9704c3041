package cputlb

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// Property names of this protocol (deadlock is model.Deadlock).
const (
	NoStaleTranslation = "no-stale-translation"
	WorkOnce           = "work-once"
)

// Metric indexes into the machine's Properties().Metrics.
const (
	mBQL = iota
	mKicks
)

// config is a variant as data: the switches that distinguish the variants
// in one model.
type config struct {
	synced    bool // tlb_flush_page_by_mmuidx_all_cpus_synced (else the non-synced _all_cpus)
	noBQL     bool // remote jobs via async_run_on_cpu_no_bql (seed 000)
	endTB     bool // the helper ends the TB (cpu_loop_exit) after queueing
	kickQueue bool // queue_work_on_cpu kicks the target
}

var variants = []struct {
	model.Variant
	cfg config
}{
	{model.Variant{Name: "synced", Expect: model.ExpectOK,
		Description: "tlb_flush_page_by_mmuidx_all_cpus_synced, remote jobs via async_run_on_cpu (worker takes the BQL), TB ended by cpu_loop_exit",
		Source:      "QEMU cputlb.c (v5.0 era, the base of seed 000); ba3186c4e473 introduced _all_cpus_synced"},
		config{synced: true, endTB: true, kickQueue: true}},
	{model.Variant{Name: "synced-no-bql", Expect: model.ExpectOK,
		Description: "seed 000: the same, remote jobs via async_run_on_cpu_no_bql (worker runs them without the BQL)",
		Source:      "seed 000_b36807347ebe5ed1 (cputlb: queue async flush jobs without the BQL)"},
		config{synced: true, noBQL: true, endTB: true, kickQueue: true}},
	{model.Variant{Name: "non-synced", Expect: NoStaleTranslation,
		Description: "tlb_flush_page_by_mmuidx_all_cpus: remote jobs queued, own TLB flushed at once, the source continues (ppc tlbie before 2024, H9)",
		Source:      "82676f1fc4b1 target/ppc: Fix broadcast tlbie synchronisation"},
		config{synced: false, noBQL: true, endTB: false, kickQueue: true}},
	{model.Variant{Name: "synced-no-tb-end", Expect: NoStaleTranslation,
		Description: "synced flush, but the TB is not ended: the source runs the next instruction before its safe work (H10)",
		Source:      "4ddc104689b target/ppc: Fix tlbie; 82676f1fc4b1 (arm, riscv, s390x noted)"},
		config{synced: true, noBQL: true, endTB: false, kickQueue: true}},
	{model.Variant{Name: "no-kick", Expect: NoStaleTranslation,
		Description: "synced flush whose remote jobs are queued without qemu_cpu_kick of the target (mutation V-A6)",
		Source:      "qemu.md A.5 V-A6 (mutation)"},
		config{synced: true, noBQL: true, endTB: true, kickQueue: false}},
}

// Protocol is the cputlb protocol family.
var Protocol = &model.Protocol{
	Name:        "cputlb",
	Description: "QEMU broadcast TLB invalidate: remote flush jobs, safe work under start_exclusive, and what _synced guarantees",
	Source:      "seed 000_b36807347ebe5ed1; QEMU accel/tcg/cputlb.c, cpus-common.c (cota/qemu per-CPU-lock branch 09addeed)",
	Variants:    variantList(),
	Params: []model.Param{
		{Name: "cpus", Default: 2, Min: 2, Max: maxCPUs,
			Description: "vCPUs: cpu0 executes the broadcast invalidate, the others run guest code that uses page X"},
		{Name: "accesses", Default: 2, Min: 1, Max: 3,
			Description: "guest accesses to page X by each target vCPU before its guest halts"},
	},
	New: newMachine,
}

func variantList() []model.Variant {
	out := make([]model.Variant, len(variants))
	for i, v := range variants {
		out[i] = v.Variant
	}
	return out
}

func newMachine(variant string, p model.Params) (model.Machine, error) {
	for _, v := range variants {
		if v.Name == variant {
			n, acc := p["cpus"], p["accesses"]
			if n < 2 || n > maxCPUs || acc < 1 || acc > 3 {
				return nil, fmt.Errorf("cpus=%d accesses=%d out of range", n, acc)
			}
			return newMachineOf(v.cfg, n, acc), nil
		}
	}
	return nil, fmt.Errorf("unknown variant %q", variant)
}
