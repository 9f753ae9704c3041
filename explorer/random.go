package explorer

import (
	"bytes"
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
	m      model.Machine
	st     *stepper
	hist   model.History
	en     []model.Choice
	seen   *visited // distinct states, when counted
	key    []byte
	succ   []byte
	quiet  []byte
	counts []int64
	stop   <-chan struct{}
}

func newWalker(m model.Machine) *walker { return &walker{m: m, st: newStepper(m)} }

// RunWalk follows one execution of m, letting pick choose each step, for
// at most maxSteps steps. It checks every invariant and assertion, deadlock
// at the end, and the linearizability of the history.
func RunWalk(m model.Machine, pick Picker, maxSteps int) *Walk {
	return newWalker(m).walk(pick, maxSteps, nil)
}

func (w *walker) visit(key []byte) {
	if w.seen == nil {
		return
	}
	h := hashKey(key)
	if slot, _, ok := w.seen.find(key, h); !ok {
		w.seen.insert(slot, key, h, int32(w.seen.n))
	}
}

// walk follows one execution. The enabled choices of each state come from
// running every step quietly; the chosen step is then run again with
// labels and events on, so that its operations reach the history and a
// step without a label is reported.
func (w *walker) walk(pick Picker, maxSteps int, trans *int64) *Walk {
	st := w.st
	res := &Walk{Totals: make([]int64, len(st.props.Metrics))}
	s := w.m.Init()
	w.key = s.AppendKey(w.key[:0])
	w.visit(w.key)
	res.States = 1
	if v := st.checkState(s); v != nil {
		res.Violation = v
		return res
	}
	w.hist.Reset()
	prev := -1
	for i := 0; ; i++ {
		var blocked threadSet
		w.en = w.en[:0]
		blocked, _ = st.forEach(w.key, func(c model.Choice) bool {
			w.en = append(w.en, c)
			return true
		})
		if len(w.en) == 0 {
			res.Terminal = true
			res.Violation = st.deadlock(w.key, blocked)
			break
		}
		if i >= maxSteps {
			break
		}
		c := pick(w.en, prev)
		if !contains(w.en, c) {
			panic(fmt.Sprintf("explorer: picker chose %v, which is not enabled (%v)", c, w.en))
		}
		st.x.SetModes(true, true)
		st.run(w.key, c.Thread, c.Alt)
		w.succ = st.scratch.AppendKey(w.succ[:0])
		v := st.verdict(w.key, w.succ)
		if (v == nil || v.Property != model.ModelError) && st.x.StepLabel() == "" {
			v = st.breach("the step sets no label")
		}
		if err := w.hist.Record(int64(i), st.x.Events()); err != nil && v == nil {
			v = &model.Violation{Property: model.Linearizability, Message: "malformed history: " + err.Error()}
		}
		w.counts = append(w.counts[:0], st.x.Counts()...)
		counts := w.counts
		st.x.SetModes(false, false)
		if v == nil || v.Property != model.ModelError {
			st.run(w.key, c.Thread, c.Alt)
			if w.quiet = st.scratch.AppendKey(w.quiet[:0]); !bytes.Equal(w.quiet, w.succ) {
				v = st.breach("with labels off the step gives another successor: what a step does must not depend on Exec.Labelling or Exec.Recording")
			}
		}
		w.key, w.succ = w.succ, w.key
		w.visit(w.key)
		res.States++
		if trans != nil {
			*trans++
		}
		res.Schedule = append(res.Schedule, c)
		for k, d := range counts {
			res.Totals[k] += d
		}
		if v != nil {
			res.Violation = v
			return res
		}
		prev = c.Thread
	}
	if res.Violation == nil {
		res.Violation = model.CheckHistory(st.props.Spec, w.hist.Operations())
	}
	return res
}

// random runs opts.Runs seeded walks. Walk i uses a generator seeded with
// (opts.Seed, i), so each walk is reproducible on its own. Plain random
// picks uniformly among the enabled choices; random-threads picks a thread
// uniformly among those with an enabled choice, then one of its choices.
func random(m model.Machine, opts Options, p *progress) *Result {
	return walks(m, opts, p, fmt.Sprintf("%s: %d walks from seed %d", opts.Strategy, opts.Runs, opts.Seed), pickers(m, opts))
}

// pickers returns the picker of walk i for a sampling strategy, a pure
// function of the machine, the options and i: the same walk i on any
// machine, process or worker of a cluster.
func pickers(m model.Machine, opts Options) func(i int) Picker {
	switch opts.Strategy {
	case PCT:
		return pctPickers(m, opts)
	case RandomThreads:
		return func(i int) Picker {
			rng := rand.New(rand.NewPCG(uint64(opts.Seed), uint64(i)))
			return func(en []model.Choice, _ int) model.Choice { return pickThreadFirst(rng, en) }
		}
	}
	return func(i int) Picker {
		rng := rand.New(rand.NewPCG(uint64(opts.Seed), uint64(i)))
		return func(en []model.Choice, _ int) model.Choice { return en[rng.IntN(len(en))] }
	}
}

// A Sampler runs single walks of a sampling strategy (random,
// random-threads, pct) by index: walk i is the i-th walk Explore would run
// with the same options, so walks can be shared out among workers (a
// swarm) and the lowest violating index found wherever it ran.
type Sampler struct {
	w     *walker
	pick  func(i int) Picker
	steps int
	trans int64
}

