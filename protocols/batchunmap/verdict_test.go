package batchunmap

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// refused reports whether variant cannot run with p: p gives a
// parameter the variant fixes another value (no-nested-flush is defined
// with syscall=3), or the variant's fixed values make p a configuration
// the model refuses (putback-before-flush's contend=1 with MADV_PAGEOUT).
func refused(variant string, p model.Params) bool {
	_, _, err := Protocol.Instantiate(variant, p)
	return err != nil
}

func explore(t *testing.T, variant string, p model.Params, opts explorer.Options) (*explorer.Result, model.Machine) {
	t.Helper()
	m, _, err := Protocol.Instantiate(variant, p)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Workers == 0 {
		opts.Workers = 2
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
			if r.Verdict != explorer.OK || r.Stats.States != w.states || len(r.Unchecked) != 0 {
				t.Errorf("%s %v: got %s (%d states, unchecked %v), want ok with %d states", w.variant, p, r, r.Stats.States, r.Unchecked, w.states)
			}
			continue
		}
		if r.Verdict != explorer.Violation || r.Violation.Property != w.expect || len(r.Schedule) != w.length {
			t.Errorf("%s %v: got %s (%d steps), want %s in %d steps", w.variant, p, r, len(r.Schedule), w.expect, w.length)
			continue
		}
		t.Logf("%s: %s", w.variant, r.Violation)
		for i, l := range r.Labels {
			t.Logf("  %2d. %-10s %s", i+1, m.Threads()[r.Schedule[i].Thread], l)
		}
	}
}

// At the default size (two reclaimers, a user task that migrates once,
// mprotect, MADV_FREE on a large folio and munmap) every variant gets the
// verdict expected of it, each buggy one through the harm property it
// names, and syscall-returns holds for every correct one (bfs checks
// it under weak fairness: Unchecked is empty).
func TestDefaultVerdicts(t *testing.T) {
	checkVerdicts(t, nil, []verdict{
		{Immediate, model.ExpectOK, 44073, 0},
		{Generation, model.ExpectOK, 264929, 0},
		{NoPendingFlush, SyscallPostcondition, 0, 9},
		{BoolFlag, SyscallPostcondition, 0, 22},
		{NoOverflowReset, SyscallPostcondition, 0, 15},
		{NestedReset, NoUseAfterFree, 0, 10},
		{NoFlushDirty, NoLostWrite, 0, 9},
		{RiscvStickyMask, model.ExpectOK, 303859, 0},
		{RiscvASIDClear, SyscallPostcondition, 0, 9},
		{MadviseRetake, SyscallPostcondition, 0, 21},
		{ARM64, model.ExpectOK, 203427, 0},
		{ARM64DSBOnly, SyscallPostcondition, 0, 14},
		{X86NoCatchUp, SyscallPostcondition, 0, 9},
		{X86GenZero, NoLostWrite, 0, 12},
		{PutbackEarly, NoUseAfterFree, 0, 25},
		{ARM64Migrate, model.ExpectOK, 572646, 0},
		{ARM64SwitchNoDSB, NoLostWrite, 0, 11},
		{NoNestedFlush, SyscallPostcondition, 0, 10},
		{MremapLateFlush, NoLostWrite, 0, 15},
	})
}

// x86 at the default size, each era: 2 to 4.5 million states, apart so
// that -run can skip them.
func TestDefaultVerdictX86(t *testing.T) {
	if testing.Short() {
		t.Skip("13 million states")
	}
	checkVerdicts(t, nil, []verdict{
		{X86, model.ExpectOK, 4452166, 0},
		{X86V414, model.ExpectOK, 2116845, 0},
		{X86V420, model.ExpectOK, 3422811, 0},
		{X86V60, model.ExpectOK, 3426164, 0},
	})
}

