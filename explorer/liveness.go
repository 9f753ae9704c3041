package explorer

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/protocheck/protocheck/model"
)

// Progress properties (liveness).
//
// A progress property (model.Progress) names an obligation by the states
// where it is pending. It fails on an execution that stays in pending
// states forever from some point on. bfs checks it after the search, on
// the whole state graph, which it keeps for the purpose (each edge with
// the choice that took it, compressed and, when levels are spilled, on
// disk until the search is over (succs.go); each state with its pending
// properties):
//
//   - an execution that ends (every thread done) with the obligation
//     pending is a violation whose counterexample is that execution
//     (Result.Cycle = 0); one that ends blocked is a deadlock, found by the
//     search itself;
//   - otherwise a violation is a cycle of pending states, reachable from
//     the initial state, that a fair scheduler could follow forever. The
//     check computes the strongly connected components of the subgraph of
//     pending states (Tarjan's algorithm) and keeps the non-trivial ones (more
//     than one state, or a self-loop).
//
// Weak fairness (Options.Fairness "weak", the default) is assumed for
// every thread, and for every alternative a step draws with
// Exec.ChooseFrom (an identity, such as the store buffer that commits):
// an execution in which a thread, or such an alternative, is enabled in
// every state from some point on but never taken is not fair and is not a
// counterexample. For one component C this is decided exactly: a unit u
// (a thread or a named alternative) that is enabled in every state of C
// and taken by no edge inside C makes every cycle inside C unfair (each
// visits only states of C, where u is enabled, and none takes u);
// conversely, when every unit is either taken inside C or disabled in some
// state of C, the closed walk that takes each such edge and visits each
// such state is a fair cycle. The counterexample is a real sequence of
// transitions (not a set of states): bfs's shortest path to a state of a
// fair component, then a fair cycle back to it, the shortest such lasso
// in prefix plus cycle (fairness.go says how it is found, and where a
// budget bounds the search). Strong fairness, and fairness per thread,
// are in fairness.go.
// A step that changes nothing is a breach of the step contract, so a
// thread is never credited with fairness by a step that did nothing: a
// spin iteration that reads a flag is a real step.
//
// What is refused, and why (each is recorded in Result.Unchecked, and a
// search that found no violation is then Partial, not OK):
//
//   - symmetry reduction: a path through the quotient graph is not a path
//     of the system unless the permutations are tracked along it (the
//     soundness problem reported against TLC as tlaplus/tlaplus#59);
//   - a search cut by a bound (max-steps, max-states, a time or memory
//     limit, an interrupt): a cycle could leave through a state whose
//     successors were never explored, and a state without explored
//     successors is not a dead end (the vacuity reported as #839);
//   - strategies other than bfs: they do not keep the state graph;
//   - a check that would take the process past Options.MaxMemory (the
//     search itself stops before it, with the verdict bounded).
//
// Options.NoProgress skips them on the caller's request: they are listed
// in Result.Skipped and leave the verdict as the safety search found it.
//
// The parameters that bound a protocol (rounds, preemptions, accesses)
// are part of the model, not a cut of the search: a progress verdict holds
// for every execution within those bounds, where a bounded resource (a
// preemption budget) is exhausted on every infinite execution, and says
// nothing about executions beyond them. Parallel workers change nothing:
// the graph is the same for any worker count.

// liveness reports whether progress properties are checked in this run,
// and records in r why not when they exist but cannot be.
func liveness(props model.Properties, opts Options, r *Result) bool {
	if len(props.Progress) == 0 {
		return false
	}
	why := ""
	switch {
	case opts.NoProgress:
		for _, p := range props.Progress {
			r.Skipped = append(r.Skipped, p.Name+": progress properties were skipped (no-progress)")
		}
		return false
	case opts.Symmetry:
		why = "progress is not checked under symmetry reduction: a cycle of orbits need not be a cycle of states"
	case opts.Strategy != BFS:
		why = "progress is checked by bfs only, which keeps the state graph"
	case len(props.Progress) > 8:
		why = "progress is checked for at most 8 properties per machine"
	}
	if why == "" {
		return true
	}
	unchecked(r, props, why)
	return false
}

