package explorer

import (
	"fmt"
	"sync"

	"github.com/protocheck/protocheck/model"
)

// bfs explores the state space level by level. Every discovered state gets
// an index in discovery order; parent and via rebuild the schedule of the
// counterexample. States at rest are their encodings: a level is an arena
// of encoded states, and a state is decoded into the stepper's scratch
// only while it is expanded.
//
// Expanding a state (running every thread's step, the invariants of each
// successor, its key and hash) is separated from merging the expansion
// into the search (deduplication, index assignment, violation and bound
// handling). With one worker the two alternate state by state. With
// several, workers expand consecutive chunks of the level while this
// goroutine merges the chunks strictly in level order; since expansion is
// a pure function of the state and merging sees exactly the sequence of
// records the one-worker search sees, every count, index, verdict and
// schedule is the same for any number of workers.
func bfs(m model.Machine, opts Options, p *progress, keyOf keyFunc) *Result {
	st := newStepper(m)
	nm := len(st.props.Metrics)
	b := &bfsRun{m: m, opts: opts, p: p, r: &Result{}, nm: nm, totals: make([]int64, nm), sym: opts.Symmetry}
	b.live = liveness(st.props, opts, b.r)
	if opts.Metrics && nm > 0 {
		b.g.metrics = nm
		b.keepTerminal = true
		b.terminal.append(false)
	}
	if b.graphed = b.g.metrics > 0; b.graphed {
		b.g.start.append(0)
	}
	// Levels are read back from the visited set when it holds each state's
	// own encoding (exact, without symmetry); otherwise they are kept, on
	// disk with Options.SpillDir, and so are the parents and the progress
	// check's graph, which are read only after the search.
	b.byIndex = !opts.Fingerprint && !opts.Symmetry
	spill := ""
	if !b.byIndex {
		spill = opts.SpillDir
	}
	b.vis = newVisited(opts.Fingerprint, b.graphed || b.live)
	defer func() { b.releaseVisited() }()
	var err error
	if b.parents, err = newParents(spill); err != nil {
		return b.spillFailed(err)
	}
	defer b.parents.close()
	if b.live {
		if b.sg, err = newSuccs(spill); err != nil {
			return b.spillFailed(err)
		}
		defer b.sg.close()
	}
	b.parents.append(-1, 0)
	init := m.Init()
	w := newExpander(m, keyOf, opts.Symmetry)
	w.live = b.live
	if b.live {
		b.pend.append(w.pending(init))
	}
	enc := init.AppendKey(nil)
	key := keyOf(init, nil)
	slot, _, _ := b.vis.find(key, hashKey(key))
	b.vis.insert(slot, key, hashKey(key), 0)
	if v := w.st.checkState(init); v != nil {
		return b.finish(v, 0, nil)
	}
	level, err := b.newFrontier(0)
	if err != nil {
		return b.spillFailed(err)
	}
	defer func() {
		// Whichever way the search ends, no level file is left behind.
		level.close()
		if b.next != nil {
			b.next.close()
		}
	}()
	if b.byIndex {
		level.keys = b.vis.view()
	}
	level.add(enc)
	if err := level.finish(); err != nil {
		return b.spillFailed(err)
	}
	var pool *workerPool
	if opts.Workers > 1 {
		pool = newWorkerPool(m, keyOf, opts.Symmetry, b.live, opts.Workers)
	}
	for depth := 0; level.n > 0; depth++ {
		b.r.Stats.Depth = depth
		if depth >= opts.MaxSteps {
			// Cut only if some state of this level could still step (a
			// level of terminal states is the end of the search anyway; its
			// deadlocks are checked below).
			rd := level.open()
			for i := 0; i < level.n; i++ {
				if en, _ := w.st.enabled(rd.next()); len(en) > 0 {
					b.cut = true
					b.r.Bound = fmt.Sprintf("max-steps=%d: executions longer than that were not explored", opts.MaxSteps)
					break
				}
			}
			if b.cut {
				break
			}
		}
		b.depth, b.level = depth, level
		if b.next, err = b.newFrontier(int32(b.parents.len())); err != nil {
			return b.spillFailed(err)
		}
		b.found = nil
		var res *Result
		if pool == nil {
			// Expanding a few states before merging them gives touch a
			// chunk's worth of lookups to overlap; merging order, and so
			// every result, is the same as state by state.
			var c chunk
			rd := level.open()
			for li := 0; li < level.n; {
				c.reset()
				c.start = li
				for end := min(level.n, li+soloChunk); li < end; li++ {
					w.expand(rd.next(), &c)
				}
				if res = b.mergeChunk(&c); res != nil || b.stopped(len(c.states)) {
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
		level.close()
		if b.stop != "" {
			break
		}
		if err := b.next.finish(); err != nil {
			return b.spillFailed(err)
		}
		level = b.next
		if b.byIndex {
			level.keys = b.vis.view()
		}
	}
	level.close()
	b.r.Stats.States = int64(b.parents.len())
	b.r.Verdict = OK
	switch {
	case b.stop != "":
		b.r.Verdict, b.r.Bound = b.stopVerdict, b.stop
	case b.cut:
		b.r.Verdict = Bounded
	}
	b.r.Metrics = b.metrics(b.cut || b.stop != "")
	if b.live {
		switch {
		case b.r.Verdict != OK:
			unchecked(b.r, st.props, "progress is not checked when the search was cut: "+b.r.Bound)
		default:
			// Options.MaxMemory holds after the search too: a check that
			// would pass it is not run, and says so.
			// The visited set is done with: its memory goes back before
			// the check takes its own.
			b.releaseVisited()
			n := int64(b.parents.len())
			if why := b.p.afford(b.sg.spilled()+int64(min(b.opts.Workers, len(st.props.Progress)))*progressBytes(n), "the progress check"); why != "" {
				unchecked(b.r, st.props, "progress is not checked: "+why)
				break
			}
			if err := b.sg.load(int(n)); err != nil {
				unchecked(b.r, st.props, "progress is not checked: "+err.Error())
				break
			}
			b.parents.flush()
			b.checkProgress()
			b.r.Fairness = b.opts.Fairness
		}
	}
	b.stats()
	return b.r
}

// A frontier is one bfs level: the states with indices first..first+n-1,
// read back from the visited set (keys, when it stores each state's own
// encoding), kept in an arena, or spilled to a file (Options.SpillDir),
// as TLC keeps its queue of states on disk: a level can hold a tenth of
// the states, and in fingerprint mode nothing else holds their bytes.
type frontier struct {
	first int32
	n     int
	keys  keyView
	arena *arena
	spill *spillFile
}

func (b *bfsRun) newFrontier(first int32) (*frontier, error) {
	f := &frontier{first: first}
	b.levels = append(b.levels, first)
	switch {
	case b.byIndex:
	case b.opts.SpillDir != "":
		s, err := newSpill(b.opts.SpillDir)
		if err != nil {
			return nil, err
		}
		f.spill = s
	default:
		f.arena = &arena{}
	}
	return f, nil
}

// add appends a state (its encoding) to the level. With the visited set
// as the store, the state is already there.
func (f *frontier) add(b []byte) {
	switch {
	case f.arena != nil:
		f.arena.add(b)
	case f.spill != nil:
		f.spill.add(b)
	}
	f.n++
}

// finish ends the level's writing; its states can then be read.
func (f *frontier) finish() error {
	if f.spill != nil {
		return f.spill.rewind()
	}
	return nil
}

// close releases the level's storage; closing twice is harmless.
func (f *frontier) close() {
	if f.spill != nil {
		f.spill.close()
		f.spill = nil
	}
}

// get returns state i of a level held in memory or in the visited set, for
// any goroutine (a spilled level is read in order only, through open).
func (f *frontier) get(i int) []byte {
	if f.arena != nil {
		return f.arena.get(i)
	}
	return f.keys.key(int(f.first) + i)
}

// open returns a reader of the level's states in order; only one reader
// is used at a time.
func (f *frontier) open() *frontierReader { return &frontierReader{f: f} }

// A frontierReader reads a level's states in order; the bytes next returns
// are valid until the following call.
type frontierReader struct {
	f *frontier
	i int
}

func (r *frontierReader) next() []byte {
	i := r.i
	r.i++
	if r.f.spill != nil {
		return r.f.spill.next()
	}
	return r.f.get(i)
}

// spillFailed ends a search whose frontier file could not be written or
// read: not a verdict about the model.
func (b *bfsRun) spillFailed(err error) *Result {
	if b.parents != nil {
		b.r.Stats.States = int64(b.parents.len())
	}
	b.r.Verdict, b.r.Bound = Bounded, "the frontier could not be kept on disk: "+err.Error()
	return b.r
}

// keyFunc appends a state's key for the visited set: its canonical key,
// or, with symmetry reduction, the key of its orbit's representative.
type keyFunc func(s model.State, b []byte) []byte

func plainKey(s model.State, b []byte) []byte { return s.AppendKey(b) }

// An arena holds encoded states back to back.
type arena struct {
	data []byte
	end  []int
}

func (a *arena) add(b []byte) {
	a.data = append(a.data, b...)
	a.end = append(a.end, len(a.data))
}

func (a *arena) len() int { return len(a.end) }

func (a *arena) get(i int) []byte {
	start := 0
	if i > 0 {
		start = a.end[i-1]
	}
	return a.data[start:a.end[i]]
}

func (a *arena) bytes() int64 { return int64(cap(a.data)) + int64(cap(a.end))*8 }

// bfsRun is the merging side of bfs: everything that must be decided in
// the sequential order of the search.
type bfsRun struct {
	m    model.Machine
	opts Options
	p    *progress
	r    *Result
	nm   int
	vis  *visited
	// visBytes and fpDone: what the visited set held, and whether its
	// fingerprint statistics were taken, before it was released.
	visBytes int64
	fpDone   bool
	// parents: per state, the index of its parent (-1 for the initial
	// state) and the choice that reached it (packChoice).
	parents *parents
	// levels: the first index of each level, in order.
	levels []int32
	// byIndex: levels are read back from the visited set.
	byIndex  bool
	terminal column[bool] // per state, with exact metrics: no successor
	// keepTerminal: exact metrics need terminal.
	keepTerminal bool
	graphed      bool
	g            graph
	// live: progress properties are checked after the search, on the
	// graph sg; pend[i] has bit k set when progress property k is pending
	// in state i.
	live   bool
	sg     *succs
	pend   column[uint8]
	totals []int64
	cut    bool
	sym    bool
	// stop, when set, says why the search stopped early (an interrupt, a
	// time or memory limit), with stopVerdict.
	stop        string
	stopVerdict Verdict
	merged      int64 // level states merged since the last limit check

	depth    int
	level    *frontier
	next     *frontier
	found    *model.Violation
	foundAt  int32
	foundVia model.Choice
}

func (b *bfsRun) schedule(i int32) []model.Choice {
	var out []model.Choice
	for i > 0 {
		p, via := b.parents.at(i)
		c, _ := unpackChoice(via)
		out = append(out, c)
		i = p
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
	r.Stats.States = int64(b.parents.len())
	if len(r.Schedule) > r.Stats.Depth {
		r.Stats.Depth = len(r.Schedule)
	}
	// Executions stop at the violation: only transition totals.
	r.Metrics = b.metrics(true)
	b.stats()
	return r
}

// metrics summarises the counters: exactly over every complete execution
// when the graph was kept, otherwise their totals over the transitions.
func (b *bfsRun) metrics(cut bool) []Metric {
	names := b.m.Properties().Metrics
	if b.graphed {
		// The summary's arrays are allocated after the search, where its
		// memory limit is no longer checked state by state: each is
		// weighed against Options.MaxMemory first, and a summary that
		// would pass it is not computed (Result.Unchecked says so).
		afford := func(need int64) bool {
			why := b.p.afford(need, "their summary over every execution")
			if why != "" {
				b.r.Unchecked = append(b.r.Unchecked, MetricsUnchecked+": not computed: "+why)
			}
			return why == ""
		}
		return b.g.summarise(names, &b.terminal, b.totals, cut, afford)
	}
	out := make([]Metric, len(names))
	for k, n := range names {
		out[k] = Metric{Name: n, Transitions: b.totals[k]}
	}
	return out
}

func (b *bfsRun) stats() {
	s := &b.r.Stats
	if b.vis != nil {
		b.visBytes = b.vis.bytes()
	}
	mem := b.visBytes + b.parents.bytes() + b.terminal.bytes(1) + b.g.bytes() + b.pend.bytes(1)
	if b.sg != nil {
		mem += b.sg.bytes()
	}
	if s.States > 0 {
		s.StoreBytesPerState = float64(mem) / float64(s.States)
	}
	if b.opts.Fingerprint && !b.fpDone {
		fingerprintStats(s, b.vis)
		b.fpDone = true
	}
}

// releaseVisited returns the visited set's memory once the search no
// longer looks states up, after taking what stats reports of it.
func (b *bfsRun) releaseVisited() {
	if b.vis == nil {
		return
	}
	b.visBytes = b.vis.bytes()
	if b.opts.Fingerprint && !b.fpDone {
		fingerprintStats(&b.r.Stats, b.vis)
		b.fpDone = true
	}
	b.vis.release()
	b.vis = nil
}

// stopped checks, once every thousand merged level states, whether the
// search must stop early: an interrupt or a limit. n states were merged
// since the last call.
func (b *bfsRun) stopped(n int) bool {
	if b.stop != "" {
		return true
	}
	if b.merged += int64(n); b.merged < 1024 {
		return false
	}
	b.merged = 0
	if why, v := b.p.limit(b.parents.len()); why != "" {
		b.stop, b.stopVerdict = why, v
		return true
	}
	return false
}

// maxChunkBytes bounds the encodings and keys of one chunk's successors,
// which succRec locates with 32-bit offsets; a chunk is at most a few
// hundred states, so only a machine whose states are megabytes could
// reach it.
const maxChunkBytes = 1<<32 - 1 - 2*maxKeyLen

// soloChunk is how many level states one worker expands before merging
// them.
const soloChunk = 32

// mergeChunk folds the expansions of chunk c into the search, in level
// order. It returns a Result when the search ends in the chunk.
func (b *bfsRun) mergeChunk(c *chunk) *Result {
	if b.stop != "" {
		return nil
	}
	if b.found == nil {
		b.vis.touch(c.succs)
	}
	for k := range c.states {
		if res := b.mergeState(c, &c.states[k], c.start+k); res != nil {
			return res
		}
	}
	return nil
}

// mergeState folds the expansion e of level state li into the search, in
// level order. It returns a Result when the search ends here (a deadlock).
func (b *bfsRun) mergeState(c *chunk, e *expansion, li int) *Result {
	if b.stop != "" {
		return nil
	}
	idx := b.level.first + int32(li)
	if e.terminal {
		if e.deadlock != nil {
			return b.finish(e.deadlock, idx, nil)
		}
		if b.keepTerminal {
			b.terminal.set(int(idx), true)
		}
	}
	if b.found != nil {
		return nil
	}
	nm := b.nm
	var pend uint8 // the progress properties pending at idx
	if b.live {
		pend = b.pend.at(int(idx))
	}
	for k := e.first; k < e.end; k++ {
		rec := &c.succs[k]
		b.r.Stats.Transitions++
		counts := c.counts[k*nm : (k+1)*nm]
		for j, d := range counts {
			b.totals[j] += d
		}
		if rec.v != 0 {
			b.found, b.foundAt = c.viols[rec.v-1], idx
			b.foundVia, _ = unpackChoice(rec.ch)
			break
		}
		key := c.key(rec)
		slot, to, seen := b.vis.find(key, rec.h)
		if !seen {
			if b.parents.len() >= b.opts.MaxStates {
				// Stop at once (the rest of the level is not merged): the
				// cap bounds memory, and merging stays in level order, so
				// where it stops is the same for any number of workers.
				b.cut = true
				b.stop, b.stopVerdict = fmt.Sprintf("max-states=%d: the state space is larger", b.opts.MaxStates), Bounded
				break
			}
			to = int32(b.parents.len())
			b.vis.insert(slot, key, rec.h, to)
			b.parents.append(idx, rec.ch&^namedBit)
			if b.keepTerminal {
				b.terminal.append(false)
			}
			if b.live {
				b.pend.append(rec.pend)
			}
			b.next.add(c.state(rec))
		}
		if b.graphed {
			b.g.add(to, counts)
		}
		if b.live {
			b.sg.add(to, rec.ch)
			if to <= idx && pend&rec.pend != 0 {
				b.sg.back(to, pend&rec.pend)
			}
		}
		b.p.report(int64(b.parents.len()), b.r.Stats.Transitions, b.depth, b.level.n-li+b.next.n)
	}
	if b.graphed {
		b.g.close()
	}
	if b.live {
		b.sg.end(idx)
	}
	return nil
}

// A chunk holds the expansions of consecutive level states: per state its
// successor records, their keys and encodings in one buffer and their
// metric deltas in another, so that expanding allocates nothing.
type chunk struct {
	start  int   // level index of states[0]
	in     arena // a spilled level's states to expand, copied by the issuer
	states []expansion
	succs  []succRec
	keys   []byte
	counts []int64
	viols  []*model.Violation // succRec.v - 1 indexes it
	// The slice headers above are written for every successor; chunks are
	// allocated together and expanded by different workers at once.
	_ [64]byte
}

type expansion struct {
	first, end int // succs[first:end]
	terminal   bool
	deadlock   *model.Violation
}

// succRec is one successor, in 32 bytes and without pointers: a chunk of
// a parallel search holds hundreds of them, written on one processor and
// read on the other when the other merges it, and every byte of them
// crosses between the two caches. keys[off:off+n] is the successor's
// encoding; its visited-set key follows it (kn bytes) under symmetry
// reduction, which keys states by their orbit, and is the encoding itself
// otherwise (kn = 0).
type succRec struct {
	h     uint64 // the key's hash
	off   uint32
	n, kn uint32
	v     uint32 // 1 + the index of the step's or successor's violation in chunk.viols; 0: none
	ch    uint16 // packChoice: the choice and whether its alternative is named (Exec.ChooseFrom)
	pend  uint8  // pending progress properties (when checked)
}

// state is the encoding of rec's successor.
func (c *chunk) state(rec *succRec) []byte { return c.keys[rec.off : rec.off+rec.n] }

// key is the visited-set key of rec's successor.
func (c *chunk) key(rec *succRec) []byte {
	if rec.kn == 0 {
		return c.state(rec)
	}
	k := rec.off + rec.n
	return c.keys[k : k+rec.kn]
}

func (c *chunk) reset() {
	c.in.data, c.in.end = c.in.data[:0], c.in.end[:0]
	c.states = c.states[:0]
	c.succs = c.succs[:0]
	c.keys = c.keys[:0]
	c.counts = c.counts[:0]
	clear(c.viols)
	c.viols = c.viols[:0]
}

// expander expands states; each worker has its own.
type expander struct {
	st *stepper
	// spacers are states and Execs made after the stepper's own and never
	// touched, so that the next worker's are not allocated next to them:
	// the Go allocator hands out objects of one size in consecutive slots,
	// and two workers writing their scratch states, memories and Execs in
	// one cache line would make each core wait for the other's (false
	// sharing). spareSets (4) of each are at least a cache line of each
	// size the model allocates, for sizes of 16 bytes and more.
	spacers []any
	keyOf   keyFunc
	sym     bool
	live    bool // compute each successor's pending progress properties
}

// spareSets is how many spare states and Execs separate two workers'
// steppers (expander.spacers).
const spareSets = 4

func newExpander(m model.Machine, keyOf keyFunc, sym bool) *expander {
	w := &expander{st: newStepper(m), keyOf: keyOf, sym: sym}
	for i := 0; i < spareSets; i++ {
		w.spacers = append(w.spacers, m.Init(), model.NewExec(len(w.st.props.Metrics)))
	}
	return w
}

// expand appends the expansion of the state encoded as key to c: like the
// sequential search, it stops at the first step that fails.
func (w *expander) expand(key []byte, c *chunk) {
	e := expansion{first: len(c.succs)}
	st := w.st
	blocked, _ := st.forEach(key, func(ch model.Choice) bool {
		off := len(c.keys)
		if off > maxChunkBytes {
			panic(fmt.Sprintf("explorer: the successors of %d states take more than %d bytes", len(c.states)+1, maxChunkBytes))
		}
		c.keys = st.scratch.AppendKey(c.keys)
		rec := succRec{off: uint32(off), n: uint32(len(c.keys) - off)}
		if w.sym {
			c.keys = w.keyOf(st.scratch, c.keys)
			rec.kn = uint32(len(c.keys)) - rec.off - rec.n
		}
		named := false
		if w.live {
			_, _, named = st.x.Offered()
			rec.pend = w.pending(st.scratch)
		}
		rec.ch = packChoice(ch, named)
		v := st.verdict(key, c.state(&rec))
		if v != nil {
			c.viols = append(c.viols, v)
			rec.v = uint32(len(c.viols))
		}
		rec.h = hashKey(c.key(&rec))
		c.counts = append(c.counts, st.x.Counts()...)
		c.succs = append(c.succs, rec)
		return v == nil
	})
	e.end = len(c.succs)
	if e.end == e.first {
		e.terminal = true
		e.deadlock = st.deadlock(key, blocked)
	}
	c.states = append(c.states, e)
}

// pending returns the progress properties pending in s, bit k for
// property k.
func (w *expander) pending(s model.State) uint8 {
	var bits uint8
	for k, p := range w.st.props.Progress {
		if p.Pending(s) {
			bits |= 1 << uint(k)
		}
	}
	return bits
}

// workerPool expands and merges the chunks of a level in parallel. Its
// goroutines are the only ones in the explorer. A chunk is expanded by
// whichever worker claims it, into a buffer of its own, with the worker's
// own scratch state and Exec, calling only the machine's pure methods;
// chunks are merged strictly in level order, one at a time, by whichever
// worker finds the next chunk ready and no merge under way. So there is
// no merging goroutine competing with the workers for the processors (on
// two cores, three goroutines would leave one of them waiting for a time
// slice while the others run out of work), and the results do not depend
// on the scheduling of the workers (see bfs): merging sees exactly the
// sequence of expansions the one-worker search sees.
type workerPool struct {
	n    int
	exps []*expander
	bufs []*chunk
}

func newWorkerPool(m model.Machine, keyOf keyFunc, sym, live bool, n int) *workerPool {
	wp := &workerPool{n: n}
	for i := 0; i < n; i++ {
		e := newExpander(m, keyOf, sym)
		e.live = live
		wp.exps = append(wp.exps, e)
	}
	for i := 0; i < 4*n; i++ {
		wp.bufs = append(wp.bufs, &chunk{})
	}
	return wp
}

// levelRun is the shared state of one level's workers, under mu: chunk j
// lives in bufs[j%window] from its claim until it is merged, so at most
// window chunks are in flight.
type levelRun struct {
	mu        sync.Mutex
	cond      sync.Cond // signalled whenever a chunk is expanded or merged, or the level stops
	claimed   int       // chunks claimed for expansion
	claimedTo int       // level states before this one are in claimed chunks
	merged    int       // chunks merged
	ready     []bool    // per buffer: its chunk is expanded
	merging   bool      // a worker is merging chunk merged
	stop      bool      // the search ended or stopped inside the level
	res       *Result
}

// level expands and merges one bfs level. It returns a Result when the
// search ended inside the level.
func (wp *workerPool) level(level *frontier, b *bfsRun) *Result {
	window := len(wp.bufs)
	lr := &levelRun{ready: make([]bool, window)}
	lr.cond.L = &lr.mu
	rd := level.open()
	var wg sync.WaitGroup
	for i := 0; i < wp.n; i++ {
		wg.Add(1)
		go func(w *expander) {
			defer wg.Done()
			wp.work(w, lr, level, rd, b)
		}(wp.exps[i])
	}
	wg.Wait()
	for _, c := range wp.bufs {
		c.reset()
	}
	return lr.res
}

// Chunks of a parallel level shrink as the level runs out (guided
// self-scheduling): a chunk is an eighth of each worker's share of the
// states not yet claimed, between minChunk and maxChunk states, so that
// the level's last chunks, during which the other workers wait for the
// level to end, are short, while the chunks before them are long enough
// for touch to overlap their lookups. Where the level is cut into chunks
// changes nothing but timing: chunks are merged in level order.
const (
	minChunk = 16
	maxChunk = 256
)

func chunkLen(unclaimed, workers int) int {
	return max(minChunk, min(maxChunk, unclaimed/(8*workers)))
}

// work is one worker's loop over a level: merge the next chunk if it is
// expanded and no one is merging, else claim and expand a chunk if the
// window has room, else wait for either.
func (wp *workerPool) work(w *expander, lr *levelRun, level *frontier, rd *frontierReader, b *bfsRun) {
	window := len(wp.bufs)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	for !lr.stop && (lr.claimedTo < level.n || lr.merged < lr.claimed) {
		switch {
		case !lr.merging && lr.merged < lr.claimed && lr.ready[lr.merged%window]:
			j := lr.merged
			lr.merging = true
			c := wp.bufs[j%window]
			lr.mu.Unlock()
			res := b.mergeChunk(c)
			stop := res != nil || b.stopped(len(c.states))
			c.reset()
			lr.mu.Lock()
			lr.ready[j%window], lr.merging = false, false
			lr.merged++
			if stop {
				lr.stop, lr.res = true, res
			}
			lr.cond.Broadcast()
		case lr.claimedTo < level.n && lr.claimed < lr.merged+window:
			j := lr.claimed
			lr.claimed++
			c := wp.bufs[j%window]
			c.start = lr.claimedTo
			end := min(level.n, c.start+chunkLen(level.n-c.start, wp.n))
			lr.claimedTo = end
			if level.spill != nil {
				// A spilled level is read in order: chunks are claimed in
				// order, and read while claiming.
				for li := c.start; li < end; li++ {
					c.in.add(rd.next())
				}
			}
			lr.mu.Unlock()
			if level.spill != nil {
				for i := 0; i < c.in.len(); i++ {
					w.expand(c.in.get(i), c)
				}
			} else {
				for li := c.start; li < end; li++ {
					w.expand(level.get(li), c)
				}
			}
			lr.mu.Lock()
			lr.ready[j%window] = true
			lr.cond.Broadcast()
		default:
			lr.cond.Wait()
		}
	}
	lr.cond.Broadcast()
}
