package explorer

import (
	"errors"

	"github.com/protocheck/protocheck/model"
)

// An Expander expands encoded states exactly as bfs does, for search
// engines outside this package (a pipeline on a cluster): the same
// successors in the same order, with the same keys, hashes and verdicts,
// computed by the same code. It is not safe for concurrent use; make one
// per goroutine.
type Expander struct {
	w *expander
	c chunk
	m model.Machine
}

// NewExpander returns an Expander for m; with symmetry, keys are the
// machine's canonical keys (it must be model.Symmetric).
func NewExpander(m model.Machine, symmetry bool) (*Expander, error) {
	keyOf := plainKey
	if symmetry {
		sym, ok := m.(model.Symmetric)
		if !ok {
			return nil, errNoSymmetry
		}
		keyOf = sym.CanonicalKey
	}
	return &Expander{w: newExpander(m, keyOf, symmetry), m: m}, nil
}

// errNoSymmetry refuses symmetry reduction for a machine that says nothing
// of which of its threads are interchangeable.
var errNoSymmetry = errors.New("symmetry reduction: this model does not say which of its threads are interchangeable (it does not implement model.Symmetric)")

// A Successor is one enabled choice of an expanded state and where it
// leads. Its byte slices are valid until the next call of Expand.
type Successor struct {
	Choice model.Choice
	// State is the successor's encoding; Key its visited-set key (State
	// itself, or its orbit's canonical key under symmetry) and Hash the
	// key's 64-bit fingerprint.
	State, Key []byte
	Hash       uint64
	// Violation is the step's or the successor's violation, if any.
	Violation *model.Violation
}

// Initial returns the initial state's encoding, its key, the key's
// fingerprint and the initial state's violation, if any.
func (e *Expander) Initial() (state, key []byte, hash uint64, v *model.Violation) {
	s := e.m.Init()
	state = s.AppendKey(nil)
	key = e.w.keyOf(s, nil)
	return state, key, Fingerprint(key), e.w.st.checkState(s)
}

// Expand returns the successors of the state encoded as state in bfs's
// order (by thread, then alternative), stopping after the first that
// violates a property, as bfs does. When there are none, deadlock is the
// state's deadlock violation (nil when every thread is done).
func (e *Expander) Expand(state []byte) (succs []Successor, deadlock *model.Violation) {
	c := &e.c
	c.reset()
	e.w.expand(state, c)
	x := c.states[0]
	for k := x.first; k < x.end; k++ {
		r := &c.succs[k]
		ch, _ := unpackChoice(r.ch)
		var v *model.Violation
		if r.v != 0 {
			v = c.viols[r.v-1]
		}
		succs = append(succs, Successor{
			Choice: ch, State: c.state(r), Key: c.key(r),
			Hash: fingerprint(r.h), Violation: v,
		})
	}
	return succs, x.deadlock
}

// Fingerprint is the 64-bit fingerprint bfs gives a key (never 0).
func Fingerprint(key []byte) uint64 { return fingerprint(hashKey(key)) }
