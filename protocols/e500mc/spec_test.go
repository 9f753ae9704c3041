package e500mc

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// TestLinearizableCorrect checks the histories of the correct variants
// against the per-vCPU guest-TLB spec: random walks at a larger size with
// the VMM and the host's flush, and every execution (paths) at a small one
// with two vCPUs of a VM sharing a CPU (the pollution shape). (Every
// execution with the host's flush or three loads is beyond a million.)
func TestLinearizableCorrect(t *testing.T) {
	big := model.Params{"cpus": 3, "vm1-vcpus": 2, "vm2-vcpus": 2, "lpids": 3, "loads": 8, "ops": 10, "cycles": 2, "unmaps": 2}
	small := model.Params{"loads": 2, "ops": 2, "cycles": 0, "unmaps": 0}
	for _, variant := range []string{"per-lpid", "per-cpu"} {
		r := explore(t, machineFor(t, variant, big), explorer.Options{Strategy: explorer.Random, Seed: 7, Runs: 3000})
		if r.Verdict != explorer.Bounded || r.Violation != nil {
			t.Errorf("%s random: %s", variant, r)
		}
		// paths follows every execution and checks every history; it
		// keeps no state graph, so host-flush-returns is not checked.
		r = explore(t, machineFor(t, variant, small), explorer.Options{Strategy: explorer.Paths})
		if !r.CleanExcept(HostFlushReturns) || r.Stats.Executions != 149004 {
			t.Errorf("%s paths %v: %s, %d executions, want clean but for %s with 149004", variant, small, r, r.Stats.Executions, HostFlushReturns)
		}
	}
}

// unchecked is a buggy machine with its step assertions removed, so that
// only the guest-TLB spec can catch what the guest observes. Its step
// runs the inner machine's step with an Exec of its own and passes on
// everything but the failed assertion: the outcome, the draw, the label,
// the accesses, the operations and the metric deltas.
type unchecked struct{ model.Machine }

func (u unchecked) Step(s model.State, t int, x *model.Exec) {
	y := model.NewExec(len(u.Properties().Metrics))
	y.SetThreadNames(u.Threads())
	y.SetModes(x.Labelling(), x.Recording())
	// A first run on a copy says what the step offers, so that x draws
	// (and the explorer enumerates) the same alternatives.
	y.Reset(t, -1)
	u.Machine.Step(model.Clone(u.Machine, s), t, y)
	switch y.Outcome() {
	case model.Blocked:
		x.Block()
		x.Label(y.StepLabel())
		return
	case model.Finished:
		x.Done()
		return
	}
	alt := 0
	if set, _, _ := y.Offered(); set != 0 {
		alt = x.ChooseFrom(set)
	}
	y.Reset(t, alt)
	u.Machine.Step(s, t, y)
	x.Label(y.StepLabel())
	for _, a := range y.Footprint() {
		x.Touch(a.Object, a.Write)
	}
	for _, e := range y.Events() {
		if e.Return {
			x.Return(e.Client, e.Output)
		} else {
			x.Call(e.Client, e.Input)
		}
	}
	for k, d := range y.Counts() {
		x.Count(k, d)
	}
}

// bareGuest is unchecked without the invariants either: only the guest's
// history can tell what went wrong.
type bareGuest struct{ unchecked }

func (b bareGuest) Properties() model.Properties {
	p := b.unchecked.Properties()
	p.Invariants = nil
	return p
}

// TestSpecCatchesBugs replays each buggy variant's bfs counterexample of a
// wrong translation (no-pollution, vm-isolation) on the machine without
// assertions: the wrong page the guest reads makes the vCPU's history
// non-linearizable. no-oldpir's default counterexample is host memory
// safety, so its stale translation is taken where bfs finds it (no host
// unmap, three guest operations).
func TestSpecCatchesBugs(t *testing.T) {
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK || v.Expect == HostMemorySafety && v.Name != "no-oldpir" {
			continue
		}
		var p model.Params
		if v.Name == "no-oldpir" {
			p = model.Params{"unmaps": 0, "cycles": 0, "ops": 3}
		}
		r := explore(t, machineFor(t, v.Name, p), explorer.Options{})
		if r.Violation == nil || r.Violation.Property == HostMemorySafety {
			t.Fatalf("%s %v: %s, want a wrong translation", v.Name, p, r)
		}
		ex, err := explorer.Execute(unchecked{machineFor(t, v.Name, p)}, r.Schedule)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Violation == nil || ex.Violation.Property != model.Linearizability {
			t.Errorf("%s: the spec did not catch the counterexample: %v", v.Name, ex.Violation)
			continue
		}
		t.Logf("%s: %v", v.Name, ex.Violation)
	}
	// And a random search finds never-flush through the spec alone (at a
	// size where walks have guest operations to spare).
	big := model.Params{"cpus": 3, "vm1-vcpus": 3, "vm2-vcpus": 2, "lpids": 3, "loads": 8, "ops": 8, "cycles": 2, "unmaps": 0}
	r := explore(t, unchecked{machineFor(t, "never-flush", big)}, explorer.Options{Strategy: explorer.Random, Seed: 3, Runs: 5000})
	if r.Verdict != explorer.Violation || r.Violation.Property != model.Linearizability {
		t.Errorf("never-flush without assertions: random search got %s, want a linearizability violation", r)
	}
}

// TestHostMemoryIsInvisibleToTheGuest: a host-memory-safety
// counterexample followed by the guest's load of EA 0 gives a history the
// spec accepts (the guest reads the guest page it mapped, through a freed
// host page). Only the invariant sees the bug, which is why S3 is one.
func TestHostMemoryIsInvisibleToTheGuest(t *testing.T) {
	for _, variant := range []string{"ignore-request", "no-oldpir"} {
		r := defaultResult(t, variant)
		if r.Violation == nil || r.Violation.Property != HostMemorySafety {
			t.Fatalf("%s: %s", variant, r)
		}
		m := machineFor(t, variant, nil).(*machine)
		sched := append(append([]model.Choice(nil), r.Schedule...), model.Choice{Thread: r.Schedule[len(r.Schedule)-1].Thread, Alt: altAccess})
		ex, err := explorer.Execute(bareGuest{unchecked{m}}, sched)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Violation != nil {
			t.Errorf("%s: the guest's history shows %v", variant, ex.Violation)
		}
		if last := ex.Steps[len(ex.Steps)-1].Label; !strings.Contains(last, "hits the TLB") {
			t.Errorf("%s: the appended load is %q, want a hit", variant, last)
		}
	}
}
