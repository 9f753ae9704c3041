package model

import "fmt"

// Def defines a machine whose state is a plain struct S, as data: the
// quickest way to write a model. New turns it into a Machine; S gets its
// encoding, decoding and variables from a Codec, so a model is its state
// struct, its initial state and its steps:
//
//	type st struct {
//		Mem model.Mem
//		PC  [2]uint8
//	}
//	m := model.MustNew(model.Def[st]{
//		Threads: []string{"A", "B"},
//		Init:    func(s *st) { s.Mem = model.NewMem("x") },
//		Step: func(s *st, t int, x *model.Exec) {
//			if s.PC[t] == 1 {
//				x.Done()
//				return
//			}
//			x.Store(s.Mem, 0, 1)
//			x.Label("store x = 1")
//			s.PC[t] = 1
//		},
//	})
//
// Only Threads, Init and Step are required.
type Def[S any] struct {
	Threads []string
	// Init sets up the initial state in s, which starts zeroed.
	Init func(s *S)
	// Step runs thread t's next step on s in place (see Exec).
	Step func(s *S, t int, x *Exec)

	Invariants []InvariantOf[S]
	// Assertions names the properties Step reports with Exec.Fail and
	// Exec.Assert (see Properties.Assertions).
	Assertions []string
	Progress   []ProgressOf[S]
	Metrics    []string
	Spec       *Spec

	// Vars, when set, replaces the codec's variables in traces.
	Vars func(s *S) []Var
	// Canonical, when set, makes the machine model.Symmetric: it appends
	// the key of s's canonical representative (see Symmetric).
	Canonical func(s *S, b []byte) []byte
	// Independent, when set, makes the machine model.Independence.
	Independent func(s *S, a, b Choice) bool
}

// InvariantOf is an Invariant over the state struct S.
type InvariantOf[S any] struct {
	Name  string
	Check func(s *S) string
}

// ProgressOf is a Progress property over the state struct S.
type ProgressOf[S any] struct {
	Name    string
	Pending func(s *S) bool
}

// New builds the machine d defines, or says what is missing or which
// field of S has no canonical encoding.
func New[S any](d Def[S]) (Machine, error) {
	switch {
	case len(d.Threads) == 0:
		return nil, fmt.Errorf("model.Def: no threads")
	case d.Init == nil:
		return nil, fmt.Errorf("model.Def: no Init")
	case d.Step == nil:
		return nil, fmt.Errorf("model.Def: no Step")
	}
	c, err := NewCodec[S]()
	if err != nil {
		return nil, err
	}
	m := &defMachine[S]{d: d, codec: c}
	for _, inv := range d.Invariants {
		check := inv.Check
		m.props.Invariants = append(m.props.Invariants, Invariant{Name: inv.Name, Check: func(s State) string {
			return check(&s.(*defState[S]).v)
		}})
	}
	for _, p := range d.Progress {
		pending := p.Pending
		m.props.Progress = append(m.props.Progress, Progress{Name: p.Name, Pending: func(s State) bool {
			return pending(&s.(*defState[S]).v)
		}})
	}
	m.props.Metrics, m.props.Spec, m.props.Assertions = d.Metrics, d.Spec, d.Assertions
	switch {
	case d.Canonical != nil && d.Independent != nil:
		return &defBoth[S]{m}, nil
	case d.Canonical != nil:
		return &defSym[S]{m}, nil
	case d.Independent != nil:
		return &defInd[S]{m}, nil
	}
	return m, nil
}

// MustNew is New for models whose definition is fixed in the program: it
// panics on an error.
func MustNew[S any](d Def[S]) Machine {
	m, err := New(d)
	if err != nil {
		panic(err)
	}
	return m
}

// StateOf returns the struct inside a state of a machine built by New.
func StateOf[S any](s State) *S { return &s.(*defState[S]).v }

type defMachine[S any] struct {
	d     Def[S]
	codec *Codec[S]
	props Properties
}

type defState[S any] struct {
	v S
	m *defMachine[S]
}

func (s *defState[S]) AppendKey(b []byte) []byte { return s.m.codec.Append(b, &s.v) }
func (s *defState[S]) Decode(b []byte) error     { return s.m.codec.Decode(b, &s.v) }
func (s *defState[S]) CopyFrom(src State)        { s.m.codec.Copy(&s.v, &src.(*defState[S]).v) }
func (s *defState[S]) Vars() []Var {
	if s.m.d.Vars != nil {
		return s.m.d.Vars(&s.v)
	}
	return s.m.codec.Vars(&s.v, s.m.d.Threads)
}

func (m *defMachine[S]) Threads() []string { return m.d.Threads }
func (m *defMachine[S]) Init() State {
	s := &defState[S]{m: m}
	m.d.Init(&s.v)
	return s
}
func (m *defMachine[S]) Step(s State, t int, x *Exec) { m.d.Step(&s.(*defState[S]).v, t, x) }
func (m *defMachine[S]) Properties() Properties       { return m.props }

type defSym[S any] struct{ *defMachine[S] }

func (m *defSym[S]) CanonicalKey(s State, b []byte) []byte {
	return m.d.Canonical(&s.(*defState[S]).v, b)
}

type defInd[S any] struct{ *defMachine[S] }

func (m *defInd[S]) Independent(s State, a, b Choice) bool {
	return m.d.Independent(&s.(*defState[S]).v, a, b)
}

type defBoth[S any] struct{ *defMachine[S] }

func (m *defBoth[S]) CanonicalKey(s State, b []byte) []byte {
	return m.d.Canonical(&s.(*defState[S]).v, b)
}

func (m *defBoth[S]) Independent(s State, a, b Choice) bool {
	return m.d.Independent(&s.(*defState[S]).v, a, b)
}
