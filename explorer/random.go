package explorer

import (
	"fmt"
	"math/rand/v2"

	"github.com/protocheck/protocheck/model"
)

// A Picker chooses the next step of a walk among the enabled choices
// (never empty). prev is the thread that took the previous step, or -1.
type Picker func(enabled []model.Choice, prev int) model.Choice

// A Walk is one execution followed to its end.
type Walk struct {
	Schedule  []model.Choice
	Violation *model.Violation
	Terminal  bool // ended with no enabled choice (done, or deadlocked)
	Totals    []int64
	States    int // states visited, the initial one included
}

// walker follows single executions; it is shared by random walks and by
// the property tests that drive a machine with rapid.
type walker struct {
	m    model.Machine
	st   *stepper
	hist model.History
	en   []model.Choice
	seen map[string]struct{} // distinct states, when counted
	key  []byte
}

func newWalker(m model.Machine) *walker { return &walker{m: m, st: newStepper(m)} }

// RunWalk follows one execution of m, letting pick choose each step, for
// at most maxSteps steps. It checks every invariant and assertion, deadlock
// at the end, and the linearizability of the history.
func RunWalk(m model.Machine, pick Picker, maxSteps int) *Walk {
	return newWalker(m).walk(pick, maxSteps, nil)
}

func (w *walker) visit(s model.State) {
	if w.seen == nil {
		return
	}
	w.key = s.AppendKey(w.key[:0])
	w.seen[string(w.key)] = struct{}{}
}

func (w *walker) walk(pick Picker, maxSteps int, trans *int64) *Walk {
	res := &Walk{Totals: make([]int64, len(w.m.Metrics()))}
	s := w.m.Init()
	w.visit(s)
	res.States = 1
	if v := w.st.checkState(s); v != nil {
		res.Violation = v
		return res
	}
	w.hist.Reset()
	prev := -1
	for i := 0; ; i++ {
		w.en = w.m.Enabled(s, w.en[:0])
		if len(w.en) == 0 {
			res.Terminal = true
			res.Violation = w.st.deadlock(s)
			break
		}
		if i >= maxSteps {
			break
		}
		c := pick(w.en, prev)
		if !contains(w.en, c) {
			panic(fmt.Sprintf("explorer: picker chose %v, which is not enabled (%v)", c, w.en))
		}
		var v *model.Violation
		s, v = w.st.step(s, c)
		w.visit(s)
		res.States++
		if trans != nil {
			*trans++
		}
		res.Schedule = append(res.Schedule, c)
		for k, d := range w.st.x.Counts() {
			res.Totals[k] += d
		}
		if err := w.hist.Record(int64(i), w.st.x.Events()); err != nil && v == nil {
			v = &model.Violation{Property: model.Linearizability, Message: "malformed history: " + err.Error()}
		}
		if v != nil {
			res.Violation = v
			return res
		}
		prev = c.Thread
	}
	if res.Violation == nil {
		res.Violation = model.CheckHistory(w.m.Spec(), w.hist.Operations())
	}
	return res
}

// random runs opts.Runs seeded walks. Walk i uses a generator seeded with
// (opts.Seed, i), so each walk is reproducible on its own.
func random(m model.Machine, opts Options, p *progress) *Result {
	r := &Result{}
	w := newWalker(m)
	w.seen = map[string]struct{}{}
	es := newExecStats(len(m.Metrics()))
	cut := 0
	for i := 0; i < opts.Runs; i++ {
		rng := rand.New(rand.NewPCG(uint64(opts.Seed), uint64(i)))
		pick := func(en []model.Choice, _ int) model.Choice { return en[rng.IntN(len(en))] }
		walk := w.walk(pick, opts.MaxSteps, &r.Stats.Transitions)
		if len(walk.Schedule) > r.Stats.Depth {
			r.Stats.Depth = len(walk.Schedule)
		}
		for k, t := range walk.Totals {
			es.trans[k] += t
		}
		if walk.Violation != nil {
			r.Verdict, r.Violation, r.Schedule = Violation, walk.Violation, walk.Schedule
			r.Stats.States = int64(len(w.seen))
			r.Stats.Executions = int64(i + 1)
			return r
		}
		if walk.Terminal {
			es.add(walk.Totals)
			r.Stats.Executions++
		} else {
			cut++
		}
		p.report(int64(len(w.seen)), r.Stats.Transitions, r.Stats.Depth, 0)
	}
	r.Stats.States = int64(len(w.seen))
	r.Verdict = Bounded
	r.Bound = fmt.Sprintf("random: %d walks from seed %d", opts.Runs, opts.Seed)
	if cut > 0 {
		r.Bound += fmt.Sprintf(", %d of them stopped at max-steps=%d (a spin loop or livelock?)", cut, opts.MaxSteps)
	}
	r.Metrics = es.metrics(m.Metrics())
	return r
}
