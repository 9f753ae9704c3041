package traces

import (
	"bytes"
	"errors"
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

// Record on the schedule of a lasso, as the explorer reports one, records
// it as the progress violation it is, with its cycle and fairness (the
// trace RecordProgress gives, byte for byte), and the trace round-trips
// through its file form and replay: it never replays clean.
func TestRecordOnALassoRecordsTheLasso(t *testing.T) {
	r, want := exploreSpin(t, "give-up", explorer.FairnessWeak)
	if r.Fairness != explorer.FairnessWeak {
		t.Errorf("the result says the fairness was %q, want %q", r.Fairness, explorer.FairnessWeak)
	}
	_, params, err := spinProtocol.Instantiate("give-up", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Record(spinProtocol, "give-up", params, r.Schedule)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Violation == nil || *tr.Violation != *r.Violation || tr.Cycle != r.Cycle || tr.Fairness != explorer.FairnessWeak {
		t.Fatalf("Record: violation %v, cycle %d, fairness %q; the explorer found %v with a cycle of %d", tr.Violation, tr.Cycle, tr.Fairness, r.Violation, r.Cycle)
	}
	got, err := Encode(tr)
	if err != nil {
		t.Fatal(err)
	}
	if wantData, _ := Encode(want); !bytes.Equal(got, wantData) {
		t.Errorf("Record and RecordProgress disagree:\n%s\n%s", got, wantData)
	}
	back, err := Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Replay(spinProtocol, back)
	if err != nil {
		t.Fatal(err)
	}
	if v := rep.Execution.Violation; v == nil || *v != *r.Violation || rep.Cycle != r.Cycle {
		t.Errorf("replayed: violation %v, cycle %d; want %v, cycle %d", v, rep.Cycle, r.Violation, r.Cycle)
	}

	// A prefix that closes no cycle is an execution like any other.
	clean, err := Record(spinProtocol, "give-up", params, r.Schedule[:1])
	if err != nil || clean.Violation != nil || clean.Cycle != 0 {
		t.Errorf("a prefix of the lasso: %+v, %v; want a clean trace", clean, err)
	}
}

// A lasso that is a counterexample only without fairness (the waiter
// spinning while the setter could still act) cannot be recorded by Record,
// which does not know the fairness it was found under: it says so, and
// RecordProgress records it.
func TestRecordRefusesALassoFairOnlyWithoutFairness(t *testing.T) {
	r, _ := exploreSpin(t, "sets", explorer.FairnessNone)
	if r.Fairness != explorer.FairnessNone {
		t.Errorf("the result says the fairness was %q, want %q", r.Fairness, explorer.FairnessNone)
	}
	_, err := Record(spinProtocol, "sets", model.Params{}, r.Schedule)
	if err == nil || !strings.Contains(err.Error(), "not fair under weak fairness") || !strings.Contains(err.Error(), "RecordProgress") {
		t.Errorf("Record = %v, want an error naming the fairness and RecordProgress", err)
	}
}

// An execution that ends with every thread done and an obligation still
// pending is a progress counterexample with no cycle: Record records it
// as bfs reports it.
func TestRecordOnAnEndWithAPendingObligation(t *testing.T) {
	p := &model.Protocol{
		Name: "ends", Description: "a thread that ends without doing its job", Source: "traces tests",
		Variants: []model.Variant{{Name: "v", Expect: "job-done", Description: "it forgets"}},
		New: func(string, model.Params) (model.Machine, error) {
			return model.MustNew(model.Def[struct{ Step uint8 }]{
				Threads: []string{"worker"},
				Init:    func(*struct{ Step uint8 }) {},
				Step: func(s *struct{ Step uint8 }, _ int, x *model.Exec) {
					if s.Step == 1 {
						x.Done()
						return
					}
					s.Step = 1
					x.Label("return without doing the job")
				},
				Progress: []model.ProgressOf[struct{ Step uint8 }]{{Name: "job-done", Pending: func(*struct{ Step uint8 }) bool { return true }}},
			}), nil
		},
	}
	m, params, err := p.Instantiate("v", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := explorer.Explore(m, explorer.Options{})
	if err != nil || r.Violation == nil || r.Cycle != 0 {
		t.Fatalf("bfs: %v, %v; want a violation of job-done with no cycle", r, err)
	}
	tr, err := Record(p, "v", params, r.Schedule)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Violation == nil || *tr.Violation != *r.Violation || tr.Cycle != 0 {
		t.Fatalf("Record: %v, cycle %d; bfs found %v", tr.Violation, tr.Cycle, r.Violation)
	}
	if _, err := Replay(p, tr); err != nil {
		t.Fatal(err)
	}
}

// A lasso's recorded message is checked on replay like any other: edited,
// it is a divergence at the end of the lasso.
func TestLassoWithAnEditedMessageDiverges(t *testing.T) {
	_, tr := exploreSpin(t, "give-up", explorer.FairnessWeak)
	edited := *tr
	v := *tr.Violation
	v.Message = strings.Replace(v.Message, "forever", "for a while", 1)
	edited.Violation = &v
	_, err := Replay(spinProtocol, &edited)
	var de *DivergenceError
	if !errors.As(err, &de) || de.Step != len(tr.Schedule) || !strings.Contains(err.Error(), "for a while") || !strings.Contains(err.Error(), "forever") {
		t.Errorf("Replay of an edited lasso message = %v, want a divergence at step %d naming both messages", err, len(tr.Schedule))
	}
}
