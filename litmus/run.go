package litmus

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// Parse reads a litmus test in the C or the AArch64 format (the first word
// of the file says which). file names it in errors.
func Parse(file string, data []byte) (*Test, error) {
	src, comments, err := stripComments(string(data))
	if err != nil {
		if pe, ok := err.(*ParseError); ok {
			pe.File = file
		}
		return nil, err
	}
	f := strings.Fields(src)
	if len(f) == 0 {
		return nil, &ParseError{File: file, Line: 1, Msg: "empty file"}
	}
	// The header is on the first non-blank line.
	lines := strings.Split(src, "\n")
	skip := 0
	for skip < len(lines) && strings.TrimSpace(lines[skip]) == "" {
		skip++
	}
	switch f[0] {
	case "C":
		return parseC(file, src, comments)
	case "AArch64":
		t, err := parseAArch64(file, strings.Join(lines[skip:], "\n"), comments)
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) && pe.Line > 0 {
				pe.Line += skip
			}
		}
		return t, err
	}
	return nil, &ParseError{File: file, Line: skip + 1, Msg: fmt.Sprintf("unsupported architecture %q (C and AArch64 are read)", f[0])}
}

// Models are the memory models a test runs under.
var Models = []string{"sc", "tso", "armv8"}

// Build returns the machine of t under a memory model: "sc", "tso" or
// "armv8".
func Build(t *Test, mm string) (model.Machine, error) {
	m := Machine(t)
	switch mm {
	case "sc":
		return m, nil
	case "tso":
		return model.WithTSO(m, MemOf), nil
	case "armv8":
		return model.WithARMv8PromiseFirst(m, MemOf), nil
	case "armv8-anytime":
		return model.WithARMv8(m, MemOf), nil
	}
	return nil, fmt.Errorf("unknown memory model %q (sc, tso or armv8)", mm)
}

// A Result is what running a test found.
type Result struct {
	Test  *Test
	Model string
	// Vars are the variables an outcome shows: the condition's, then
	// those of the locations line.
	Vars []Var
	// Outcomes are the distinct final values of Vars, each rendered
	// "0:r0=1; x=2;", sorted; Satisfy those where the condition's
	// proposition holds.
	Outcomes []string
	Satisfy  []bool
	// States is the number of states explored; Complete the number of
	// complete executions' final states among them.
	States, Complete int
	// Bounded: the search stopped at MaxStates.
	Bounded bool
}

// Observable reports whether some outcome satisfies the proposition.
func (r *Result) Observable() bool { return slices.Contains(r.Satisfy, true) }

// Validated reports whether the condition holds: for exists, some outcome
// satisfies it; for ~exists, none does; for forall, every one does.
func (r *Result) Validated() bool {
	switch r.Test.Cond.Kind {
	case "~exists":
		return !r.Observable()
	case "forall":
		return !slices.Contains(r.Satisfy, false)
	}
	return r.Observable()
}

// Verdict is herd's word for the outcomes: Never (no outcome satisfies
// the proposition), Always (every one does) or Sometimes.
func (r *Result) Verdict() string {
	n := 0
	for _, s := range r.Satisfy {
		if s {
			n++
		}
	}
	switch {
	case n == 0:
		return "Never"
	case n == len(r.Satisfy):
		return "Always"
	}
	return "Sometimes"
}

