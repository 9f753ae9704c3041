package batchunmap

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

func explore(t *testing.T, variant string, p model.Params, opts explorer.Options) (*explorer.Result, model.Machine) {
	t.Helper()
	m, _, err := Protocol.Instantiate(variant, p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := explorer.Explore(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, m
}

// verdict is what bfs must report for a variant: the property it violates
// ("ok" when clean), the exact state count for clean runs and the length
// of the shortest counterexample for violations.
type verdict struct {
	variant string
	expect  string
	states  int64
	length  int
}

func checkVerdicts(t *testing.T, p model.Params, want []verdict) {
	t.Helper()
	for _, w := range want {
		r, m := explore(t, w.variant, p, explorer.Options{})
		if w.expect == model.ExpectOK {
			if r.Verdict != explorer.OK || r.Stats.States != w.states {
				t.Errorf("%s %v: got %s, want ok with %d states", w.variant, p, r, w.states)
			}
			continue
		}
		if r.Verdict != explorer.Violation || r.Violation.Property != w.expect || len(r.Schedule) != w.length {
			t.Errorf("%s %v: got %s (%d steps), want %s in %d steps", w.variant, p, r, len(r.Schedule), w.expect, w.length)
			continue
		}
		t.Logf("%s: %s", w.variant, r.Violation)
		for i, l := range r.Labels {
			t.Logf("  %2d. %-9s %s", i+1, m.Threads()[r.Schedule[i].Thread], l)
		}
	}
}

// At the default size every variant gets the verdict batchunmap.md
// expects; each buggy one violates the harm property it names.
func TestDefaultVerdicts(t *testing.T) {
	checkVerdicts(t, nil, []verdict{
		{Immediate, model.ExpectOK, 14860, 0},
		{Generation, model.ExpectOK, 94709, 0},
		{NoPendingFlush, SyscallPostcondition, 0, 9},
		{BoolFlag, SyscallPostcondition, 0, 23},
		{NoOverflowReset, SyscallPostcondition, 0, 41},
		{NestedReset, NoUseAfterFree, 0, 31},
		{NoFlushDirty, NoLostWrite, 0, 9},
		{RiscvStickyMask, model.ExpectOK, 94709, 0},
	})
}

// With bookkeeping=1 the checker fails where the flush is lost, before any
// harm: counter-sound for the tlb_flush_batched bugs, flush-before-free for
// the reclaimer's own. The correct variants still hold, with the same
// state counts (the invariants add no state).
func TestBookkeepingVerdicts(t *testing.T) {
	checkVerdicts(t, model.Params{"bookkeeping": 1}, []verdict{
		{Immediate, model.ExpectOK, 14860, 0},
		{Generation, model.ExpectOK, 94709, 0},
		{NoPendingFlush, SyscallPostcondition, 0, 9}, // no counter to check
		{BoolFlag, CounterSound, 0, 16},
		{NoOverflowReset, CounterSound, 0, 23},
		{NestedReset, FlushBeforeFree, 0, 30},
		{NoFlushDirty, FlushBeforeFree, 0, 8},
		{RiscvStickyMask, model.ExpectOK, 94709, 0},
	})
}

// The overflow reset of 5ee2fa2f0636 is not enough once the counter can
// cycle inside one drain: flush_tlb_batched_pending reads pending/flushed,
// flushes, and cmpxchg's flushed := pending; if 2^(width-1) deferrals
// under other page-table locks bring the word back to the value it read
// (pending climbs to LARGE+1 and is reset to 1), the cmpxchg succeeds and
// the newest deferral is lost. The default size cannot reach it (ptls=2:
// the reclaimer blocks on the drainer's lock after one deferral); these
// sizes can. In Linux (width 15) it takes 16384 deferrals while one thread
// sits between atomic_read and atomic_cmpxchg.
func TestGenerationABA(t *testing.T) {
	for _, p := range []model.Params{
		{"width": 1, "pages": 2, "batch": 2, "syscalls": 2},
		{"width": 2, "pages": 3, "batch": 3, "ptls": 3, "syscalls": 3},
	} {
		r, _ := explore(t, Generation, p, explorer.Options{})
		if r.Verdict != explorer.Violation || r.Violation.Property != SyscallPostcondition {
			t.Errorf("generation %v: got %s, want the syscall-postcondition ABA", p, r)
		}
	}
	// One more bit of width puts it out of reach of three pages again.
	r, _ := explore(t, Generation, model.Params{"width": 3, "pages": 3, "batch": 3, "ptls": 3, "syscalls": 3}, explorer.Options{})
	if r.Verdict != explorer.OK {
		t.Errorf("generation width=3 pages=3: got %s, want ok", r)
	}
}

// batchunmap.md: the bool flag is correct while every race goes through
// the same page-table lock, and buggy across two.
func TestBoolFlagNeedsTwoLocks(t *testing.T) {
	r, _ := explore(t, BoolFlag, model.Params{"ptls": 1}, explorer.Options{})
	if r.Verdict != explorer.OK {
		t.Errorf("bool-flag ptls=1: got %s, want ok", r)
	}
}

// Every parameter is honoured at its extremes without error, and bad
// combinations are rejected with a reason.
func TestParams(t *testing.T) {
	for _, p := range []model.Params{
		{"pages": 1, "ptls": 1, "batch": 1, "users": 0, "syscalls": 0, "reuse": 0},
		{"pages": 2, "mms": 2, "users": 2, "accesses": 1, "syscalls": 1},
	} {
		r, _ := explore(t, Generation, p, explorer.Options{})
		if r.Verdict != explorer.OK {
			t.Errorf("generation %v: %s", p, r)
		}
	}
	for _, p := range []model.Params{{"ptls": 5}, {"mms": 2}, {"mms": 3, "pages": 2, "ptls": 2}} {
		if _, _, err := Protocol.Instantiate(Generation, p); err == nil {
			t.Errorf("%v: accepted", p)
		}
	}
}
