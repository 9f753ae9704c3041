package explorer

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/protocheck/protocheck/model"
)

// bfs explores the state space level by level. Every discovered state gets
// an index in discovery order; parent and via rebuild the schedule of the
// counterexample. Transitions are kept (source-ordered, as states are
// expanded in index order) so that metrics can be computed exactly over
// every complete execution afterwards.
//
// Expanding a state (its enabled choices, each step, the invariants of
// each successor, its key and hash) is separated from merging the
// expansion into the search (deduplication, index assignment, violation
// and bound handling). With one worker the two alternate state by state.
// With several, workers expand consecutive chunks of the level while this
// goroutine merges the chunks strictly in level order; since expansion is
// a pure function of the state and merging sees exactly the sequence of
// records the one-worker search sees, every count, index, verdict and
// schedule is the same for any number of workers.
func bfs(m model.Machine, opts Options, p *progress, keyOf keyFunc) *Result {
	nm := len(m.Metrics())
	b := &bfsRun{
		m: m, opts: opts, p: p, r: &Result{},
		vis:      newVisited(opts.Fingerprint),
		parent:   []int32{-1},
		via:      []choice32{{}},
		terminal: []bool{false},
		g:        graph{metrics: nm, start: []int32{0}},
		totals:   make([]int64, nm),
	}
	init := m.Init()
	w := newExpander(m, keyOf)
	key := keyOf(init, nil)
	slot, _, _ := b.vis.find(key, hashKey(key))
	b.vis.insert(slot, key, hashKey(key), 0)
	if v := w.st.checkState(init); v != nil {
		return b.finish(v, 0, nil)
	}
	level := []model.State{init}
	levelIdx := []int32{0}
	var pool *workerPool
	if opts.Workers > 1 {
		pool = newWorkerPool(m, keyOf, opts.Workers)
	}
	for depth := 0; len(level) > 0; depth++ {
		b.r.Stats.Depth = depth
		if depth >= opts.MaxSteps {
			// Cut only if some state of this level could still step (a
			// level of terminal states is the end of the search anyway; its
			// deadlocks are checked below).
			var en []model.Choice
			for _, s := range level {
				if en = m.Enabled(s, en[:0]); len(en) > 0 {
					b.cut = true
					b.r.Bound = fmt.Sprintf("max-steps=%d: executions longer than that were not explored", opts.MaxSteps)
					break
				}
			}
			if b.cut {
				break
			}
		}
		b.depth, b.level, b.levelIdx = depth, level, levelIdx
		b.next, b.nextIdx = nil, nil
		b.found = nil
		var res *Result
		if pool == nil {
			var c chunk
			for li, s := range level {
				if li&1023 == 0 && stopRequested(opts.Stop) {
					return b.interrupted()
				}
				c.reset()
				w.expand(s, &c)
				if res = b.mergeState(&c, &c.states[0], li); res != nil {
					break
				}
			}
		} else {
			res = pool.level(level, b)
		}
		if res != nil {
			return res
		}
		if b.found != nil {
			return b.finish(b.found, b.foundAt, &b.foundVia)
		}
		level, levelIdx = b.next, b.nextIdx
	}
	b.r.Stats.States = int64(len(b.parent))
	b.r.Verdict = OK
	if b.cut {
		b.r.Verdict = Bounded
	}
	b.r.Metrics = b.g.summarise(m.Metrics(), b.terminal, b.totals, b.cut)
	b.stats()
	return b.r
}

// choice32 is a model.Choice in half the space, for the per-state array.
type choice32 struct{ thread, alt int32 }

func (c choice32) choice() model.Choice { return model.Choice{Thread: int(c.thread), Alt: int(c.alt)} }

// keyFunc appends a state's key for the visited set: its canonical key,
// or, with symmetry reduction, the key of its orbit's representative.
type keyFunc func(s model.State, b []byte) []byte

func plainKey(s model.State, b []byte) []byte { return s.AppendKey(b) }

// bfsRun is the merging side of bfs: everything that must be decided in
// the sequential order of the search.
type bfsRun struct {
	m        model.Machine
	opts     Options
	p        *progress
	r        *Result
	vis      *visited
	parent   []int32
	via      []choice32
	terminal []bool
	g        graph
	totals   []int64
	cut      bool

	depth    int
	level    []model.State
	levelIdx []int32
	next     []model.State
	nextIdx  []int32
	found    *model.Violation
	foundAt  int32
	foundVia model.Choice
}

