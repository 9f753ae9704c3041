package batchunmap

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/conform"
	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/internal/race"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// implMaxSteps bounds a controlled run; the longest executions of the
// sizes below are under 150 steps.
const implMaxSteps = 400

func newTarget(t *testing.T, variant string, p model.Params) *conform.Target {
	t.Helper()
	tg, err := conform.NewTarget(Protocol, Impl, variant, p)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// conformParams are the sizes the conformance test runs every variant at:
// the default, a second free batch running while pages are reused, two
// mms with two users, one page-table lock, the overflow-prone width, and
// the bookkeeping invariants.
var conformParams = []model.Params{
	nil,
	{"batch": 1, "pages": 4},
	{"pages": 2, "ptls": 2, "mms": 2, "users": 2, "syscalls": 2},
	{"ptls": 1, "accesses": 3, "syscall": 4},
	{"pages": 3, "batch": 2, "syscall": 2, "syscalls": 3},
	{"bookkeeping": 1},
	{"bookkeeping": 1, "batch": 3, "pages": 3, "users": 2, "accesses": 1, "migrations": 2},
	{"reclaimers": 1, "pages": 3, "syscall": 3, "migrations": 2},
	{"contend": 1},
	{"contend": 1, "syscall": 4, "syscalls": 2, "pages": 3},
	{"nested": 1, "syscall": 3, "syscalls": 2},
	{"nested": 1, "syscall": 4, "syscalls": 1, "bookkeeping": 1},
	{"syscall": 5, "contend": 1},
	{"syscall": 6, "ptls": 1},
	{"syscall": 7},
	{"syscall": 7, "syscalls": 4, "reclaimers": 1, "pages": 3},
}

// TestImplConformance runs the real code under rt's random and PCT
// strategies and replays every run on the model: same threads, same
// enabled choices, same labels byte for byte, and the same violation (if
// any) at the same step.
func TestImplConformance(t *testing.T) {
	// Runs per strategy: at the default size, and at each other size.
	runs, others := 200, 40
	if testing.Short() || race.Enabled {
		// The race detector slows a controlled run tenfold; model and
		// code agree the same with fewer runs.
		runs, others = 40, 8
	}
	for _, v := range Impl.Variants {
		for _, p := range conformParams {
			if refused(v, p) {
				continue
			}
			tg := newTarget(t, v, p)
			n := others
			if p == nil {
				n = runs
			}
			for _, s := range []rt.Strategy{rt.Random(1), rt.PCT(1, 3)} {
				steps, viol := 0, map[string]int{}
				for i := 0; i < n; i++ {
					run, err := tg.Controlled(s, implMaxSteps)
					if err != nil {
						t.Fatal(err)
					}
					if run.BoundHit {
						t.Fatalf("%s %v %s run %d: %s", v, p, s, i, run)
					}
					if err := tg.CheckRun(run); err != nil {
						t.Fatalf("%s %v %s run %d: model and code disagree: %v\n%s", v, p, s, i, err, run)
					}
					steps += len(run.Steps)
					if run.Violation != nil {
						viol[run.Violation.Property]++
					}
				}
				t.Logf("%s %v %s: %d runs, %d steps, violations %v", v, p, s, n, steps, viol)
			}
		}
	}
}

// TestImplReplaysModelTraces drives the real code along every buggy
// variant's minimized model counterexample (testdata) and checks that it
// takes the same steps with the same labels and breaks the same property.
func TestImplReplaysModelTraces(t *testing.T) {
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			tr, err := traces.Load(filepath.Join("..", "..", "testdata", "batchunmap", v.Name+".trace.json"))
			if err != nil {
				t.Fatal(err)
			}
			tg := newTarget(t, tr.Variant, tr.Params)
			labels := tr.Labels()
			run, err := tg.ReplayModel(tr.Schedule, labels)
			if err != nil {
				t.Fatal(err)
			}
			if run.Err != nil {
				t.Fatalf("replay: %v\n%s", run.Err, run)
			}
			if run.Violation == nil || run.Violation.Property != v.Expect || tr.Violation == nil || tr.Violation.Property != v.Expect {
				t.Fatalf("real code: %v, trace: %v, want %s\n%s", run.Violation, tr.Violation, v.Expect, run)
			}
			if run.Violation.Message != tr.Violation.Message {
				t.Errorf("the real code explains the violation differently:\n model: %s\n  code: %s", tr.Violation.Message, run.Violation.Message)
			}
			t.Logf("%d steps: %s", len(run.Steps), run.Violation)
		})
	}
}

var stressParams = []model.Params{
	nil,
	{"accesses": 4, "batch": 1, "pages": 4},
	{"pages": 3, "ptls": 3, "mms": 3, "users": 3, "accesses": 4, "syscalls": 2},
	{"pages": 2, "ptls": 2, "mms": 2, "users": 2, "accesses": 4, "syscalls": 2, "batch": 1},
	// Two users in one mm (TestImplSpecMprotectIsNotAtomic).
	{"pages": 2, "ptls": 2, "users": 2, "accesses": 4, "syscalls": 2, "syscall": 1},
	{"migrations": 4, "accesses": 4, "syscalls": 4},
	{"contend": 1, "accesses": 4, "pages": 4, "batch": 1},
	{"nested": 1, "syscall": 3, "accesses": 4},
}