// Run explores every execution of t under mm (the explorer's bfs
// expansion, state by state, merging equal states) and collects the final
// values of the complete executions. maxStates bounds the search (0: no
// bound).
func Run(t *Test, mm string, maxStates int) (*Result, error) {
	m, err := Build(t, mm)
	if err != nil {
		return nil, err
	}
	e, err := explorer.NewExpander(m, false)
	if err != nil {
		return nil, err
	}
	r := &Result{Test: t, Model: mm}
	r.Vars = t.Cond.Expr.vars(nil)
	for _, v := range t.Locations {
		if !slices.Contains(r.Vars, v) {
			r.Vars = append(r.Vars, v)
		}
	}
	init, key, _, v := e.Initial()
	if v != nil {
		return nil, fmt.Errorf("%s: initial state: %v", t.Name, v)
	}
	seen := map[string]bool{string(key): true}
	frontier := [][]byte{slices.Clone(init)}
	outcomes := map[string]bool{}
	scratch := m.Init()
	for len(frontier) > 0 {
		var next [][]byte
		for _, st := range frontier {
			succs, dead := e.Expand(st)
			if len(succs) == 0 {
				if dead != nil {
					continue // a thread waits for ever (a lock never released)
				}
				if err := scratch.Decode(st); err != nil {
					return nil, err
				}
				mem := MemOf(scratch)
				if mem.Stuck() || promised(mem, len(t.Threads)) {
					continue
				}
				if t.Filter != nil && !t.Filter.eval(r.getter(scratch)) {
					continue
				}
				r.Complete++
				out, sat := r.outcome(scratch)
				if _, ok := outcomes[out]; !ok {
					outcomes[out] = sat
				}
				continue
			}
			for _, s := range succs {
				if s.Violation != nil {
					return nil, fmt.Errorf("%s under %s: %v", t.Name, mm, s.Violation)
				}
				if seen[string(s.Key)] {
					continue
				}
				if maxStates > 0 && len(seen) >= maxStates {
					r.Bounded = true
					continue
				}
				seen[string(s.Key)] = true
				next = append(next, slices.Clone(s.State))
			}
		}
		frontier = next
	}
	r.States = len(seen)
	for o := range outcomes {
		r.Outcomes = append(r.Outcomes, o)
	}
	slices.Sort(r.Outcomes)
	for _, o := range r.Outcomes {
		r.Satisfy = append(r.Satisfy, outcomes[o])
	}
	return r, nil
}

func promised(mem *model.Mem, threads int) bool {
	for t := 0; t < threads; t++ {
		if mem.Promises(t) > 0 {
			return true
		}
	}
	return false
}

// outcome renders a final state's values of r.Vars and evaluates the
// condition's proposition on it.
func (r *Result) outcome(s model.State) (string, bool) {
	get := r.getter(s)
	var b strings.Builder
	for _, v := range r.Vars {
		fmt.Fprintf(&b, "%s=%s; ", v, r.Test.FormatValue(get(v)))
	}
	return strings.TrimSuffix(b.String(), " "), r.Test.Cond.Expr.eval(get)
}

// getter reads a final state's values.
func (r *Result) getter(s model.State) func(Var) uint64 {
	st := s.(*state)
	return func(v Var) uint64 {
		if v.Thread < 0 {
			for i, l := range r.Test.Locs {
				if l == v.Loc {
					return st.mem.Peek(model.Addr(i))
				}
			}
			return 0
		}
		for i, name := range r.Test.Threads[v.Thread].Regs {
			if name == v.Reg {
				return st.regs[v.Thread][i]
			}
		}
		return 0
	}
}

// Format renders r as check litmus prints it.
func (r *Result) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Test %s (%s) under %s\n", r.Test.Name, r.Test.Arch, r.Model)
	if r.Test.Filter != nil {
		fmt.Fprintf(&b, "Filter %s\n", r.Test.Filter)
	}
	fmt.Fprintf(&b, "Outcomes %d (%d states, %d final)\n", len(r.Outcomes), r.States, r.Complete)
	for i, o := range r.Outcomes {
		mark := "  "
		if r.Satisfy[i] {
			mark = "* "
		}
		fmt.Fprintf(&b, "%s%s\n", mark, o)
	}
	n := 0
	for _, s := range r.Satisfy {
		if s {
			n++
		}
	}
	what := "never observable"
	if r.Observable() {
		what = "observable"
	}
	if r.Bounded {
		what += " in the states explored (the search was cut short)"
	}
	fmt.Fprintf(&b, "Condition %s: %s\n", r.Test.Cond.Text, what)
	fmt.Fprintf(&b, "Observation %s %s %d %d\n", r.Test.Name, r.Verdict(), n, len(r.Satisfy)-n)
	return b.String()
}
