package rt

import (
	"fmt"
	"slices"

	"github.com/protocheck/protocheck/model"
)

// DFS returns a strategy that enumerates schedules depth-first, run after
// run (stateless model checking, as loom and shuttle do): every run
// replays the previous run's choices up to the deepest decision that has
// an untried option, takes that option, and continues with the first
// option everywhere after; Begin reports ErrExhausted when every schedule
// has been run.
//
// preemptionBound limits the preemptions of a schedule (choosing another
// goroutine while the one that took the previous step could go on);
// switching away from a goroutine that blocked or exited is free, and so
// are alternatives (which waiter a Signal wakes, a Choose). A bound of 2
// or 3 finds most bugs (Musuvathi and Qadeer, PLDI 2007); a negative bound
// means none. At each decision the running goroutine is tried first, so
// the first run has no preemption.
//
// The code under test must be deterministic given the schedule: a
// decision whose enabled choices differ from the earlier run's is
// reported as uncontrolled nondeterminism (Run.Err).
//
// The strategy implements Pruner: once it is exhausted, it says whether
// the bound left a schedule out (ErrExhausted then means "every schedule
// within the bound", not every schedule).
func DFS(preemptionBound int) Strategy { return &dfsStrategy{bound: preemptionBound} }

// A Pruner is a strategy that can leave schedules out by a bound of its
// own (DFS's preemption bound). Pruned reports whether it has so far.
type Pruner interface {
	Pruned() bool
}

type dfsNode struct {
	enabled []model.Choice // as offered, for the nondeterminism check
	prev    int
	options []model.Choice // in exploration order
	idx     int            // option taken by the current run
}

type dfsStrategy struct {
	bound   int
	stack   []dfsNode
	pos     int // decisions taken by the current run
	started bool
	done    bool
	pruned  bool // the bound left an option out
}

func (d *dfsStrategy) Pruned() bool { return d.pruned }

func (d *dfsStrategy) Begin() error {
	if d.done {
		return ErrExhausted
	}
	if !d.started {
		d.started = true
		return nil
	}
	// A run that ended early (a failure) leaves no deeper decisions.
	d.stack = d.stack[:d.pos]
	d.pos = 0
	for len(d.stack) > 0 {
		top := &d.stack[len(d.stack)-1]
		if top.idx+1 < len(top.options) {
			top.idx++
			return nil
		}
		d.stack = d.stack[:len(d.stack)-1]
	}
	d.done = true
	return ErrExhausted
}

func (d *dfsStrategy) Pick(p *Point) (model.Choice, error) {
	if d.pos < len(d.stack) {
		n := &d.stack[d.pos]
		if n.prev != p.Prev || !slices.Equal(n.enabled, p.Enabled) {
			return model.Choice{}, fmt.Errorf("rt: dfs: uncontrolled nondeterminism at step %d: an earlier run with the same choices so far could take %v after thread %d, this one %v after thread %d (a goroutine not started with Env.Go, blocking outside rt, a map iteration, the clock or a global random source?)", p.Step+1, n.enabled, n.prev, p.Enabled, p.Prev)
		}
		d.pos++
		return n.options[n.idx], nil
	}
	n := dfsNode{enabled: slices.Clone(p.Enabled), prev: p.Prev}
	prevEnabled := p.Prev >= 0 && threadEnabled(p.Enabled, p.Prev)
	for _, c := range p.Enabled {
		if c.Thread == p.Prev {
			n.options = append(n.options, c)
		}
	}
	within := !prevEnabled || d.bound < 0 || d.preemptions() < d.bound
	for _, c := range p.Enabled {
		if c.Thread != p.Prev {
			if !within {
				d.pruned = true
				break
			}
			n.options = append(n.options, c)
		}
	}
	d.stack = append(d.stack, n)
	d.pos++
	return n.options[0], nil
}

// preemptions counts the preemptions of the decisions taken so far.
func (d *dfsStrategy) preemptions() int {
	k := 0
	for _, n := range d.stack[:d.pos] {
		c := n.options[n.idx]
		if n.prev >= 0 && c.Thread != n.prev && threadEnabled(n.enabled, n.prev) {
			k++
		}
	}
	return k
}

func (d *dfsStrategy) End(*Run) error { return nil }

func (d *dfsStrategy) String() string {
	if d.bound < 0 {
		return "dfs(preemptions=unbounded)"
	}
	return fmt.Sprintf("dfs(preemptions=%d)", d.bound)
}
