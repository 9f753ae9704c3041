package explorer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// Fairness a user can name.
//
// Options.Fairness is a base, "weak" (the default), "strong" or "none",
// optionally followed by per-thread exceptions, comma-separated:
// "weak,vcpu0=strong", "none,P1=weak". The base applies to every thread
// the exceptions do not name, and to the alternatives drawn with
// Exec.ChooseFrom, which are weakly fair unless the base is "none".
//
//   - weak: a thread enabled in every state of a cycle steps in it (it
//     cannot be enabled continuously for ever and never step);
//   - strong: a thread enabled in some state of a cycle steps in it (it
//     cannot be enabled infinitely often and never step), as TLA+'s SF
//     and SPIN's strong fairness;
//   - none: the thread may be ignored for ever.
//
// Strong fairness is checked as a Streett condition on the strongly
// connected components of the pending states: a component in which a
// strongly fair thread is enabled somewhere but never steps has no fair
// cycle through the states where it is enabled, so those states are
// removed and the components of the rest are examined the same way (each
// round removes states, so it ends). What remains is a component whose
// every strongly fair thread enabled in it steps in it, and the weak
// condition is checked on it as before (liveness.go).

// FairnessStrong: every thread strongly fair.
const FairnessStrong = "strong"

// fairSpec is Options.Fairness resolved against a machine's threads.
type fairSpec struct {
	text         string
	weak, strong threadSet // fairness of each thread (strong threads are not in weak)
	named        bool      // ChooseFrom alternatives are weakly fair
}

// fair reports whether any unit is fair at all; with none, every cycle
// counts.
func (f *fairSpec) fair() bool { return f != nil && (f.weak|f.strong != 0 || f.named) }

// isDefault reports whether f is weak fairness of everything, whose
// messages predate the other kinds and stay as they were.
func (f *fairSpec) isDefault() bool { return f.text == FairnessWeak }

func fairnessBase(s string) bool {
	return s == FairnessWeak || s == FairnessStrong || s == FairnessNone
}

// CheckFairness checks the form of a fairness spec (Options.Fairness)
// before the machine's threads are known: a command line refuses a
// malformed one before it builds the machine; Explore checks the thread
// names.
func CheckFairness(s string) error {
	_, err := parseFairness(s, nil)
	return err
}

// parseFairness resolves spec against threads; with threads nil it only
// checks the form.
func parseFairness(spec string, threads []string) (*fairSpec, error) {
	parts := strings.Split(spec, ",")
	base := parts[0]
	if !fairnessBase(base) {
		return nil, fmt.Errorf("fairness must be %q, %q or %q, optionally followed by per-thread exceptions (\"weak,vcpu0=strong\"), got %q", FairnessWeak, FairnessStrong, FairnessNone, spec)
	}
	kinds := make([]string, len(threads))
	for i := range kinds {
		kinds[i] = base
	}
	named := map[string]bool{}
	for _, p := range parts[1:] {
		eq := strings.LastIndexByte(p, '=')
		if eq <= 0 || !fairnessBase(p[eq+1:]) {
			return nil, fmt.Errorf("fairness %q: %q is not THREAD=weak, THREAD=strong or THREAD=none", spec, p)
		}
		name, kind := p[:eq], p[eq+1:]
		if named[name] {
			return nil, fmt.Errorf("fairness %q names thread %q twice", spec, name)
		}
		named[name] = true
		if threads == nil {
			continue
		}
		t := slices.Index(threads, name)
		if t < 0 {
			return nil, fmt.Errorf("fairness %q names %q, which is not a thread of the machine (threads: %s)", spec, name, strings.Join(threads, ", "))
		}
		kinds[t] = kind
	}
	f := &fairSpec{text: spec, named: base != FairnessNone}
	for t, k := range kinds {
		switch k {
		case FairnessWeak:
			f.weak |= 1 << uint(t)
		case FairnessStrong:
			f.strong |= 1 << uint(t)
		}
	}
	return f, nil
}

// describe is the fairness clause of a lasso's message.
func (f *fairSpec) describe() string {
	switch {
	case !f.fair():
		return "without fairness"
	case f.isDefault():
		return "a fair cycle: every thread that could step throughout it steps in it"
	}
	return fmt.Sprintf("a fair cycle under fairness %s: every weakly fair thread that could step throughout it, and every strongly fair thread that could step anywhere in it, steps in it", f.text)
}

