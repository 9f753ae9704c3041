package model

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// An Event is the start (Call) or completion (Return) of a high-level
// operation by a client, recorded by a step. Histories of whole executions
// are checked for linearizability against the protocol's Spec.
type Event struct {
	Client int
	Input  any
	Output any
	Return bool
}

// Pending is the output given to an operation that had not returned when
// its execution ended. porcupine treats a call without a return as a
// failure, so, as in porcupine's own Jepsen tests, it gets a return at the
// end of time with this output; a Spec must accept Pending as "any output".
type Pending struct{}

func (Pending) String() string { return "pending" }

// A Spec is the sequential specification of a protocol's operations.
type Spec struct {
	// Name says what is specified ("page-table entry as a register").
	Name string
	// Model is the porcupine model. Its Step must accept Pending outputs.
	Model porcupine.Model
}

// A History accumulates the operation events of one execution in logical
// time: the step index is the time of the events it records.
type History struct {
	ops  []porcupine.Operation
	open []int // per client: index into ops of its operation in flight, or -1
}

// Reset empties the history for reuse.
func (h *History) Reset() {
	h.ops = h.ops[:0]
	h.open = h.open[:0]
}

// Record adds the events of the step taken at logical time t. A call and
// its return may come from the same step (an instantaneous operation); the
// return is then placed just after the call.
func (h *History) Record(t int64, events []Event) error {
	for _, e := range events {
		if e.Client < 0 {
			return fmt.Errorf("client %d: client ids are not negative", e.Client)
		}
		for e.Client >= len(h.open) {
			h.open = append(h.open, -1)
		}
		i := h.open[e.Client]
		if !e.Return {
			if i >= 0 {
				return fmt.Errorf("client %d calls an operation while another is in flight", e.Client)
			}
			h.open[e.Client] = len(h.ops)
			h.ops = append(h.ops, porcupine.Operation{ClientId: e.Client, Input: e.Input, Call: 2 * t, Return: -1})
			continue
		}
		if i < 0 {
			return fmt.Errorf("client %d returns with no operation in flight", e.Client)
		}
		h.ops[i].Output = e.Output
		h.ops[i].Return = 2*t + 1
		h.open[e.Client] = -1
	}
	return nil
}

// Operations returns the history as porcupine operations, completing the
// operations still in flight with a Pending output after every other event.
func (h *History) Operations() []porcupine.Operation {
	var end int64
	for _, op := range h.ops {
		if op.Return > end {
			end = op.Return
		}
		if op.Call > end {
			end = op.Call
		}
	}
	out := make([]porcupine.Operation, len(h.ops))
	copy(out, h.ops)
	for i := range out {
		if out[i].Return < 0 {
			out[i].Output = Pending{}
			out[i].Return = end + 1
		}
	}
	return out
}

// Len is the number of operations recorded.
func (h *History) Len() int { return len(h.ops) }

// CheckHistory checks ops against spec and returns a Linearizability
// violation, or nil. The message lists the operations in call order.
func CheckHistory(spec *Spec, ops []porcupine.Operation) *Violation {
	if spec == nil || len(ops) == 0 {
		return nil
	}
	if porcupine.CheckOperations(spec.Model, ops) {
		return nil
	}
	sorted := append([]porcupine.Operation(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	msg := fmt.Sprintf("the history has no linearization as a %s:", spec.Name)
	for _, op := range sorted {
		d := fmt.Sprintf("%v -> %v", op.Input, op.Output)
		if spec.Model.DescribeOperation != nil {
			d = spec.Model.DescribeOperation(op.Input, op.Output)
		}
		msg += fmt.Sprintf(" [client %d, t=%d..%d: %s]", op.ClientId, op.Call/2, op.Return/2, d)
	}
	return &Violation{Property: Linearizability, Message: msg}
}