func unchecked(r *Result, props model.Properties, why string) {
	for _, p := range props.Progress {
		r.Unchecked = append(r.Unchecked, p.Name+": "+why)
	}
}

// checkProgress checks every progress property on the graph of a
// complete search, turning the result into the first property's violation
// when one fails. The properties are independent searches of the same
// graph, which none of them writes: with several workers they run side
// by side (each is one pass over the graph that cannot be split), and the
// first violated one in property order is reported, as with one worker.
func (b *bfsRun) checkProgress() {
	props := b.m.Properties()
	type outcome struct {
		sched []model.Choice
		cycle int
		msg   string
	}
	out := make([]outcome, len(props.Progress))
	// Explore checked the spec against the machine's threads.
	f, _ := parseFairness(b.opts.Fairness, b.m.Threads())
	check := func(k int) {
		o := &out[k]
		o.sched, o.cycle, o.msg = b.progress(k, f)
	}
	if workers := min(b.opts.Workers, len(out)); workers > 1 {
		var wg sync.WaitGroup
		slots := make(chan struct{}, workers)
		for k := range out {
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer wg.Done()
				check(k)
				<-slots
			}()
		}
		wg.Wait()
	} else {
		for k := range out {
			if check(k); out[k].msg != "" {
				break
			}
		}
	}
	for k, p := range props.Progress {
		o := out[k]
		if o.msg == "" {
			continue
		}
		b.r.Verdict = Violation
		b.r.Violation = &model.Violation{Property: p.Name, Message: o.msg}
		b.r.Schedule, b.r.Cycle = o.sched, o.cycle
		if len(o.sched) > b.r.Stats.Depth {
			b.r.Stats.Depth = len(o.sched)
		}
		return
	}
}

// Repeating names the steps first..last of a lasso's cycle as a subject:
// "steps 5 to 7 repeat", or "step 7 repeats" for a cycle of one step.
func Repeating(first, last int) string {
	if first == last {
		return fmt.Sprintf("step %d repeats", first)
	}
	return fmt.Sprintf("steps %d to %d repeat", first, last)
}

// progress looks for a violation of progress property k: a reachable
// terminal state where it is pending, else a cycle of pending states fair
// under f (fairness.go), the shortest such lasso. It returns the
// counterexample's schedule, the length of its cycle, and the message;
// msg is "" when the property holds.
func (b *bfsRun) progress(k int, f *fairSpec) (sched []model.Choice, cycle int, msg string) {
	g := b.sg
	n := int32(b.parents.len())
	bit := uint8(1) << uint(k)
	pending := newBitset(n)
	for v := int32(0); v < n; v++ {
		if b.pend.at(int(v))&bit == 0 {
			continue
		}
		pending.add(v)
		if g.degree(v) == 0 {
			s := b.schedule(v)
			return s, 0, lassoMessage(b.m, s, 0, f)
		}
	}
	var comps []component
	roots, found := g.rootsOf(k, n)
	g.fairComponents(n, pending, roots, found, f, func(c component) { comps = append(comps, c) })
	if len(comps) == 0 {
		return nil, 0, ""
	}
	slices.SortFunc(comps, func(x, y component) int { return int(x.members[0]) - int(y.members[0]) })
	stem, loop := b.shortestLasso(comps, f)
	sched = append(stem, loop...)
	return sched, len(loop), lassoMessage(b.m, sched, len(loop), f)
}

// LassoMessage is the message of a progress violation whose
// counterexample is schedule, a lasso whose last cycle steps repeat
// forever under fairness (Options.Fairness; "" is weak), or, with cycle
// 0, an execution that ends with the obligation pending. It depends only
// on its arguments, so a recorded violation can be checked against it on
// replay: an edited message is a divergence. A fairness that is not one
// for m is an error.
func LassoMessage(m model.Machine, schedule []model.Choice, cycle int, fairness string) (string, error) {
	if fairness == "" {
		fairness = FairnessWeak
	}
	f, err := parseFairness(fairness, m.Threads())
	if err != nil {
		return "", err
	}
	return lassoMessage(m, schedule, cycle, f), nil
}

