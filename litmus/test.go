package litmus

import (
	"fmt"
	"strings"
)

// A Test is a parsed litmus test: its shared locations with their initial
// values, one program per thread, and the condition on final states.
type Test struct {
	Arch string // "C" or "AArch64"
	Name string
	// Locs are the shared locations, in order of first mention; Init
	// their initial values (a location's address where the test
	// initialises it with another location, as C's int *p=y).
	Locs []string
	Init []uint64
	// Threads are the programs, thread i named "Pi".
	Threads []*Thread
	// Cond is the final condition; Locations the extra things the test
	// asks to print (its "locations [...]" line).
	Cond      Cond
	Locations []Var
	// Filter, when set, keeps only the outcomes where it holds (herd's
	// "filter" line) before the condition is judged.
	Filter *Expr
	// Result is the result the file states in a comment ("Result: Never"
	// in the kernel's tests), or "".
	Result string
}

// A Thread is one thread's program.
type Thread struct {
	Name string
	// Regs names the registers (C: local variables; AArch64: X0..X30 as
	// "X0"...); RegInit their initial values.
	Regs    []string
	RegInit []uint64
	Code    []Insn
}

func (th *Thread) reg(name string) int {
	for i, r := range th.Regs {
		if r == name {
			return i
		}
	}
	th.Regs = append(th.Regs, name)
	th.RegInit = append(th.RegInit, 0)
	return len(th.Regs) - 1
}

// LocBase is the value of the address of location 0; location i's address
// is LocBase+i. Litmus values are small integers, so the two never meet.
const LocBase = 1 << 40

func (t *Test) loc(name string) int {
	for i, l := range t.Locs {
		if l == name {
			return i
		}
	}
	t.Locs = append(t.Locs, name)
	t.Init = append(t.Init, 0)
	return len(t.Locs) - 1
}

// FormatValue renders v: a location's name for its address, else decimal.
func (t *Test) FormatValue(v uint64) string {
	if v >= LocBase && v < LocBase+uint64(len(t.Locs)) {
		return t.Locs[v-LocBase]
	}
	return fmt.Sprint(int64(v))
}

// A Var names what a condition reads: register Reg of thread Thread, or,
// with Thread = -1, location Loc's final value.
type Var struct {
	Thread int
	Reg    string
	Loc    string
}

func (v Var) String() string {
	if v.Thread < 0 {
		return v.Loc
	}
	return fmt.Sprintf("%d:%s", v.Thread, v.Reg)
}

// A Cond is a test's final condition.
type Cond struct {
	Kind string // "exists", "~exists" or "forall"
	Expr *Expr
	Text string // as written, normalised spaces
}

// An Expr is a proposition over final values.
type Expr struct {
	Op       string // "=", "!=", "/\\", "\\/", "~", "true", "false"
	Var      Var
	Value    uint64
	ValueLoc string // a location name compared with (its address)
	L, R     *Expr
}

func (e *Expr) vars(out []Var) []Var {
	if e == nil {
		return out
	}
	switch e.Op {
	case "=", "!=":
		for _, v := range out {
			if v == e.Var {
				return out
			}
		}
		return append(out, e.Var)
	}
	return e.R.vars(e.L.vars(out))
}

func (e *Expr) eval(get func(Var) uint64) bool {
	switch e.Op {
	case "=":
		return get(e.Var) == e.Value
	case "!=":
		return get(e.Var) != e.Value
	case "/\\":
		return e.L.eval(get) && e.R.eval(get)
	case "\\/":
		return e.L.eval(get) || e.R.eval(get)
	case "~":
		return !e.L.eval(get)
	case "true":
		return true
	}
	return false
}

func (e *Expr) String() string {
	switch e.Op {
	case "=", "!=":
		return e.Var.String() + e.Op + e.valueString()
	case "/\\", "\\/":
		return "(" + e.L.String() + " " + e.Op + " " + e.R.String() + ")"
	case "~":
		return "~" + e.L.String()
	}
	return e.Op
}

func (e *Expr) valueString() string {
	if e.ValueLoc != "" {
		return e.ValueLoc
	}
	return fmt.Sprint(int64(e.Value))
}

// An ParseError is a syntax or semantic error in a litmus file, with the
// line it is on.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:", e.Line)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(e.Msg)
	return b.String()
}
