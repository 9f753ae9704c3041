package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/protocheck/protocheck/internal/clip"
)

// Without returns m with the named properties left out: invariants and
// progress properties not checked, the steps' assertions of those names
// not reported (a step that fails one goes on as if it had held), and, for
// Linearizability, no specification. It is for the question a first
// counterexample raises: what else does this protocol break once that is
// set aside (pvflush's 2017 host breaks preempted-not-running in two
// steps; without it, stale-tlb in twelve)? Deadlock cannot be left out:
// a state where no thread can step has nothing after it to explore.
//
// The machine keeps m's states, so they are copied as m's are, and it is
// Symmetric or Independence when m is. When m is itself a machine of
// Without, the result leaves out what m leaves out and names too.
func Without(m Machine, names ...string) (Machine, error) {
	if len(names) == 0 {
		return m, nil
	}
	if w, ok := m.(interface{ unwrap() *without }); ok {
		inner := w.unwrap()
		for n := range inner.left {
			names = append(names, n)
		}
		m = inner.m
	}
	props := m.Properties()
	known := props.Names()
	left := map[string]bool{}
	for _, n := range names {
		switch {
		case n == Deadlock:
			return nil, fmt.Errorf("deadlock cannot be left out: a state where no thread can step has no successor to explore")
		case !slices.Contains(known, n):
			return nil, fmt.Errorf("no property %q to leave out (properties: %s)", clip.String(n), strings.Join(known, ", "))
		}
		left[n] = true
	}
	w := &without{m: m, left: left, props: props}
	w.props.Invariants = slices.DeleteFunc(slices.Clone(props.Invariants), func(i Invariant) bool { return left[i.Name] })
	w.props.Progress = slices.DeleteFunc(slices.Clone(props.Progress), func(p Progress) bool { return left[p.Name] })
	w.props.Assertions = slices.DeleteFunc(slices.Clone(props.Assertions), func(a string) bool { return left[a] })
	if left[Linearizability] {
		w.props.Spec = nil
	}
	sym, isSym := m.(Symmetric)
	ind, isInd := m.(Independence)
	switch {
	case isSym && isInd:
		return &struct {
			*without
			Symmetric
			Independence
		}{w, sym, ind}, nil
	case isSym:
		return &struct {
			*without
			Symmetric
		}{w, sym}, nil
	case isInd:
		return &struct {
			*without
			Independence
		}{w, ind}, nil
	}
	return w, nil
}

// without is the machine Without builds.
type without struct {
	m     Machine
	left  map[string]bool
	props Properties
}

// unwrap is w itself, also through the structs that add Symmetric or
// Independence to it.
func (w *without) unwrap() *without { return w }

func (w *without) Threads() []string      { return w.m.Threads() }
func (w *without) Init() State            { return w.m.Init() }
func (w *without) Properties() Properties { return w.props }

// Step runs m's step with the left-out assertions ignored by Fail (a
// failure of a property that is checked, later in the same step, is still
// the step's).
func (w *without) Step(s State, t int, x *Exec) {
	saved := x.leftOut
	x.leftOut = w.left
	w.m.Step(s, t, x)
	x.leftOut = saved
}
