package rt

import (
	"fmt"
	"sync"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/model"
)

// Note completes the label of the step the calling goroutine is taking
// with what the step found (" 1->5 ok", " (PREEMPTED)"): a model's labels
// carry the values a step read, which are not known when the scheduling
// point is chosen. Call it right after the primitive, before the next one.
// Controlled: appended to the last step's label; real mode: nothing (the
// arguments are still evaluated, so keep Note out of hot loops that stress
// tests time).
func (e *Env) Note(detail string) {
	c := e.c
	if c == nil || c.aborting {
		return
	}
	if t := c.self(); t == nil || len(c.run.Steps) == 0 || c.run.Steps[len(c.run.Steps)-1].Thread != t.name {
		return
	}
	c.run.Steps[len(c.run.Steps)-1].Label += detail
}

// Notef is Note with fmt.Sprintf, formatted only under control.
func (e *Env) Notef(format string, args ...any) {
	if e.c == nil {
		return
	}
	e.Note(fmt.Sprintf(format, args...))
}

// history records the high-level operations of a run for linearizability.
// Under control, time is the index of the step that records the event (so
// a history means the same as a model's); in real mode, a counter taken
// under the lock orders events as they happened.
type history struct {
	mu    sync.Mutex
	h     model.History
	clock int64
	err   error
}

func (e *Env) record(ev model.Event) {
	hs := &e.hist
	hs.mu.Lock()
	defer hs.mu.Unlock()
	t := hs.clock
	if c := e.c; c != nil {
		t = int64(len(c.run.Steps)) - 1
		if t < 0 {
			t = 0
		}
	} else {
		hs.clock++
	}
	if err := hs.h.Record(t, []model.Event{ev}); err != nil && hs.err == nil {
		hs.err = err
	}
}

// Call records that client starts a high-level operation with input (the
// initiator starts an unmap-and-flush; a vCPU reads a page). Record it
// before the operation's first shared access.
func (e *Env) Call(client int, input any) { e.record(model.Event{Client: client, Input: input}) }

// Return records that client's operation completes with output. Record it
// after the operation's last shared access.
func (e *Env) Return(client int, output any) {
	e.record(model.Event{Client: client, Output: output, Return: true})
}

// Operations returns the recorded history as porcupine operations
// (operations still in flight end with model.Pending), or an error if a
// client called twice without returning or returned without a call.
func (e *Env) Operations() ([]porcupine.Operation, error) {
	e.hist.mu.Lock()
	defer e.hist.mu.Unlock()
	return e.hist.h.Operations(), e.hist.err
}

// CheckHistory checks the recorded history against spec: a
// model.Linearizability violation, a malformed-history violation, or nil.
func (e *Env) CheckHistory(spec *model.Spec) *model.Violation {
	ops, err := e.Operations()
	if err != nil {
		return &model.Violation{Property: model.Linearizability, Message: "malformed history: " + err.Error()}
	}
	return model.CheckHistory(spec, ops)
}
