package litmus

import (
	"strconv"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// parseAArch64 parses herdtools7's AArch64 litmus format: a header line
// "AArch64 NAME", optional lines up to the initial state "{...}", a table
// of instructions with one column per thread ("P0 | P1 ;"), then the
// final condition and an optional "locations [...]".
func parseAArch64(file, src, comments string) (*Test, error) {
	lines := strings.Split(src, "\n")
	t := &Test{Arch: "AArch64", Result: resultOf(comments)}
	hdr := strings.Fields(lines[0])
	if len(hdr) < 2 {
		return nil, &ParseError{File: file, Line: 1, Msg: "expected \"AArch64 NAME\""}
	}
	t.Name = hdr[1]
	// The initial state: from the first "{" to the matching "}".
	i := 1
	for i < len(lines) && !strings.Contains(lines[i], "{") {
		i++
	}
	if i == len(lines) {
		return nil, &ParseError{File: file, Line: len(lines), Msg: "no initial state {...}"}
	}
	var init strings.Builder
	initLine := i + 1
	rest := lines[i][strings.Index(lines[i], "{")+1:]
	for {
		if j := strings.Index(rest, "}"); j >= 0 {
			init.WriteString(rest[:j])
			if strings.TrimSpace(rest[j+1:]) != "" {
				return nil, &ParseError{File: file, Line: i + 1, Msg: "text after the initial state's }"}
			}
			break
		}
		init.WriteString(rest)
		init.WriteByte('\n')
		i++
		if i == len(lines) {
			return nil, &ParseError{File: file, Line: initLine, Msg: "initial state { not closed"}
		}
		rest = lines[i]
	}
	i++
	// The table's first line names the threads.
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i == len(lines) {
		return nil, &ParseError{File: file, Line: len(lines), Msg: "no program"}
	}
	header := strings.Join(splitRow(lines[i]), " | ")
	for k, col := range splitRow(lines[i]) {
		if col != "P"+strconv.Itoa(k) {
			return nil, &ParseError{File: file, Line: i + 1, Msg: "expected thread names P0 | P1 | ... ;, found " + strconv.Quote(strings.TrimSpace(lines[i]))}
		}
		t.Threads = append(t.Threads, &Thread{Name: col})
	}
	i++
	// The initial state needs the threads to exist.
	set, err := parseAArch64Init(t, file, init.String(), initLine)
	if err != nil {
		return nil, err
	}
	labels := make([]map[string]int, len(t.Threads))
	fixups := make([][]fixup, len(t.Threads))
	for k := range labels {
		labels[k] = map[string]int{}
	}
	for ; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if f := strings.Fields(l)[0]; f == "exists" || f == "forall" || f == "~exists" || f == "~" || f == "locations" || f == "filter" || strings.HasPrefix(f, "exists(") || strings.HasPrefix(f, "forall(") || strings.HasPrefix(f, "~exists(") {
			break
		}
		// herd refuses a row whose columns are not the threads one for
		// one ("mismatch in instruction lines"): with fewer columns the
		// instructions would go to the wrong threads.
		cols := splitRow(lines[i])
		if len(cols) != len(t.Threads) {
			return nil, &ParseError{File: file, Line: i + 1, Msg: sprintf("expected %d columns, one a thread (%s), found %d", len(t.Threads), header, len(cols))}
		}
		for k, col := range cols {
			if col == "" {
				continue
			}
			if err := parseInsn(t, t.Threads[k], col, i+1, file, labels[k], &fixups[k]); err != nil {
				return nil, err
			}
		}
	}
	for k, th := range t.Threads {
		for _, f := range fixups[k] {
			target, ok := labels[k][f.label]
			if !ok {
				return nil, &ParseError{File: file, Line: th.Code[f.insn].Line, Msg: th.Name + ": no label " + strconv.Quote(f.label)}
			}
			if target <= f.insn {
				return nil, &ParseError{File: file, Line: th.Code[f.insn].Line, Msg: th.Name + ": a branch back to " + strconv.Quote(f.label) + " (loops are not supported)"}
			}
			th.Code[f.insn].Target = target
		}
	}
	if err := checkAddrRegs(t, file, set); err != nil {
		return nil, err
	}
	p := &tokens{t: tokenize(strings.Join(lines[i:], "\n"), i+1), file: file}
	err = parseFinal(t, p, func(n int, r string) (string, error) {
		if k, ok := regNum(r); ok && k >= 0 {
			t.Threads[n].reg("X" + strconv.Itoa(k))
			return "X" + strconv.Itoa(k), nil
		}
		return "", &ParseError{Msg: "not a register: " + r}
	})
	return t, err
}

