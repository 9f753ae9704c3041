package model

import "fmt"

// Property names shared by every protocol.
const (
	// Deadlock: some thread has not finished and no thread can step.
	Deadlock = "deadlock"
	// Linearizability: an execution's operation history has no
	// linearization under the protocol's Spec.
	Linearizability = "linearizability"
)

// An Invariant is a named safety property over a single state. Check
// returns "" when the state satisfies it, and otherwise says what is wrong
// in the protocol's own terms.
type Invariant struct {
	Name  string
	Check func(State) string
}

// A Violation is a property that failed: an invariant at a state, an
// assertion inside a step, a deadlock, or a non-linearizable history.
type Violation struct {
	Property string `json:"property"`
	Message  string `json:"message"`
}

func (v *Violation) Error() string { return v.Property + ": " + v.Message }

// Violationf builds a Violation.
func Violationf(property, format string, args ...any) *Violation {
	return &Violation{Property: property, Message: fmt.Sprintf(format, args...)}
}

// A Progress property says that something eventually happens: an open
// obligation (a started flush, a thread waiting to enter) is eventually
// discharged. Pending reports whether the obligation is open in a state.
//
// The property fails on an execution that, from some point on, stays in
// pending states forever: a reachable cycle of pending states that a fair
// scheduler could follow (see the explorer's liveness check for the
// fairness assumed), or a reachable pending state with no successor. A
// state where the obligation is discharged and re-opened (a flush returns
// and the next one starts) is not pending, so each obligation is checked
// on its own.
type Progress struct {
	Name    string
	Pending func(State) bool
}
