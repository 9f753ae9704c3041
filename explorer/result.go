package explorer

import (
	"fmt"
	"io"
	"time"

	"github.com/protocheck/protocheck/model"
)

// Strategy names.
const (
	BFS    = "bfs"
	Random = "random"
	Paths  = "paths"
)

// Strategies lists the strategy names.
var Strategies = []string{BFS, Random, Paths}

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
)

// Options configures an exploration. The zero value of each field selects
// its documented default (see fill).
type Options struct {
	Strategy string // bfs (default), random or paths
	Seed     int64  // random: seed of the first walk
	Runs     int    // random: walks (default 1000); paths: executions bound (default 1e6)
	MaxSteps int    // bound on steps per execution / bfs depth (default 10000)
	// MaxStates bounds the distinct states bfs stores (default 5e6).
	MaxStates int
	// Clock, when set, times the run (Stats.Elapsed) and paces progress.
	Clock func() time.Time
	// Progress receives one line a second for runs longer than a second
	// (needs Clock). Never stdout in the CLI.
	Progress io.Writer
	// ProgressJSON prints each progress line as one JSON object instead of
	// text, for tools.
	ProgressJSON bool
}

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
	switch {
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
	return fmt.Errorf("unknown strategy %q (strategies: bfs, random, paths)", o.Strategy)
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
	States      int64 // distinct states (bfs, random) or states visited (paths)
	Transitions int64
	Depth       int   // longest execution or bfs level reached
	Executions  int64 // complete executions followed (random, paths)
	Elapsed     time.Duration
	// StatesPerSec is States over Elapsed (0 without a clock).
	StatesPerSec float64
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
