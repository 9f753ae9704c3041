package model

import (
	"fmt"
	"slices"
	"strings"
)

// A Choice is one decision of the explorer: thread Thread takes its next
// step, with alternative Alt where that step draws one (Exec.Choose,
// Exec.ChooseFrom, Exec.Signal; 0 when it draws none). A schedule, the list
// of choices from the initial state, is all that is needed to rebuild an
// execution.
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

// A State is one global state of a machine: plain data whose canonical
// encoding is the form in which the explorer stores it. Two states are the
// same state iff their encodings are equal.
//
// The explorer keeps states as encoded bytes and decodes one into a scratch
// State (obtained from Machine.Init) only to step it, so a state must
// round-trip: Decode(AppendKey(s)) yields a state whose AppendKey is the
// same bytes. The rapid test helper modeltest.RoundTrip checks it.
type State interface {
	// AppendKey appends the canonical encoding of the state.
	AppendKey(b []byte) []byte
	// Decode overwrites the state with the one encoded in b, which an
	// AppendKey of a state of the same machine produced. It reuses the
	// state's memory (slices keep their capacity) and reports a malformed
	// encoding as an error.
	Decode(b []byte) error
	// Vars lists the state's variables by name in a fixed order, each
	// value in its canonical text form; traces show the ones a step
	// changed.
	Vars() []Var
}

// A Copier is a State that can be set to a copy of another state of the
// same machine faster than by decoding it. The explorer then decodes a
// state once per expansion and copies it for each step it tries from it,
// instead of decoding it for each step. CopyFrom must leave no memory
// shared with src.
type Copier interface {
	CopyFrom(src State)
}

// A Var is one named variable of a state, rendered as text.
type Var struct {
	Name  string
	Value string
}

// A Machine is a protocol instance: a pure state machine over a fixed set
// of threads. It never starts a goroutine, reads a clock or uses a global
// random source; the same state, thread and alternative always give the
// same successor, label and events.
//
// Everything about a step is said by the step itself, through the Exec:
// whether the thread can take it at all (Exec.Block, or a primitive that
// blocks, such as Exec.Lock on a held mutex), whether the thread has
// nothing left to do (Exec.Done), which alternatives the environment has
// at that point (Exec.Choose, Exec.ChooseFrom, Exec.Signal), and what the
// step did (its label, shared accesses, assertions, operations, metric
// events). The explorer learns which choices are enabled by running the
// step, so a model cannot declare one thing and do another: changing a
// broadcast into a signal in a step is enough for every waiter to be
// explored.
type Machine interface {
	// Threads names the threads; thread i of a Choice is Threads()[i].
	Threads() []string
	// Init returns a new initial state, not shared with any other.
	Init() State
	// Step runs thread t's next step on s, in place (s is the explorer's
	// scratch copy), recording through x what it did. See Exec.
	Step(s State, t int, x *Exec)
	// Properties are what the explorer checks and counts.
	Properties() Properties
}

// Properties are the checks and counters of a machine.
type Properties struct {
	// Invariants are checked at every reachable state.
	Invariants []Invariant
	// Assertions names the properties that steps report with Exec.Fail and
	// Exec.Assert: what the code asserts in the middle of a step (a TLB
	// entry used after its flush returned, a page-table page read after it
	// was freed). They are listed with the invariants (check list), and a
	// step that reports a property the machine does not declare, here or
	// as an invariant, breaks the step contract, so the list cannot fall
	// behind the code.
	Assertions []string
	// Progress properties are checked for non-progress cycles under
	// weak fairness (see Progress).
	Progress []Progress
	// Metrics names the counters that steps increment with Exec.Count;
	// metric i of Exec.Count is Metrics[i].
	Metrics []string
	// Spec is the sequential specification that operation histories are
	// checked against, or nil when the machine records no operations.
	Spec *Spec
}

// Names lists the properties a machine declares: its invariants, the
// assertions of its steps that are not also invariants, its progress
// properties, Deadlock, and Linearizability when it has a spec.
func (p Properties) Names() []string {
	var out []string
	for _, inv := range p.Invariants {
		out = append(out, inv.Name)
	}
	out = append(out, p.StepAssertions()...)
	for _, pr := range p.Progress {
		out = append(out, pr.Name)
	}
	out = append(out, Deadlock)
	if p.Spec != nil {
		out = append(out, Linearizability)
	}
	return out
}

// StepAssertions is Assertions without the names that are invariants too
// (a property some steps assert and every state is checked for).
func (p Properties) StepAssertions() []string {
	var out []string
	for _, a := range p.Assertions {
		if !p.HasInvariant(a) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// HasInvariant reports whether name is one of the invariants.
func (p Properties) HasInvariant(name string) bool {
	return slices.ContainsFunc(p.Invariants, func(inv Invariant) bool { return inv.Name == name })
}

// Declares reports whether a step may report a violation of name: an
// assertion or an invariant of the machine, or ModelError.
func (p Properties) Declares(name string) bool {
	return name == ModelError || slices.Contains(p.Assertions, name) || p.HasInvariant(name)
}

// Clone returns an independent copy of s, a state of m, through its
// encoding.
func Clone(m Machine, s State) State {
	c := m.Init()
	if err := c.Decode(s.AppendKey(nil)); err != nil {
		panic(fmt.Sprintf("model: a state of %T does not decode its own encoding: %v", m, err))
	}
	return c
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