// enabledAt is the set of threads with an edge out of v.
func (g *succs) enabledAt(v int32) threadSet {
	var en threadSet
	for _, xe := range g.choices(v) {
		ch, _ := unpackChoice(xe)
		en |= 1 << uint(ch.Thread)
	}
	return en
}

// fairComponents calls keep with every component of the pending states
// (members of the subgraph in) that has a cycle fair under f: the strongly
// connected components, refined for strong fairness as the package
// explains. The members passed are keep's to retain.
//
// roots are in's cycle roots (see cycleRoots), found is whether there is
// any.
func (g *succs) fairComponents(n int32, in, roots bitset, found bool, f *fairSpec, keep func(c component)) {
	var consider func(members []int32)
	consider = func(members []int32) {
		c := component{members: slices.Clone(members)}
		if !f.fair() {
			keep(c)
			return
		}
		u := g.units(c)
		if u.always&(f.weak|f.strong)&^u.taken != 0 {
			// A thread enabled everywhere in c that never steps in it:
			// every cycle inside c, of c's parts too, leaves it out.
			return
		}
		if bad := u.some & f.strong &^ u.taken; bad != 0 {
			sub := newBitset(n)
			left := false
			for _, v := range c.members {
				if g.enabledAt(v)&bad == 0 {
					sub.add(v)
					left = true
				}
			}
			if left {
				g.sccs(n, sub, consider)
			}
			return
		}
		if g.fair(c, f) {
			keep(c)
		}
	}
	if found {
		g.sccsFrom(n, in, roots, consider)
	}
}

// The shortest lasso.
//
// A lasso's length is its prefix (bfs's shortest path to the state where
// the cycle starts) plus its cycle, and the one reported is the shortest
// by that measure: for each state s of a fair component, in bfs order
// (so by increasing depth, which lets the search stop once a prefix alone
// is as long as the best lasso), the shortest fair cycle through s is
// found by a breadth-first search of the component's states paired with
// what the cycle so far has done for each fair unit (stepped it, visited
// a state where it is disabled, or, strongly fair, a state where it is
// enabled). A cycle may go through s more than once. This is exact, but
// the pairing has 2^k states for k such bits, so with more than
// maxLassoBits, or once the searches together have visited
// maxLassoVisits pairs, the shortest found so far stands, or the covering
// walk of graph.lasso when none was found: the message and the trace do
// not claim more than they are.
const (
	maxLassoBits   = 16
	maxLassoVisits = 1 << 22
)

// goal is what a fair cycle through a component must do, as bits of a
// mask: units that must be stepped or seen disabled (weak), and for each
// strongly fair thread a "stepped" and a "seen enabled" bit.
type goal struct {
	weakT    []int // weak thread units, with their bit
	weakBit  []uint
	named    []uint16 // weak named alternatives, packed
	namedBit []uint
	strongT  []int
	takenBit []uint
	seenBit  []uint
	bits     uint
}

func (g *succs) goalOf(c component, f *fairSpec) goal {
	var gl goal
	if !f.fair() {
		return gl
	}
	u := g.units(c)
	threads := 0
	var offered []uint16
	for _, v := range c.members {
		for _, xe := range g.choices(v) {
			ch, isNamed := unpackChoice(xe)
			threads = max(threads, ch.Thread+1)
			if isNamed && f.named && !slices.Contains(offered, xe) {
				offered = append(offered, xe)
			}
		}
	}
	for t := 0; t < threads; t++ {
		bit := threadSet(1) << uint(t)
		switch {
		case u.some&bit == 0:
		case f.strong&bit != 0:
			gl.strongT = append(gl.strongT, t)
			gl.takenBit, gl.seenBit = append(gl.takenBit, gl.bits), append(gl.seenBit, gl.bits+1)
			gl.bits += 2
		case f.weak&bit != 0:
			gl.weakT, gl.weakBit = append(gl.weakT, t), append(gl.weakBit, gl.bits)
			gl.bits++
		}
	}
	slices.Sort(offered)
	for _, x := range offered {
		gl.named, gl.namedBit = append(gl.named, x), append(gl.namedBit, gl.bits)
		gl.bits++
	}
	return gl
}

// visit records state v in mask.
func (gl *goal) visit(g *succs, v int32, mask uint32) uint32 {
	en := g.enabledAt(v)
	for i, t := range gl.weakT {
		if en&(1<<uint(t)) == 0 {
			mask |= 1 << gl.weakBit[i]
		}
	}
	for i, t := range gl.strongT {
		if en&(1<<uint(t)) != 0 {
			mask |= 1 << gl.seenBit[i]
		}
	}
	for i, x := range gl.named {
		offered := false
		offered = slices.Contains(g.choices(v), x)
		if !offered {
			mask |= 1 << gl.namedBit[i]
		}
	}
	return mask
}