// checkAddrRegs refuses an access whose address register neither the
// initial state nor an earlier instruction sets (branches only go
// forward, so no later one can either): the register holds 0, which is
// no location, and every execution would fail there. An offset register
// that may hold an address ([X5,X1], X5 unset) lets it pass.
func checkAddrRegs(t *Test, file string, set []map[int]bool) error {
	for k, th := range t.Threads {
		written := map[int]bool{}
		unset := func(o Operand) bool { return o.Reg < 0 || !set[k][o.Reg] && !written[o.Reg] }
		for _, in := range th.Code {
			switch in.Kind {
			case KLoad, KStore, KRMW:
				if in.Base.Reg >= 0 && unset(in.Base) && unset(in.Off) {
					r := th.Regs[in.Base.Reg]
					return &ParseError{File: file, Line: in.Line, Msg: sprintf("%s: %q: %s is not initialised (an address register needs a location in the initial state, as %d:%s=x)", th.Name, in.Text, r, k, r)}
				}
			}
			if in.Dst >= 0 {
				written[in.Dst] = true
			}
			if in.Post != 0 {
				written[in.Base.Reg] = true
			}
		}
	}
	return nil
}

type fixup struct {
	insn  int
	label string
}

func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimSuffix(l, ";")
	cols := strings.Split(l, "|")
	for k := range cols {
		cols[k] = strings.TrimSpace(cols[k])
	}
	return cols
}

// regNum parses an AArch64 register name: W0..W30 or X0..X30 give the
// number, WZR and XZR -1.
func regNum(s string) (int, bool) {
	u := strings.ToUpper(s)
	if u == "WZR" || u == "XZR" {
		return -1, true
	}
	if len(u) < 2 || (u[0] != 'W' && u[0] != 'X') {
		return 0, false
	}
	n, err := strconv.Atoi(u[1:])
	if err != nil || n < 0 || n > 30 {
		return 0, false
	}
	return n, true
}

// parseAArch64Init parses the initial state; it returns, for each
// thread, the registers it sets.
func parseAArch64Init(t *Test, file, init string, line int) ([]map[int]bool, error) {
	set := make([]map[int]bool, len(t.Threads))
	for k := range set {
		set[k] = map[int]bool{}
	}
	err := parseInitEntries(t, file, init, line, set)
	return set, err
}

// parseInitEntries parses the initial state's entries, noting in set[n]
// the registers of thread n they set.
func parseInitEntries(t *Test, file, init string, line int, set []map[int]bool) error {
	for _, entry := range splitKeep(init, line) {
		p := &tokens{t: tokenize(entry.s, entry.line), file: file}
		if len(p.t) == 0 {
			continue
		}
		// A type first: int, uint64_t, int64_t, ...
		if w := p.peek(); strings.HasSuffix(w, "_t") || w == "int" || w == "long" || w == "char" {
			p.next()
			p.accept("*")
		}
		if n, isNum, err := number(p.peek(), false); isNum && len(p.t) > p.i+1 && p.t[p.i+1].s == ":" {
			if err != nil || n >= uint64(len(t.Threads)) {
				return p.errf("thread %s does not exist", p.peek())
			}
			p.next()
			p.next()
			r := p.next()
			k, ok := regNum(r)
			if !ok || k < 0 {
				return p.errf("not a register: %q", r)
			}
			if err := p.expect("="); err != nil {
				return err
			}
			v, err := initValue(t, p)
			if err != nil {
				return err
			}
			th := t.Threads[n]
			ri := th.reg("X" + strconv.Itoa(k))
			th.RegInit[ri] = v
			set[n][ri] = true
		} else {
			name := p.next()
			if name == "[" {
				name = p.next()
				if err := p.expect("]"); err != nil {
					return err
				}
			}
			if name == "" || !isIdent(rune(name[0])) || name[0] >= '0' && name[0] <= '9' {
				return p.errf("expected a location, found %q", name)
			}
			l := t.loc(name)
			if p.accept("=") {
				v, err := initValue(t, p)
				if err != nil {
					return err
				}
				t.Init[l] = v
			}
		}
		if p.peek() != "" {
			return p.errf("unexpected %q in the initial state", p.peek())
		}
	}
	return nil
}

