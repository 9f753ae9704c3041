package traces

import (
	"bytes"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// spinProtocol is the progress test model: a waiter spins on a flag that a
// setter may set, or may give up on (variant give-up); the waiter must
// eventually proceed. Under weak fairness the waiter spinning forever is a
// counterexample only once the setter has given up (it can no longer
// step); without fairness it is one from the start.
var spinProtocol = &model.Protocol{
	Name:        "spin",
	Description: "a waiter spins on a flag",
	Source:      "traces tests",
	Variants: []model.Variant{
		{Name: "sets", Expect: model.ExpectOK, Description: "the setter sets the flag"},
		{Name: "give-up", Expect: "waiter-proceeds", Description: "the setter may give up"},
	},
	New: func(variant string, _ model.Params) (model.Machine, error) { return newSpin(variant == "give-up"), nil },
}

type spinState struct {
	Mem    model.Mem
	Waiter uint8 // 0 spinning, 1 through
	Setter uint8 // 0 to act, 1 done
}

func newSpin(giveUp bool) model.Machine {
	return model.MustNew(model.Def[spinState]{
		Threads: []string{"waiter", "setter"},
		Init:    func(s *spinState) { s.Mem = model.NewMem("flag") },
		Step: func(s *spinState, t int, x *model.Exec) {
			switch {
			case t == 0 && s.Waiter == 0:
				f := x.Load(s.Mem, 0)
				x.Labelf("while (!flag): read flag = %d", f)
				if f == 1 {
					s.Waiter = 1
				}
			case t == 1 && s.Setter == 0:
				s.Setter = 1
				if giveUp && x.Choose(2) == 1 {
					x.Touch("setter", true)
					x.Label("give up")
					return
				}
				x.Store(s.Mem, 0, 1)
				x.Label("flag = 1")
			default:
				x.Done()
			}
		},
		Progress: []model.ProgressOf[spinState]{{Name: "waiter-proceeds", Pending: func(s *spinState) bool { return s.Waiter == 0 }}},
	})
}

func exploreSpin(t *testing.T, variant, fairness string) (*explorer.Result, *Trace) {
	t.Helper()
	m, params, err := spinProtocol.Instantiate(variant, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := explorer.Explore(m, explorer.Options{Fairness: fairness})
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation == nil {
		return r, nil
	}
	tr, err := RecordProgress(spinProtocol, variant, params, r.Schedule, r.Cycle, r.Violation, fairness)
	if err != nil {
		t.Fatal(err)
	}
	return r, tr
}

func TestLassoFoundRecordedReplayed(t *testing.T) {
	if r, _ := exploreSpin(t, "sets", explorer.FairnessWeak); r.Verdict != explorer.OK {
		t.Fatalf("sets under weak fairness: %s, want ok", r)
	}
	r, tr := exploreSpin(t, "sets", explorer.FairnessNone)
	if r.Verdict != explorer.Violation || r.Cycle != 1 || len(r.Schedule) != 1 {
		t.Fatalf("sets without fairness: %s, cycle %d, schedule %v: want the waiter spinning from the start (a 1-step cycle)", r, r.Cycle, r.Schedule)
	}
	r, tr = exploreSpin(t, "give-up", explorer.FairnessWeak)
	if r.Verdict != explorer.Violation || r.Violation.Property != "waiter-proceeds" || r.Cycle != 1 || len(r.Schedule) != 2 {
		t.Fatalf("give-up: %s, cycle %d, schedule %v: want give up, then the waiter spinning", r, r.Cycle, r.Schedule)
	}
	data, err := Encode(tr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"version": 2`, `"cycle": 1`, `"fairness": "weak"`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("the trace file lacks %s:\n%s", want, data)
		}
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Replay(spinProtocol, back)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Render(&b, rep); err != nil {
		t.Fatal(err)
	}
	goldenFile(t, "spin-give-up.golden", b.Bytes())
	var h bytes.Buffer
	if err := RenderHTML(&h, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), "cycle-start") {
		t.Error("the HTML view does not mark the cycle")
	}
}

// A lasso that does not hold is refused on replay, naming what fails.
func TestLassoReplayRefusesBrokenCycles(t *testing.T) {
	_, tr := exploreSpin(t, "give-up", explorer.FairnessWeak)
	edit := func(f func(*Trace)) *Trace {
		c := *tr
		c.Schedule = append([]model.Choice(nil), tr.Schedule...)
		c.Steps = append([]Step(nil), tr.Steps...)
		f(&c)
		return &c
	}
	for _, c := range []struct {
		name string
		tr   *Trace
		want string
	}{
		{"cycle not closing", edit(func(c *Trace) { c.Cycle = 2 }), "the cycle does not close"},
		{"no cycle but not ended", edit(func(c *Trace) { c.Cycle = 0 }), "does not end"},
	} {
		_, err := Replay(spinProtocol, c.tr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Replay = %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// The waiter spinning while the setter could still act is not a fair
	// cycle: it is refused under weak fairness, accepted without.
	_, none := exploreSpin(t, "sets", explorer.FairnessNone)
	unfair := *none
	unfair.Fairness = explorer.FairnessWeak
	if _, err := Replay(spinProtocol, &unfair); err == nil || !strings.Contains(err.Error(), "not fair: setter can step in every state of it but never does") {
		t.Errorf("an unfair cycle replayed under weak fairness: %v", err)
	}
	if _, err := Replay(spinProtocol, none); err != nil {
		t.Errorf("the same cycle without fairness: %v", err)
	}
}
