package litmus

import (
	"fmt"
	"strings"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// parseFinal parses what follows the programs: "locations [...]",
// "filter PROP", and the condition: exists, ~exists or forall.
func parseFinal(t *Test, p *tokens, regName func(th int, r string) (string, error)) error {
	for p.peek() != "" {
		switch w := p.next(); w {
		case "locations":
			if err := p.expect("["); err != nil {
				return err
			}
			for !p.accept("]") {
				if p.peek() == "" {
					return p.errf("locations [ not closed")
				}
				if p.accept(";") {
					continue
				}
				v, err := parseVar(t, p, regName)
				if err != nil {
					return err
				}
				t.Locations = append(t.Locations, v)
			}
		case "exists", "forall", "~":
			kind := w
			if w == "~" {
				if err := p.expect("exists"); err != nil {
					return err
				}
				kind = "~exists"
			}
			if t.Cond.Kind != "" {
				return p.errf("a second condition")
			}
			e, err := parseOr(t, p, regName)
			if err != nil {
				return err
			}
			p.accept(";")
			t.Cond = Cond{Kind: kind, Expr: e, Text: kind + " " + e.String()}
		case "filter":
			if t.Filter != nil {
				return p.errf("a second filter")
			}
			e, err := parseOr(t, p, regName)
			if err != nil {
				return err
			}
			p.accept(";")
			t.Filter = e
		default:
			return p.errf("unexpected %q after the programs (expected exists, ~exists, forall or locations)", w)
		}
	}
	if t.Cond.Kind == "" {
		return p.errf("no condition (exists, ~exists or forall)")
	}
	return nil
}

func parseOr(t *Test, p *tokens, rn func(int, string) (string, error)) (*Expr, error) {
	l, err := parseAnd(t, p, rn)
	if err != nil {
		return nil, err
	}
	for p.accept("\\/") {
		r, err := parseAnd(t, p, rn)
		if err != nil {
			return nil, err
		}
		l = &Expr{Op: "\\/", L: l, R: r}
	}
	return l, nil
}

func parseAnd(t *Test, p *tokens, rn func(int, string) (string, error)) (*Expr, error) {
	l, err := parseAtom(t, p, rn)
	if err != nil {
		return nil, err
	}
	for p.accept("/\\") {
		r, err := parseAtom(t, p, rn)
		if err != nil {
			return nil, err
		}
		l = &Expr{Op: "/\\", L: l, R: r}
	}
	return l, nil
}

func parseAtom(t *Test, p *tokens, rn func(int, string) (string, error)) (*Expr, error) {
	switch {
	case p.accept("("):
		e, err := parseOr(t, p, rn)
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	case p.accept("~"):
		e, err := parseAtom(t, p, rn)
		if err != nil {
			return nil, err
		}
		return &Expr{Op: "~", L: e}, nil
	case p.accept("true"):
		return &Expr{Op: "true"}, nil
	case p.accept("false"):
		return &Expr{Op: "false"}, nil
	}
	v, err := parseVar(t, p, rn)
	if err != nil {
		return nil, err
	}
	op := "="
	switch {
	case p.accept("="):
	case p.accept("=="):
	case p.accept("!="):
		op = "!="
	default:
		return nil, p.errf("expected = after %s", v)
	}
	e := &Expr{Op: op, Var: v}
	neg := p.accept("-")
	line := p.line()
	w := p.next()
	if n, isNum, err := number(w, neg); isNum {
		if err != nil {
			return nil, &ParseError{File: p.file, Line: line, Msg: err.Error()}
		}
		e.Value = n
		return e, nil
	}
	if w == "" || !isIdent(rune(w[0])) || neg {
		return nil, p.errf("expected a value after %s%s, found %q", v, op, w)
	}
	e.ValueLoc = w
	e.Value = LocBase + uint64(t.loc(w))
	return e, nil
}

// parseVar parses "N:reg", "x" or "[x]".
func parseVar(t *Test, p *tokens, rn func(int, string) (string, error)) (Var, error) {
	w := p.next()
	if w == "[" {
		l := p.next()
		if err := p.expect("]"); err != nil {
			return Var{}, err
		}
		w = l
	} else if n, isNum, err := number(w, false); isNum && p.accept(":") {
		if err != nil || n >= uint64(len(t.Threads)) {
			return Var{}, p.errf("thread %s does not exist", w)
		}
		r := p.next()
		name, err := rn(int(n), r)
		if err != nil {
			return Var{}, p.errf("%v", err)
		}
		return Var{Thread: int(n), Reg: name}, nil
	}
	if w == "" || !isIdent(rune(w[0])) || (w[0] >= '0' && w[0] <= '9') {
		return Var{}, p.errf("expected a location or thread:register, found %q", w)
	}
	t.loc(w)
	return Var{Thread: -1, Loc: w}, nil
}

// resultOf finds "Result: X" in the comments.
func resultOf(comments string) string {
	i := strings.Index(comments, "Result:")
	if i < 0 {
		return ""
	}
	f := strings.Fields(comments[i+len("Result:"):])
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
