package explorer

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/protocheck/protocheck/model"
)

// Strategy names.
const (
	BFS    = "bfs"
	Random = "random"
	Paths  = "paths"
	DFS    = "dfs"
	PCT    = "pct"
	// RandomThreads is random with a thread-first picker: each step picks a
	// thread uniformly among the threads with an enabled choice, then one
	// of its choices uniformly. Plain random picks uniformly among all
	// enabled choices, which favours a thread with many alternatives.
	RandomThreads = "random-threads"
)

// Strategies lists the strategy names.
var Strategies = []string{BFS, DFS, Random, RandomThreads, PCT, Paths}

// A Verdict is the outcome of an exploration.
type Verdict string

// The verdicts.
const (
	// OK: exhaustive and clean.
	OK Verdict = "ok"
	// Bounded: clean within the bounds, but not exhaustive.
	Bounded Verdict = "bounded"
	// Violation: a property failed; Result.Schedule reproduces it.
	Violation Verdict = "violation"
	// Interrupted: Options.Stop was closed before the search ended. No
	// property failed in the part explored, whose counts the Result has.
	Interrupted Verdict = "interrupted"
)

// Options configures an exploration. The zero value of each field selects
// its documented default (see fill).
type Options struct {
	Strategy string // bfs (default), dfs, random, random-threads, pct or paths
	Seed     int64  // random, random-threads, pct: seed of the first walk
	Runs     int    // random, random-threads, pct: walks (default 1000); paths: executions bound (default 1e6)
	MaxSteps int    // bound on steps per execution / bfs and dfs depth (default 10000)
	// MaxStates bounds the distinct states bfs and dfs store (default 5e6).
	MaxStates int
	// Workers is the number of goroutines that expand states in bfs
	// (default 1). Any worker count gives the identical Result (timing
	// aside): see the package documentation. The machine's methods are then
	// called concurrently on distinct states, which the Machine contract
	// (pure, no shared mutable state) allows. Other strategies ignore it.
	Workers int
	// Fingerprint makes bfs and dfs store a 64-bit fingerprint per state
	// instead of its key; Stats.FingerprintCollision estimates the
	// probability that a collision hid a state.
	Fingerprint bool
	// Symmetry makes bfs and dfs identify states through the machine's
	// model.Symmetric canonical key. A machine that does not implement
	// model.Symmetric is an error. In dfs it turns the sleep sets off:
	// they are stored as choices of one member of an orbit and would name
	// other steps in another member.
	Symmetry bool
	// NoReduction turns off dfs's partial-order reduction (sleep sets),
	// which is otherwise on for machines implementing model.Independence.
	NoReduction bool
	// Preemptions bounds, in dfs, the preemptions per execution (switching
	// away from a thread that could still step): 0 means no bound and a
	// negative value a bound of zero. A run that skipped a choice because of
	// it is Bounded. Bounding turns the sleep sets off (their combination
	// with a preemption bound is not sound without more machinery).
	Preemptions int
	// Depth is pct's bug depth d (default 3): d-1 priority change points
	// per walk.
	Depth int
	// Clock, when set, times the run (Stats.Elapsed) and paces progress.
	Clock func() time.Time
	// Progress receives one line a second for runs longer than a second
	// (needs Clock). Never stdout in the CLI.
	Progress io.Writer
	// ProgressJSON prints each progress line as one JSON object instead of
	// text, for tools.
	ProgressJSON bool
	// Stop, once closed, ends the search as soon as the explorer looks at
	// it (every few thousand transitions, every bfs chunk, every walk)
	// with the verdict Interrupted. A nil Stop never stops it.
	Stop <-chan struct{}
}

