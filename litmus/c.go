package litmus

import (
	"strconv"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// parseC parses the C litmus format of herdtools7 and of the kernel's
// tools/memory-model: "C NAME", the initial state "{...}", functions
// P0(...) {...}, P1(...) {...}, then the condition. The kernel's
// primitives compile to the instructions arm64 uses for them:
//
//	READ_ONCE, a plain read           LDR
//	WRITE_ONCE, a plain write         STR
//	smp_load_acquire                  LDAR
//	smp_store_release                 STLR
//	rcu_dereference                   LDR (the address dependency is kept)
//	rcu_assign_pointer                STLR
//	smp_mb, smp_mb__after_spinlock,   DMB ISH
//	smp_mb__before_atomic, smp_mb__after_atomic
//	smp_rmb                           DMB ISHLD
//	smp_wmb                           DMB ISHST
//	spin_lock                         CASA lock 0 -> 1, retried until it succeeds
//	spin_unlock                       STLR lock = 0
//	spin_is_locked                    LDR lock != 0
//	xchg, cmpxchg, atomic_xchg,       SWPAL, CASAL, LDADDAL (LSE, as arm64 runs them
//	atomic_inc_return ...             from ARMv8.1 on: a failed CASAL is an acquire read)
//	xchg_relaxed, cmpxchg_relaxed     SWP, CAS
//	xchg_acquire, cmpxchg_acquire     SWPA, CASA
//	xchg_release, cmpxchg_release     SWPL, CASL
//	atomic_inc, atomic_add            STADD
//	atomic_read, atomic_set           LDR, STR
//	rcu_read_lock, rcu_read_unlock    nothing
//
// if (E) S [else S] compiles to a conditional branch on E's value (a
// control dependency); expressions are registers, constants, the
// primitives above, *E, and ==, !=, +, -, &, |, ^ and !.
func parseC(file, src, comments string) (*Test, error) {
	t := &Test{Arch: "C", Result: resultOf(comments)}
	p := &tokens{t: tokenize(src, 1), file: file}
	if err := p.expect("C"); err != nil {
		return nil, err
	}
	t.Name = p.next()
	// A name may contain characters the tokenizer splits on (+, -, .).
	for p.i < len(p.t) && p.t[p.i].line == p.t[p.i-1].line && p.peek() != "{" {
		t.Name += p.next()
	}
	// Skip a quoted doc string or key=value lines up to "{".
	for p.peek() != "{" && p.peek() != "" {
		p.next()
	}
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	type initEntry struct {
		name string
		val  string
		line int
	}
	var inits []initEntry
	for !p.accept("}") {
		if p.peek() == "" {
			return nil, p.errf("initial state { not closed")
		}
		if p.accept(";") {
			continue
		}
		// [type] [*] name [= value] ;
		var words []string
		line := p.line()
		for p.peek() != ";" && p.peek() != "=" && p.peek() != "}" && p.peek() != "" {
			if w := p.next(); w != "*" {
				words = append(words, w)
			}
		}
		if len(words) == 0 {
			return nil, p.errf("expected a declaration in the initial state")
		}
		e := initEntry{name: words[len(words)-1], line: line}
		if p.accept("=") {
			var v []string
			for p.peek() != ";" && p.peek() != "}" && p.peek() != "" {
				v = append(v, p.next())
			}
			e.val = strings.Join(v, "")
		}
		if strings.Contains(e.name, ":") {
			return nil, &ParseError{File: file, Line: line, Msg: "register initialisation is not supported"}
		}
		t.loc(e.name)
		inits = append(inits, e)
	}
	for _, e := range inits {
		if e.val == "" {
			continue
		}
		if strings.HasPrefix(e.val, "ATOMIC_INIT(") && strings.HasSuffix(e.val, ")") {
			e.val = strings.TrimSuffix(strings.TrimPrefix(e.val, "ATOMIC_INIT("), ")")
		}
		neg := strings.HasPrefix(e.val, "-")
		v, isNum, err := number(strings.TrimPrefix(e.val, "-"), neg)
		if isNum {
			if err != nil {
				return nil, &ParseError{File: file, Line: e.line, Msg: err.Error()}
			}
			t.Init[t.loc(e.name)] = v
			continue
		}
		name := strings.TrimPrefix(e.val, "&")
		if name == "" || !isIdent(rune(name[0])) || name[0] >= '0' && name[0] <= '9' {
			return nil, &ParseError{File: file, Line: e.line, Msg: "bad initial value " + strconv.Quote(e.val)}
		}
		t.Init[t.loc(e.name)] = LocBase + uint64(t.loc(name))
	}
	// The threads.
	for {
		w := p.peek()
		if len(w) < 2 || w[0] != 'P' {
			break
		}
		n, err := strconv.Atoi(w[1:])
		if err != nil || n != len(t.Threads) {
			return nil, p.errf("expected P%d, found %q", len(t.Threads), w)
		}
		p.next()
		th := &Thread{Name: w}
		t.Threads = append(t.Threads, th)
		c := &cComp{t: t, th: th, p: p, params: map[string]bool{}}
		if err := c.params0(); err != nil {
			return nil, err
		}
		if err := c.block(); err != nil {
			return nil, err
		}
	}
	if len(t.Threads) == 0 {
		return nil, p.errf("no thread P0")
	}
	err := parseFinal(t, p, func(n int, r string) (string, error) {
		for _, x := range t.Threads[n].Regs {
			if x == r {
				return r, nil
			}
		}
		return "", &ParseError{Msg: "P" + strconv.Itoa(n) + " has no variable " + r}
	})
	return t, err
}

// cComp compiles one C thread.
type cComp struct {
	t      *Test
	th     *Thread
	p      *tokens
	params map[string]bool // parameter names: pointers to the locations of the same name
	locals map[string]bool
	temps  int
}

func (c *cComp) params0() error {
	p := c.p
	if err := p.expect("("); err != nil {
		return err
	}
	for !p.accept(")") {
		if p.peek() == "" {
			return p.errf("parameter list not closed")
		}
		var last string
		for p.peek() != "," && p.peek() != ")" && p.peek() != "" {
			last = p.next()
		}
		p.accept(",")
		if last != "" && last != "*" {
			c.params[last] = true
			c.t.loc(last)
		}
	}
	c.locals = map[string]bool{}
	return nil
}

func (c *cComp) emit(in Insn) int {
	if in.Line == 0 {
		in.Line = c.p.line()
	}
	c.th.Code = append(c.th.Code, in)
	return len(c.th.Code) - 1
}

func (c *cComp) temp() int {
	c.temps++
	return c.th.reg("tmp" + strconv.Itoa(c.temps))
}

func (c *cComp) block() error {
	if err := c.p.expect("{"); err != nil {
		return err
	}
	for !c.p.accept("}") {
		if c.p.peek() == "" {
			return c.p.errf("%s: { not closed", c.th.Name)
		}
		if err := c.stmt(); err != nil {
			return err
		}
	}
	return nil
}

var cTypes = map[string]bool{"int": true, "long": true, "unsigned": true, "char": true, "u32": true, "u64": true, "uintptr_t": true, "atomic_t": true, "spinlock_t": true, "intptr_t": true, "bool": true}

func (c *cComp) stmt() error {
	p := c.p
	line := p.line()
	switch w := p.peek(); {
	case w == ";":
		p.next()
		return nil
	case w == "{":
		return c.block()
	case w == "if":
		p.next()
		if err := p.expect("("); err != nil {
			return err
		}
		cond, err := c.expr()
		if err != nil {
			return err
		}
		if err := p.expect(")"); err != nil {
			return err
		}
		br := c.emit(Insn{Kind: KBr, Cond: CondZero, A: cond, Dst: -1, Line: line, Text: "if"})
		if err := c.stmt(); err != nil {
			return err
		}
		if p.accept("else") {
			j := c.emit(Insn{Kind: KJump, Dst: -1, Line: line, Text: "else"})
			c.th.Code[br].Target = len(c.th.Code)
			if err := c.stmt(); err != nil {
				return err
			}
			c.th.Code[j].Target = len(c.th.Code)
		} else {
			c.th.Code[br].Target = len(c.th.Code)
		}
		return nil
	case cTypes[w]:
		// A declaration: type [*] name [= expr] {, ...};
		for cTypes[p.peek()] {
			p.next()
		}
		for {
			for p.accept("*") {
			}
			name := p.next()
			if name == "" || !isIdent(rune(name[0])) {
				return p.errf("expected a variable name, found %q", name)
			}
			c.locals[name] = true
			r := c.th.reg(name)
			if p.accept("=") {
				v, err := c.expr()
				if err != nil {
					return err
				}
				c.emit(Insn{Kind: KALU, ALU: Mov, Dst: r, A: v, B: none, Wide: true, Line: line, Text: name + " = ..."})
			}
			if !p.accept(",") {
				break
			}
		}
		return p.expect(";")
	case w == "*":
		// *E = E;
		p.next()
		a, err := c.unary()
		if err != nil {
			return err
		}
		if err := p.expect("="); err != nil {
			return err
		}
		v, err := c.expr()
		if err != nil {
			return err
		}
		c.emit(Insn{Kind: KStore, Base: a, Off: none, A: v, Dst: -1, Wide: true, Line: line, Text: "plain write"})
		return p.expect(";")
	}
	// name = expr;  or a call.
	if len(p.t) > p.i+1 && p.t[p.i+1].s == "=" {
		name := p.next()
		p.next()
		if !c.locals[name] {
			return &ParseError{File: p.file, Line: line, Msg: c.th.Name + ": assignment to " + strconv.Quote(name) + ", which is not a local variable"}
		}
		v, err := c.expr()
		if err != nil {
			return err
		}
		c.emit(Insn{Kind: KALU, ALU: Mov, Dst: c.th.reg(name), A: v, B: none, Wide: true, Line: line, Text: name + " = ..."})
		return p.expect(";")
	}
	if _, err := c.call(true); err != nil {
		return err
	}
	return p.expect(";")
}

func (c *cComp) expr() (Operand, error) { return c.binary(0) }

var cPrec = map[string]int{"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "+": 7, "-": 7}

func (c *cComp) binary(min int) (Operand, error) {
	l, err := c.unary()
	if err != nil {
		return none, err
	}
	for {
		op := c.p.peek()
		prec, ok := cPrec[op]
		if !ok || prec <= min {
			return l, nil
		}
		if op == "||" || op == "&&" {
			return none, c.p.errf("%s is not supported (no short circuit)", op)
		}
		c.p.next()
		r, err := c.binary(prec)
		if err != nil {
			return none, err
		}
		d := c.temp()
		alu := map[string]ALU{"|": Or, "^": Xor, "&": And, "==": Eq, "!=": Ne, "+": Add, "-": Sub}[op]
		c.emit(Insn{Kind: KALU, ALU: alu, Dst: d, A: l, B: r, Wide: true, Text: op})
		l = reg(d)
	}
}

func (c *cComp) unary() (Operand, error) {
	p := c.p
	switch w := p.peek(); {
	case w == "(":
		p.next()
		v, err := c.expr()
		if err != nil {
			return none, err
		}
		return v, p.expect(")")
	case w == "!":
		p.next()
		v, err := c.unary()
		if err != nil {
			return none, err
		}
		d := c.temp()
		c.emit(Insn{Kind: KALU, ALU: Eq, Dst: d, A: v, B: imm(0), Wide: true, Text: "!"})
		return reg(d), nil
	case w == "-":
		p.next()
		v, err := c.unary()
		if err != nil {
			return none, err
		}
		d := c.temp()
		c.emit(Insn{Kind: KALU, ALU: Sub, Dst: d, A: imm(0), B: v, Wide: true, Text: "-"})
		return reg(d), nil
	case w == "*":
		p.next()
		a, err := c.unary()
		if err != nil {
			return none, err
		}
		d := c.temp()
		c.emit(Insn{Kind: KLoad, Dst: d, Base: a, Off: none, Wide: true, Text: "plain read"})
		return reg(d), nil
	case w == "&":
		p.next()
		name := p.next()
		if !c.params[name] {
			return none, p.errf("&%s: not a shared location", name)
		}
		return imm(LocBase + uint64(c.t.loc(name))), nil
	case w == "":
		return none, p.errf("expected an expression")
	}
	w := p.peek()
	if n, isNum, err := number(w, false); isNum {
		if err != nil {
			return none, p.errf("%s: %v", c.th.Name, err)
		}
		p.next()
		return imm(n), nil
	}
	if len(p.t) > p.i+1 && p.t[p.i+1].s == "(" {
		return c.call(false)
	}
	p.next()
	switch {
	case c.locals[w]:
		return reg(c.th.reg(w)), nil
	case c.params[w]:
		return imm(LocBase + uint64(c.t.loc(w))), nil
	}
	return none, p.errf("%s: unknown name %q", c.th.Name, w)
}

// args parses a call's arguments: pointer arguments (an address) and
// values.
func (c *cComp) args() ([]Operand, error) {
	p := c.p
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var out []Operand
	for !p.accept(")") {
		if len(out) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		// *E as an argument names the location E points to: its
		// address is E's value.
		if p.accept("*") {
			v, err := c.unary()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		v, err := c.expr()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

type cPrim struct {
	kind    Kind
	order   model.Order
	barrier model.Barrier
	rmw     model.RMWOp
	args    int
	full    bool // a fully ordered read-modify-write: acquire and release (LSE's AL forms)
	isLock  bool
	value   bool // returns a value
	retNew  bool // returns the new value (atomic_add_return), not the old one
}

var cPrims = map[string]cPrim{
	"READ_ONCE":              {kind: KLoad, args: 1, value: true},
	"rcu_dereference":        {kind: KLoad, args: 1, value: true},
	"smp_load_acquire":       {kind: KLoad, order: model.Acquire, args: 1, value: true},
	"WRITE_ONCE":             {kind: KStore, args: 2},
	"smp_store_release":      {kind: KStore, order: model.Release, args: 2},
	"rcu_assign_pointer":     {kind: KStore, order: model.Release, args: 2},
	"smp_mb":                 {kind: KFence, barrier: model.BarrierFull},
	"smp_mb__after_spinlock": {kind: KFence, barrier: model.BarrierFull},
	"smp_mb__before_atomic":  {kind: KFence, barrier: model.BarrierFull},
	"smp_mb__after_atomic":   {kind: KFence, barrier: model.BarrierFull},
	"smp_rmb":                {kind: KFence, barrier: model.BarrierLoad},
	"smp_wmb":                {kind: KFence, barrier: model.BarrierStore},
	"rcu_read_lock":          {kind: KNop},
	"rcu_read_unlock":        {kind: KNop},
	"spin_lock":              {kind: KRMW, rmw: model.RMWCAS, order: model.Acquire, args: 1, isLock: true},
	"spin_unlock":            {kind: KStore, order: model.Release, args: 1, isLock: true},
	"spin_is_locked":         {kind: KLoad, args: 1, value: true, isLock: true},
	"xchg":                   {kind: KRMW, rmw: model.RMWSwap, args: 2, full: true, value: true},
	"xchg_relaxed":           {kind: KRMW, rmw: model.RMWSwap, args: 2, value: true},
	"xchg_acquire":           {kind: KRMW, rmw: model.RMWSwap, order: model.Acquire, args: 2, value: true},
	"xchg_release":           {kind: KRMW, rmw: model.RMWSwap, order: model.Release, args: 2, value: true},
	"cmpxchg":                {kind: KRMW, rmw: model.RMWCAS, args: 3, full: true, value: true},
	"cmpxchg_relaxed":        {kind: KRMW, rmw: model.RMWCAS, args: 3, value: true},
	"cmpxchg_acquire":        {kind: KRMW, rmw: model.RMWCAS, order: model.Acquire, args: 3, value: true},
	"cmpxchg_release":        {kind: KRMW, rmw: model.RMWCAS, order: model.Release, args: 3, value: true},
	"atomic_xchg":            {kind: KRMW, rmw: model.RMWSwap, args: 2, full: true, value: true},
	"atomic_cmpxchg":         {kind: KRMW, rmw: model.RMWCAS, args: 3, full: true, value: true},
	"atomic_fetch_add":       {kind: KRMW, rmw: model.RMWAdd, args: 2, full: true, value: true},
	"atomic_fetch_or":        {kind: KRMW, rmw: model.RMWOr, args: 2, full: true, value: true},
	"atomic_read":            {kind: KLoad, args: 1, value: true},
	"atomic_set":             {kind: KStore, args: 2},
	"atomic_inc":             {kind: KRMW, rmw: model.RMWAdd, args: 1},
	"atomic_inc_return":      {kind: KRMW, rmw: model.RMWAdd, args: 1, full: true, value: true, retNew: true},
	"atomic_add_return":      {kind: KRMW, rmw: model.RMWAdd, args: 2, full: true, value: true, retNew: true},
	"atomic_add":             {kind: KRMW, rmw: model.RMWAdd, args: 2},
}

// call compiles a primitive; value asks for its result.
func (c *cComp) call(stmt bool) (Operand, error) {
	p := c.p
	line := p.line()
	name := p.next()
	prim, ok := cPrims[name]
	if !ok {
		return none, &ParseError{File: p.file, Line: line, Msg: c.th.Name + ": unsupported primitive " + strconv.Quote(name)}
	}
	args, err := c.args()
	if err != nil {
		return none, err
	}
	if len(args) != prim.args {
		return none, &ParseError{File: p.file, Line: line, Msg: sprintf("%s: %s takes %d arguments, not %d", c.th.Name, name, prim.args, len(args))}
	}
	if !stmt && !prim.value {
		return none, &ParseError{File: p.file, Line: line, Msg: c.th.Name + ": " + name + " has no value"}
	}
	in := Insn{Kind: prim.kind, Order: prim.order, Barrier: prim.barrier, RMW: prim.rmw, Dst: -1, Base: none, Off: none, A: none, B: none, Wide: true, Line: line, Text: name}
	if prim.args > 0 {
		in.Base = args[0]
	}
	var out Operand = none
	switch {
	case prim.kind == KLoad:
		in.Dst = c.temp()
		out = reg(in.Dst)
		c.emit(in)
		if prim.isLock { // spin_is_locked: the lock word != 0
			d := c.temp()
			c.emit(Insn{Kind: KALU, ALU: Ne, Dst: d, A: out, B: imm(0), Wide: true, Line: line, Text: name})
			out = reg(d)
		}
		return out, nil
	case prim.kind == KStore:
		in.A = imm(0) // spin_unlock writes 0
		if len(args) > 1 {
			in.A = args[1]
		}
	case prim.kind == KRMW:
		switch {
		case prim.isLock:
			in.A, in.B, in.Await = imm(1), imm(0), true
		case prim.rmw == model.RMWCAS:
			in.B, in.A = args[1], args[2]
		case len(args) > 1:
			in.A = args[1]
		default:
			in.A = imm(1) // atomic_inc
		}
		if prim.full {
			in.Order = model.AcqRel
		}
		if prim.value && !stmt {
			in.Dst = c.temp()
			out = reg(in.Dst)
		} else if !prim.isLock && !prim.value {
			in.NoRet = true // atomic_inc, atomic_add: STADD
		}
	}
	c.emit(in)
	if prim.retNew && out.Reg >= 0 {
		d := c.temp()
		c.emit(Insn{Kind: KALU, ALU: Add, Dst: d, A: out, B: in.A, Wide: true, Line: line, Text: name})
		out = reg(d)
	}
	return out, nil
}
