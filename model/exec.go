package model

import (
	"fmt"
	"math/bits"
)

// An Exec is the context of one step: the explorer hands it to
// Machine.Step, and the step says through it everything it did.
//
// What a step can say:
//
//   - Block: the thread cannot take this step in this state (it waits for
//     a lock, a wake-up, an ack). The explorer discards whatever the step
//     changed; the thread is not enabled here. The step's label, when
//     labelling, says what it waits for, which is how a deadlock report
//     names every blocked thread. A blocking step must block before it
//     writes anything or records an operation.
//   - Done: the thread has nothing left to do in this state. A done thread
//     is not enabled and is not blocked: a state where every thread is done
//     or blocked, and some thread is blocked, is a deadlock.
//   - Choose, ChooseFrom: the step branches on its environment (the host
//     preempts the vCPU or not; which waiter a signal wakes). The explorer
//     runs the step once per alternative; Choice.Alt is the alternative. A
//     step draws at most once.
//   - Everything else: its label (Label, Labelf), shared-memory accesses
//     through the memory layer (Load, Store, CAS, ...), lock and
//     condition-variable operations, objects it touches (Touch), failed
//     assertions (Fail, Assert), operations for linearizability (Call,
//     Return) and metric events (Count).
//
// Labels, thread-status texts and operations are only wanted when someone
// will read them (a trace, a report, a history to check). While exploring,
// Labelling and Recording report false and Label, Labelf, Call and Return
// do nothing; their arguments are still evaluated, so a step on a hot path
// puts its label under "if x.Labelling() { ... }". Whether labels are on
// must never change what a step does: replay re-executes every step with
// labels on and checks that the successor is the same.
//
// The explorer checks the contract at every step and reports a breach as a
// violation of the property ModelError, naming the step: a second draw,
// an alternative out of range, a step that blocks after writing, a step
// that neither changes the state nor accesses anything (a no-op: it should
// Block or be Done), and, when labelling, a step without a label.
//
// An Exec is reused between steps; nothing may keep a reference to it.
type Exec struct {
	thread int
	want   int // the alternative asked for; -1: the lowest one offered
	// offered is the set of alternatives the step's draw offered (bit a:
	// alternative a), 0 when it drew none; took is the one it took.
	offered uint64
	took    int
	// named: the draw was ChooseFrom, whose alternatives are identities
	// (a thread, a buffer) rather than positions: weak fairness applies to
	// each of them.
	named      bool
	outcome    Outcome
	labelling  bool
	recording  bool
	label      string
	footprint  []Access
	violation  *Violation
	contract   string // the first breach of the step contract
	events     []Event
	counts     []int64
	fenceLater bool         // Fence() without a memory: drain after the step (WithTSO)
	fresh      []freshWrite // new messages the step wrote under ARMv8 (WithARMv8's promises)
	// acquireFirst: the word whose lock the step takes (or blocks
	// taking) with LockWord before any other access, plus one; 0 if none
	// (WithARMv8NoPromises' compaction).
	acquireFirst uint32
	// WithARMv8NoPromises' scratch state and Exec for a thread's next
	// step, and the machine they belong to.
	armScratchOf *armMachine
	armScratch   State
	armExec      *Exec
	names        []string // the machine's thread names, for messages
	// leftOut are the properties whose failures Fail ignores: those a
	// machine built by Without leaves out, set for the steps it runs.
	leftOut map[string]bool
}

// An Outcome is what a step came to.
type Outcome uint8

// The outcomes of a step.
const (
	// Stepped: the step happened; its successor is a state of the machine.
	Stepped Outcome = iota
	// Blocked: the thread cannot step here (Exec.Block).
	Blocked
	// Finished: the thread has nothing left to do here (Exec.Done).
	Finished
)

var outcomeNames = [...]string{"stepped", "blocked", "done"}

func (o Outcome) String() string { return outcomeNames[o] }

// ModelError is the property of a breach of the step contract: the model,
// not the protocol, is wrong at that step.
const ModelError = "model"

// MaxAlternatives bounds the alternatives of one draw.
const MaxAlternatives = 64

// NewExec returns an Exec for a machine with the given number of metrics.
func NewExec(metrics int) *Exec { return &Exec{counts: make([]int64, metrics)} }

// SetModes switches labels (Labelling) and operation events (Recording)
// on or off for the following steps.
func (x *Exec) SetModes(labelling, recording bool) {
	x.labelling, x.recording = labelling, recording
}

// Reset prepares x for a step of thread t taking alternative alt, or, with
// alt = -1, the lowest alternative its draw offers.
func (x *Exec) Reset(t, alt int) {
	x.thread = t
	x.want = alt
	x.offered, x.took, x.named = 0, 0, false
	x.outcome = Stepped
	x.label = ""
	x.footprint = x.footprint[:0]
	x.violation = nil
	x.contract = ""
	x.fenceLater = false
	x.fresh = x.fresh[:0]
	x.acquireFirst = 0
	x.events = x.events[:0]
	for i := range x.counts {
		x.counts[i] = 0
	}
}

// Thread is the thread taking this step.
func (x *Exec) Thread() int { return x.thread }

// Labelling reports whether the step's label is wanted.
func (x *Exec) Labelling() bool { return x.labelling }

// Recording reports whether the step's operation events are wanted.
func (x *Exec) Recording() bool { return x.recording }

