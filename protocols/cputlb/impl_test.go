package cputlb

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/conform"
	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/internal/race"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// implMaxSteps bounds a controlled run. A run of the default
// configuration takes at most about 170 steps and one with three vCPUs and
// two dirty syncs about 300; no step of the code spins (a halted vCPU
// sleeps on halt_cond until it is kicked), so a run that hits the bound is
// a bug.
const implMaxSteps = 1000

func implTarget(t *testing.T, variant string, p model.Params) *conform.Target {
	t.Helper()
	tg, err := conform.NewTarget(Protocol, Impl, variant, p)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestImplConformance runs every variant under rt.Random and rt.PCT, at
// the default size, with two sources, and with three vCPUs and two dirty
// syncs, and replays each run on the model (conform.Target.CheckRun):
// every run must agree with the model step by step (thread, label,
// violation and its step) and end as the model does (every thread done, or
// the same violation), and offer at every step exactly the choices the
// model enables. No run may hit max-steps. The counts are logged.
func TestImplConformance(t *testing.T) {
	runs := 24
	if testing.Short() || race.Enabled {
		// The race detector slows a controlled run tenfold; model and
		// code agree the same with fewer runs.
		runs = 8
	}
	sizes := []model.Params{nil, {"sources": 2, "cpus": 3, "migration": 0, "commit": 0}, {"cpus": 3, "migration": 2}, {"iommu": 1, "commit": 0, "migration": 0}, {"vcpu-commit": 1, "commit": 0}}
	for _, v := range Impl.Variants {
		for _, p := range sizes {
			tg := implTarget(t, v, p)
			t.Run(fmt.Sprintf("%s/%v", v, tg.Params), func(t *testing.T) {
				n := runs
				if p != nil {
					n = runs / 2
				}
				steps, longest := 0, 0
				viol := map[string]int{}
				for i := 0; i < n; i++ {
					for _, s := range []rt.Strategy{rt.Random(int64(i)), rt.PCT(int64(i), 3)} {
						rec := &recording{Strategy: s}
						run, err := tg.Controlled(rec, implMaxSteps)
						if err != nil {
							t.Fatal(err)
						}
						steps += len(run.Steps)
						longest = max(longest, len(run.Steps))
						if run.BoundHit {
							t.Fatalf("%s: cut at max-steps\n%s", s, run)
						}
						if err := tg.CheckRun(run); err != nil {
							t.Fatalf("%s: %v\n%s", s, err, run)
						}
						if err := sameEnabled(tg.Machine, run, rec.enabled); err != nil {
							t.Fatalf("%s: %v\n%s", s, err, run)
						}
						if run.Violation != nil {
							viol[run.Violation.Property]++
						}
					}
				}
				t.Logf("%d runs, %d steps (longest %d): all agree with the model step by step; violations (the model's, at the same step): %v", 2*n, steps, longest, viol)
			})
		}
	}
}

// recording is a strategy that keeps the enabled choices the runtime
// offered at every step of a run.
type recording struct {
	rt.Strategy
	enabled [][]model.Choice
}

func (r *recording) Begin() error {
	r.enabled = r.enabled[:0]
	return r.Strategy.Begin()
}

func (r *recording) Pick(p *rt.Point) (model.Choice, error) {
	r.enabled = append(r.enabled, append([]model.Choice(nil), p.Enabled...))
	return r.Strategy.Pick(p)
}

// sameEnabled checks that at every step of run the code offered exactly
// the choices the model enables in the same state: CheckRun only asks
// that the choice taken be enabled in the model; this also catches a
// step the code could take and the model could not (a spurious wake-up)
// or the other way round.
func sameEnabled(m model.Machine, run *rt.Run, offered [][]model.Choice) error {
	ex, err := explorer.Execute(m, run.Schedule)
	if err != nil {
		return err
	}
	for i := range ex.Steps {
		want := explorer.Enabled(m, ex.States[i])
		if fmt.Sprint(want) != fmt.Sprint(offered[i]) {
			return fmt.Errorf("step %d: the model enables %v, the code offered %v", i+1, want, offered[i])
		}
	}
	return nil
}

// TestImplReplaysModelTraces drives the real code along every kept model
// counterexample, labels checked step by step: the code must violate the
// same property at the same step. The traces with rcu=1 are the model's
// only: the real implementation refuses rcu=1 (no call_rcu thread or read
// sections yet), which this test checks instead.
func TestImplReplaysModelTraces(t *testing.T) {
	files, err := filepath.Glob("../../testdata/cputlb/*.trace.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tr, err := traces.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Params["rcu"] == 1 {
				if _, err := Impl.New(tr.Variant, tr.Params); err == nil || !strings.Contains(err.Error(), "model only") {
					t.Fatalf("the real code accepts rcu=1 (%v): replay this trace on it", err)
				}
				return
			}
			tg := implTarget(t, tr.Variant, tr.Params)
			run, err := tg.ReplayModel(tr.Schedule, tr.Labels())
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
// the race detector in CI): no violation, linearizable histories, at the
// default size with two and three vCPUs and with two sources. The buggy
// variants are left out: no-kick can sleep forever on halt_cond in real
// mode (the model's deadlock), and the others' bugs under the Go scheduler
// are a matter of luck.
func TestImplStress(t *testing.T) {
	runs := 100
	if testing.Short() {
		runs = 20
	}
	for _, v := range []string{"synced-fixed", "synced-no-bql-fixed"} {
		for _, p := range []model.Params{nil, {"cpus": 3}, {"sources": 2, "cpus": 3}} {
			tg := implTarget(t, v, p)
			ops := 0
			for seed := 0; seed < runs; seed++ {
				viol, n, err := tg.Real(int64(seed))
				if err != nil {
					t.Fatal(err)
				}
				if viol != nil {
					t.Fatalf("%s %v seed %d: %v", v, tg.Params, seed, viol)
				}
				ops += n
			}
			t.Logf("%s %v: %d runs, %d operations, no violation", v, tg.Params, runs, ops)
		}
	}
}

// TestImplFindsBugControlled: the controlled scheduler alone finds the
// non-synced bug on the real code, and the failing run replays.
func TestImplFindsBugControlled(t *testing.T) {
	body, err := Impl.New("non-synced", model.Params{"cpus": 2, "accesses": 2, "sources": 1, "migration": 0, "commit": 0})
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

// TestImplRealNoKick runs no-kick's real code under the Go scheduler,
// where a run either reads a stale translation (the variant's bug, which
// bfs finds on the model) or deadlocks (a halted target sleeps on
// halt_cond with its flush queued and nobody to kick it, which the
// model's walks find): both are reported as violations, the deadlock with
// every goroutine and what it waits for, never as Go's fatal error. Which
// one a run hits is up to the Go scheduler, so any of the two is accepted
// and only some violation is required.
func TestImplRealNoKick(t *testing.T) {
	// Without the migration thread and the main loop, whose kicks could
	// wake the target.
	tg := implTarget(t, "no-kick", model.Params{"migration": 0, "commit": 0})
	walks, err := tg.ModelViolations(100)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Protocol.Variant("no-kick")
	if err != nil {
		t.Fatal(err)
	}
	tg.Watchdog = time.Minute
	found := map[string]int{}
	for seed := int64(0); seed < 200; seed++ {
		viol, _, err := tg.Real(seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if viol == nil {
			continue
		}
		if !v.Accepts(viol.Property) && !walks[viol.Property] {
			t.Fatalf("seed %d: %v, which the model does not reach for no-kick (walks find %v)", seed, viol, walks)
		}
		if viol.Property == model.Deadlock && !strings.Contains(viol.Message, "every goroutine waits: cpu") {
			t.Errorf("seed %d: the deadlock report does not name the waiting vCPUs: %s", seed, viol.Message)
		}
		found[viol.Property]++
	}
	if len(found) == 0 {
		t.Fatal("200 real runs of no-kick found no violation")
	}
	t.Logf("of 200 real runs: %v", found)
}
