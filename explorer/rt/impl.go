package rt

import "github.com/protocheck/protocheck/model"

// An Impl is a protocol's real concurrent implementation, written once
// against Env and run three ways: under the Go scheduler (Real, for stress
// and the race detector), under a controlled strategy (Controlled,
// Explore), and driven by a model's counterexample (ReplayExpect).
//
// The implementation yields at the same points, with the same labels, as
// the model's steps (completing a label with Env.Note where the model's
// label carries a value read), and creates its goroutines in the order and
// with the names of the model's Threads, so that one schedule means the
// same execution on both.
type Impl struct {
	// Variants lists the model variants the code implements: those that
	// are a change of code (a bit, a compared result, a missing lock).
	Variants []string
	// New prepares one execution of variant with params resolved by the
	// model's Protocol.Resolve. It returns the body: called with a fresh
	// Env, it creates the objects and goroutines and returns a check to
	// run after every goroutine has exited (the final-state invariants
	// the code can only check at the end; nil if none). Operation
	// histories recorded with Env.Call and Env.Return are checked against
	// the model's Spec by the caller.
	New func(variant string, p model.Params) (Body, error)
	// Gate, when set, adapts a strategy for controlled runs that choose
	// on their own (not replays): it returns the strategy to use and the
	// implementation to run under it. An implementation needs one when
	// which alternatives a step has depends on state that changes while
	// the goroutine is parked (e500mc's budgets), so the scheduler must
	// ask the code when it decides rather than when the goroutine parked.
	Gate func(s Strategy) (Strategy, *Impl)
}

// A Body is one execution of an implementation.
type Body func(e *Env) (check func() *model.Violation)

// Supports reports whether the implementation has variant.
func (im *Impl) Supports(variant string) bool {
	for _, v := range im.Variants {
		if v == variant {
			return true
		}
	}
	return false
}
