package exclusive

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// variants maps each variant to its switches; the order is Protocol's.
var variants = []struct {
	model.Variant
	f flags
}{
	{model.Variant{Name: "upstream", Expect: model.ExpectOK,
		Description: "lock-free pending_cpus/has_waiter protocol with its smp_mb pairs (SC), nesting counter, BQL dropped around safe work",
		Source:      "qemu cpu-common.c @18530e7c (c265e976 lock-free fast path; 2023 recursive start_exclusive)"},
		flags{}},
	{model.Variant{Name: "cpu-lock", Expect: model.Deadlock,
		Description: "seed 001 as posted: waiters on the per-CPU cpu->cond, shared with run_on_cpu, woken with qemu_cond_signal",
		Source:      "seed 001 (RFC v4 71/71 cpus-common: wait on the CPU lock for exclusive work completion, Emilio G. Cota); the lost wake-ups LW-1/LW-2"},
		flags{cpuLock: true}},
	{model.Variant{Name: "cpu-lock-broadcast", Expect: model.ExpectOK,
		Description: "seed 001 with qemu_cond_broadcast in cpu_exec_exclusive_locked and end_exclusive",
		Source:      "seed 001 + qemu_cond_broadcast, the fix proposed in A.3 (d')"},
		flags{cpuLock: true, broadcast: true}},
	{model.Variant{Name: "if-not-while", Expect: PropMutualExclusion,
		Description: "start_exclusive waits on exclusive_cond with if instead of while; spurious wake-ups enabled there",
		Source:      "old linux-user/main.c (H1)",
		Fixed:       model.Params{"spurious": 1}},
		flags{ifNotWhile: true}},
	{model.Variant{Name: "bql-held", Expect: model.Deadlock,
		Description: "the safe work item's exclusive section is entered with the BQL held while guest MMIO needs it",
		Source:      "comment in process_queued_cpu_work (H2)"},
		flags{bqlHeld: true}},
	{model.Variant{Name: "finish-safe-work", Expect: model.Deadlock,
		Description: "cpu_list_add runs finish_safe_work (cpu_exec_start/end) under the BQL while the safe work (async_synic_update) takes the BQL",
		Source:      "ab129972 (2016), removed by Roman Kagan's 'cpus-common: nuke finish_safe_work' (QEMU 4.2) (H3)",
		Fixed:       model.Params{"hotplug": 1}},
		flags{finishSafeWork: true}},
	{model.Variant{Name: "non-recursive", Expect: model.Deadlock,
		Description: "the safe work calls start_exclusive again without the exclusive_context_count nesting counter",
		Source:      "Ilya Leoshkevich, 'cpus: Make {start,end}_exclusive() recursive' (2023, fixes da91c1920242) (H5)"},
		flags{nonRecursive: true}},
	{model.Variant{Name: "exclusive-from-exec", Expect: model.Deadlock,
		Description: "vcpu0 calls start_exclusive from inside cpu_exec (ptw_setl_slow) and counts itself",
		Source:      "QEMU issue #2566, fixed by 7ba055b49b74 'target/i386: fix hang when using slow path for ptw_setl' (H6)"},
		flags{fromExec: true}},
	{model.Variant{Name: "end-decrements-always", Expect: PropMutualExclusion,
		Description: "cpu_exec_end decrements pending_cpus whenever it is > 1, without checking or clearing has_waiter",
		Source:      "mutation V-A4"},
		flags{endDecrementsAlways: true}},
	{model.Variant{Name: "end-signals-resume", Expect: PropExecStartProceeds,
		// With guests that halt (tbs >= 1) every other thread ends up
		// blocked or idle too: a deadlock.
		AlsoViolates: []string{model.Deadlock},
		Description:  "end_exclusive signals exclusive_resume instead of broadcasting it: a waiter with a true predicate sleeps forever while the others run",
		Source:       "mutation V-A5"},
		flags{endSignalsResume: true}},
	{model.Variant{Name: "no-smp-mb", Expect: PropMutualExclusion,
		// The cpu_exec_end / start_exclusive pair breaks too: a counted
		// vCPU reads pending_cpus = 0 (the store still buffered) and never
		// releases start_exclusive; random walks meet that first.
		AlsoViolates: []string{model.Deadlock},
		Description:  "upstream without the smp_mb() in cpu_exec_start and start_exclusive, on x86-TSO",
		Source:       "mutation V-A1: the Dekker pair running/pending_cpus without its barriers",
		Fixed:        model.Params{"memory": 1}},
		flags{noSmpMb: true}},
	{model.Variant{Name: "no-kick", Expect: PropStartExclusiveProceeds,
		Description: "start_exclusive counts a running vCPU (has_waiter, running_cpus++) without qemu_cpu_kick: the vCPU runs TBs on and start_exclusive waits for ever",
		Source:      "mutation V-A6: the kick that makes a counted vCPU leave cpu_exec"},
		flags{noKick: true}},
	{model.Variant{Name: "safe-work-no-kick", Expect: PropSafeWorkRuns,
		Description: "async_safe_run_on_cpu queues its item (queue_work_on_cpu) without qemu_cpu_kick: the target vCPU runs TBs on and the safe work never runs",
		Source:      "mutation V-A6 on queue_work_on_cpu (cpus-common.c @d6ea4236): the kick after the append"},
		flags{noSafeKick: true}},
	{model.Variant{Name: "cpu-lock-no-idle", Expect: PropMutualExclusion,
		// end_exclusive's walk reaching the CPU inserted during the
		// section, when finish_safe_work has not run yet; and the
		// hot-plug deadlock with MMIO guests it shares with
		// cpu-lock-broadcast (finish_safe_work's wait under the BQL).
		AlsoViolates: []string{PropAssertOngoing, model.Deadlock},
		Description:  "cpu-lock-broadcast without the exclusive_idle() that seed 001 adds to cpu_list_add and cpu_list_remove; always with hot-plug",
		Source:       "seed 001 (its cpu_list_add/cpu_list_remove hunks: start_exclusive walks the CPU list without qemu_cpu_list_lock)",
		Fixed:        model.Params{"hotplug": 1}},
		flags{cpuLock: true, broadcast: true, noIdle: true}},
	{model.Variant{Name: "cpu-lock-pause-recheck", Expect: model.ExpectOK,
		Description: "cpu-lock-broadcast with the series' later pause_all_vcpus: it sets cpu->stop and kicks again before each wait, and after retaking the BQL re-reads every cpu->stopped and waits again if one is false; always with vm_stop",
		Source:      "Robert Foley's v9 of the per-CPU-lock series (2020), 71/74 'cpu: protect CPU state with cpu->lock instead of the BQL' (its pause_all_vcpus)",
		Fixed:       model.Params{"pause": 1}},
		flags{cpuLock: true, broadcast: true, pauseRecheck: true}},
}