func (b *bfsRun) schedule(i int32) []model.Choice {
	var out []model.Choice
	for ; i > 0; i = b.parent[i] {
		out = append(out, b.via[i].choice())
	}
	for x, y := 0, len(out)-1; x < y; x, y = x+1, y-1 {
		out[x], out[y] = out[y], out[x]
	}
	return out
}

func (b *bfsRun) finish(v *model.Violation, at int32, extra *model.Choice) *Result {
	r := b.r
	r.Verdict, r.Violation = Violation, v
	r.Schedule = b.schedule(at)
	if extra != nil {
		r.Schedule = append(r.Schedule, *extra)
	}
	r.Stats.States = int64(len(b.parent))
	if len(r.Schedule) > r.Stats.Depth {
		r.Stats.Depth = len(r.Schedule)
	}
	// Executions stop at the violation: only transition totals.
	r.Metrics = b.g.summarise(b.m.Metrics(), b.terminal, b.totals, true)
	b.stats()
	return r
}

// interrupted ends the search between two states when Options.Stop is
// closed: the counts so far, and metrics over transitions only.
func (b *bfsRun) interrupted() *Result {
	b.r.Verdict = Interrupted
	b.r.Stats.States = int64(len(b.parent))
	b.r.Metrics = b.g.summarise(b.m.Metrics(), b.terminal, b.totals, true)
	b.stats()
	return b.r
}

func (b *bfsRun) stats() {
	s := &b.r.Stats
	mem := b.vis.bytes() + int64(cap(b.parent))*4 + int64(cap(b.via))*8 + int64(cap(b.terminal)) + b.g.bytes()
	if s.States > 0 {
		s.BytesPerState = float64(mem) / float64(s.States)
	}
	if b.opts.Fingerprint {
		fingerprintStats(s, b.vis)
	}
}

// mergeState folds the expansion e of level state li into the search, in
// level order. It returns a Result when the search ends here (a deadlock).
func (b *bfsRun) mergeState(c *chunk, e *expansion, li int) *Result {
	idx := b.levelIdx[li]
	if e.terminal {
		if e.deadlock != nil {
			return b.finish(e.deadlock, idx, nil)
		}
		b.terminal[idx] = true
	}
	if b.found != nil {
		return nil
	}
	nm := b.g.metrics
	for k := e.first; k < e.end; k++ {
		rec := &c.succs[k]
		b.r.Stats.Transitions++
		counts := c.counts[k*nm : (k+1)*nm]
		for j, d := range counts {
			b.totals[j] += d
		}
		if rec.v != nil {
			b.found, b.foundAt, b.foundVia = rec.v, idx, rec.c
			break
		}
		key := c.keys[rec.koff:rec.kend]
		slot, to, seen := b.vis.find(key, rec.h)
		if !seen {
			if len(b.parent) >= b.opts.MaxStates {
				b.cut = true
				b.r.Bound = fmt.Sprintf("max-states=%d: the state space is larger", b.opts.MaxStates)
				continue
			}
			to = int32(len(b.parent))
			b.vis.insert(slot, key, rec.h, to)
			b.parent = append(b.parent, idx)
			b.via = append(b.via, choice32{int32(rec.c.Thread), int32(rec.c.Alt)})
			b.terminal = append(b.terminal, false)
			b.next = append(b.next, rec.s)
			b.nextIdx = append(b.nextIdx, to)
		}
		b.g.add(to, counts)
		b.p.report(int64(len(b.parent)), b.r.Stats.Transitions, b.depth, len(b.level)-li+len(b.next))
	}
	b.g.close()
	return nil
}

// A chunk holds the expansions of consecutive level states: per state its
// successor records, their keys in one buffer and their metric deltas in
// another, so that expanding allocates nothing but the successor states.
type chunk struct {
	start  int // level index of states[0]
	states []expansion
	succs  []succRec
	keys   []byte
	counts []int64
	done   chan struct{}
}

