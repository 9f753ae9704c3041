package exclusive

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// The verification matrix: the configurations besides the default in
// which every variant's verdict is checked, chosen so that each mechanism
// happens at least twice somewhere (two exclusive sections, two safe work
// items, work queued by a vCPU and by the I/O thread, a hot-plug during a
// section, spurious wake-ups, guests that halt and are kicked awake, two
// run_on_cpu calls). A verdict that differs from the variant's default
// says why.
var matrix = []model.Config{
	{Params: model.Params{"safe-work": 2},
		Why: "two exclusive sections by two initiators: vcpu0 queues its safe work from its own TB, the I/O thread queues the other on vcpu1 while it runs TBs",
		Expect: map[string]string{
			// The waiter left asleep on exclusive_resume is vcpu1's
			// start_exclusive, whose safe work the I/O thread queued.
			"end-signals-resume": PropStartExclusiveProceeds,
		}},
	{Params: model.Params{"vcpus": 2, "safe-work": 2, "spurious": 1},
		Why: "spurious wake-ups at a small size, with two exclusive sections",
		Expect: map[string]string{
			// Its lost wake-up needs two sleepers on exclusive_resume
			// besides the initiator: three vCPUs.
			"end-signals-resume": model.ExpectOK,
		}},
	{Params: model.Params{"hotplug": 1, "mmio": 0},
		Why: "a CPU hot-plugged and unplugged (cpu_list_add, cpu_list_remove) while exclusive sections run, with guests that touch RAM only",
		Expect: map[string]string{
			// Its deadlock needs a vCPU that takes the BQL inside cpu_exec.
			"bql-held": model.ExpectOK,
		}},
	{Params: model.Params{"hotplug": 1},
		Why: "the same hot-plug with guests that make MMIO accesses: the I/O thread holds the BQL across cpu_list_add",
		Expect: map[string]string{
			// Seed 001's exclusive_idle() in cpu_list_add sleeps with the
			// BQL held while start_exclusive waits for a vCPU whose TB
			// waits for the BQL (README).
			"cpu-lock-broadcast":     model.Deadlock,
			"cpu-lock-pause-recheck": model.Deadlock,
		}},
	{Params: model.Params{"vcpus": 2, "hotplug": 1, "safe-work": 2, "spurious": 1, "mmio": 0},
		Why: "hot-plug across two exclusive sections, with spurious wake-ups",
		Expect: map[string]string{
			"bql-held":           model.ExpectOK,
			"end-signals-resume": model.ExpectOK,
		}},
	{Params: model.Params{"vcpus": 2, "tbs": 1, "safe-work": 2, "run-on-cpu": 2},
		Why: "guests that halt after one TB, kicked awake by the work queued on them: two sections and two run_on_cpu calls, an acyclic state graph",
		Expect: map[string]string{
			// A counted vCPU whose guest halts leaves cpu_exec without a
			// kick: bounded guests hide the missing kick.
			"no-kick":            model.ExpectOK,
			"end-signals-resume": model.ExpectOK,
			// vcpu0's guest halts after its TB, so cpu_exec returns and
			// process_queued_cpu_work finds the item queued without a
			// kick; the I/O thread's item on vcpu1 is followed by its
			// run_on_cpu on vcpu1, whose kick wakes it.
			"safe-work-no-kick": model.ExpectOK,
		}},
	{Params: model.Params{"tbs": 1, "run-on-cpu": 0},
		Why: "three vCPUs whose guests halt after one TB: the configuration of the wake-up claims",
		Expect: map[string]string{
			"no-kick": model.ExpectOK,
			// Everyone else halts: the sleeper's lost wake-up is a deadlock.
			"end-signals-resume": model.Deadlock,
			// Without a run_on_cpu caller on cpu->cond every predicate
			// there has one waiter, and qemu_cond_signal cannot wake the
			// wrong one (A.3 (d')).
			"cpu-lock": model.ExpectOK,
			// The one item is vcpu0's own, found by the
			// process_queued_cpu_work after its guest halts.
			"safe-work-no-kick": model.ExpectOK,
		}},
	{Params: model.Params{"step-atomic": 1},
		Why: "vcpu2's guest executes an atomic instruction that needs a serial context: cpu_exec returns EXCP_ATOMIC and cpu_exec_step_atomic runs it inside its own exclusive section, beside vcpu0's safe work; the instruction may touch MMIO, taking the BQL inside the section",
		Expect: map[string]string{
			// The waiter left asleep on exclusive_resume is the second
			// initiator, cpu_exec_step_atomic's start_exclusive.
			"end-signals-resume": PropStartExclusiveProceeds,
		}},
	{Params: model.Params{"vcpus": 2, "step-atomic": 2},
		Why: "both vCPUs' guests execute an atomic instruction: two cpu_exec_step_atomic sections and vcpu0's safe work contend",
		Expect: map[string]string{
			// Its lost wake-up needs three vCPUs.
			"end-signals-resume": model.ExpectOK,
			// vcpu0's atomic instruction takes it out of cpu_exec
			// (EXCP_ATOMIC) after the TB that queued its safe work
			// without a kick, and the next qemu_wait_io_event finds
			// the item: the exit the kick should have caused happens
			// anyway.
			"safe-work-no-kick": model.ExpectOK,
		}},
	{Params: model.Params{"vcpus": 2, "hotplug": 1, "hotplug-thread": 1, "mmio": 0},
		Why: "the hot-plugged CPU's own vCPU thread: created by qemu_init_vcpu after cpu_list_add, started by cpu_resume, entering cpu_exec_start while a section may run; stopped and joined by cpu_remove_sync before cpu_list_remove",
		Expect: map[string]string{
			// Its deadlock needs a vCPU that takes the BQL inside cpu_exec.
			"bql-held": model.ExpectOK,
		}},
	{Params: model.Params{"vcpus": 2, "hotplug": 1, "hotplug-thread": 1},
		Why: "the same with MMIO guests",
		Expect: map[string]string{
			// As with hotplug=1: seed 001's exclusive_idle() in
			// cpu_list_add sleeps with the BQL held while start_exclusive
			// waits for a vCPU whose TB waits for the BQL.
			"cpu-lock-broadcast":     model.Deadlock,
			"cpu-lock-pause-recheck": model.Deadlock,
		}},
	{Params: model.Params{"vcpus": 2, "hotplug": 1, "hotplug-thread": 1, "safe-work": 2, "mmio": 0},
		Why: "the hot-plugged CPU's thread across two sections, one queued by the I/O thread after it has resumed the new CPU",
		Expect: map[string]string{
			"bql-held": model.ExpectOK,
			// Two vCPUs suffice here: the hot-plugged CPU's thread is the
			// third sleeper on exclusive_resume, and the one left asleep
			// is the second initiator.
			"end-signals-resume": PropStartExclusiveProceeds,
		}},
	{Params: model.Params{"pause": 1},
		Why:    "vm_stop and vm_start by the I/O thread (pause_all_vcpus, resume_all_vcpus) while vcpu0's safe work runs its exclusive section",
		Expect: seedPause(nil)},
	{Params: model.Params{"vcpus": 2, "safe-work": 2, "pause": 1},
		Why: "vm_stop right after the I/O thread has queued safe work on a running vCPU: the item runs its section while the VM is paused, beside vcpu0's",
		Expect: seedPause(map[string]string{
			// Its lost wake-up needs three vCPUs.
			"end-signals-resume": model.ExpectOK,
		})},
	{Params: model.Params{"vcpus": 2, "hotplug": 1, "hotplug-thread": 1, "pause": 1, "mmio": 0},
		Why: "vm_stop and vm_start with the hot-plugged CPU's thread running: pause_all_vcpus waits for it too",
		Expect: seedPause(map[string]string{
			"bql-held": model.ExpectOK,
		})},
	{Params: model.Params{"vcpus": 2, "cross-work": 1},
		Why: "vcpu1 queues an async_run_on_cpu item on vcpu0 from its TB, without the BQL, beside vcpu0's safe work",
		Expect: map[string]string{
			// Its lost wake-up needs three vCPUs.
			"end-signals-resume": model.ExpectOK,
		}},
	{Params: model.Params{"vcpus": 2, "tbs": 1, "run-on-cpu": 0, "cross-work": 1},
		Why: "the same with guests that halt: vcpu1 queues on vcpu0 while vcpu0 may be going to sleep on halt_cond",
		Expect: map[string]string{
			// A finding (upstream's family): vcpu0 reads its work list
			// empty in cpu_thread_is_idle with the BQL only, vcpu1 appends
			// under work_mutex and broadcasts halt_cond before vcpu0 waits
			// on it: the wake-up is lost and vcpu0 sleeps with the item
			// queued (testdata/exclusive/upstream-cross-work.trace.json).
			// Seed 001's branch reads the list under cpu->lock, which the
			// queuer takes: its variants are ok.
			"upstream":           model.Deadlock,
			"end-signals-resume": model.Deadlock,
			"no-kick":            model.Deadlock,
			"safe-work-no-kick":  model.Deadlock,
			// As at tbs=1 run-on-cpu=0: one waiter per predicate on
			// cpu->cond.
			"cpu-lock": model.ExpectOK,
		}},
	{Params: model.Params{"memory": 1},
		Why: "x86-TSO store buffers: exit_request, pending_cpus, cpu->running and wi.done go through them"},
	// arm64 hosts. ARMv8 multiplies the states by about 1 500 (each
	// thread's views of each word), so the rows are the smallest size
	// with an exclusive section racing a running vCPU, upstream only.
	{Params: armRow(0), Variants: []string{"upstream"},
		Why: "ARMv8 memory (arm64 host): pending_cpus, cpu->running and exit_request reordered as ARMv8 allows, the mutexes through lock words; safety and deadlock only"},
	{Params: armRow(dropStartExclusive), Variants: []string{"upstream"},
		Expect: map[string]string{"upstream": PropMutualExclusion},
		Why:    "ARMv8 without start_exclusive's smp_mb(): it reads cpu->running before its pending_cpus store is seen"},
	{Params: armRow(dropExecStart), Variants: []string{"upstream"},
		Expect: map[string]string{"upstream": PropMutualExclusion},
		Why:    "ARMv8 without cpu_exec_start's smp_mb(): it reads pending_cpus before its cpu->running store is seen"},
	// cpu_exec_end's pair fails as a missed wake-up: the vCPU takes the
	// fast path while start_exclusive counts it and sleeps. With guests
	// that never halt the vCPU comes round again and is counted out (the
	// row above explores that: ok); a guest that halts after it leaves
	// start_exclusive asleep for ever: a deadlock.
	{Params: withTBs(armRow(dropExecEnd), 1), Variants: []string{"upstream"},
		Expect: map[string]string{"upstream": model.Deadlock},
		Why:    "ARMv8 without cpu_exec_end's smp_mb(), guests that halt: it reads pending_cpus before its cpu->running store is seen, and sleeps on halt_cond while start_exclusive waits for it"},
}