// Protocol is the exclusive-section protocol family.
var Protocol = &model.Protocol{
	Name:        "exclusive",
	Description: "QEMU exclusive sections (start/end_exclusive), the vCPU loop, safe work and run_on_cpu",
	Source:      "seed 001_82edb6f67d33326f; qemu cpus-common.c/cpu-common.c (c265e976, 18530e7c); cota/qemu per-CPU-lock branch (09addeed, 031cfd04)",
	Variants:    variantList(),
	Params: []model.Param{
		{Name: "vcpus", Default: 3, Min: 2, Max: maxVCPUs,
			Description: "vCPU threads"},
		{Name: "tbs", Default: 0, Min: 0, Max: 3, Sentinel: true,
			Description: "TBs each vCPU's guest runs before it halts (WFI); 0: it never halts, a vCPU leaves cpu_exec only when kicked (the state graph has cycles: progress properties, no per-execution metrics)"},
		{Name: "safe-work", Default: 1, Min: 1, Max: 4,
			Description: "async_safe_run_on_cpu items, the i-th on vcpu i mod vcpus, queued by that vCPU from one of its TBs (i even) or by the I/O thread (i odd)"},
		{Name: "run-on-cpu", Default: 1, Min: 0, Max: 4,
			Description: "run_on_cpu calls by the I/O thread, the k-th aimed at vcpu (vcpus-1-k) mod vcpus"},
		{Name: "hotplug", Default: 0, Min: 0, Max: 1,
			Description: "1: the I/O thread hot-plugs a CPU (cpu_list_add) before its work and unplugs it (cpu_list_remove) after (finish-safe-work and cpu-lock-no-idle: always)"},
		{Name: "hotplug-thread", Default: 0, Min: 0, Max: 1,
			Description: "1 (with hotplug=1): the hot-plugged CPU's own vCPU thread runs: created by qemu_init_vcpu after cpu_list_add, started by cpu_resume, beginning with cpu_exec_start; stopped and joined by cpu_remove_sync before cpu_list_remove"},
		{Name: "mmio", Default: 1, Min: 0, Max: 1,
			Description: "1: a guest TB may make an MMIO access, which takes the BQL (the environment chooses per TB); 0: TBs touch RAM only"},
		{Name: "spurious", Default: 0, Min: 0, Max: 1,
			Description: "1: every thread may wake spuriously once from any qemu_cond_wait (if-not-while: always)"},
		{Name: "step-atomic", Default: 0, Min: 0, Max: maxVCPUs,
			Description: "vCPUs (the last ones) whose guest executes one atomic instruction that cannot run in parallel: cpu_exec returns EXCP_ATOMIC and the thread runs it in cpu_exec_step_atomic, inside start_exclusive/end_exclusive"},
		{Name: "pause", Default: 0, Min: 0, Max: 1,
			Description: "1: after queuing its safe work the I/O thread stops the VM (vm_stop: pause_all_vcpus, upstream's on qemu_pause_cond until every CPU has stopped, seed 001's branch's once per CPU on cpu->cond) and starts it again (vm_start: resume_all_vcpus)"},
		{Name: "cross-work", Default: 0, Min: 0, Max: 1,
			Description: "1: the last vCPU, from one of its TBs, queues an async_run_on_cpu item on vcpu0 (as the flush_all_helper of tlb_flush_page_by_mmuidx_all_cpus_synced does on every other CPU), without the BQL; with halting guests (tbs >= 1) the target may be asleep on halt_cond"},
		{Name: "memory", Default: 0, Min: 0, Max: 2,
			Description: "memory model: 0 sequentially consistent, 1 x86-TSO (per-thread store buffers; commits are steps of a \"store buffers\" thread; no-smp-mb is always TSO), 2 ARMv8 with each thread's writes in program order (model.WithARMv8NoPromises; each mutex has a lock word taken with an acquire CAS and released with a release store; progress properties are not checked)"},
		{Name: "drop-mb", Default: 0, Min: 0, Max: dropMax,
			Description: "leave one smp_mb() out: 1 start_exclusive's, 2 cpu_exec_start's, 3 cpu_exec_end's, 4 qatomic_set_mb's in the vCPU loop (exit_request); with memory=1 or 2, a mutation that must be found"},
	},
	New:    newVariant,
	Matrix: matrix,
	Claims: claims,
}

func variantList() []model.Variant {
	out := make([]model.Variant, len(variants))
	for i, v := range variants {
		out[i] = v.Variant
	}
	return out
}

func newVariant(name string, p model.Params) (model.Machine, error) {
	for _, v := range variants {
		if v.Name == name {
			m, err := newMachine(v.f, p)
			if err != nil {
				return nil, err
			}
			if m.tso {
				return model.WithTSO(m, memOf), nil
			}
			if m.arm {
				return model.WithARMv8NoPromises(m, memOf), nil
			}
			return m, nil
		}
	}
	return nil, fmt.Errorf("unknown variant %q", name)
}
