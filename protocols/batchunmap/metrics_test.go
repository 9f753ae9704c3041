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

// perPage is a metric's mean over all executions per unmapped page.
func perPage(t *testing.T, r *explorer.Result, name string) float64 {
	return metric(t, r, name).Mean / metric(t, r, "unmapped-pages").Mean
}

// The seed's claim, as exact counts over every execution: batching sends
// fewer remote flushes per unmapped page than flushing each PTE, both with
// no concurrent syscall and with the default four mprotect calls, whose
// drains cost remote flushes of their own.
func TestRemoteFlushesPerPage(t *testing.T) {
	for _, c := range []struct {
		p                     model.Params
		immediate, generation float64
	}{
		// Immediate: each page is one flush_tlb_range to mm_cpumask {1,2}.
		// Generation without syscalls: one batch flush to {1,2}, plus a
		// try_to_unmap_flush_dirty for each dirty page not yet flushed.
		{model.Params{"syscalls": 0}, 2, 0.596470},
		{nil, 2, 1.631182},
	} {
		ri, _ := explore(t, Immediate, c.p, explorer.Options{Metrics: true})
		rg, _ := explore(t, Generation, c.p, explorer.Options{Metrics: true})
		im, gen := perPage(t, ri, "remote-flushes"), perPage(t, rg, "remote-flushes")
		t.Logf("%v: remote flushes per unmapped page: immediate %.4f, generation %.4f (generation flush rounds %.3f, drains %.3f per execution)",
			c.p, im, gen, metric(t, rg, "flush-rounds").Mean, metric(t, rg, "drain-flushes").Mean)
		if !near(im, c.immediate) || !near(gen, c.generation) || gen >= im {
			t.Errorf("%v: immediate %.6f generation %.6f, want %.6f and %.6f", c.p, im, gen, c.immediate, c.generation)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-5 && b-a < 1e-5 }

// riscv before 3951f6add519 never cleared the batch cpumask, so a batch
// flush also targets every CPU of every mm reclaimed before: the count
// grows with the number of mms (one page each, a flush per page), while
// the fixed code targets only the current mm's CPUs.
func TestStickyMaskTargetsGrow(t *testing.T) {
	for _, c := range []struct {
		mms           int
		fixed, sticky int64
	}{
		{1, 2, 2}, // mm0 = {1,2}
		{2, 3, 5}, // + mm1 = {3}: {1,2} then {1,2,3}
		{3, 4, 9}, // + mm2 = {4}: {1,2}, {1,2,3}, {1,2,3,4}
	} {
		p := model.Params{"mms": c.mms, "pages": c.mms, "ptls": c.mms, "batch": 1, "syscalls": 0}
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