// Label sets the step's label: the real function and action it models,
// "function: action", with the values that matter. For a blocking step,
// what it waits for.
func (x *Exec) Label(s string) {
	if x.labelling {
		x.label = s
	}
}

// Labelf sets the step's label with fmt.Sprintf.
func (x *Exec) Labelf(format string, args ...any) {
	if x.labelling {
		x.label = fmt.Sprintf(format, args...)
	}
}

// StepLabel returns the label set by the step.
func (x *Exec) StepLabel() string { return x.label }

// Block says that the thread cannot take this step in this state. The
// caller returns at once; the label (when labelling) says what it waits
// for.
func (x *Exec) Block() {
	if x.outcome != Stepped {
		return
	}
	for _, a := range x.footprint {
		if a.Write {
			x.breach("the step blocks after it wrote %s: a blocking step must block before it changes anything", a.Object)
			break
		}
	}
	if len(x.events) > 0 {
		x.breach("the step blocks after it recorded an operation")
	}
	x.outcome = Blocked
}

// Done says that the thread has nothing left to do in this state.
func (x *Exec) Done() {
	if x.outcome != Stepped {
		return
	}
	if len(x.footprint) > 0 || len(x.events) > 0 || x.offered != 0 {
		x.breach("a thread that is done must not access, record or draw anything in that step")
	}
	x.outcome = Finished
}

// Outcome is what the step came to.
func (x *Exec) Outcome() Outcome { return x.outcome }

// Choose draws one of n alternatives (0..n-1) of the environment: the
// explorer follows each. n must be between 1 and MaxAlternatives; a step
// draws at most once.
func (x *Exec) Choose(n int) int {
	if n < 1 || n > MaxAlternatives {
		x.breach("Choose(%d): a draw offers 1 to %d alternatives", n, MaxAlternatives)
		return 0
	}
	return x.draw(uint64(1)<<uint(n)-1, false) // n = 64: the shift gives 0, so every bit
}

// ChooseFrom draws one of the alternatives in set (bit a: alternative a,
// a < 64) and returns it. Unlike Choose's positions, these alternatives
// are identities (a thread, a store buffer), and each gets weak fairness
// in progress checks: an alternative offered continuously is eventually
// taken. set must not be empty.
func (x *Exec) ChooseFrom(set uint64) int {
	if set == 0 {
		x.breach("ChooseFrom with no alternative")
		return 0
	}
	return x.draw(set, true)
}

func (x *Exec) draw(set uint64, named bool) int {
	if x.outcome != Stepped {
		x.breach("the step draws an alternative after it blocked or finished")
		return bits.TrailingZeros64(set)
	}
	if x.offered != 0 {
		x.breach("the step draws twice: split it into two steps (one draw per step)")
		return x.took
	}
	x.offered, x.named = set, named
	a := x.want
	if a < 0 {
		a = bits.TrailingZeros64(set)
	} else if a >= 64 || set&(1<<uint(a)) == 0 {
		x.breach("alternative %d is not among the %d the step offers", a, bits.OnesCount64(set))
		a = bits.TrailingZeros64(set)
	}
	x.took = a
	return a
}

// Offered returns the alternatives the step offered (bit a: alternative
// a; 0 when it drew none), the one it took, and whether they are
// identities (ChooseFrom).
func (x *Exec) Offered() (set uint64, took int, named bool) { return x.offered, x.took, x.named }

// breach records a breach of the step contract.
func (x *Exec) breach(format string, args ...any) {
	if x.contract == "" {
		x.contract = fmt.Sprintf(format, args...)
	}
}

// Contract returns the step's first breach of the contract, or "".
func (x *Exec) Contract() string { return x.contract }

// Fail records that an assertion of the modelled code (a BUG_ON, a
// g_assert) or a step-level property failed. Only the first failure of a
// step is kept.
func (x *Exec) Fail(property, format string, args ...any) {
	if x.violation == nil && !x.leftOut[property] {
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

// Count adds delta to metric m (an index into Properties.Metrics).
func (x *Exec) Count(m int, delta int64) { x.counts[m] += delta }

// Counts returns the metric deltas of the step, indexed like
// Properties.Metrics. The slice is reused by the next Reset.
func (x *Exec) Counts() []int64 { return x.counts }

// Footprint returns the shared-memory accesses of the step in order. The
// slice is reused by the next Reset.
func (x *Exec) Footprint() []Access { return x.footprint }

// Events returns the operation events of the step. The slice is reused by
// the next Reset.
func (x *Exec) Events() []Event { return x.events }

// Call records, when recording, that client starts an operation with the
// given input. A client has at most one operation in flight.
func (x *Exec) Call(client int, input any) {
	if x.recording {
		x.events = append(x.events, Event{Client: client, Input: input})
	}
}

// Return records, when recording, that client's operation in flight
// completes with output.
func (x *Exec) Return(client int, output any) {
	if x.recording {
		x.events = append(x.events, Event{Client: client, Output: output, Return: true})
	}
}

// Touch records an access to a location that is not a memory word (a
// lock, a TLB, a queue), so that footprints cover every shared object.
func (x *Exec) Touch(obj string, write bool) {
	x.footprint = append(x.footprint, Access{Op: OpTouch, Object: obj, Addr: -1, Read: !write, Write: write})
}
