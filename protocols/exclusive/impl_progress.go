package exclusive

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/protocheck/protocheck/model"
)

// Progress of the real implementation when its guests never halt (tbs=0).
//
// Then no run ends by itself: each vCPU leaves cpu_exec only when kicked,
// and runs TBs again right after. Such a run is judged as the model's
// progress properties judge an infinite execution: it is complete once
// the I/O thread has finished its script, every queued work item has
// completed (a safe work item's exclusive section has ended, a run_on_cpu
// has returned) and every vCPU has run two TBs since (the second begun
// after everything completed, so each vCPU has gone on through the
// protocol, not merely finished a TB begun before). The vCPU that
// completes that goal ends the run (rt.Env.End). A run that does not get
// there is cut, by the watchdog under the Go scheduler or at max-steps
// under control, and owed says which obligation is overdue, in the
// model's terms: a thread still inside start_exclusive
// (start-exclusive-proceeds), a CPU still inside cpu_exec_start
// (cpu-exec-start-proceeds), a safe work item that has not run (when the
// model declares safe-work-runs).
//
// With tbs >= 1 the guests halt and the run ends when every goroutine
// has exited; none of this is used.
type progress struct {
	ioDone    atomic.Bool
	completed atomic.Int32   // work items completed
	queued    []atomic.Bool  // work item i has been queued
	onGoal    atomic.Int32   // vCPUs that have run their two TBs since
	tbs       []atomic.Int64 // TBs run, per vCPU
	inStart   []atomic.Bool  // thread t is inside start_exclusive
	inExecSt  []atomic.Bool  // CPU c is inside cpu_exec_start
	// after[t] counts vCPU t's TBs since the rest completed; only vCPU
	// t's goroutine touches it.
	after []int
}

func (w *world) initProgress() {
	p := &w.prog
	p.queued = make([]atomic.Bool, w.m.nitems)
	p.tbs = make([]atomic.Int64, w.m.nvcpus)
	p.inStart = make([]atomic.Bool, len(w.m.threads))
	p.inExecSt = make([]atomic.Bool, w.m.ncpus)
	p.after = make([]int, w.m.nvcpus)
	w.e.OnCut(w.owed)
}

// endless reports whether the run never ends by itself.
func (w *world) endless() bool { return w.m.tbs == 0 }

// itemCompleted: work item i has completed (see progress).
func (w *world) itemCompleted() { w.prog.completed.Add(1) }

// tbRan is called by vCPU t after each guest TB.
func (th *thr) tbRan() {
	w, p := th.w, &th.w.prog
	if !w.endless() {
		return
	}
	p.tbs[th.t].Add(1)
	if p.after[th.t] >= 2 || !p.ioDone.Load() || int(p.completed.Load()) != w.m.nitems {
		return
	}
	if p.after[th.t]++; p.after[th.t] == 2 && int(p.onGoal.Add(1)) == w.m.nvcpus {
		w.e.End()
	}
}

// owed is the obligation a cut run has not met, as a violation of the
// model's progress property that names it, or nil when none is pending.
func (w *world) owed() *model.Violation {
	p := &w.prog
	ran := make([]string, w.m.nvcpus)
	var total int64
	for t := range ran {
		n := p.tbs[t].Load()
		total += n
		ran[t] = fmt.Sprintf("%s %d", w.m.threads[t], n)
	}
	tbs := ""
	if w.endless() {
		tbs = fmt.Sprintf(", while the guests ran %d TBs (%s)", total, strings.Join(ran, ", "))
	}
	for t := range p.inStart {
		if p.inStart[t].Load() {
			return model.Violationf(PropStartExclusiveProceeds, "%s is still inside start_exclusive%s", w.m.threads[t], tbs)
		}
	}
	for c := range p.inExecSt {
		if p.inExecSt[c].Load() {
			return model.Violationf(PropExecStartProceeds, "cpu%d (%s) is still inside cpu_exec_start%s", c, w.m.runnerOf(c), tbs)
		}
	}
	const safeWorkRuns = "safe-work-runs"
	for _, pr := range w.m.Properties().Progress {
		if pr.Name != safeWorkRuns {
			continue
		}
		for i := 0; i < w.m.nitems; i++ {
			if (w.m.safe(i) || w.m.async(i)) && p.queued[i].Load() && w.obs.ran[i].Load() == 0 {
				return model.Violationf(safeWorkRuns, "%s is queued and its func has not run%s", w.m.itemName(i), tbs)
			}
		}
	}
	return nil
}
