package cputlb

import (
	"errors"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer/conform"
	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// implMaxSteps bounds a controlled run; a correct run of the default
// configuration takes about 100 steps, and the halt_cond poll (impl.go) can
// spin under PCT.
const implMaxSteps = 400

func implTarget(t *testing.T, variant string, p model.Params) *conform.Target {
	t.Helper()
	tg, err := conform.NewTarget(Protocol, Impl, variant, p)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// knownGap reports whether a disagreement between a run and the model is
// the documented one (impl.go, "Where model and rt cannot agree"): a
// condition-variable re-acquire step, which rt labels RelockLabel(wait
// label) where the model has its own label, or a halted vCPU's poll of
// halt_cond taken before anyone kicked it (a spurious wake-up, which the
// model does not enable).
func knownGap(run *rt.Run, err error) bool {
	var mm *conform.Mismatch
	if !errors.As(err, &mm) || mm.Step < 1 || mm.Step > len(run.Steps) {
		return false
	}
	lbl := run.Steps[mm.Step-1].Label
	return strings.Contains(lbl, " (relock)") || strings.HasPrefix(lbl, "qemu_tcg_wait_io_event: woken, re-acquires ")
}

// TestImplConformance runs every variant under rt.Random and rt.PCT and
// replays each run on the model (conform.Target.CheckRun). A run must
// agree with the model step by step (thread, label, violation and its
// step) or part from it exactly at the documented gap (knownGap); any
// other disagreement fails. The counts are logged.
func TestImplConformance(t *testing.T) {
	runs := 200
	if testing.Short() {
		runs = 50
	}
	for _, v := range Impl.Variants {
		tg := implTarget(t, v, nil)
		t.Run(v, func(t *testing.T) {
			var agree, gap, bound, viol int
			steps := 0
			for i := 0; i < runs; i++ {
				for _, s := range []rt.Strategy{rt.Random(int64(i)), rt.PCT(int64(i), 3)} {
					run, err := tg.Controlled(s, implMaxSteps)
					if err != nil {
						t.Fatal(err)
					}
					steps += len(run.Steps)
					cerr := tg.CheckRun(run)
					switch {
					case cerr == nil:
						agree++
						if run.Violation != nil {
							viol++
						}
					case knownGap(run, cerr):
						gap++
					default:
						t.Fatalf("%s: %v\n%s", s, cerr, run)
					}
					if run.BoundHit {
						bound++
						if cerr == nil {
							t.Errorf("%s: cut at max-steps although it agrees with the model\n%s", s, run)
						}
					}
				}
			}
			t.Logf("%d runs, %d steps: %d agree with the model step by step (%d of them with the model's violation), %d part at a re-acquire step (known gap), %d cut at max-steps", 2*runs, steps, agree, viol, gap, bound)
			if agree == 0 {
				t.Errorf("no run agrees with the model")
			}
		})
	}
}

// TestImplReplaysModelTraces drives the real code along every buggy
// variant's minimized model counterexample, labels checked step by step:
// the code must violate the same property at the same step.
func TestImplReplaysModelTraces(t *testing.T) {
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			tr, err := traces.Load("../../testdata/cputlb/" + v.Name + ".trace.json")
			if err != nil {
				t.Fatal(err)
			}
			tg := implTarget(t, v.Name, tr.Params)
			labels := make([]string, len(tr.Steps))
			for i, s := range tr.Steps {
				labels[i] = s.Label
			}
			run, err := tg.ReplayModel(tr.Schedule, labels)
			if err != nil {
				t.Fatal(err)
			}
			if run.Err != nil {
				t.Fatalf("%v\n%s", run.Err, run)
			}
			if run.Violation == nil || tr.Violation == nil || run.Violation.Property != tr.Violation.Property || len(run.Steps) != len(tr.Schedule) {
				t.Fatalf("want %v at step %d, got:\n%s", tr.Violation, len(tr.Schedule), run)
			}
		})
	}
}

// TestImplStress runs the correct variants under the Go scheduler (and
// the race detector in CI): no violation, linearizable histories. The
// buggy variants are left out: no-kick can sleep forever on halt_cond in
// real mode (the model's deadlock), and a stale translation under the Go
// scheduler is a matter of luck.
func TestImplStress(t *testing.T) {
	runs := 200
	if testing.Short() {
		runs = 20
	}
	for _, v := range []string{"synced", "synced-no-bql"} {
		for _, cpus := range []int{2} {
			tg := implTarget(t, v, model.Params{"cpus": cpus})
			ops := 0
			for seed := 0; seed < runs; seed++ {
				viol, n, err := tg.Real(int64(seed))
				if err != nil {
					t.Fatal(err)
				}
				if viol != nil {
					t.Fatalf("%s cpus=%d seed %d: %v", v, cpus, seed, viol)
				}
				ops += n
			}
			t.Logf("%s cpus=%d: %d runs, %d operations, no violation", v, cpus, runs, ops)
		}
	}
}

// TestImplFindsBugControlled: the controlled scheduler alone finds the
// non-synced bug on the real code, and the failing run replays.
func TestImplFindsBugControlled(t *testing.T) {
	body, err := Impl.New("non-synced", model.Params{"cpus": 2, "accesses": 2})
	if err != nil {
		t.Fatal(err)
	}
	b := func(e *rt.Env) { body(e) }
	for _, s := range []rt.Strategy{rt.PCT(1, 3), rt.Random(1)} {
		sum, err := rt.Explore(s, 2000, implMaxSteps, b)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Failure == nil || sum.Failure.Violation == nil || sum.Failure.Violation.Property != NoStaleTranslation {
			t.Fatalf("%s: %s", s, sum)
		}
		again := rt.Controlled(rt.Replay(sum.Failure.Schedule), implMaxSteps, b)
		if again.Err != nil || again.Violation == nil || again.Violation.Property != NoStaleTranslation {
			t.Fatalf("replay: %s", again)
		}
		t.Logf("%s; %d steps", sum, len(sum.Failure.Steps))
	}
}
