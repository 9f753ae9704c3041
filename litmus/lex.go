package litmus

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// A token of a litmus file, with its line.
type token struct {
	s    string
	line int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// stripComments replaces OCaml-style (* ... *) comments (an opening
// "(*" followed by a blank: C code writes READ_ONCE(*x)) and C // comments
// (outside the C code's own strings, which litmus tests have none of) with
// spaces, keeping line breaks, and returns the comments' text.
func stripComments(src string) (string, string, error) {
	var out, comments strings.Builder
	line := 1
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '(' && i+2 < len(src) && src[i+1] == '*' && isSpace(src[i+2]) {
			depth := 1
			start := line
			out.WriteString("  ")
			i += 2
			for ; i < len(src) && depth > 0; i++ {
				switch {
				case src[i] == '(' && i+2 < len(src) && src[i+1] == '*' && isSpace(src[i+2]):
					depth++
					i++
					out.WriteString("  ")
					continue
				case src[i] == '*' && i+1 < len(src) && src[i+1] == ')':
					depth--
					i++
					out.WriteString("  ")
					continue
				case src[i] == '\n':
					line++
					out.WriteByte('\n')
				default:
					out.WriteByte(' ')
				}
				comments.WriteByte(src[i])
			}
			if depth > 0 {
				return "", "", &ParseError{Line: start, Msg: "comment (* not closed"}
			}
			i--
			comments.WriteByte('\n')
			continue
		}
		if c == '/' && i+1 < len(src) && src[i+1] == '/' {
			for ; i < len(src) && src[i] != '\n'; i++ {
				out.WriteByte(' ')
				comments.WriteByte(src[i])
			}
			comments.WriteByte('\n')
			i--
			continue
		}
		if c == '\n' {
			line++
		}
		out.WriteByte(c)
	}
	return out.String(), comments.String(), nil
}

// tokenize splits s (comments stripped) into identifiers, numbers and
// punctuation; "/\\", "\\/", "==", "!=", "->" are one token.
func tokenize(s string, line int) []token {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case isIdent(rune(c)) || c == '.' && i+1 < len(s) && isIdent(rune(s[i+1])):
			j := i
			for j < len(s) && (isIdent(rune(s[j])) || s[j] == '.') {
				j++
			}
			out = append(out, token{s[i:j], line})
			i = j
		default:
			two := ""
			if i+1 < len(s) {
				two = s[i : i+2]
			}
			switch two {
			case "/\\", "\\/", "==", "!=", "->", "&&", "||":
				out = append(out, token{two, line})
				i += 2
				continue
			}
			out = append(out, token{string(c), line})
			i++
		}
	}
	return out
}

func isIdent(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// tokens is a cursor over tokens.
type tokens struct {
	t    []token
	i    int
	file string
}

func (p *tokens) peek() string {
	if p.i < len(p.t) {
		return p.t[p.i].s
	}
	return ""
}

func (p *tokens) line() int {
	if p.i < len(p.t) {
		return p.t[p.i].line
	}
	if len(p.t) > 0 {
		return p.t[len(p.t)-1].line
	}
	return 0
}

func (p *tokens) next() string {
	s := p.peek()
	if p.i < len(p.t) {
		p.i++
	}
	return s
}

func (p *tokens) errf(format string, args ...any) error {
	return &ParseError{File: p.file, Line: p.line(), Msg: sprintf(format, args...)}
}

func (p *tokens) expect(s string) error {
	if got := p.peek(); got != s {
		if got == "" {
			return p.errf("expected %q, found the end of the input", s)
		}
		return p.errf("expected %q, found %q", s, got)
	}
	p.i++
	return nil
}

func (p *tokens) accept(s string) bool {
	if p.peek() == s {
		p.i++
		return true
	}
	return false
}

// number reads w as an integer literal when it starts with a digit, as
// strconv reads Go's (decimal, 0x, 0o, 0b, a leading 0 for octal), and
// negates it for neg; isNum is false for anything else (a name). A word
// that starts with a digit is a number or an error, never a name: read as
// a name, an out-of-range value would quietly become a new location, or
// an "unknown name". Values are 64-bit registers and memory words, so a
// number may go up to 2^64-1, and down to -2^63.
func number(w string, neg bool) (v uint64, isNum bool, err error) {
	if w == "" || w[0] < '0' || w[0] > '9' {
		return 0, false, nil
	}
	sign := ""
	if neg {
		sign = "-"
	}
	u, err := strconv.ParseUint(w, 0, 64)
	switch {
	case errors.Is(err, strconv.ErrRange), err == nil && neg && u > 1<<63:
		return 0, true, fmt.Errorf("number %s%s is out of range (values are 64 bits)", sign, w)
	case err != nil:
		return 0, true, fmt.Errorf("bad number %q", sign+w)
	}
	if neg {
		u = -u
	}
	return u, true, nil
}
