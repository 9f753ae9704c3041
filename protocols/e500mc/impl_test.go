package e500mc

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/conform"
	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// implMaxSteps bounds a controlled run. Every step spends a budget (a
// load, a guest operation, a put of a load, a resume of a preempted load,
// or one of the VMM's 2+vCPUs steps per cycle), so no run of the default
// or the stress configurations comes near it; a run that does is a spin.
const implMaxSteps = 1000

func implTarget(t *testing.T, im *rt.Impl, variant string, p model.Params) *conform.Target {
	t.Helper()
	tg, err := conform.NewTarget(Protocol, im, variant, p)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestImplConformance runs every variant of the real code under seeded
// Random and PCT, each run checked step by step against the model
// (CheckRun: same thread, same label, same violation at the same step, the
// same end).
func TestImplConformance(t *testing.T) {
	runs := 200
	if testing.Short() {
		runs = 50
	}
	strategies := []struct {
		name string
		new  func(seed int64) rt.Strategy
	}{
		{"random", func(seed int64) rt.Strategy { return rt.Random(seed) }},
		{"pct3", func(seed int64) rt.Strategy { return rt.PCT(seed, 3) }},
	}
	configs := []model.Params{
		nil, // the default, which bfs exhausts
		{"cpus": 3, "vm1-vcpus": 2, "vm2-vcpus": 2, "lpids": 3, "loads": 6, "ops": 6, "cycles": 2, "unmaps": 2},
	}
	for _, variant := range Impl.Variants {
		for ci, p := range configs {
			for _, st := range strategies {
				n := runs
				if ci > 0 {
					n = runs / 2
				}
				t.Run(fmt.Sprintf("%s/config%d/%s", variant, ci, st.name), func(t *testing.T) {
					implConform(t, variant, p, st.new(int64(1+ci)), n)
				})
			}
		}
	}
}

// implConform does n gated controlled runs of variant with params p under
// strategy s and checks each against the model.
func implConform(t *testing.T, variant string, p model.Params, s rt.Strategy, runs int) {
	g, im := Gated(s)
	tg := implTarget(t, im, variant, p)
	steps, found := 0, map[string]int{}
	for i := 0; i < runs; i++ {
		run, err := tg.Controlled(g, implMaxSteps)
		if err != nil {
			t.Fatal(err)
		}
		if run.BoundHit {
			t.Fatalf("run %d hit the step bound: %s\n%s", i, run.Bound, run)
		}
		if err := tg.CheckRun(run); err != nil {
			t.Fatalf("run %d: model and code disagree: %v\n%s", i, err, run)
		}
		steps += len(run.Steps)
		if run.Violation != nil {
			found[run.Violation.Property]++
		}
	}
	v, _ := Protocol.Variant(variant)
	for p := range found {
		if !v.Accepts(p) {
			t.Fatalf("%s violated %s, which it is not known to violate (%v)", variant, p, found)
		}
	}
	if v.Expect == model.ExpectOK && len(found) > 0 {
		t.Fatalf("correct variant violated: %v", found)
	}
	t.Logf("%d runs, %d steps, violations %v", runs, steps, found)
}

// TestImplReplaysModelTraces drives the real code through every model
// counterexample in testdata (one per buggy variant and more) with every
// label checked: the model's bug is the code's bug.
func TestImplReplaysModelTraces(t *testing.T) {
	paths, err := filepath.Glob("../../testdata/e500mc/*.trace.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no traces: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr, err := traces.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			v, err := Protocol.Variant(tr.Variant)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(Impl.Variants, v.Name) {
				// e6500-one-lpid: two threads sharing a core's TLB exist
				// in the model only (newBody refuses threads=2).
				if _, err := Impl.New(v.Name, tr.Params); err == nil {
					t.Fatalf("the real implementation accepts %s %v, which it does not list", v.Name, tr.Params)
				}
				return
			}
			tg := implTarget(t, Impl, v.Name, tr.Params)
			labels := tr.Labels()
			run, err := tg.ReplayModel(tr.Schedule, labels)
			if err != nil {
				t.Fatal(err)
			}
			if run.Err != nil {
				t.Fatalf("replay: %v\n%s", run.Err, run)
			}
			if run.Violation == nil || tr.Violation == nil || run.Violation.Property != tr.Violation.Property || !v.Accepts(run.Violation.Property) {
				t.Fatalf("want the trace's %v, one %s is known to violate, got %s\n%s", tr.Violation, v.Name, run.Outcome(), run)
			}
			if run.Violation.Message != tr.Violation.Message {
				t.Errorf("message differs from the model's:\n code:  %s\n model: %s", run.Violation.Message, tr.Violation.Message)
			}
			if err := tg.CheckRun(run); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// implStressParams are larger configurations for the Go scheduler: more
// cores, vCPUs, budgets and VM cycles than the exhaustive default.
var implStressParams = []model.Params{
	nil,
	{"cpus": 4, "vm1-vcpus": 3, "vm2-vcpus": 2, "lpids": 3, "loads": 40, "ops": 60, "cycles": 3, "unmaps": 3},
}

// TestImplStress runs the correct variants under the Go scheduler (real
// goroutines, hostLock, the race detector under -race): no violation, and
// every history linearizable.
func TestImplStress(t *testing.T) {
	runs := 200
	if testing.Short() {
		runs = 20
	}
	for _, variant := range []string{"per-lpid", "per-cpu"} {
		for pi, p := range implStressParams {
			t.Run(fmt.Sprintf("%s/config%d", variant, pi), func(t *testing.T) {
				tg := implTarget(t, Impl, variant, p)
				ops := 0
				for seed := int64(0); seed < int64(runs); seed++ {
					v, n, err := tg.Real(seed)
					if err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					if v != nil {
						t.Fatalf("seed %d: %v", seed, v)
					}
					ops += n
				}
				t.Logf("%d runs, %d operations, all linearizable", runs, ops)
			})
		}
	}
}

// TestImplFindsBugControlled lets the controlled scheduler alone find the
// bugs of never-flush, oldpir-zero and ignore-request in the real code
// (rt.Explore, which also replays the failing run with its labels), then
// replays the failing schedule once more with rt.Replay and on the model.
func TestImplFindsBugControlled(t *testing.T) {
	for _, c := range []struct {
		variant string
		want    string
	}{
		{"never-flush", NoPollution},
		{"oldpir-zero", VMIsolation},
		{"ignore-request", HostMemorySafety},
	} {
		strategies := []rt.Strategy{rt.PCT(7, 3), rt.Random(7)}
		if c.variant == "oldpir-zero" {
			// The leak needs a VM teardown between two slices on the same
			// core, with the run loop's and the host's steps in between:
			// at the default size PCT seed 2 reaches it after 621 runs,
			// seeds 1 and 3 to 10 in none of 20000, nor uniform walks.
			strategies = []rt.Strategy{rt.PCT(2, 3)}
		}
		for _, s := range strategies {
			t.Run(c.variant+"/"+s.String(), func(t *testing.T) {
				g, im := Gated(s)
				tg := implTarget(t, im, c.variant, nil)
				mk, err := im.New(c.variant, tg.Params)
				if err != nil {
					t.Fatal(err)
				}
				body := func(e *rt.Env) { mk(e) }
				sum, err := rt.Explore(g, 5000, implMaxSteps, body)
				if err != nil {
					t.Fatal(err)
				}
				f := sum.Failure
				if f == nil || f.Violation == nil || f.Violation.Property != c.want {
					t.Fatalf("want %s, got %s", c.want, sum)
				}
				again := rt.Controlled(rt.Replay(f.Schedule), implMaxSteps, body)
				if again.Err != nil || again.Violation == nil || again.Violation.Property != c.want ||
					again.Outcome() != f.Outcome() || rt.FormatSchedule(again.Schedule) != rt.FormatSchedule(f.Schedule) || !sameSteps(again.Steps, f.Steps) {
					t.Fatalf("replay differs:\n%s\nfirst:\n%s", again, f)
				}
				if err := tg.CheckRun(f); err != nil {
					t.Fatalf("the model disagrees with the failing run: %v\n%s", err, f)
				}
				t.Logf("%s after %d runs, %d steps", f.Violation.Property, sum.Runs, len(f.Steps))
			})
		}
	}
}

func sameSteps(a, b []rt.Step) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestImplAlternatingScenario is the seed's claim measured on the real
// code: one core alternating A (VM1) and B (VM2) for N rounds executes
// tlbilxlpid 2N times under per-cpu and twice under per-lpid.
func TestImplAlternatingScenario(t *testing.T) {
	for _, n := range []int{1, 3, 10} {
		for _, c := range []struct {
			variant string
			flushes int
			steps   func(n int) int // as the model's TestAlternatingScenario
		}{{"per-cpu", 2 * n, func(n int) int { return 10*n + 1 }}, {"per-lpid", 2, func(n int) int { return 7*n + 4 }}} {
			g, im := Gated(rt.Random(1))
			tg := implTarget(t, im, c.variant, model.Params{"scenario": 1, "rounds": n})
			run, err := tg.Controlled(g, implMaxSteps)
			if err != nil {
				t.Fatal(err)
			}
			if err := tg.CheckRun(run); err != nil || run.Failed() {
				t.Fatalf("%s rounds=%d: %v\n%s", c.variant, n, err, run)
			}
			got := 0
			for _, s := range run.Steps {
				if strings.HasPrefix(s.Label, loadLabel) && strings.Contains(s.Label, ", tlbilxlpid ") {
					got++
				}
			}
			if got != c.flushes || len(run.Steps) != c.steps(n) {
				t.Errorf("%s rounds=%d: %d flushes in %d steps, want %d in %d", c.variant, n, got, len(run.Steps), c.flushes, c.steps(n))
			}
		}
	}
}

// TestImplUngatedIsLoud: a controlled run of Impl scheduled without its
// Gate (Gated)
// may take an alternative the code does not offer (a vCPU loaded on the
// other core); the code says so instead of running something the model
// cannot.
func TestImplUngatedIsLoud(t *testing.T) {
	ungated := &rt.Impl{Variants: Impl.Variants, New: Impl.New}
	tg := implTarget(t, ungated, "per-lpid", nil)
	s := rt.Random(3)
	for i := 0; i < 200; i++ {
		run, err := tg.Controlled(s, implMaxSteps)
		if err != nil {
			t.Fatal(err)
		}
		if run.Violation != nil {
			if run.Violation.Property != PropHarness {
				t.Fatalf("got %s", run.Outcome())
			}
			return
		}
	}
	t.Fatal("200 ungated random runs never took an alternative the code does not offer")
}

// neverFlushViolates lists the properties never-flush is known to
// violate, each shown on the model: no-pollution (its expectation: bfs at
// the default size), vm-isolation (a vCPU of a VM that reuses a freed
// LPID hits the destroyed VM's entry: TestNeverFlushLeaksAcrossVMs) and
// linearizability (the wrong translation either hit returns, without the
// step assertions: TestSpecCatchesBugs).
var neverFlushViolates = []string{NoPollution, VMIsolation, HostMemorySafety, model.Linearizability}

// TestNeverFlushLeaksAcrossVMs: with one vCPU per VM and two loads, no
// vCPU can hit a sibling's entry or its own stale one, and bfs finds
// never-flush leaking a destroyed VM's entry to the VM that reuses its
// LPID instead.
func TestNeverFlushLeaksAcrossVMs(t *testing.T) {
	r := explore(t, machineFor(t, "never-flush", model.Params{"vm1-vcpus": 1, "vm2-vcpus": 1, "loads": 2}), explorer.Options{})
	if r.Verdict != explorer.Violation || r.Violation.Property != VMIsolation {
		t.Fatalf("got %s, want a %s violation", r, VMIsolation)
	}
}

// TestImplRealFindsBug: under the Go scheduler alone, never-flush's bugs
// show up in the real code. Which of its known violations a run meets
// first is up to the Go scheduler (most are a vCPU of the same VM running
// next on the core and hitting the entry its sibling left; with VM
// cycles, some are a new VM's vCPU hitting a destroyed VM's entry), so
// any of them is accepted, and only that some of 200 runs find one is
// asserted.
func TestImplRealFindsBug(t *testing.T) {
	tg := implTarget(t, Impl, "never-flush", implStressParams[1])
	found := map[string]int{}
	for seed := int64(0); seed < 200; seed++ {
		v, _, err := tg.Real(seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if v != nil {
			if !slices.Contains(neverFlushViolates, v.Property) {
				t.Fatalf("seed %d: %v, which never-flush is not known to violate", seed, v)
			}
			found[v.Property]++
		}
	}
	if len(found) == 0 {
		t.Fatalf("200 real runs of never-flush found none of %v", neverFlushViolates)
	}
	t.Logf("violations in 200 real runs: %v", found)
}

// offerRecorder is a strategy that keeps, at every decision of a run, the
// choices it was offered (after Gated's filter: what the code allows).
type offerRecorder struct {
	inner   rt.Strategy
	offered [][]model.Choice
}

func (o *offerRecorder) Begin() error {
	o.offered = o.offered[:0]
	return o.inner.Begin()
}

func (o *offerRecorder) Pick(p *rt.Point) (model.Choice, error) {
	o.offered = append(o.offered[:p.Step], slices.Clone(p.Enabled))
	return o.inner.Pick(p)
}

func (o *offerRecorder) End(r *rt.Run) error { return o.inner.End(r) }
func (o *offerRecorder) String() string      { return "recording " + o.inner.String() }

// TestImplOffersTheModelsChoices: at every step of gated controlled runs,
// the choices the real code allows (host.allowed, through Gated) are
// exactly the model's enabled choices in the state the same schedule
// reaches (explorer.Enabled): the same threads and the same alternative
// numbers, for every variant, at the default size and a larger one.
func TestImplOffersTheModelsChoices(t *testing.T) {
	runs := 100
	if testing.Short() {
		runs = 20
	}
	configs := []model.Params{nil,
		{"cpus": 3, "vm1-vcpus": 2, "vm2-vcpus": 2, "lpids": 3, "loads": 6, "ops": 6, "cycles": 2, "unmaps": 2},
		{"tlb-ops": 0, "ops": 4, "unmaps": 3},
		{"scenario": 1, "rounds": 3}}
	for _, variant := range Impl.Variants {
		for ci, p := range configs {
			t.Run(fmt.Sprintf("%s/config%d", variant, ci), func(t *testing.T) {
				rec := &offerRecorder{inner: rt.PCT(int64(11+ci), 3)}
				g, im := Gated(rec)
				tg := implTarget(t, im, variant, p)
				for i := 0; i < runs; i++ {
					run, err := tg.Controlled(g, implMaxSteps)
					if err != nil {
						t.Fatal(err)
					}
					if run.Err != nil {
						t.Fatalf("run %d: %v", i, run.Err)
					}
					ex, err := explorer.Execute(tg.Machine, run.Schedule)
					if err != nil {
						t.Fatalf("run %d: the model does not follow the run: %v", i, err)
					}
					for k, offered := range rec.offered {
						if k >= len(ex.States) {
							t.Fatalf("run %d: the code offered choices at step %d, after the model's violation at step %d", i, k+1, ex.ViolationStep)
						}
						if want := explorer.Enabled(tg.Machine, ex.States[k]); !slices.Equal(offered, want) {
							t.Fatalf("run %d, step %d: the code offers %v, the model enables %v", i, k+1, offered, want)
						}
					}
					if run.Violation == nil && !run.BoundHit && len(explorer.Enabled(tg.Machine, ex.States[len(ex.States)-1])) != 0 {
						t.Fatalf("run %d: the code stops after %d steps where the model can go on", i, len(run.Schedule))
					}
				}
			})
		}
	}
}