// stopRequested reports, without blocking, whether stop has been closed.
func stopRequested(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// Bounds on options whose size is an allocation: a bug depth beyond a few
// dozen change points finds nothing PCT's analysis promises, and workers
// beyond the CPUs only add contention.
const (
	MaxDepth   = 64
	MaxWorkers = 1024
)

func (o *Options) fill() error {
	if o.Strategy == "" {
		o.Strategy = BFS
	}
	if o.Runs == 0 {
		if o.Strategy == Paths {
			o.Runs = 1_000_000
		} else {
			o.Runs = 1000
		}
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = 10_000
	}
	if o.MaxStates == 0 {
		o.MaxStates = 5_000_000
	}
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.Depth == 0 {
		o.Depth = 3
	}
	switch {
	case o.Workers < 0 || o.Workers > MaxWorkers:
		return fmt.Errorf("workers must be between 1 and %d, got %d", MaxWorkers, o.Workers)
	case o.Depth < 0 || o.Depth > MaxDepth:
		return fmt.Errorf("pct depth must be between 1 and %d, got %d", MaxDepth, o.Depth)
	case o.Symmetry && o.Preemptions != 0:
		return fmt.Errorf("symmetry and a preemption bound cannot be combined: the bound's context (which thread ran last) would have to be permuted with the state")
	case o.Runs < 0:
		return fmt.Errorf("runs must be positive, got %d", o.Runs)
	case o.MaxSteps < 0:
		return fmt.Errorf("max-steps must be positive, got %d", o.MaxSteps)
	case o.MaxStates < 0:
		return fmt.Errorf("max-states must be positive, got %d", o.MaxStates)
	}
	for _, s := range Strategies {
		if s == o.Strategy {
			return nil
		}
	}
	return fmt.Errorf("unknown strategy %q (strategies: %s)", o.Strategy, strings.Join(Strategies, ", "))
}

// Result is the outcome of any strategy.
type Result struct {
	Strategy  string
	Verdict   Verdict
	Violation *model.Violation
	// Schedule reproduces the violation from the initial state; Labels[i]
	// is the label of step i.
	Schedule []model.Choice
	Labels   []string
	// Bound says which bound made a clean run non-exhaustive.
	Bound   string
	Stats   Stats
	Metrics []Metric
}

// Stats are the counts of an exploration. States and Transitions do not
// depend on the machine's speed; Elapsed and StatesPerSec do.
type Stats struct {
	States      int64 // distinct states (bfs, dfs, random walks) or states visited (paths)
	Transitions int64
	Depth       int   // longest execution or bfs level reached
	Executions  int64 // complete executions followed (random, paths)
	Elapsed     time.Duration
	// StatesPerSec is States over Elapsed (0 without a clock).
	StatesPerSec float64
	// BytesPerState is the memory bfs and dfs hold per stored state at the
	// end of the run: the visited set (hash table, key arena or
	// fingerprints), the per-state search bookkeeping (parents, choices,
	// sleep sets) and the state graph kept for metrics, divided by States.
	// The frontier of actual states (one bfs level, or the dfs stack) is
	// transient and not included. It depends only on the run's counts, not
	// on the machine's speed.
	BytesPerState float64
	// FingerprintCollision is, with Options.Fingerprint, TLC's optimistic
	// estimate of the probability that a fingerprint collision hid a
	// state: n*(m-n)/2^64 for n distinct fingerprints and m states
	// generated (transitions plus the initial state). 0 otherwise.
	FingerprintCollision float64
	// FingerprintCollisionObserved is TLC's second estimate, from the
	// fingerprints actually stored: 1/(the smallest difference between two
	// of them, sorted). 0 without fingerprints.
	FingerprintCollisionObserved float64
}

// A Metric summarises one of the machine's counters over the complete
// executions explored: min, max and mean of its total per execution.
// Executions is 0 when no complete execution was measured (for bfs, when
// the state graph has a cycle or was cut by a bound); Transitions is the
// counter's sum over every transition explored.
type Metric struct {
	Name        string
	Executions  float64
	Min, Max    int64
	Mean        float64
	Transitions int64
}

func (r *Result) String() string {
	s := fmt.Sprintf("%s: %d states, %d transitions, depth %d", r.Verdict, r.Stats.States, r.Stats.Transitions, r.Stats.Depth)
	if r.Violation != nil {
		s += "; " + r.Violation.Error()
	}
	return s
}
