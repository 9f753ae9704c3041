package model

import (
	"fmt"
	"strings"
)

// A Choice is one decision of the explorer: thread Thread takes its next
// step, with alternative Alt where that step branches on the environment
// (0 when it does not). A schedule, the list of choices from the initial
// state, is all that is needed to rebuild an execution.
type Choice struct {
	Thread int `json:"thread"`
	Alt    int `json:"alt,omitempty"`
}

// String renders a choice as "T" or "T.A".
func (c Choice) String() string {
	if c.Alt == 0 {
		return fmt.Sprint(c.Thread)
	}
	return fmt.Sprintf("%d.%d", c.Thread, c.Alt)
}

// A State is one global state of a machine. Implementations are plain data
// (no pointers shared between states) so that Clone is a deep copy.
type State interface {
	// Clone returns an independent copy.
	Clone() State
	// AppendKey appends the canonical encoding of the state: two states are
	// the same state iff their keys are equal.
	AppendKey(b []byte) []byte
	// Vars lists the state's variables by name in a fixed order, each value
	// in its canonical text form; traces show the ones a step changed.
	Vars() []Var
}

// A Var is one named variable of a state, rendered as text.
type Var struct {
	Name  string
	Value string
}

// Status says whether a thread has finished and, if it cannot step, what
// it waits for ("cpu->cond for !exclusive_ongoing"), so that a deadlock
// report names every blocked thread.
type Status struct {
	Done     bool
	WaitsFor string
}

// A Machine is a protocol instance: a pure state machine. It never starts a
// goroutine, reads a clock or uses a global random source; the same state
// and choice always give the same successor, label and events.
type Machine interface {
	// Threads names the threads; thread i of a Choice is Threads()[i].
	Threads() []string
	// Init returns the initial state.
	Init() State
	// Enabled appends to buf the choices enabled in s, sorted by thread
	// then alternative, and returns the extended slice.
	Enabled(s State, buf []Choice) []Choice
	// Step applies an enabled choice to s and returns the successor. It must
	// not modify s. x records the step's label, footprint, assertions,
	// operations and metric events.
	Step(s State, c Choice, x *Exec) State
	// Status reports thread t's status in s.
	Status(s State, t int) Status
	// Invariants are checked at every reachable state.
	Invariants() []Invariant
	// Metrics names the counters that steps increment with Exec.Count;
	// metric i of Exec.Count is Metrics()[i].
	Metrics() []string
	// Spec is the sequential specification that operation histories are
	// checked against, or nil when the protocol records no operations.
	Spec() *Spec
}

// Describe renders a state's variables as "name=value" lines.
func Describe(s State) string {
	var b strings.Builder
	for _, v := range s.Vars() {
		fmt.Fprintf(&b, "%s=%s\n", v.Name, v.Value)
	}
	return b.String()
}

// Changed returns the variables whose value differs between before and
// after, in after's order. Variables that appear only in after are changed.
func Changed(before, after State) []Var {
	old := map[string]string{}
	for _, v := range before.Vars() {
		old[v.Name] = v.Value
	}
	var out []Var
	for _, v := range after.Vars() {
		if ov, ok := old[v.Name]; !ok || ov != v.Value {
			out = append(out, v)
		}
	}
	return out
}
