// Package clip shortens what a message quotes of its input (an argument,
// a label read from a trace file) so that it is enough to recognise and
// not enough to flood a terminal: the cli and the trace replayer quote the
// same way.
package clip

import (
	"fmt"
	"io/fs"
)

// Quoted bounds what a message quotes of one piece of input, in bytes.
const Quoted = 200

// String shortens s to about Quoted bytes, saying how much it left out.
func String(s string) string { return To(s, Quoted) }

// To keeps the start and the end of s, at most n bytes together, on rune
// boundaries, with the number of bytes left out between them.
func To(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*3/4, n/4
	for head > 0 && !utf8Start(s[head]) {
		head--
	}
	from := len(s) - tail
	for from < len(s) && !utf8Start(s[from]) {
		from++
	}
	return fmt.Sprintf("%s…[%d bytes left out]…%s", s[:head], from-head, s[from:])
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// PathError returns err with the path of a file-system error shortened
// as String does: the file name is the user's input, and the error
// quotes it.
func PathError(err error) error {
	if pe, ok := err.(*fs.PathError); ok && len(pe.Path) > Quoted {
		c := *pe
		c.Path = String(pe.Path)
		return &c
	}
	return err
}