// take records a step by packed choice x in mask.
func (gl *goal) take(x uint16, mask uint32) uint32 {
	ch, _ := unpackChoice(x)
	for i, t := range gl.weakT {
		if t == ch.Thread {
			mask |= 1 << gl.weakBit[i]
		}
	}
	for i, t := range gl.strongT {
		if t == ch.Thread {
			mask |= 1 << gl.takenBit[i]
		}
	}
	for i, y := range gl.named {
		if y == x {
			mask |= 1 << gl.namedBit[i]
		}
	}
	return mask
}

func (gl *goal) met(mask uint32) bool {
	for _, b := range gl.weakBit {
		if mask&(1<<b) == 0 {
			return false
		}
	}
	for _, b := range gl.namedBit {
		if mask&(1<<b) == 0 {
			return false
		}
	}
	for i := range gl.strongT {
		if mask&(1<<gl.seenBit[i]) != 0 && mask&(1<<gl.takenBit[i]) == 0 {
			return false
		}
	}
	return true
}

// fairCycle returns a shortest cycle inside c from s back to s that meets
// gl, or nil (none, or the budget ran out first); budget counts the pairs
// visited.
func (g *succs) fairCycle(c component, s int32, gl *goal, budget *int) []model.Choice {
	type node struct {
		v      int32
		mask   uint32
		parent int32  // index in nodes, -1 for the start
		ch     uint16 // the choice of the edge from the parent
	}
	nodes := []node{{v: s, mask: gl.visit(g, s, 0), parent: -1}}
	seen := map[uint64]bool{uint64(s)<<32 | uint64(nodes[0].mask): true}
	for i := 0; i < len(nodes); i++ {
		if *budget--; *budget < 0 {
			return nil
		}
		cur := nodes[i]
		for it := g.of(cur.v); ; {
			to, xe, ok := it.next()
			if !ok {
				break
			}
			w := to
			if !c.has(w) {
				continue
			}
			mask := gl.visit(g, w, gl.take(xe, cur.mask))
			if w == s && gl.met(mask) {
				out := []model.Choice{}
				ch, _ := unpackChoice(xe)
				out = append(out, ch)
				for j := int32(i); nodes[j].parent >= 0; j = nodes[j].parent {
					ch, _ := unpackChoice(nodes[j].ch)
					out = append(out, ch)
				}
				slices.Reverse(out)
				return out
			}
			k := uint64(w)<<32 | uint64(mask)
			if !seen[k] {
				seen[k] = true
				nodes = append(nodes, node{v: w, mask: mask, parent: int32(i), ch: xe})
			}
		}
	}
	return nil
}

// depthOf is the length of bfs's shortest path to state v: its level,
// found among the levels' first indices.
func (b *bfsRun) depthOf(v int32) int {
	d, found := slices.BinarySearch(b.levels, v)
	if !found {
		d--
	}
	return d
}

// shortestLasso returns the shortest lasso through the fair components
// comps (sorted by their first member), as the comment on maxLassoBits
// describes: the prefix and the cycle.
func (b *bfsRun) shortestLasso(comps []component, f *fairSpec) (stem, loop []model.Choice) {
	g := b.sg
	type cand struct {
		v    int32
		comp int
	}
	var cands []cand
	goals := make([]goal, len(comps))
	for i, c := range comps {
		goals[i] = g.goalOf(c, f)
		for _, v := range c.members {
			cands = append(cands, cand{v, i})
		}
	}
	slices.SortFunc(cands, func(x, y cand) int { return int(x.v) - int(y.v) })
	best, bestV := -1, int32(-1)
	budget := maxLassoVisits
	for _, cd := range cands {
		d := b.depthOf(cd.v)
		if best >= 0 && d+1 >= best {
			break
		}
		gl := &goals[cd.comp]
		if gl.bits > maxLassoBits {
			continue
		}
		cyc := g.fairCycle(comps[cd.comp], cd.v, gl, &budget)
		if budget < 0 {
			break
		}
		if cyc != nil && (best < 0 || d+len(cyc) < best) {
			best, bestV, loop = d+len(cyc), cd.v, cyc
		}
	}
	if best < 0 {
		c := comps[0]
		return b.schedule(c.members[0]), g.lasso(c, f.fair())
	}
	return b.schedule(bestV), loop
}