// With bookkeeping=1 the checker fails where the bookkeeping is lost,
// before any harm: counter-sound for the tlb_flush_batched bugs and for a
// cleared mm_cpumask bit, flush-before-free for the reclaimer's own. The
// correct variants still hold, with the same state counts (the invariants
// add no state).
func TestBookkeepingVerdicts(t *testing.T) {
	checkVerdicts(t, model.Params{"bookkeeping": 1}, []verdict{
		{Immediate, model.ExpectOK, 44073, 0},
		{Generation, model.ExpectOK, 264929, 0},
		{NoPendingFlush, SyscallPostcondition, 0, 9}, // no counter to check
		{BoolFlag, CounterSound, 0, 15},
		{NoOverflowReset, CounterSound, 0, 10},
		{NestedReset, FlushBeforeFree, 0, 9},
		{NoFlushDirty, FlushBeforeFree, 0, 8},
		{RiscvStickyMask, model.ExpectOK, 303859, 0},
		{RiscvASIDClear, CounterSound, 0, 7},
		{MadviseRetake, SyscallPostcondition, 0, 21}, // the counter was right; the drain was not called
		{ARM64, model.ExpectOK, 203427, 0},
		{ARM64DSBOnly, CounterSound, 0, 11},
		{X86NoCatchUp, CounterSound, 0, 7},
		{X86GenZero, FlushBeforeFree, 0, 11},
		{PutbackEarly, FlushBeforeFree, 0, 24},
		{ARM64Migrate, model.ExpectOK, 572646, 0},
		{ARM64SwitchNoDSB, FlushBeforeFree, 0, 10},
		{NoNestedFlush, SyscallPostcondition, 0, 10}, // the counter was right; the nested check was missing
		{MremapLateFlush, FlushBeforeFree, 0, 14},
	})
}

// The overflow reset of 5ee2fa2f0636 is not enough once the counter can
// cycle inside one drain: flush_tlb_batched_pending reads pending/flushed,
// flushes, and cmpxchg's flushed := pending; if 2^(width-1) deferrals
// under other page-table locks bring the word back to the value it read
// (pending climbs to LARGE+1 and is reset to 1), the cmpxchg succeeds and
// the newest deferral is lost. With two reclaimers, 2-bit fields and a
// third page it is reachable; 3-bit fields put it out of reach again. In
// Linux (width 15) it takes 16384 deferrals while one thread sits between
// atomic_read and atomic_cmpxchg.
func TestGenerationABA(t *testing.T) {
	r, _ := explore(t, Generation, model.Params{"pages": 3, "width": 2}, explorer.Options{NoProgress: true})
	if r.Verdict != explorer.Violation || r.Violation.Property != SyscallPostcondition {
		t.Errorf("generation pages=3 width=2: got %s, want the syscall-postcondition ABA", r)
	}
	if testing.Short() {
		return
	}
	r, _ = explore(t, Generation, model.Params{"pages": 3, "width": 3}, explorer.Options{NoProgress: true})
	if r.Verdict != explorer.OK {
		t.Errorf("generation pages=3 width=3: got %s, want ok", r)
	}
}

// 99baac21e458: two madvise(MADV_DONTNEED) calls on va0 whose
// mmu_gathers nest. The one that finds the PTE already zapped flushes the
// whole mm at tlb_finish_mmu when mm_tlb_flush_nested sees the other's
// gather, and no-nested-flush, without that check, returns while the
// other's flush is still to come (TestDefaultVerdicts).
func TestNestedGathers(t *testing.T) {
	p := model.Params{"nested": 1, "syscall": 3, "syscalls": 1}
	checkVerdicts(t, p, []verdict{
		{Generation, model.ExpectOK, 1060311, 0},
		{ARM64, model.ExpectOK, 866715, 0},
		{NoNestedFlush, SyscallPostcondition, 0, 10},
	})
	if _, _, err := Protocol.Instantiate(Generation, model.Params{"nested": 1}); err == nil {
		t.Error("nested=1 with mprotect in the first thread's program: accepted")
	}
}

