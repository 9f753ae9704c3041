package explorer

import (
	"encoding/binary"
	"math"

	"github.com/protocheck/protocheck/model"
)

// graph is the explored state graph as exact metrics need it (the
// progress check keeps its own, succs): the successors of state i are
// to[start[i]:start[i+1]], and edge e's metric deltas are the interned
// vector dvec[did[e]*metrics:(did[e]+1)*metrics]: most steps count
// nothing or one event, so a handful of distinct vectors serve every edge
// and an edge costs 4 more bytes whatever the number of metrics.
type graph struct {
	metrics int // 0: no graph kept
	// Columns, not slices: a graph of tens of millions of edges must not
	// be copied each time it doubles (the copies would be garbage the
	// collector lets pile up).
	start column[int32]
	to    column[int32]
	did   column[uint32]
	dvec  []int64           // interned delta vectors; vector 0 is all zeros
	dids  map[string]uint32 // vector bytes -> id
	buf   []byte
}

func (g *graph) add(to int32, counts []int64) {
	g.to.append(to)
	g.did.append(g.intern(counts))
}

// intern returns the id of the delta vector counts.
func (g *graph) intern(counts []int64) uint32 {
	if g.dvec == nil {
		g.dvec = make([]int64, g.metrics)
		g.dids = map[string]uint32{}
	}
	zero := true
	for _, d := range counts {
		if d != 0 {
			zero = false
			break
		}
	}
	if zero {
		return 0
	}
	g.buf = g.buf[:0]
	for _, d := range counts {
		g.buf = binary.AppendVarint(g.buf, d)
	}
	if id, ok := g.dids[string(g.buf)]; ok {
		return id
	}
	id := uint32(len(g.dvec) / g.metrics)
	g.dids[string(g.buf)] = id
	g.dvec = append(g.dvec, counts...)
	return id
}

// delta is metric k's delta on edge e.
func (g *graph) delta(e int32, k int) int64 { return g.dvec[int(g.did.at(int(e)))*g.metrics+k] }

// close ends the successor list of the state being expanded.
func (g *graph) close() { g.start.append(int32(g.to.len())) }

// bytes is the memory the graph holds.
func (g *graph) bytes() int64 {
	return g.start.bytes(4) + g.to.bytes(4) + g.did.bytes(4) + int64(cap(g.dvec))*8
}

// packChoice packs a choice into 16 bits: the thread in the high 8 (a
// machine has at most 64 threads), the alternative in bits 0-5 (at most
// model.MaxAlternatives), and bit 6 set when the alternative is an
// identity drawn with Exec.ChooseFrom (it gets weak fairness).
func packChoice(c model.Choice, named bool) uint16 {
	v := uint16(c.Thread)<<8 | uint16(c.Alt)
	if named {
		v |= namedBit
	}
	return v
}

func unpackChoice(v uint16) (c model.Choice, named bool) {
	return model.Choice{Thread: int(v >> 8), Alt: int(v & 63)}, v&namedBit != 0
}

// namedBit marks, in a packed choice, an alternative that is an identity.
const namedBit = 1 << 6

// summarise computes, for every metric, min, max and mean of its total
// over all complete executions (paths from the initial state to a
// terminal state), by dynamic programming in reverse topological order.
// With a cycle the number of executions is unbounded: only the transition
// totals are reported. When the exploration was cut by a bound the
// executions through unexpanded states are unknown: likewise.
func (g *graph) summarise(names []string, terminal *column[bool], totals []int64, cut bool, afford func(need int64) bool) []Metric {
	out := make([]Metric, len(names))
	for k, n := range names {
		out[k] = Metric{Name: n, Transitions: totals[k]}
	}
	n := g.start.len() - 1
	if g.metrics == 0 || cut || n != terminal.len() || n < 0 {
		return out
	}
	M := g.metrics
	if !afford(8 * int64(n)) {
		return out
	}
	order, ok := g.topo(n)
	if !ok || !afford(int64(n)*(8+24*int64(M))) {
		return out
	}
	count := written[float64](n)
	sum := written[float64](n * M)
	lo := written[int64](n * M)
	hi := written[int64](n * M)
	for i := n - 1; i >= 0; i-- {
		v := order[i]
		if terminal.at(int(v)) {
			count[v] = 1
			continue
		}
		for k := 0; k < M; k++ {
			lo[int(v)*M+k], hi[int(v)*M+k] = math.MaxInt64, math.MinInt64
		}
		for e := g.start.at(int(v)); e < g.start.at(int(v+1)); e++ {
			w := g.to.at(int(e))
			if count[w] == 0 {
				continue
			}
			count[v] += count[w]
			for k := 0; k < M; k++ {
				d := g.delta(e, k)
				sum[int(v)*M+k] += sum[int(w)*M+k] + float64(d)*count[w]
				if x := lo[int(w)*M+k] + d; x < lo[int(v)*M+k] {
					lo[int(v)*M+k] = x
				}
				if x := hi[int(w)*M+k] + d; x > hi[int(v)*M+k] {
					hi[int(v)*M+k] = x
				}
			}
		}
	}
	if count[0] == 0 {
		return out
	}
	for k := range out {
		out[k].Executions = count[0]
		out[k].Min, out[k].Max = lo[k], hi[k]
		out[k].Mean = sum[k] / count[0]
	}
	return out
}

// topo returns the states in a topological order (Kahn's algorithm), or
// false if the graph has a cycle.
func (g *graph) topo(n int) ([]int32, bool) {
	indeg := written[int32](n)
	for e := 0; e < g.to.len(); e++ {
		indeg[g.to.at(e)]++
	}
	order := make([]int32, 0, n)
	for v := 0; v < n; v++ {
		if indeg[v] == 0 {
			order = append(order, int32(v))
		}
	}
	for i := 0; i < len(order); i++ {
		v := order[i]
		for e := g.start.at(int(v)); e < g.start.at(int(v+1)); e++ {
			w := g.to.at(int(e))
			if indeg[w]--; indeg[w] == 0 {
				order = append(order, w)
			}
		}
	}
	return order, len(order) == n
}

// execStats accumulates per-execution metric totals for the strategies
// that follow whole executions.
type execStats struct {
	n      float64
	lo, hi []int64
	sum    []float64
	trans  []int64
}

func newExecStats(m int) *execStats {
	e := &execStats{lo: make([]int64, m), hi: make([]int64, m), sum: make([]float64, m), trans: make([]int64, m)}
	return e
}

func (e *execStats) add(totals []int64) {
	for k, t := range totals {
		if e.n == 0 || t < e.lo[k] {
			e.lo[k] = t
		}
		if e.n == 0 || t > e.hi[k] {
			e.hi[k] = t
		}
		e.sum[k] += float64(t)
	}
	e.n++
}

func (e *execStats) metrics(names []string) []Metric {
	out := make([]Metric, len(names))
	for k, n := range names {
		out[k] = Metric{Name: n, Transitions: e.trans[k]}
		if e.n > 0 {
			out[k].Executions = e.n
			out[k].Min, out[k].Max, out[k].Mean = e.lo[k], e.hi[k], e.sum[k]/e.n
		}
	}
	return out
}