func lassoMessage(m model.Machine, schedule []model.Choice, cycle int, f *fairSpec) string {
	if cycle == 0 {
		return fmt.Sprintf("never discharged: every thread is done after step %d with it still pending", len(schedule))
	}
	stem := len(schedule) - cycle
	threads := m.Threads()
	steppers := map[int]bool{}
	for _, ch := range schedule[stem:] {
		steppers[ch.Thread] = true
	}
	var names []string
	for t := range steppers {
		if t >= 0 && t < len(threads) {
			names = append(names, threads[t])
		}
	}
	slices.Sort(names)
	return fmt.Sprintf("never discharged: %s forever with it pending throughout (%s; stepping in the cycle: %s)",
		Repeating(stem+1, len(schedule)), f.describe(), strings.Join(names, ", "))
}

// A component is a strongly connected component of the pending subgraph,
// its members sorted by state index.
type component struct {
	members []int32
}

// A bitset is a set of state indices, one bit each: a membership test
// on the hot path of sccs is one load from a table a 64th of the states'
// count in words, which stays in cache where a per-state column would not.
type bitset []uint64

func newBitset(n int32) bitset { return written[uint64]((int(n) + 63) / 64) }

func (s bitset) add(v int32)      { s[v>>6] |= 1 << (uint(v) & 63) }
func (s bitset) has(v int32) bool { return s[v>>6]&(1<<(uint(v)&63)) != 0 }

// sccs calls visit with the members (sorted; the slice is reused) of every
// strongly connected component of the subgraph induced by the states in
// in that has a cycle: more than one state, or a state with an edge to
// itself. Nothing is allocated per component: a search of millions of
// states has millions of them, almost all a single state without a cycle,
// which sccs passes over without a call.
//
// It is Tarjan's algorithm made iterative, in Pearce's space-efficient
// form ("A space-efficient algorithm for finding strongly connected
// components", IPL 116(1), 2016): one int32 per state (rindex) stands for
// Tarjan's index, lowlink and on-stack flag. While a state is on the
// search path or the component stack, rindex is its discovery number, or
// the least one it reaches; once its component is complete, rindex is
// the component's number, counted down from n-1, and discovery numbers
// are handed back as components complete, so a completed state's rindex
// is never below a live one's and the lowlink minimum ignores it without
// a test. On graphs of millions of states the search is a walk of cache
// misses, and one array instead of three is most of its cost saved.
//
// The search starts only from cycleRoots, and not at all when there is
// none: the states no back edge leads to are visited only if a root
// reaches them.
func (g *succs) sccs(n int32, in bitset, visit func(members []int32)) {
	if roots, ok := g.cycleRoots(n, in); ok {
		g.sccsFrom(n, in, roots, visit)
	}
}

// sccsFrom is sccs starting from roots, in's cycle roots, which bfs
// records for the whole pending subgraph as it merges the edges.
func (g *succs) sccsFrom(n int32, in, roots bitset, visit func(members []int32)) {
	rindex := written[int32](int(n)) // 0: unvisited
	var stack, members []int32
	type frame struct {
		v    int32
		pos  uint32 // where the next edge's delta is in v's segment
		w    int32  // the last successor read
		left uint16 // edges not yet looked at
		root bool   // no edge so far led below v's discovery number
		loop bool   // v has an edge to itself
	}
	push := func(v int32) frame {
		seg := g.segs[v>>colBits]
		pos := g.off.at(int(v))
		id, k := binary.Uvarint(seg[pos:])
		return frame{v: v, pos: pos + uint32(k), w: v, left: uint16(len(g.lists[id])), root: true}
	}
	var calls []frame
	index, comp := int32(1), n-1
	for r := int32(0); r < n; r++ {
		if rindex[r] != 0 || !roots.has(r) {
			continue
		}
		rindex[r] = index
		index++
		calls = append(calls, push(r))
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			v := f.v
			if f.left > 0 {
				d, k := binary.Varint(g.segs[v>>colBits][f.pos:])
				f.pos += uint32(k)
				f.left--
				f.w += int32(d)
				w := f.w
				if !in.has(w) {
					continue
				}
				if rindex[w] == 0 {
					rindex[w] = index
					index++
					calls = append(calls, push(w))
					continue
				}
				if rindex[w] < rindex[v] {
					rindex[v], f.root = rindex[w], false
				}
				f.loop = f.loop || w == v
				continue
			}
			// v is finished: fold its lowlink into its caller's, as the
			// recursive algorithm does on returning from visit(w).
			root, loop := f.root, f.loop
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				if u := &calls[len(calls)-1]; rindex[v] < rindex[u.v] {
					rindex[u.v], u.root = rindex[v], false
				}
			}
			if !root {
				stack = append(stack, v)
				continue
			}
			members = append(members[:0], v)
			index--
			for len(stack) > 0 && rindex[v] <= rindex[stack[len(stack)-1]] {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				rindex[w] = comp
				index--
				members = append(members, w)
			}
			rindex[v] = comp
			comp--
			if len(members) > 1 || loop {
				slices.Sort(members)
				visit(members)
			}
		}
	}
}

