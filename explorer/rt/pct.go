package rt

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/protocheck/protocheck/model"
)

// PCT returns a probabilistic concurrency testing strategy (Burckhardt,
// Kothari, Musuvathi, Nagarakatte: "A randomized scheduler with
// probabilistic guarantees of finding bugs", ASPLOS 2010) of the given
// depth d >= 1. Each goroutine gets a random priority when it first
// appears; the highest-priority enabled goroutine always runs; at d-1
// steps chosen uniformly at random the goroutine about to run drops below
// every other (each later drop lower still). A bug that needs d ordering
// constraints is found by one run with probability at least
// 1/(n*k^(d-1)) for n goroutines and k steps. Alternatives (Choose, which
// waiter a Signal wakes) are drawn uniformly.
//
// k is not known before a run: run i uses the longest run seen so far by
// this strategy value (the first run has no change points, like shuttle's
// PCT). Run i draws from a generator seeded with (seed, i); together with
// the deterministic run lengths before it, a sequence of runs is
// reproducible from the seed, and each failing run from its Schedule.
func PCT(seed int64, depth int) Strategy {
	s := &pctStrategy{seed: seed, depth: depth, pcg: rand.NewPCG(0, 0)}
	s.rng = rand.New(s.pcg)
	return s
}

type pctStrategy struct {
	seed  int64
	depth int
	run   uint64
	pcg   *rand.PCG
	rng   *rand.Rand

	// order holds the thread ids by decreasing priority; the last lowered
	// of them have been dropped at change points (the later, the lower).
	order   []int
	isLow   []bool
	lowered int
	change  []int // steps at which the running goroutine is dropped
	ci      int   // next entry of change
	k       int   // longest run so far, in steps
	steps   int   // steps of the current run
}

func (s *pctStrategy) Begin() error {
	if s.depth < 1 {
		return fmt.Errorf("rt: pct depth must be at least 1, got %d", s.depth)
	}
	if s.steps > s.k {
		s.k = s.steps
	}
	s.pcg.Seed(uint64(s.seed), s.run)
	s.run++
	s.order, s.isLow, s.lowered, s.steps, s.ci = s.order[:0], s.isLow[:0], 0, 0, 0
	s.change = s.change[:0]
	if s.k > 1 {
		for i := 0; i < s.depth-1; i++ {
			s.change = append(s.change, 1+s.rng.IntN(s.k-1))
		}
		sort.Ints(s.change)
	}
	return nil
}

func (s *pctStrategy) Pick(p *Point) (model.Choice, error) {
	// Goroutines get their priority in id order when first seen, so the
	// draws do not depend on which of them happen to be enabled.
	for t := len(s.isLow); t < p.Threads(); t++ {
		pos := s.rng.IntN(len(s.order) - s.lowered + 1)
		s.order = append(s.order, 0)
		copy(s.order[pos+1:], s.order[pos:])
		s.order[pos] = t
		s.isLow = append(s.isLow, false)
	}
	s.steps = p.Step + 1
	for s.ci < len(s.change) && s.change[s.ci] <= p.Step {
		s.ci++
		s.lower(s.top(p.Enabled))
	}
	t := s.top(p.Enabled)
	first, n := -1, 0
	for i, c := range p.Enabled {
		if c.Thread == t {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	return p.Enabled[first+s.rng.IntN(n)], nil
}

// top is the highest-priority enabled thread.
func (s *pctStrategy) top(en []model.Choice) int {
	for _, t := range s.order {
		if threadEnabled(en, t) {
			return t
		}
	}
	return en[0].Thread // unreachable: every enabled thread has a priority
}

// lower moves t below every other thread.
func (s *pctStrategy) lower(t int) {
	for i, u := range s.order {
		if u == t {
			copy(s.order[i:], s.order[i+1:])
			s.order[len(s.order)-1] = t
			break
		}
	}
	if !s.isLow[t] {
		s.isLow[t] = true
		s.lowered++
	}
}

func (s *pctStrategy) End(*Run) error { return nil }

func (s *pctStrategy) String() string {
	return fmt.Sprintf("pct(seed=%d,depth=%d)", s.seed, s.depth)
}
