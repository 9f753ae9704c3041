package model

import "fmt"

// An Exec is the context of one step. The explorer hands a fresh (or
// Reset) Exec to Machine.Step; the step records through it what it did.
// An Exec is reused between steps to avoid allocation, so nothing may keep
// a reference to it.
type Exec struct {
	thread    int
	label     string
	footprint []Access
	violation *Violation
	events    []Event
	counts    []int64
	// fenceLater: the step called Fence without a memory; WithTSO drains
	// the thread's store buffer after the step.
	fenceLater bool
}

// NewExec returns an Exec for a machine with the given number of metrics.
func NewExec(metrics int) *Exec { return &Exec{counts: make([]int64, metrics)} }

// Reset prepares x for a step of thread t.
func (x *Exec) Reset(t int) {
	x.thread = t
	x.label = ""
	x.footprint = x.footprint[:0]
	x.violation = nil
	x.fenceLater = false
	x.events = x.events[:0]
	for i := range x.counts {
		x.counts[i] = 0
	}
}

// Thread is the thread taking this step.
func (x *Exec) Thread() int { return x.thread }

// Label sets the step's label: the real function and action it models,
// "function: action", with the values that matter.
func (x *Exec) Label(s string) { x.label = s }

// Labelf sets the step's label with fmt.Sprintf.
func (x *Exec) Labelf(format string, args ...any) { x.label = fmt.Sprintf(format, args...) }

// StepLabel returns the label set by the step.
func (x *Exec) StepLabel() string { return x.label }

// Fail records that an assertion of the modelled code (a BUG_ON, a
// g_assert) or a step-level property failed. Only the first failure of a
// step is kept.
func (x *Exec) Fail(property, format string, args ...any) {
	if x.violation == nil {
		x.violation = Violationf(property, format, args...)
	}
}

// Assert calls Fail when cond is false.
func (x *Exec) Assert(cond bool, property, format string, args ...any) {
	if !cond {
		x.Fail(property, format, args...)
	}
}

// Violation returns the step's failed assertion, or nil.
func (x *Exec) Violation() *Violation { return x.violation }

// Count adds delta to metric m (an index into Machine.Metrics).
func (x *Exec) Count(m int, delta int64) { x.counts[m] += delta }

// Counts returns the metric deltas of the step, indexed like
// Machine.Metrics. The slice is reused by the next Reset.
func (x *Exec) Counts() []int64 { return x.counts }

// Footprint returns the shared-memory accesses of the step in order. The
// slice is reused by the next Reset.
func (x *Exec) Footprint() []Access { return x.footprint }

// Events returns the operation events of the step. The slice is reused by
// the next Reset.
func (x *Exec) Events() []Event { return x.events }

// Call records that client starts an operation with the given input. A
// client has at most one operation in flight.
func (x *Exec) Call(client int, input any) {
	x.events = append(x.events, Event{Client: client, Input: input})
}

// Return records that client's operation in flight completes with output.
func (x *Exec) Return(client int, output any) {
	x.events = append(x.events, Event{Client: client, Output: output, Return: true})
}

// Touch records an access to a location that is not a memory word (a
// lock, a TLB, a queue), so that footprints cover every shared object.
func (x *Exec) Touch(obj string, write bool) {
	x.footprint = append(x.footprint, Access{Op: OpTouch, Object: obj, Addr: -1, Read: !write, Write: write})
}