// cycleRoots returns the states of the subgraph induced by in that an
// edge inside it enters from a state of no lower index (a back edge, or a
// loop), and whether there is any. Every cycle has such an edge (indices
// cannot increase all the way round), so every component with a cycle
// holds one of these states, and a search started from them alone finds
// every such component: Tarjan's algorithm completes the component of
// every state it visits, whatever the roots. The pass reads the edges in
// order, with no stack: a sequential scan where the search is a walk of
// cache misses.
func (g *succs) cycleRoots(n int32, in bitset) (roots bitset, found bool) {
	roots = newBitset(n)
	for v := int32(0); v < n; v++ {
		if !in.has(v) {
			continue
		}
		seg := g.segs[v>>colBits]
		pos := g.off.at(int(v))
		id, k := binary.Uvarint(seg[pos:])
		p := seg[int(pos)+k:]
		w := v
		for range len(g.lists[id]) {
			d, k := binary.Varint(p)
			p = p[k:]
			if w += int32(d); w <= v && in.has(w) {
				roots.add(w)
				found = true
			}
		}
	}
	return roots, found
}

// has reports whether state w is a member of c.
func (c component) has(w int32) bool {
	_, ok := slices.BinarySearch(c.members, w)
	return ok
}

// units describes, for a component, which fairness units are enabled in
// every one of its states and which are taken by an edge inside it.
type units struct {
	always, taken threadSet // threads
	some          threadSet // threads enabled in some state
	alwaysNamed   []uint16  // named alternatives offered in every state (packed, named bit cleared)
	takenNamed    []uint16
}

func (g *succs) units(c component) units {
	var u units
	u.always = ^threadSet(0)
	for i, v := range c.members {
		var en threadSet
		var named []uint16
		for it := g.of(v); ; {
			to, xe, ok := it.next()
			if !ok {
				break
			}
			ch, isNamed := unpackChoice(xe)
			en |= 1 << uint(ch.Thread)
			if isNamed {
				named = append(named, xe)
			}
			if c.has(to) {
				u.taken |= 1 << uint(ch.Thread)
				if isNamed && !slices.Contains(u.takenNamed, xe) {
					u.takenNamed = append(u.takenNamed, xe)
				}
			}
		}
		u.always &= en
		u.some |= en
		if i == 0 {
			u.alwaysNamed = named
		} else {
			u.alwaysNamed = slices.DeleteFunc(u.alwaysNamed, func(x uint16) bool { return !slices.Contains(named, x) })
		}
	}
	slices.Sort(u.alwaysNamed)
	slices.Sort(u.takenNamed)
	return u
}

// fair reports whether some cycle inside c is fair under f: every weakly
// or strongly fair thread enabled in all of c's states, every strongly
// fair thread enabled in some state of c, and (when they are fair) every
// named alternative offered in all of c's states, is taken inside c.
func (g *succs) fair(c component, f *fairSpec) bool {
	u := g.units(c)
	if u.always&(f.weak|f.strong)&^u.taken != 0 || u.some&f.strong&^u.taken != 0 {
		return false
	}
	if !f.named {
		return true
	}
	for _, x := range u.alwaysNamed {
		if !slices.Contains(u.takenNamed, x) {
			return false
		}
	}
	return true
}