type lineText struct {
	s    string
	line int
}

// splitKeep splits s at ';', keeping the line each piece starts on: the
// piece keeps its line breaks, which tokenize counts from there.
func splitKeep(s string, line int) []lineText {
	var out []lineText
	start, startLine := 0, line
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ';' {
			out = append(out, lineText{s[start:i], startLine})
			start = i + 1
			startLine = line
			continue
		}
		if s[i] == '\n' {
			line++
		}
	}
	return out
}

func initValue(t *Test, p *tokens) (uint64, error) {
	neg := p.accept("-")
	line := p.line()
	w := p.next()
	if v, isNum, err := number(w, neg); isNum {
		if err != nil {
			return 0, &ParseError{File: p.file, Line: line, Msg: err.Error()}
		}
		return v, nil
	}
	if w == "" || !isIdent(rune(w[0])) || neg {
		return 0, p.errf("expected a value, found %q", w)
	}
	return LocBase + uint64(t.loc(w)), nil
}

// parseInsn parses one AArch64 instruction (or label) into th's code.
func parseInsn(t *Test, th *Thread, text string, line int, file string, labels map[string]int, fix *[]fixup) error {
	p := &tokens{t: tokenize(text, line), file: file}
	cell := text
	errf := func(format string, args ...any) error {
		return &ParseError{File: file, Line: line, Msg: th.Name + ": " + strconv.Quote(cell) + ": " + sprintf(format, args...)}
	}
	// Labels: herd's grammar reads "NAME:" before an instruction, as
	// well as alone in a cell, and the label names the next instruction
	// of the thread, in this cell or a later row.
	for len(p.t) > p.i+1 && p.t[p.i+1].s == ":" {
		name := p.next()
		p.next()
		if c := name[0]; !isIdent(rune(c)) || c >= '0' && c <= '9' {
			return errf("bad label %q", name)
		}
		if _, dup := labels[name]; dup {
			return errf("label %q defined twice", name)
		}
		labels[name] = len(th.Code)
		text = strings.TrimSpace(text[strings.Index(text, ":")+1:])
	}
	if p.peek() == "" {
		return nil
	}
	op := strings.ToUpper(p.next())
	in := Insn{Line: line, Text: text, Dst: -1, Base: none, Off: none, A: none, B: none}
	// reg parses a register operand; dst asks for a destination.
	regOp := func() (Operand, bool, error) {
		r := p.next()
		k, ok := regNum(r)
		if !ok {
			return none, false, errf("expected a register, found %q", r)
		}
		wide := strings.ToUpper(r)[0] == 'X'
		if k < 0 {
			return imm(0), wide, nil
		}
		return reg(th.reg("X" + strconv.Itoa(k))), wide, nil
	}
	dst := func() (int, bool, error) {
		o, wide, err := regOp()
		if err != nil {
			return 0, false, err
		}
		if o.Reg < 0 {
			return -1, wide, nil
		}
		return o.Reg, wide, nil
	}
	// src parses a register or #imm.
	src := func() (Operand, error) {
		if p.accept("#") {
			neg := p.accept("-")
			w := p.next()
			v, isNum, err := number(w, neg)
			if !isNum {
				return none, errf("bad immediate %q", w)
			}
			if err != nil {
				return none, errf("%v", err)
			}
			return imm(v), nil
		}
		o, _, err := regOp()
		return o, err
	}
	comma := func() error {
		if !p.accept(",") {
			return errf("expected a comma")
		}
		return nil
	}
	// addr parses [Xn], [Xn,Wm,SXTW], [Xn,Xm], [Xn,#0].
	addr := func() error {
		if !p.accept("[") {
			return errf("expected [ address ]")
		}
		b, _, err := regOp()
		if err != nil {
			return err
		}
		if b.Reg < 0 {
			return errf("the zero register is not an address")
		}
		in.Base = b
		if p.accept(",") {
			if in.Off, err = src(); err != nil {
				return err
			}
			if p.accept(",") {
				ext := strings.ToUpper(p.next())
				if ext != "SXTW" && ext != "UXTW" && ext != "LSL" {
					return errf("unsupported address extension %q", ext)
				}
				if ext == "LSL" {
					if _, err := src(); err != nil {
						return err
					}
				}
			}
		}
		if !p.accept("]") {
			return errf("expected ] closing the address")
		}
		if p.accept(",") { // post-index: [Xn],#imm adds imm to Xn after the access
			if in.Base.Reg < 0 {
				return errf("post-index of the zero register")
			}
			o, err := src()
			if err != nil {
				return err
			}
			if o.Reg >= 0 {
				return errf("post-index by a register is not supported")
			}
			in.Post = o.Imm
		}
		return nil
	}
	var err error
	switch op {
	case "NOP":
		in.Kind = KNop
	case "MOV":
		in.Kind, in.ALU = KALU, Mov
		if in.Dst, in.Wide, err = dst(); err == nil {
			if err = comma(); err == nil {
				in.A, err = src()
			}
		}
	case "ADD", "SUB", "AND", "ORR", "EOR":
		in.Kind = KALU
		in.ALU = map[string]ALU{"ADD": Add, "SUB": Sub, "AND": And, "ORR": Or, "EOR": Xor}[op]
		if in.Dst, in.Wide, err = dst(); err == nil {
			if err = comma(); err == nil {
				if in.A, err = src(); err == nil {
					if err = comma(); err == nil {
						in.B, err = src()
					}
				}
			}
		}
	case "CMP":
		in.Kind = KCmp
		if in.A, err = src(); err == nil {
			if err = comma(); err == nil {
				in.B, err = src()
			}
		}
	case "CSEL":
		in.Kind = KCsel
		if in.Dst, in.Wide, err = dst(); err == nil {
			if err = comma(); err == nil {
				if in.A, err = src(); err == nil {
					if err = comma(); err == nil {
						if in.B, err = src(); err == nil {
							if err = comma(); err == nil {
								in.Cond, err = condCode(p.next(), errf)
							}
						}
					}
				}
			}
		}
	case "B.EQ", "B.NE", "BEQ", "BNE":
		in.Kind = KBr
		in.Cond = CondEQ
		if strings.HasSuffix(op, "NE") {
			in.Cond = CondNE
		}
		*fix = append(*fix, fixup{len(th.Code), p.next()})
	case "B":
		in.Kind = KJump
		*fix = append(*fix, fixup{len(th.Code), p.next()})
	case "CBZ", "CBNZ":
		in.Kind, in.Cond = KBr, CondZero
		if op == "CBNZ" {
			in.Cond = CondNonZero
		}
		if in.A, err = src(); err == nil {
			if err = comma(); err == nil {
				*fix = append(*fix, fixup{len(th.Code), p.next()})
			}
		}
	case "DMB", "DSB":
		in.Kind = KFence
		switch o := strings.ToUpper(p.next()); o {
		case "SY", "ISH", "OSH", "NSH":
			in.Barrier = model.BarrierFull
		case "LD", "ISHLD", "OSHLD", "NSHLD":
			in.Barrier = model.BarrierLoad
		case "ST", "ISHST", "OSHST", "NSHST":
			in.Barrier = model.BarrierStore
		default:
			return errf("unsupported barrier option %q", o)
		}
	case "ISB":
		in.Kind, in.Barrier = KFence, model.BarrierISB
	case "LDR", "LDAR", "LDAPR":
		in.Kind = KLoad
		in.Order = map[string]model.Order{"LDR": model.Plain, "LDAR": model.Acquire, "LDAPR": model.AcquirePC}[op]
		if in.Dst, in.Wide, err = dst(); err == nil {
			if err = comma(); err == nil {
				err = addr()
			}
		}
	case "STR", "STLR":
		in.Kind = KStore
		if op == "STLR" {
			in.Order = model.Release
		}
		var wide bool
		if in.A, wide, err = regOp(); err == nil {
			in.Wide = wide
			if err = comma(); err == nil {
				err = addr()
			}
		}
	default:
		if k, ok := rmwOp(op); ok {
			in.Kind, in.RMW, in.Order = KRMW, k.op, k.order
			var rs, rt Operand
			var wide bool
			if k.store {
				// STADD Ws, [Xn]: LDADD Ws, WZR, [Xn].
				if rs, wide, err = regOp(); err == nil {
					if err = comma(); err == nil {
						err = addr()
					}
				}
				rt = imm(0)
				in.NoRet = true
			} else if rs, wide, err = regOp(); err == nil {
				if err = comma(); err == nil {
					var rto Operand
					if rto, _, err = regOp(); err == nil {
						rt = rto
						if err = comma(); err == nil {
							err = addr()
						}
					}
				}
			}
			if err != nil {
				return err
			}
			in.Wide = wide
			if k.op == model.RMWCAS {
				// CAS Ws, Wt, [Xn]: compare with Ws, store Wt, Ws := old.
				in.A, in.B, in.Dst = rt, rs, rs.Reg
				in.NoRet = rs.Reg < 0
			} else {
				// SWP/LDADD Ws, Wt, [Xn]: operand Ws, Wt := old.
				in.A, in.Dst = rs, rt.Reg
				if rt.Reg < 0 {
					in.NoRet = true
				}
			}
			break
		}
		return errf("unsupported instruction %q", op)
	}
	if err != nil {
		return err
	}
	if p.peek() != "" {
		return errf("unexpected %q", p.peek())
	}
	th.Code = append(th.Code, in)
	return nil
}