func withTBs(p model.Params, tbs int) model.Params {
	p["tbs"] = tbs
	return p
}

// armRow is the ARMv8 configuration, with the smp_mb() drop leaves out.
func armRow(drop int) model.Params {
	p := model.Params{"memory": 2, "vcpus": 2, "safe-work": 1, "tbs": 0, "run-on-cpu": 0, "mmio": 0}
	if drop != 0 {
		p["drop-mb"] = drop
	}
	return p
}

// seedPause adds to a pause=1 row's expectations those of seed 001's
// branch, whose pause_all_vcpus waits for each CPU with an if on the
// cpu->cond that exclusive waiters and run_on_cpu callers share: a
// wake-up meant for them lets it go on before that CPU has stopped
// (testdata/exclusive/cpu-lock-broadcast-pause.trace.json). The series'
// v9 re-reads cpu->stopped after retaking the BQL
// (cpu-lock-pause-recheck, ok). cpu-lock-no-idle's mutual-exclusion
// violation, which needs no pause, comes first.
func seedPause(m map[string]string) map[string]string {
	out := map[string]string{
		"cpu-lock":           PropVMStopped,
		"cpu-lock-broadcast": PropVMStopped,
	}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// The seed's performance claim is about contention on one mutex and
// condition variable when every waiter shares them; the claims compare
// the two schemes exhaustively over every complete execution, with the
// guests halting after one TB (an acyclic state graph) and no run_on_cpu
// call, so that every wake-up counted belongs to an exclusive section or
// to a kick.
var claims = []model.Claim{
	{
		Name: "wakeups-per-section",
		Text: "seed 001 moves every waiter to its own cpu->cond (\"shifts the burden of waking up threads to the exclusive thread\"): " +
			"with three vCPUs cpu-lock-broadcast wakes more threads per exclusive section than upstream, in the worst execution and on average",
		Metric: "wakeups",
		A:      "cpu-lock-broadcast",
		B:      "upstream",
		Params: model.Params{"tbs": 1, "run-on-cpu": 0},
		Holds:  perSection(1, func(a, b perSectionSummary) bool { return a.max > b.max && a.mean > b.mean }),
	},
	{
		Name:   "wakeups-per-section-two-vcpus",
		Text:   "with two vCPUs and two sections the relation turns around: cpu-lock-broadcast wakes fewer threads per section on average than upstream, though more in the worst execution",
		Metric: "wakeups",
		A:      "cpu-lock-broadcast",
		B:      "upstream",
		Params: model.Params{"vcpus": 2, "tbs": 1, "safe-work": 2, "run-on-cpu": 0},
		Holds:  perSection(2, func(a, b perSectionSummary) bool { return a.max > b.max && a.mean < b.mean }),
	},
	{
		Name: "list-lock-per-section",
		Text: "what the seed removes: cpu-lock-broadcast takes qemu_cpu_list_lock exactly twice per exclusive section in every execution, " +
			"where upstream's vCPUs also take it in cpu_exec_start/cpu_exec_end's slow paths",
		Metric: "list-lock-acquisitions",
		A:      "cpu-lock-broadcast",
		B:      "upstream",
		Params: model.Params{"tbs": 1, "run-on-cpu": 0},
		Holds:  perSection(1, func(a, b perSectionSummary) bool { return a.min == 2 && a.max == 2 && b.mean > a.mean }),
	},
}

// perSectionSummary is a metric's summary divided by the number of
// exclusive sections, which every complete execution has the same of (one
// per safe work item).
type perSectionSummary struct{ min, max, mean float64 }

func perSection(sections int, rel func(a, b perSectionSummary) bool) func(a, b model.MetricSummary) (bool, string) {
	return func(a, b model.MetricSummary) (bool, string) {
		n := float64(sections)
		pa := perSectionSummary{float64(a.Min) / n, float64(a.Max) / n, a.Mean / n}
		pb := perSectionSummary{float64(b.Min) / n, float64(b.Max) / n, b.Mean / n}
		found := fmt.Sprintf("per section: A min %.3g max %.3g mean %.3f, B min %.3g max %.3g mean %.3f",
			pa.min, pa.max, pa.mean, pb.min, pb.max, pb.mean)
		if a.Executions == 0 || b.Executions == 0 {
			return false, "no complete execution measured: " + found
		}
		return rel(pa, pb), found
	}
}