// lasso returns a cycle inside c from its first member back to it: the
// shortest one without fairness; with fairness, a closed walk that takes,
// for each unit, an edge of it inside c or, when the unit is disabled
// somewhere in c, visits the first state where it is.
func (g *succs) lasso(c component, fair bool) []model.Choice {
	entry := c.members[0]
	if !fair {
		return g.path(c, entry, entry, true)
	}
	u := g.units(c)
	var loop []model.Choice
	cur := entry
	goTo := func(to int32) {
		loop = append(loop, g.path(c, cur, to, false)...)
		cur = to
	}
	takeEdge := func(match func(uint16) bool) bool {
		for _, v := range c.members {
			for it := g.of(v); ; {
				to, xe, ok := it.next()
				if !ok {
					break
				}
				if match(xe) && c.has(to) {
					goTo(v)
					ch, _ := unpackChoice(xe)
					loop = append(loop, ch)
					cur = to
					return true
				}
			}
		}
		return false
	}
	visitDisabled := func(enabledAt func(int32) bool) {
		for _, v := range c.members {
			if !enabledAt(v) {
				goTo(v)
				return
			}
		}
	}
	threads := 0
	for _, v := range c.members {
		for _, xe := range g.choices(v) {
			ch, _ := unpackChoice(xe)
			threads = max(threads, ch.Thread+1)
		}
	}
	for t := 0; t < threads; t++ {
		if u.taken&(1<<uint(t)) != 0 && takeEdge(func(x uint16) bool { ch, _ := unpackChoice(x); return ch.Thread == t }) {
			continue
		}
		visitDisabled(func(v int32) bool {
			for _, xe := range g.choices(v) {
				if ch, _ := unpackChoice(xe); ch.Thread == t {
					return true
				}
			}
			return false
		})
	}
	var named []uint16
	for _, v := range c.members {
		for _, xe := range g.choices(v) {
			if _, isNamed := unpackChoice(xe); isNamed && !slices.Contains(named, xe) {
				named = append(named, xe)
			}
		}
	}
	slices.Sort(named)
	for _, x := range named {
		if slices.Contains(u.takenNamed, x) && takeEdge(func(y uint16) bool { return y == x }) {
			continue
		}
		visitDisabled(func(v int32) bool {
			for _, xe := range g.choices(v) {
				if xe == x {
					return true
				}
			}
			return false
		})
	}
	if len(loop) == 0 || cur != entry {
		goTo(entry)
	}
	if len(loop) == 0 {
		// Every unit was satisfied at the entry itself: still a cycle.
		loop = g.path(c, entry, entry, true)
	}
	return loop
}

// path returns the choices of a shortest path inside c from a to b; with
// nonEmpty and a == b, a shortest cycle through a.
func (g *succs) path(c component, a, b int32, nonEmpty bool) []model.Choice {
	if a == b && !nonEmpty {
		return nil
	}
	type via struct {
		from int32
		ch   uint16 // the edge's choice
	}
	prev := map[int32]via{}
	queue := []int32{a}
	found := false
	for i := 0; i < len(queue) && !found; i++ {
		v := queue[i]
		for it := g.of(v); ; {
			to, xe, ok := it.next()
			if !ok {
				break
			}
			w := to
			if !c.has(w) {
				continue
			}
			if _, seen := prev[w]; seen || w == a && w != b {
				continue
			}
			prev[w] = via{v, xe}
			if w == b {
				found = true
				break
			}
			queue = append(queue, w)
		}
	}
	if !found {
		panic(fmt.Sprintf("explorer: no path inside a strongly connected component from state %d to %d", a, b))
	}
	var out []model.Choice
	for w := b; ; {
		p := prev[w]
		ch, _ := unpackChoice(p.ch)
		out = append(out, ch)
		w = p.from
		if w == a {
			break
		}
	}
	slices.Reverse(out)
	return out
}

