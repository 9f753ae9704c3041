package explorer

import (
	"fmt"
	"io"
	"slices"
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

// The verdicts. Only OK is a proof: every other verdict but Violation
// says what the run did not establish (Result.Bound, Result.Unchecked).
// Result.OK is the check to write.
const (
	// OK: exhaustive and clean, and every property of the machine was
	// checked (but those the caller asked to skip, Result.Skipped): a
	// proof for the model at its parameters. Only bfs, dfs and paths
	// give it.
	OK Verdict = "ok"
	// Partial: every reachable state (or execution, for paths) was
	// explored and no property was violated, but the search could not
	// check some of them (Result.Unchecked says which and why: progress
	// under dfs, paths or symmetry reduction, or what a memory limit left
	// undone after the search). Not a proof of those: a livelock explored
	// with dfs is Partial, never OK.
	Partial Verdict = "partial"
	// Bounded: clean within the bounds, but not exhaustive: an exhaustive
	// search cut short by a limit (Result.Bound names it), or a sampling
	// strategy (random, random-threads, pct), which is never exhaustive.
	Bounded Verdict = "bounded"
	// Violation: a property failed; Result.Schedule reproduces it.
	Violation Verdict = "violation"
	// Interrupted: Options.Stop was closed before the search ended; the
	// counts say how far it got.
	Interrupted Verdict = "interrupted"
)

// Exhaustive reports whether strategy explores every state or execution
// when no limit cuts it (bfs, dfs, paths), as opposed to sampling some
// (random, random-threads, pct). A clean run of an exhaustive strategy
// that is not OK stopped short of what it set out to do; a clean
// sampling run is Bounded by nature.
func Exhaustive(strategy string) bool {
	return strategy == BFS || strategy == DFS || strategy == Paths
}

// Options configures an exploration. The zero value of each field selects
// its documented default (see fill).
type Options struct {
	Strategy string // bfs (default), dfs, random, random-threads, pct or paths
	Seed     int64  // random, random-threads, pct: seed of the first walk
	Runs     int    // random, random-threads, pct: walks (default 1000); paths: executions bound (default 1e6)
	MaxSteps int    // bound on steps per execution / bfs and dfs depth (default 10000)
	// MaxStates bounds the distinct states bfs and dfs store (default
	// DefaultMaxStates).
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
	// Metrics makes bfs keep the state graph so that every metric is
	// summarised exactly over every complete execution (min, max, mean).
	// Without it, metrics are only totalled over transitions, and a plain
	// exploration stores nothing per transition.
	Metrics bool
	// Stop, when closed, stops the search as soon as possible (within one
	// chunk of states) with verdict Interrupted and the counts so far.
	Stop <-chan struct{}
	// TimeLimit stops the search (verdict Bounded, saying why) once it has
	// run that long; it needs Clock.
	TimeLimit time.Duration
	// NoProgress skips the progress properties (liveness): bfs then keeps
	// no graph for them. The caller asks for it, so they are listed in
	// Result.Skipped, not Result.Unchecked, and a clean search is OK.
	NoProgress bool
	// Fairness is the fairness assumed when checking progress properties:
	// "weak" (the default: a thread continuously enabled eventually steps,
	// and an alternative drawn with Exec.ChooseFrom and continuously
	// offered is eventually taken), "strong" (a thread enabled infinitely
	// often eventually steps) or "none" (any cycle counts), optionally
	// followed by per-thread exceptions: "weak,vcpu0=strong" (fairness.go).
	Fairness string
	// SpillDir, when set, makes bfs keep each level's states in a
	// temporary file in that directory (removed when the level is done)
	// instead of memory, where the visited set does not hold them (with
	// fingerprints or symmetry); then each state's parent, and the state
	// graph the progress check reads after the search, go to temporary
	// files there too (removed when the search ends).
	SpillDir string
	// MaxMemory stops the search (verdict Bounded, saying why) once the
	// process's memory reaches that many bytes, as the Go runtime accounts
	// it (heap, stacks and runtime structures mapped and not returned to
	// the system): before the machine swaps or the kernel kills the
	// process. 0: no limit.
	MaxMemory int64
}

// Fairness assumptions for progress properties.
const (
	FairnessWeak = "weak"
	FairnessNone = "none"
)

// DefaultMaxStates is the default bound on the states bfs and dfs store:
// as many as state indices (32 bits) can number. Memory, not a count, is
// what runs out first; Options.MaxMemory guards it.
const DefaultMaxStates = 1<<31 - 2

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
	if err := o.ignored(); err != nil {
		return err
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
		o.MaxStates = DefaultMaxStates
	}
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.Depth == 0 {
		o.Depth = 3
	}
	if o.Fairness == "" {
		o.Fairness = FairnessWeak
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
	case o.MaxStates < 0 || o.MaxStates > DefaultMaxStates:
		return fmt.Errorf("max-states must be between 1 and %d, got %d", DefaultMaxStates, o.MaxStates)
	case o.TimeLimit < 0 || o.MaxMemory < 0:
		return fmt.Errorf("time and memory limits must be positive")
	case CheckFairness(o.Fairness) != nil:
		return CheckFairness(o.Fairness)
	case o.TimeLimit > 0 && o.Clock == nil:
		return fmt.Errorf("a time limit needs a clock (Options.Clock)")
	}
	for _, s := range Strategies {
		if s == o.Strategy {
			return nil
		}
	}
	return fmt.Errorf("unknown strategy %q (strategies: %s)", o.Strategy, strings.Join(Strategies, ", "))
}

