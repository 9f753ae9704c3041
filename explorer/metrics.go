package explorer

import "math"

// graph is the explored state graph in compressed form: the successors of
// state i are to[start[i]:start[i+1]], with their metric deltas in
// deltas[e*metrics:(e+1)*metrics]. Deltas are only stored when the machine
// has metrics.
type graph struct {
	metrics int
	start   []int32
	to      []int32
	deltas  []int64
}

func (g *graph) add(to int32, counts []int64) {
	if g.metrics == 0 {
		return
	}
	g.to = append(g.to, to)
	g.deltas = append(g.deltas, counts...)
}

// close ends the successor list of the state being expanded.
func (g *graph) close() {
	if g.metrics == 0 {
		return
	}
	g.start = append(g.start, int32(len(g.to)))
}

// summarise computes, for every metric, min, max and mean of its total
// over all complete executions (paths from the initial state to a
// terminal state), by dynamic programming in reverse topological order.
// With a cycle the number of executions is unbounded: only the transition
// totals are reported. When the exploration was cut by a bound the
// executions through unexpanded states are unknown: likewise.
func (g *graph) summarise(names []string, terminal []bool, totals []int64, cut bool) []Metric {
	out := make([]Metric, len(names))
	for k, n := range names {
		out[k] = Metric{Name: n, Transitions: totals[k]}
	}
	n := len(g.start) - 1
	if g.metrics == 0 || cut || n != len(terminal) {
		return out
	}
	order, ok := g.topo(n)
	if !ok {
		return out
	}
	M := g.metrics
	count := make([]float64, n)
	sum := make([]float64, n*M)
	lo := make([]int64, n*M)
	hi := make([]int64, n*M)
	for i := n - 1; i >= 0; i-- {
		v := order[i]
		if terminal[v] {
			count[v] = 1
			continue
		}
		for k := 0; k < M; k++ {
			lo[int(v)*M+k], hi[int(v)*M+k] = math.MaxInt64, math.MinInt64
		}
		for e := g.start[v]; e < g.start[v+1]; e++ {
			w := g.to[e]
			if count[w] == 0 {
				continue
			}
			count[v] += count[w]
			for k := 0; k < M; k++ {
				d := g.deltas[int(e)*M+k]
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
	indeg := make([]int32, n)
	for _, w := range g.to {
		indeg[w]++
	}
	order := make([]int32, 0, n)
	for v := 0; v < n; v++ {
		if indeg[v] == 0 {
			order = append(order, int32(v))
		}
	}
	for i := 0; i < len(order); i++ {
		v := order[i]
		for e := g.start[v]; e < g.start[v+1]; e++ {
			w := g.to[e]
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