// CheckLasso re-executes a progress counterexample of m and checks that it
// is one: schedule runs without any other violation; with cycle = 0 it
// ends with every thread done and property pending; otherwise its last
// cycle steps lead from a state back to the same state, the property is
// pending in every state of the cycle and, under fairness (parsed as
// Options.Fairness), every weakly fair thread and every fair named
// alternative (Exec.ChooseFrom) enabled in all of the cycle's states, and
// every strongly fair thread enabled in any of them, is taken in it. It returns the execution, or an
// error saying what does not hold.
func CheckLasso(m model.Machine, schedule []model.Choice, cycle int, property, fairness string) (*Execution, error) {
	props := m.Properties()
	var pending func(model.State) bool
	for _, p := range props.Progress {
		if p.Name == property {
			pending = p.Pending
		}
	}
	if pending == nil {
		return nil, fmt.Errorf("the machine has no progress property %q", property)
	}
	if cycle < 0 || cycle > len(schedule) {
		return nil, fmt.Errorf("a cycle of %d steps in a schedule of %d", cycle, len(schedule))
	}
	ex, err := Execute(m, schedule)
	if err != nil {
		return nil, err
	}
	if ex.Violation != nil {
		return ex, fmt.Errorf("step %d violates %s before the end of the lasso", ex.ViolationStep, ex.Violation.Property)
	}
	n := len(schedule)
	if cycle == 0 {
		if !ex.Terminal {
			return ex, fmt.Errorf("the execution does not end after its %d steps: some thread can still step", n)
		}
		if !pending(ex.States[n]) {
			return ex, fmt.Errorf("%s is not pending when the execution ends", property)
		}
		return ex, nil
	}
	loop := n - cycle
	if string(ex.States[loop].AppendKey(nil)) != string(ex.States[n].AppendKey(nil)) {
		return ex, fmt.Errorf("the cycle does not close: the state after step %d is not the state after step %d", n, loop)
	}
	for i := loop; i <= n; i++ {
		if !pending(ex.States[i]) {
			return ex, fmt.Errorf("%s is not pending after step %d, inside the cycle", property, i)
		}
	}
	f, err := parseFairness(fairness, m.Threads())
	if err != nil {
		return ex, err
	}
	if !f.fair() {
		return ex, nil
	}
	st := newStepper(m)
	var always, some, taken threadSet
	always = ^threadSet(0)
	var alwaysNamed, takenNamed []uint16
	for i := loop; i < n; i++ {
		key := ex.States[i].AppendKey(nil)
		var en threadSet
		var named []uint16
		st.forEach(key, func(c model.Choice) bool {
			en |= 1 << uint(c.Thread)
			if _, _, isNamed := st.x.Offered(); isNamed {
				named = append(named, packChoice(c, true))
			}
			return true
		})
		always &= en
		some |= en
		if i == loop {
			alwaysNamed = named
		} else {
			alwaysNamed = slices.DeleteFunc(alwaysNamed, func(x uint16) bool { return !slices.Contains(named, x) })
		}
		c := schedule[i]
		taken |= 1 << uint(c.Thread)
		st.run(key, c.Thread, c.Alt)
		if _, _, isNamed := st.x.Offered(); isNamed {
			takenNamed = append(takenNamed, packChoice(c, true))
		}
	}
	names := m.Threads()
	for t := range names {
		bit := threadSet(1) << uint(t)
		if always&^taken&(f.weak|f.strong)&bit != 0 {
			return ex, fmt.Errorf("the cycle is not fair: %s can step in every state of it but never does", names[t])
		}
		if some&^taken&f.strong&bit != 0 {
			return ex, fmt.Errorf("the cycle is not fair: %s, strongly fair, can step in some state of it but never does", names[t])
		}
	}
	if !f.named {
		return ex, nil
	}
	for _, x := range alwaysNamed {
		if !slices.Contains(takenNamed, x) {
			c, _ := unpackChoice(x)
			return ex, fmt.Errorf("the cycle is not fair: %s's alternative %d is offered in every state of it but never taken", names[c.Thread], c.Alt)
		}
	}
	return ex, nil
}
