package e500mc

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// TestLinearizableCorrect checks the histories of the correct variants
// against the per-vCPU guest-TLB spec: random walks at a larger size, and
// every execution (paths) at two small ones, one with two vCPUs of a VM
// sharing a CPU (the pollution shape), one with a vCPU migrating with
// three guest operations (the staleness shape).
func TestLinearizableCorrect(t *testing.T) {
	big := model.Params{"cpus": 3, "vm1-vcpus": 2, "vm2-vcpus": 2, "lpids": 3, "loads": 8, "ops": 10, "cycles": 2}
	small := []model.Params{
		{"loads": 3, "ops": 2, "cycles": 0},
		{"loads": 3, "ops": 3, "cycles": 0, "vm1-vcpus": 1, "vm2-vcpus": 1},
	}
	wantExecs := []int64{46140, 65476}
	for _, variant := range []string{"per-lpid", "per-cpu"} {
		r := explore(t, machineFor(t, variant, big), explorer.Options{Strategy: explorer.Random, Seed: 7, Runs: 3000})
		if r.Verdict != explorer.Bounded || r.Violation != nil {
			t.Errorf("%s random: %s", variant, r)
		}
		for i, p := range small {
			r = explore(t, machineFor(t, variant, p), explorer.Options{Strategy: explorer.Paths})
			if r.Verdict != explorer.OK || r.Stats.Executions != wantExecs[i] {
				t.Errorf("%s paths %v: %s, %d executions, want ok with %d", variant, p, r, r.Stats.Executions, wantExecs[i])
			}
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

// TestSpecCatchesBugs replays each buggy variant's bfs counterexample on
// the machine without assertions: the wrong translation the guest reads
// makes the vCPU's history non-linearizable.
func TestSpecCatchesBugs(t *testing.T) {
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		r := defaultResult(t, v.Name)
		ex, err := explorer.Execute(unchecked{machineFor(t, v.Name, nil)}, r.Schedule)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Violation == nil || ex.Violation.Property != model.Linearizability {
			t.Errorf("%s: the spec did not catch the counterexample: %v", v.Name, ex.Violation)
			continue
		}
		t.Logf("%s: %v", v.Name, ex.Violation)
	}
	// And a random search finds never-flush through the spec alone.
	r := explore(t, unchecked{machineFor(t, "never-flush", nil)}, explorer.Options{Strategy: explorer.Random, Seed: 3, Runs: 2000})
	if r.Verdict != explorer.Violation || r.Violation.Property != model.Linearizability {
		t.Errorf("never-flush without assertions: random search got %s, want a linearizability violation", r)
	}
}