// ignored refuses an option set to a non-default value that the chosen
// strategy would ignore: a run must never look as if it did what it did
// not.
func (o *Options) ignored() error {
	is := func(names ...string) bool {
		for _, n := range names {
			if o.Strategy == n {
				return true
			}
		}
		return false
	}
	walks := is(Random, RandomThreads, PCT)
	for _, c := range []struct {
		set     bool
		name    string
		applies bool
	}{
		{o.Seed != 0, "Seed", walks},
		{o.Runs != 0, "Runs", walks || is(Paths)},
		{o.MaxStates != 0, "MaxStates", is(BFS, DFS)},
		{o.SpillDir != "", "SpillDir", is(BFS)},
		{o.Workers > 1, "Workers", is(BFS)},
		{o.Fingerprint, "Fingerprint", is(BFS, DFS)},
		{o.Symmetry, "Symmetry", is(BFS, DFS)},
		{o.NoReduction, "NoReduction", is(DFS)},
		{o.Preemptions != 0, "Preemptions", is(DFS)},
		{o.Depth != 0, "Depth", is(PCT)},
		{o.Metrics, "Metrics", is(BFS)},
		{o.NoProgress, "NoProgress", is(BFS)},
		{o.Fairness != "", "Fairness", is(BFS)},
	} {
		if c.set && !c.applies {
			return fmt.Errorf("option %s does not apply to strategy %s", c.name, o.Strategy)
		}
	}
	return nil
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
	// Cycle, for a progress violation that is a lasso, is the number of
	// steps at the end of Schedule that form the cycle: the state after
	// the last step is the state before Schedule[len-Cycle], and the cycle
	// can repeat forever. 0 otherwise (a progress violation with Cycle 0
	// is an execution that ends with the obligation pending).
	Cycle int
	// Unchecked lists the properties this run did not check, each with
	// why ("flush-returns: progress is not checked under symmetry
	// reduction"), so that an ok never claims more than was explored: a
	// complete search with an entry here is Partial, not OK. A memory
	// limit that left the per-execution metrics uncomputed after the
	// search is listed too, under MetricsUnchecked.
	Unchecked []string
	// Skipped lists the properties the caller asked not to check
	// (Options.NoProgress), each with why. Unlike Unchecked they leave an
	// OK verdict OK: the caller said so.
	Skipped []string
	// Fairness is the fairness the progress properties were checked
	// under (Options.Fairness: "weak" or "none"), or "" when this run
	// checked none (no progress property, or a strategy or option that
	// does not check them: see Unchecked and Skipped). A progress
	// violation's lasso is fair under it.
	Fairness string
	// Bound says which bound made a clean run non-exhaustive.
	Bound   string
	Stats   Stats
	Metrics []Metric
}

// MetricsUnchecked is the name under which Result.Unchecked lists the
// per-execution metric summaries that Options.Metrics asked for and a
// memory limit left uncomputed after the search.
const MetricsUnchecked = "per-execution metrics"

// OK reports whether r is a proof: an exhaustive search that ended, found
// no violation and checked every property (but those the caller asked to
// skip). It is false for Partial, Bounded, Violation and Interrupted, and
// for a nil Result: a test that asserts r.OK() fails on a search that
// left a progress property unchecked or stopped at a limit.
func (r *Result) OK() bool {
	return r != nil && r.Verdict == OK && len(r.Unchecked) == 0
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
	// PeakMemory is the most memory the process held during the search,
	// as the Go runtime accounts it (everything it mapped and did not
	// return to the system: an upper bound of the resident set), sampled
	// every thousand or so states and at the end. It depends on the
	// machine and the run, like Elapsed.
	PeakMemory int64
	// BytesPerState is PeakMemory over States: what a state really costs,
	// the search's own structures, the frontier, the garbage collector's
	// slack and the runtime included (bfs and dfs).
	BytesPerState float64
	// StoreBytesPerState is the share of the search's own structures at
	// the end of the run: the visited set (hash table, key arena or
	// fingerprints), the per-state bookkeeping (parents, choices, sleep
	// sets) and the state graph when kept, divided by States. It depends
	// only on the run's counts.
	StoreBytesPerState float64
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

// CleanExcept reports whether r proves everything but the named
// properties: every state explored, no violation, and nothing left
// unchecked but those (OK, or Partial with only them in Unchecked). It is
// how a test says what it accepts, by name, from a search that cannot
// check everything: r.CleanExcept("flush-returns") for dfs, paths or
// symmetry reduction on a machine whose only progress property is
// flush-returns. With no names it is r.OK(); a Bounded, Violation or
// Interrupted result is never clean.
func (r *Result) CleanExcept(unchecked ...string) bool {
	if r == nil || r.Verdict != OK && r.Verdict != Partial {
		return false
	}
	for _, u := range r.Unchecked {
		name, _, _ := strings.Cut(u, ": ")
		if !slices.Contains(unchecked, name) {
			return false
		}
	}
	return true
}

// String is one line: the verdict, the counts, and what the verdict does
// not cover: the violation, the bound that cut the search, and every
// property not checked ("partial: 12 states, 20 transitions, depth 5; not
// checked: P0-enters: progress is checked by bfs only, ...").
func (r *Result) String() string {
	s := fmt.Sprintf("%s: %d states, %d transitions, depth %d", r.Verdict, r.Stats.States, r.Stats.Transitions, r.Stats.Depth)
	if r.Violation != nil {
		s += "; " + r.Violation.Error()
	}
	if r.Bound != "" {
		s += "; bound: " + r.Bound
	}
	if len(r.Unchecked) > 0 {
		s += "; not checked: " + strings.Join(r.Unchecked, "; ")
	}
	if len(r.Skipped) > 0 {
		s += "; skipped: " + strings.Join(r.Skipped, "; ")
	}
	return s
}