// NewSampler returns a Sampler for m; opts.Strategy must be random,
// random-threads or pct (Seed, Depth and MaxSteps as for Explore).
func NewSampler(m model.Machine, opts Options) (*Sampler, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	switch opts.Strategy {
	case Random, RandomThreads, PCT:
	default:
		return nil, fmt.Errorf("a sampler runs random, random-threads or pct walks, not %s", opts.Strategy)
	}
	return &Sampler{w: newWalker(m), pick: pickers(m, opts), steps: opts.MaxSteps}, nil
}

// Walk runs walk i and returns it.
func (s *Sampler) Walk(i int) *Walk { return s.w.walk(s.pick(i), s.steps, &s.trans) }

// pickThreadFirst picks a thread uniformly among those with an enabled
// choice, then one of its choices uniformly. en is sorted by thread.
func pickThreadFirst(rng *rand.Rand, en []model.Choice) model.Choice {
	threads := 1
	for i := 1; i < len(en); i++ {
		if en[i].Thread != en[i-1].Thread {
			threads++
		}
	}
	k := rng.IntN(threads)
	lo := 0
	for i := 1; i <= len(en); i++ {
		if i == len(en) || en[i].Thread != en[i-1].Thread {
			if k == 0 {
				return en[lo+rng.IntN(i-lo)]
			}
			k--
			lo = i
		}
	}
	panic("unreachable")
}

// walks runs opts.Runs walks, walk i driven by the picker newPick(i).
func walks(m model.Machine, opts Options, p *progress, bound string, newPick func(i int) Picker) *Result {
	r := &Result{}
	w := newWalker(m)
	w.seen = newVisited(false, false)
	defer w.seen.release()
	es := newExecStats(len(w.st.props.Metrics))
	cut := 0
	for i := 0; i < opts.Runs; i++ {
		if why, v := p.limit(w.seen.n); why != "" {
			r.Stats.States = int64(w.seen.n)
			r.Stats.Executions = int64(i)
			r.Verdict, r.Bound = v, why
			r.Metrics = es.metrics(w.st.props.Metrics)
			return r
		}
		walk := w.walk(newPick(i), opts.MaxSteps, &r.Stats.Transitions)
		if len(walk.Schedule) > r.Stats.Depth {
			r.Stats.Depth = len(walk.Schedule)
		}
		for k, t := range walk.Totals {
			es.trans[k] += t
		}
		if walk.Violation != nil {
			r.Verdict, r.Violation, r.Schedule = Violation, walk.Violation, walk.Schedule
			r.Stats.States = int64(w.seen.n)
			r.Stats.Executions = int64(i + 1)
			return r
		}
		if walk.Terminal {
			es.add(walk.Totals)
			r.Stats.Executions++
		} else {
			cut++
		}
		p.report(int64(w.seen.n), r.Stats.Transitions, r.Stats.Depth, 0)
	}
	r.Stats.States = int64(w.seen.n)
	r.Verdict = Bounded
	r.Bound = bound
	if cut > 0 {
		r.Bound += fmt.Sprintf(", %d of them stopped at max-steps=%d (a spin loop or livelock?)", cut, opts.MaxSteps)
	}
	r.Metrics = es.metrics(w.st.props.Metrics)
	return r
}

// pct runs opts.Runs walks of probabilistic concurrency testing
// (Burckhardt, Kothari, Musuvathi, Nagarakatte, ASPLOS 2010) with bug
// depth d = opts.Depth. Walk i draws, from a generator seeded with
// (opts.Seed, i): distinct initial priorities d..d+n-1 for the n threads,
// and d-1 change points among the first k steps. At each step the enabled
// thread with the highest priority runs (one of its alternatives drawn
// uniformly); after the step that is the j-th change point, the thread
// that took it drops to priority d-1-j, below every initial priority. k
// is the length of one calibration execution (lowest thread first, no
// randomness), so it depends only on the machine: each walk is
// reproducible from (seed, i) alone.
func pct(m model.Machine, opts Options, p *progress) *Result {
	return walks(m, opts, p, fmt.Sprintf("pct: %d walks of depth %d from seed %d", opts.Runs, opts.Depth, opts.Seed), pctPickers(m, opts))
}

// pctPickers returns the pickers of pct's walks.
func pctPickers(m model.Machine, opts Options) func(i int) Picker {
	n := len(m.Threads())
	d := opts.Depth
	calib := newWalker(m).walk(func(en []model.Choice, _ int) model.Choice { return en[0] }, opts.MaxSteps, nil)
	k := max(1, len(calib.Schedule))
	return func(i int) Picker {
		rng := rand.New(rand.NewPCG(uint64(opts.Seed), uint64(i)))
		prio := make([]int, n)
		for t, q := range rng.Perm(n) {
			prio[t] = d + q
		}
		change := make([]int, d-1)
		for j := range change {
			change[j] = 1 + rng.IntN(k)
		}
		step := 0
		return func(en []model.Choice, prev int) model.Choice {
			for j, at := range change {
				if at == step && prev >= 0 {
					prio[prev] = d - 1 - j
				}
			}
			step++
			best, lo, hi := -1, 0, 0
			for a := 0; a < len(en); {
				b := a
				for b < len(en) && en[b].Thread == en[a].Thread {
					b++
				}
				if t := en[a].Thread; best < 0 || prio[t] > prio[best] {
					best, lo, hi = t, a, b
				}
				a = b
			}
			return en[lo+rng.IntN(hi-lo)]
		}
	}
}
