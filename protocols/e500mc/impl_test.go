package e500mc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer/conform"
	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/internal/race"
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
	if testing.Short() || race.Enabled {
		// The race detector slows a controlled run tenfold; model and
		// code agree the same with fewer runs.
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
		{"cpus": 3, "vm1-vcpus": 2, "vm2-vcpus": 2, "lpids": 3, "loads": 6, "ops": 6, "cycles": 2},
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
	if v.Expect == model.ExpectOK && len(found) > 0 {
		t.Fatalf("correct variant violated: %v", found)
	}
	t.Logf("%d runs, %d steps, violations %v", runs, steps, found)
}

// TestImplReplaysModelTraces drives the real code through each buggy
// variant's model counterexample (testdata) with every label checked: the
// model's bug is the code's bug.
func TestImplReplaysModelTraces(t *testing.T) {
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			tr, err := traces.Load(fmt.Sprintf("../../testdata/e500mc/%s.trace.json", v.Name))
			if err != nil {
				t.Fatal(err)
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
			if run.Violation == nil || tr.Violation == nil || run.Violation.Property != tr.Violation.Property || run.Violation.Property != v.Expect {
				t.Fatalf("want %s (the trace's %v), got %s\n%s", v.Expect, tr.Violation, run.Outcome(), run)
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
	{"cpus": 4, "vm1-vcpus": 3, "vm2-vcpus": 2, "lpids": 3, "loads": 40, "ops": 60, "cycles": 3},
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
// bugs of never-flush and oldpir-zero in the real code (rt.Explore, which
// also replays the failing run with its labels), then replays the failing
// schedule once more with rt.Replay and on the model.
func TestImplFindsBugControlled(t *testing.T) {
	for _, c := range []struct {
		variant string
		want    string
	}{
		{"never-flush", NoPollution},
		{"oldpir-zero", VMIsolation},
	} {
		strategies := []rt.Strategy{rt.PCT(7, 3)}
		if c.variant == "never-flush" {
			// Uniform random walks find never-flush at once; the
			// oldpir-zero leak needs a VM teardown between two slices on
			// the same core, which PCT's priorities reach and uniform
			// walks rarely do (none in 20000 runs of seed 7).
			strategies = append(strategies, rt.Random(7))
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
		}{{"per-cpu", 2 * n}, {"per-lpid", 2}} {
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
			if got != c.flushes || len(run.Steps) != 5*n+1 {
				t.Errorf("%s rounds=%d: %d flushes in %d steps, want %d in %d", c.variant, n, got, len(run.Steps), c.flushes, 5*n+1)
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

// TestImplRealFindsBug: under the Go scheduler alone, never-flush breaks
// the real code. Which property a run breaks first is up to the Go
// scheduler: no-pollution (a vCPU of the same VM runs next on the core and
// hits the entry its sibling left) or, at these sizes where VMs are
// destroyed and their LPIDs reused, vm-isolation (a vCPU of the new VM
// hits the destroyed VM's entry, which never-flush leaves too). The test
// accepts exactly the properties the model itself reaches for never-flush
// at these parameters (checked first, on seeded walks), and asserts only
// that some of 200 runs find one (177 do at seeds 0..199 without -race).
func TestImplRealFindsBug(t *testing.T) {
	tg := implTarget(t, Impl, "never-flush", implStressParams[1])
	accept, err := tg.ModelViolations(200)
	if err != nil {
		t.Fatal(err)
	}
	if !accept[NoPollution] || !accept[VMIsolation] {
		t.Fatalf("the model's walks of never-flush reach %v; want both %s and %s", accept, NoPollution, VMIsolation)
	}
	found := map[string]int{}
	for seed := int64(0); seed < 200; seed++ {
		v, _, err := tg.Real(seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if v != nil {
			if !accept[v.Property] {
				t.Fatalf("seed %d: %v, which the model does not reach for never-flush", seed, v)
			}
			found[v.Property]++
		}
	}
	if len(found) == 0 {
		t.Fatal("200 real runs of never-flush found no violation")
	}
	t.Logf("of 200 real runs: %v", found)
}
