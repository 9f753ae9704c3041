package rt

import (
	"github.com/protocheck/protocheck/model"
)

// A Strategy chooses every step of controlled runs: which goroutine
// performs its pending primitive next and, where that primitive has
// alternatives (Choose, Signal with several waiters), which one. It is
// the one oracle of a run: nothing else decides anything, so a run is a
// function of the strategy's choices, and the choices (Run.Schedule)
// replay it.
//
// Random, PCT, DFS and Replay are the strategies of this package; a
// strategy is stateful (it knows which run comes next) and serves one
// sequence of runs at a time.
type Strategy interface {
	// Begin prepares the next run. It returns ErrExhausted when there is
	// none (DFS has run every schedule), or an error for a bad parameter.
	Begin() error
	// Pick chooses one of p.Enabled (never empty). An error ends the run
	// with Run.Err (a replay that does not fit, nondeterminism noticed).
	Pick(p *Point) (model.Choice, error)
	// End is called with the finished run; an error becomes its Err (a
	// replay with choices left over).
	End(r *Run) error
	// String names the strategy and its parameters ("pct(seed=1,depth=3)").
	String() string
}

// A Point is a scheduling decision offered to a Strategy. It is reused
// from step to step: a strategy must copy what it keeps.
type Point struct {
	// Step is the index of the step being chosen (0-based).
	Step int
	// Prev is the goroutine that took the previous step, -1 before the
	// first. Choosing another goroutine while Prev is enabled is a
	// preemption.
	Prev int
	// Enabled lists the choices that can be taken, sorted by thread then
	// alternative: one per alternative of each goroutine whose pending
	// primitive can proceed.
	Enabled []model.Choice
	c       *ctl
}

// Label is the label of thread t's pending primitive ("" if there is no
// such thread).
func (p *Point) Label(t int) string {
	if t < 0 || t >= len(p.c.threads) {
		return ""
	}
	return p.c.threads[t].pend.label
}

// Thread is the name of thread t ("?" if there is no such thread).
func (p *Point) Thread(t int) string {
	if t < 0 || t >= len(p.c.threads) {
		return "?"
	}
	return p.c.threads[t].name
}

// Threads is the number of goroutines started so far.
func (p *Point) Threads() int { return len(p.c.threads) }

// Describe lists the enabled choices with their goroutines and labels,
// for error messages.
func (p *Point) Describe() string { return p.c.describeEnabled() }

// threadEnabled reports whether thread t has an enabled choice in en.
func threadEnabled(en []model.Choice, t int) bool {
	for _, c := range en {
		if c.Thread == t {
			return true
		}
	}
	return false
}
