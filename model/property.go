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
