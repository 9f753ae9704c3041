package explorer

import (
	"bytes"
	"fmt"
	"math/bits"

	"github.com/protocheck/protocheck/model"
)

// stepper runs steps of a machine on encoded states. It is the one place
// where a step is run and its outcome turned into enabled choices, a
// successor, a possible violation or a breach of the step contract,
// shared by every strategy, by Execute and by replay.
//
// A state at rest is its encoding. To step it, the stepper decodes it into
// a scratch state (made once by the machine's Init), runs the machine's
// Step there in place, and, if the step happened, encodes the scratch as
// the successor. Nothing is allocated per step.
type stepper struct {
	m       model.Machine
	names   []string
	n       int
	props   model.Properties
	x       *model.Exec
	scratch model.State
	// base holds the decoded parent when the machine's states are
	// model.Copier: decoded once per state, copied into scratch for each
	// step. Otherwise each step decodes the parent's encoding.
	base   model.State
	copier model.Copier
	parent []byte   // what load was given
	_      [64]byte // a worker's stepper shares no cache line with what is allocated next
}

func newStepper(m model.Machine) *stepper {
	props := m.Properties()
	st := &stepper{m: m, names: m.Threads(), props: props, x: model.NewExec(len(props.Metrics)), scratch: m.Init()}
	st.n = len(st.names)
	st.x.SetThreadNames(st.names)
	if c, ok := st.scratch.(model.Copier); ok {
		st.copier, st.base = c, m.Init()
	}
	return st
}

// load makes the state encoded as parent the one that step runs from.
func (st *stepper) load(parent []byte) {
	st.parent = parent
	if st.copier != nil {
		decode(st.base, parent)
	}
}

// step runs thread t's step with alternative alt (-1: the lowest offered)
// from the loaded state, on the scratch state, which then holds the
// successor, and st.x the step's record.
func (st *stepper) step(t, alt int) model.Outcome {
	if st.copier != nil {
		st.copier.CopyFrom(st.base)
	} else {
		decode(st.scratch, st.parent)
	}
	st.x.Reset(t, alt)
	st.m.Step(st.scratch, t, st.x)
	return st.x.Outcome()
}

// run loads parent and runs one step from it.
func (st *stepper) run(parent []byte, t, alt int) model.Outcome {
	st.load(parent)
	return st.step(t, alt)
}

func decode(s model.State, b []byte) {
	if err := s.Decode(b); err != nil {
		panic(fmt.Sprintf("explorer: %T cannot decode its own encoding: %v", s, err))
	}
}

// checkState checks every invariant of s.
func (st *stepper) checkState(s model.State) *model.Violation {
	for _, inv := range st.props.Invariants {
		if msg := inv.Check(s); msg != "" {
			return &model.Violation{Property: inv.Name, Message: msg}
		}
	}
	return nil
}

// verdict checks a step that happened (st.x and the scratch): the step
// contract, the step's assertions, then the invariants of the successor.
// succ is the successor's encoding and parent the state's, for the no-op
// check.
func (st *stepper) verdict(parent, succ []byte) *model.Violation {
	x := st.x
	if c := x.Contract(); c != "" {
		return st.breach(c)
	}
	if v := x.Violation(); v != nil {
		if !st.props.Declares(v.Property) {
			return st.breach(fmt.Sprintf("it reports a violation of %q, which the machine does not declare (Properties.Assertions lists what steps assert)", v.Property))
		}
		return v
	}
	// Operation events are left out on purpose: they are recorded only in
	// some runs, and whether a step is a no-op must not depend on that.
	if len(x.Footprint()) == 0 && !counted(x.Counts()) && bytes.Equal(parent, succ) {
		return st.breach("the step changed nothing and accessed nothing (a no-op): a thread that cannot step should Block, one with nothing left to do should be Done")
	}
	return st.checkState(st.scratch)
}

func counted(cs []int64) bool {
	for _, c := range cs {
		if c != 0 {
			return true
		}
	}
	return false
}

func (st *stepper) breach(msg string) *model.Violation {
	return &model.Violation{Property: model.ModelError, Message: fmt.Sprintf("%s's step breaks the step contract: %s", st.names[st.x.Thread()], msg)}
}

// A threadSet is a set of thread indices (a machine has at most 64
// threads, the limit of model.Cond).
type threadSet = uint64

// forEach runs every enabled choice of the state encoded as parent, in
// order (thread, then alternative), calling fn after each step that
// happened, with st.x holding its record and st.scratch its successor; fn
// returns false to stop. It returns the threads that blocked and the
// threads that were done. A step that breaches the contract while
// blocking or finishing is passed to fn too (as if it had happened), so
// that the breach is reported.
func (st *stepper) forEach(parent []byte, fn func(c model.Choice) bool) (blocked, done threadSet) {
	st.load(parent)
	for t := 0; t < st.n; t++ {
		alt := -1
		for {
			out := st.step(t, alt)
			if out != model.Stepped && st.x.Contract() == "" {
				if out == model.Blocked {
					blocked |= 1 << uint(t)
				} else {
					done |= 1 << uint(t)
				}
				break
			}
			set, took, _ := st.x.Offered()
			if !fn(model.Choice{Thread: t, Alt: took}) {
				return blocked, done
			}
			if out != model.Stepped {
				break
			}
			// The next alternative above the one taken.
			rest := set &^ (uint64(1)<<uint(took+1) - 1)
			if took >= 63 || rest == 0 {
				break
			}
			alt = bits.TrailingZeros64(rest)
		}
	}
	return blocked, done
}

// deadlock returns the deadlock violation of a state (encoded as key)
// whose blocked threads are blocked: each is named with what it waits
// for, from its step's label, re-run with labels on. It returns nil when
// no thread is blocked (every thread is done).
func (st *stepper) deadlock(key []byte, blocked threadSet) *model.Violation {
	if blocked == 0 {
		return nil
	}
	msg := ""
	for t := 0; t < st.n; t++ {
		if blocked&(1<<uint(t)) == 0 {
			continue
		}
		if msg != "" {
			msg += "; "
		}
		w := st.waitsFor(key, t)
		if w == "" {
			w = "nothing it can name"
		}
		msg += fmt.Sprintf("%s waits for %s", st.names[t], w)
	}
	return &model.Violation{Property: model.Deadlock, Message: "no thread can step: " + msg}
}

// waitsFor re-runs thread t's step on the state encoded as key with
// labels on and returns its label: what a blocked thread waits for.
func (st *stepper) waitsFor(key []byte, t int) string {
	l, r := st.x.Labelling(), st.x.Recording()
	st.x.SetModes(true, false)
	defer st.x.SetModes(l, r)
	st.run(key, t, -1)
	return st.x.StepLabel()
}

// enabled returns the enabled choices of the state encoded as key, and
// the threads that are blocked there.
func (st *stepper) enabled(key []byte) ([]model.Choice, threadSet) {
	var out []model.Choice
	blocked, _ := st.forEach(key, func(c model.Choice) bool {
		out = append(out, c)
		return true
	})
	return out, blocked
}