// TestImplStress runs the correct variants under the Go scheduler with
// real parallelism (and the race detector under -race): no run may
// violate a property, and every history must be linearizable.
func TestImplStress(t *testing.T) {
	runs := 200
	if testing.Short() {
		runs = 30
	}
	for _, v := range Protocol.Variants {
		if v.Expect != model.ExpectOK {
			continue
		}
		for _, p := range stressParams {
			tg := newTarget(t, v.Name, p)
			ops := 0
			for seed := int64(0); seed < int64(runs); seed++ {
				viol, n, err := tg.Real(seed)
				if err != nil {
					t.Fatal(err)
				}
				if viol != nil {
					t.Fatalf("%s %v seed %d: %s", v.Name, p, seed, viol)
				}
				ops += n
			}
			t.Logf("%s %v: %d runs, %d operations, no violation", v.Name, p, runs, ops)
		}
	}
}

// TestImplFindsBugControlled finds the reclaimer's own bugs on the real
// code with the controlled scheduler alone (no model), and replays the
// failing run from its schedule.
func TestImplFindsBugControlled(t *testing.T) {
	for _, c := range []struct {
		variant string
		p       model.Params
		s       rt.Strategy
	}{
		{NoFlushDirty, model.Params{"syscalls": 0, "reclaimers": 1, "migrations": 0}, rt.PCT(1, 3)},
		{NestedReset, model.Params{"syscalls": 0, "reclaimers": 1, "migrations": 0}, rt.PCT(1, 3)},
		{RiscvASIDClear, model.Params{"syscalls": 0, "reclaimers": 1}, rt.PCT(1, 3)},
	} {
		tg := newTarget(t, c.variant, c.p)
		body, err := Impl.New(tg.Variant, tg.Params)
		if err != nil {
			t.Fatal(err)
		}
		run := func(e *rt.Env) { body(e) }
		sum, err := rt.Explore(c.s, 5000, implMaxSteps, run)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := Protocol.Variant(c.variant)
		if sum.Failure == nil || sum.Failure.Violation == nil || !v.Accepts(sum.Failure.Violation.Property) {
			t.Fatalf("%s %v: %s, want %s", c.variant, c.p, sum, v.Expect)
		}
		again := rt.Controlled(rt.Replay(sum.Failure.Schedule), implMaxSteps, run)
		if again.Err != nil || again.Violation == nil || again.Violation.Property != sum.Failure.Violation.Property || again.Outcome() != sum.Failure.Outcome() || fmt.Sprint(again.Steps) != fmt.Sprint(sum.Failure.Steps) {
			t.Fatalf("replay of the failing run: %s\nfirst run:\n%s", again, sum.Failure)
		}
		if err := tg.CheckRun(sum.Failure); err != nil {
			t.Fatalf("the model does not agree with the failing run: %v", err)
		}
		t.Logf("%s %v: %s (%d steps)", c.variant, c.p, sum, len(sum.Failure.Steps))
	}
}

// TestImplSpecMprotectIsNotAtomic pins what the stress test once found: a
// spec that treated mprotect(PROT_READ) as atomic rejected a legal
// history. change_pte_range makes the PTE read-only before the flush
// (which tlb_finish_mmu makes after dropping the PTL), so while mprotect
// runs one CPU faults on the new PTE (SIGSEGV) and then another still
// writes through its old writable entry; Linux allows that. The spec
// records the PTE change as an operation of its own, after which both
// outcomes are legal until mprotect returns. Model and real code agree
// step for step, and neither reports a violation.
func TestImplSpecMprotectIsNotAtomic(t *testing.T) {
	p := model.Params{"pages": 1, "ptls": 1, "batch": 1, "users": 2, "accesses": 2, "syscalls": 1, "reuse": 0, "reclaimers": 1, "migrations": 0}
	tg := newTarget(t, Immediate, p)
	m, _, err := Protocol.Instantiate(Immediate, p)
	if err != nil {
		t.Fatal(err)
	}
	// Threads: reclaimer 0, syscall 1, user0 2, user1 3. user1 fills a
	// writable entry for va0; mprotect locks, drains, makes pte[0] ro;
	// user0's write faults; user1 writes through its entry; mprotect
	// unlocks and flushes; then every thread runs to its end.
	c := func(th, alt int) model.Choice { return model.Choice{Thread: th, Alt: alt} }
	sched := finish(t, m, []model.Choice{c(3, 1), c(1, 0), c(1, 0), c(1, 0), c(2, 1), c(3, 1), c(1, 0), c(1, 0)})
	run, err := tg.Controlled(rt.Replay(sched), implMaxSteps)
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.CheckRun(run); err != nil {
		t.Fatalf("model and code disagree: %v\n%s", err, run)
	}
	if run.Violation != nil {
		t.Fatalf("a fault on one CPU and a write through an old TLB entry on another, both during mprotect, are legal; got:\n%s", run)
	}
	t.Logf("%s", run)
}

// finish extends a schedule of m to the end of the execution, always
// taking the lowest enabled thread's first alternative.
func finish(t *testing.T, m model.Machine, sched []model.Choice) []model.Choice {
	t.Helper()
	for {
		ex, err := explorer.Execute(m, sched)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Violation != nil {
			t.Fatalf("the schedule violates %s", ex.Violation)
		}
		en := explorer.Enabled(m, ex.States[len(ex.States)-1])
		if len(en) == 0 {
			return sched
		}
		sched = append(sched, en[0])
	}
}
