package batchunmap

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

func metric(t *testing.T, r *explorer.Result, name string) explorer.Metric {
	t.Helper()
	for _, m := range r.Metrics {
		if m.Name == name {
			if m.Executions == 0 {
				t.Fatalf("metric %s was not measured over complete executions", name)
			}
			return m
		}
	}
	t.Fatalf("no metric %s", name)
	return explorer.Metric{}
}

// metricPerPage is a metric's mean over all executions per unmapped page.
func metricPerPage(t *testing.T, r *explorer.Result, name string) float64 {
	return metric(t, r, name).Mean / metric(t, r, "unmapped-pages").Mean
}

// The seed's claim, at its workload's shape (claims.go): one reclaimer
// unmapping four pages in one batch, a user task on another CPU, no
// syscall: flushing each PTE costs 8 remote flushes in every execution,
// batching 2 to 6 (a flush_dirty round for each dirty page not yet
// flushed, and the batch flush). Per unmapped page: 2 against 0.6.
func TestRemoteFlushesPerPage(t *testing.T) {
	p := claimParams
	ri, _ := explore(t, Immediate, p, explorer.Options{Metrics: true})
	rg, _ := explore(t, Generation, p, explorer.Options{Metrics: true})
	im, gen := metricPerPage(t, ri, "remote-flushes"), metricPerPage(t, rg, "remote-flushes")
	t.Logf("%v: remote flushes per unmapped page: immediate %.4f, generation %.4f (generation flush rounds %.3f per execution)",
		p, im, gen, metric(t, rg, "flush-rounds").Mean)
	if !near(im, 2) || !near(gen, 0.608839) {
		t.Errorf("%v: immediate %.6f generation %.6f, want 2 and 0.608839", p, im, gen)
	}
	i, g := metric(t, ri, "remote-flushes"), metric(t, rg, "remote-flushes")
	if i.Min != 8 || i.Max != 8 || g.Min != 2 || g.Max != 6 {
		t.Errorf("remote flushes per execution: immediate %d..%d, generation %d..%d, want 8..8 and 2..6", i.Min, i.Max, g.Min, g.Max)
	}
}

func near(a, b float64) bool { return a-b < 1e-5 && b-a < 1e-5 }

// riscv before 3951f6add519 never cleared the batch cpumask, so a batch
// flush also targets every CPU of every mm reclaimed before: the count
// grows with the number of mms (one page each, a flush per page, a user
// task per mm on a CPU of its own), while the fixed code targets only the
// current mm's CPUs (mm0's: the syscall thread's and user0's).
func TestStickyMaskTargetsGrow(t *testing.T) {
	for _, c := range []struct {
		mms           int
		fixed, sticky int64
	}{
		{1, 2, 2}, // mm0 = {1,2}
		{2, 3, 5}, // + mm1 = {3}: {1,2} then {1,2,3}
		{3, 4, 9}, // + mm2 = {4}: {1,2}, {1,2,3}, {1,2,3,4}
	} {
		p := model.Params{"mms": c.mms, "pages": c.mms, "ptls": c.mms, "users": c.mms, "batch": 1, "syscalls": 0, "reclaimers": 1, "migrations": 0, "accesses": 0}
		rg, _ := explore(t, Generation, p, explorer.Options{Metrics: true})
		rs, _ := explore(t, RiscvStickyMask, p, explorer.Options{Metrics: true})
		if rg.Verdict != explorer.OK || rs.Verdict != explorer.OK {
			t.Fatalf("mms=%d: generation %s, riscv-sticky-mask %s: want both ok", c.mms, rg, rs)
		}
		g, s := metric(t, rg, "batch-flush-targets"), metric(t, rs, "batch-flush-targets")
		if g.Min != c.fixed || g.Max != c.fixed || s.Min != c.sticky || s.Max != c.sticky {
			t.Errorf("mms=%d: batch flush targets fixed %d..%d sticky %d..%d, want %d and %d", c.mms, g.Min, g.Max, s.Min, s.Max, c.fixed, c.sticky)
		}
	}
}