type rmwKind struct {
	op    model.RMWOp
	order model.Order
	store bool
}

// rmwOp recognises the LSE atomics: CAS, SWP, LDADD, LDSET and STADD,
// STSET, with their A, L and AL forms.
func rmwOp(op string) (rmwKind, bool) {
	for _, b := range []struct {
		name  string
		op    model.RMWOp
		store bool
	}{{"CAS", model.RMWCAS, false}, {"SWP", model.RMWSwap, false}, {"LDADD", model.RMWAdd, false}, {"LDSET", model.RMWOr, false}, {"STADD", model.RMWAdd, true}, {"STSET", model.RMWOr, true}} {
		if !strings.HasPrefix(op, b.name) {
			continue
		}
		suffix := op[len(b.name):]
		o, ok := map[string]model.Order{"": model.Plain, "A": model.Acquire, "L": model.Release, "AL": model.AcqRel}[suffix]
		if !ok || b.store && (suffix == "A" || suffix == "AL") {
			return rmwKind{}, false
		}
		return rmwKind{b.op, o, b.store}, true
	}
	return rmwKind{}, false
}

func condCode(s string, errf func(string, ...any) error) (CondCode, error) {
	switch strings.ToUpper(s) {
	case "EQ":
		return CondEQ, nil
	case "NE":
		return CondNE, nil
	}
	return 0, errf("unsupported condition %q (EQ and NE only)", s)
}