type expansion struct {
	first, end int // succs[first:end]
	terminal   bool
	deadlock   *model.Violation
}

type succRec struct {
	c          model.Choice
	s          model.State // nil when the step failed
	v          *model.Violation
	h          uint64
	koff, kend int
}

func (c *chunk) reset() {
	c.states = c.states[:0]
	for i := range c.succs {
		c.succs[i] = succRec{} // drop references to states
	}
	c.succs = c.succs[:0]
	c.keys = c.keys[:0]
	c.counts = c.counts[:0]
}

// expander expands states; each worker has its own.
type expander struct {
	m     model.Machine
	st    *stepper
	keyOf keyFunc
	en    []model.Choice
}

func newExpander(m model.Machine, keyOf keyFunc) *expander {
	return &expander{m: m, st: newStepper(m), keyOf: keyOf}
}

// expand appends s's expansion to c: like the sequential search, it stops
// at the first step that fails.
func (w *expander) expand(s model.State, c *chunk) {
	e := expansion{first: len(c.succs)}
	w.en = w.m.Enabled(s, w.en[:0])
	if len(w.en) == 0 {
		e.terminal = true
		e.deadlock = w.st.deadlock(s)
	}
	for _, ch := range w.en {
		succ, v := w.st.step(s, ch)
		c.counts = append(c.counts, w.st.x.Counts()...)
		rec := succRec{c: ch, v: v}
		if v == nil {
			rec.s = succ
			rec.koff = len(c.keys)
			c.keys = w.keyOf(succ, c.keys)
			rec.kend = len(c.keys)
			rec.h = hashKey(c.keys[rec.koff:rec.kend])
		}
		c.succs = append(c.succs, rec)
		if v != nil {
			break
		}
	}
	e.end = len(c.succs)
	c.states = append(c.states, e)
}

// workerPool expands the chunks of a level in parallel. These goroutines
// are the only ones in the explorer: they call only the machine's pure
// methods, on distinct states, with their own Exec, and write only into
// the chunk they were handed; the merging goroutine reads a chunk after
// its done channel is closed and hands out a chunk buffer again only after
// merging it. The results therefore do not depend on the scheduling of
// the workers (see bfs).
type workerPool struct {
	n    int
	exps []*expander
	bufs []*chunk
}

func newWorkerPool(m model.Machine, keyOf keyFunc, n int) *workerPool {
	wp := &workerPool{n: n}
	for i := 0; i < n; i++ {
		wp.exps = append(wp.exps, newExpander(m, keyOf))
	}
	for i := 0; i < 4*n; i++ {
		wp.bufs = append(wp.bufs, &chunk{})
	}
	return wp
}

// level expands and merges one bfs level. It returns a Result when the
// search ended inside the level.
func (wp *workerPool) level(level []model.State, b *bfsRun) *Result {
	size := len(level) / (wp.n * 16)
	size = max(1, min(size, 256))
	nchunks := (len(level) + size - 1) / size
	window := len(wp.bufs)
	jobs := make(chan int, window)
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < wp.n; i++ {
		wg.Add(1)
		go func(w *expander) {
			defer wg.Done()
			for j := range jobs {
				c := wp.bufs[j%window]
				if !stopped.Load() {
					for li := j * size; li < min(len(level), (j+1)*size); li++ {
						w.expand(level[li], c)
					}
				}
				close(c.done)
			}
		}(wp.exps[i])
	}
	issue := func(j int) {
		c := wp.bufs[j%window]
		c.reset()
		c.start = j * size
		c.done = make(chan struct{})
		jobs <- j
	}
	issued := 0
	for ; issued < min(window, nchunks); issued++ {
		issue(issued)
	}
	var res *Result
	for j := 0; j < nchunks; j++ {
		if stopRequested(b.opts.Stop) {
			res = b.interrupted()
			break
		}
		c := wp.bufs[j%window]
		<-c.done
		for k := range c.states {
			if res = b.mergeState(c, &c.states[k], c.start+k); res != nil {
				break
			}
		}
		if res != nil {
			break
		}
		if issued < nchunks {
			issue(issued)
			issued++
		}
	}
	stopped.Store(true)
	close(jobs)
	wg.Wait()
	for _, c := range wp.bufs {
		c.reset()
	}
	return res
}