// mremap (move_ptes) needs the drain under both PTLs against reclaim's
// deferral at the old address (no-pending-flush finds a read of the old
// address after mremap returned), and the flush of the old address under
// them against reclaim at the new one (mremap-late-flush, TestDefault-
// Verdicts); with both it is ok.
func TestMremap(t *testing.T) {
	checkVerdicts(t, model.Params{"syscall": 8, "syscalls": 1}, []verdict{
		{Generation, model.ExpectOK, 54135, 0},
		{ARM64, model.ExpectOK, 40652, 0},
		{X86, model.ExpectOK, 534998, 0},
		{Immediate, model.ExpectOK, 9997, 0},
		{NoPendingFlush, SyscallPostcondition, 0, 11},
	})
	checkVerdicts(t, model.Params{"syscall": 7}, []verdict{
		{Generation, model.ExpectOK, 285489, 0},
	})
	if _, _, err := Protocol.Instantiate(Generation, model.Params{"syscall": 8, "syscalls": 2}); err == nil {
		t.Error("two mremap calls: accepted")
	}
	// The late flush with batching (a test-only config): riscv's and
	// x86's batch flushes flush every CPU that ran the mm whole, the old
	// address's entry included; arm64's deferred TLBI names the new
	// address only.
	p, err := Protocol.Resolve(model.Params{"syscall": 8, "syscalls": 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		variant, want string
		states        int64
		steps         int
	}{
		{Generation, model.ExpectOK, 73443, 0},
		{X86, model.ExpectOK, 1120997, 0},
		{ARM64, NoLostWrite, 0, 18},
	} {
		cfg, err := newConfig(c.variant, p)
		if err != nil {
			t.Fatal(err)
		}
		cfg.lateMremap = true
		r, err := explorer.Explore(newModel(cfg), explorer.Options{Workers: 2, NoProgress: true})
		if err != nil {
			t.Fatal(err)
		}
		found := model.ExpectOK
		if r.Violation != nil {
			found = r.Violation.Property
		}
		if found != c.want || c.want == model.ExpectOK && r.Stats.States != c.states || c.want != model.ExpectOK && len(r.Schedule) != c.steps {
			t.Errorf("%s with the late flush: got %s (%d states, %d steps), want %s (%d states, %d steps)", c.variant, r, r.Stats.States, len(r.Schedule), c.want, c.states, c.steps)
		}
	}
}

// MADV_COLD and MADV_PAGEOUT (madvise_cold_or_pageout_pte_range) promise
// nothing a stale entry can break: with only those calls, losing the drain
// (no-pending-flush), or the drain after re-taking the PTL
// (madvise-retake, 383c4613c67c), is harmless.
func TestColdPageout(t *testing.T) {
	checkVerdicts(t, model.Params{"syscall": 6}, []verdict{
		{Generation, model.ExpectOK, 222499, 0},
		{NoPendingFlush, model.ExpectOK, 61431, 0},
		{MadviseRetake, model.ExpectOK, 200106, 0},
	})
	checkVerdicts(t, model.Params{"syscall": 5, "contend": 1}, []verdict{
		{Generation, model.ExpectOK, 1381036, 0},
		{MadviseRetake, model.ExpectOK, 1236983, 0},
	})
	if _, _, err := Protocol.Instantiate(Generation, model.Params{"syscall": 6, "contend": 1}); err == nil {
		t.Error("MADV_PAGEOUT with contend=1: accepted")
	}
}

// D-v1: the bool flag is correct while every race goes through
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
		{"pages": 1, "ptls": 1, "batch": 1, "users": 0, "syscalls": 0, "reuse": 0, "reclaimers": 1, "migrations": 0},
		{"pages": 2, "mms": 2, "users": 2, "accesses": 1, "syscalls": 1},
		{"syscall": 3, "syscalls": 2, "large": 0},
	} {
		r, _ := explore(t, Generation, p, explorer.Options{})
		if r.Verdict != explorer.OK {
			t.Errorf("generation %v: %s", p, r)
		}
	}
	for _, p := range []model.Params{
		{"ptls": 5},
		{"mms": 2, "pages": 3},
		{"mms": 3, "pages": 2, "ptls": 2},
		{"pages": 1, "ptls": 1},                                 // two reclaimers need two pages
		{"syscall": 2, "syscalls": 3},                           // munmap twice on va0
		{"pages": 1, "ptls": 1, "reclaimers": 1, "syscalls": 4}, // the mix munmaps va0 and then uses it
	} {
		if _, _, err := Protocol.Instantiate(Generation, p); err == nil {
			t.Errorf("%v: accepted", p)
		}
	}
	if _, _, err := Protocol.Instantiate(X86, model.Params{"mms": 2, "pages": 2, "ptls": 2, "users": 0}); err == nil {
		t.Error("x86 with an mm without a user task: accepted")
	}
}
