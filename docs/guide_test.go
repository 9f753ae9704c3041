package docs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/internal/race"
	"github.com/protocheck/protocheck/protocols"
)

// guide is the page whose commands the test runs, relative to this
// package's directory.
const guide = "check-a-patch.md"

// A command of the guide: a "$ go run ./cmd/check ..." line of a
// ```console block, the output lines shown under it, and the exit status
// the block ends with ("exit status N", as go run prints it; 0 if none).
type command struct {
	line   int // 1-based line of the "$ " in the guide
	args   []string
	want   []string // the output shown, "..." where lines are left out
	status int
}

// A quote of the guide: a ```go block right after a line
// "<!-- quoted from PATH -->": every line of it, but "..." and "// ...",
// is a line of PATH (leading and trailing blanks aside), in that order.
type quote struct {
	line  int
	path  string
	lines []string
}

// A reference of the guide: a test named in a line
// "<!-- test PACKAGE-DIR TestName -->", which must exist there.
type reference struct {
	line      int
	dir, name string
}

var (
	quoteMark = regexp.MustCompile(`^<!-- quoted from (\S+) -->$`)
	testMark  = regexp.MustCompile(`^<!-- test (\S+) (Test\w+) -->$`)
	exitLine  = regexp.MustCompile(`^exit status (\d+)$`)
)

func parseGuide(t *testing.T, text string) ([]command, []quote, []reference) {
	t.Helper()
	var cmds []command
	var quotes []quote
	var refs []reference
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := testMark.FindStringSubmatch(l); m != nil {
			refs = append(refs, reference{line: i + 1, dir: m[1], name: m[2]})
			continue
		}
		if m := quoteMark.FindStringSubmatch(l); m != nil {
			if i+1 >= len(lines) || lines[i+1] != "```go" {
				t.Fatalf("%s:%d: a quote mark must be followed by a ```go block", guide, i+1)
			}
			q := quote{line: i + 2, path: m[1]}
			for i += 2; i < len(lines) && lines[i] != "```"; i++ {
				q.lines = append(q.lines, lines[i])
			}
			quotes = append(quotes, q)
			continue
		}
		if l != "```console" {
			continue
		}
		var cur *command
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			b := strings.TrimRight(lines[i], " \t")
			if rest, ok := strings.CutPrefix(b, "$ "); ok {
				args, ok := strings.CutPrefix(rest, "go run ./cmd/check ")
				if !ok {
					t.Fatalf("%s:%d: a command the test cannot run (only go run ./cmd/check ...): %s", guide, i+1, rest)
				}
				cmds = append(cmds, command{line: i + 1, args: strings.Fields(args)})
				cur = &cmds[len(cmds)-1]
				continue
			}
			if cur == nil {
				t.Fatalf("%s:%d: output before any command in a console block", guide, i+1)
			}
			cur.want = append(cur.want, b)
		}
		if i == len(lines) {
			t.Fatalf("%s: a console block is not closed", guide)
		}
	}
	for k := range cmds {
		c := &cmds[k]
		if n := len(c.want); n > 0 {
			if m := exitLine.FindStringSubmatch(c.want[n-1]); m != nil {
				c.status, _ = strconv.Atoi(m[1])
				c.want = c.want[:n-1]
			}
		}
	}
	return cmds, quotes, refs
}

// matches reports whether got shows what want shows: want's lines split at
// "..." lines into runs, each run found as consecutive lines of got, the
// runs in order (blanks compared as in equalRun); without a leading (trailing) "..." the first (last) run
// must start (end) got.
func matches(got, want []string) error {
	if len(want) == 0 {
		if len(got) > 0 {
			return fmt.Errorf("the guide shows no output, and there is some (show it, or \"...\")")
		}
		return nil
	}
	var runs [][]string
	run := []string{}
	for _, w := range want {
		if w == "..." {
			runs = append(runs, run)
			run = []string{}
			continue
		}
		run = append(run, w)
	}
	runs = append(runs, run)
	pos := 0
	for k, r := range runs {
		if len(r) == 0 {
			continue
		}
		anchoredStart := k == 0
		anchoredEnd := k == len(runs)-1
		found := -1
		for at := pos; at+len(r) <= len(got); at++ {
			if anchoredStart && at != 0 {
				break
			}
			if equalRun(got[at:at+len(r)], r) && (!anchoredEnd || at+len(r) == len(got)) {
				found = at
				break
			}
		}
		if found < 0 {
			return fmt.Errorf("these lines are not in the output (in this order, consecutive%s%s):\n%s",
				map[bool]string{true: ", at its start", false: ""}[anchoredStart],
				map[bool]string{true: ", at its end", false: ""}[anchoredEnd],
				strings.Join(r, "\n"))
		}
		pos = found + len(r)
	}
	return nil
}

// equalRun compares lines with every run of blanks as one (a table's
// columns are padded to its longest entry, which a variant added elsewhere
// in the table changes); a " ... " inside a shown line stands for any text
// left out there (parameters at their defaults, mostly, which a parameter
// added to the protocol lengthens).
func equalRun(got, want []string) bool {
	for i := range want {
		if !equalLine(got[i], want[i]) {
			return false
		}
	}
	return true
}

func equalLine(got, want string) bool {
	g := strings.Join(strings.Fields(got), " ")
	parts := strings.Split(strings.Join(strings.Fields(want), " "), " ... ")
	if len(parts) == 1 {
		return g == parts[0]
	}
	first, last := parts[0], parts[len(parts)-1]
	if !strings.HasPrefix(g, first+" ") || !strings.HasSuffix(g, " "+last) {
		return false
	}
	rest := g[len(first) : len(g)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		k := strings.Index(rest, " "+p+" ")
		if k < 0 {
			return false
		}
		rest = rest[k+len(p)+1:]
	}
	return true
}

func outputLines(b []byte) []string {
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return nil
	}
	out := strings.Split(s, "\n")
	for i := range out {
		out[i] = strings.TrimRight(out[i], " \t")
	}
	return out
}

// TestCheckAPatchGuide runs the guide's commands in order from the
// repository's root, as a reader following it would, through cli.Run over
// protocheck's registry (what go run ./cmd/check runs). A trace the guide
// writes with --out goes to a temporary directory instead, and must be
// byte for byte the file of that name in the repository when there is
// one: the guide's trace is the one kept. Under -short the verify
// commands (each explores the protocol's every variant at its default
// size: tens of seconds on two cores) are left out.
func TestCheckAPatchGuide(t *testing.T) {
	if race.Enabled {
		t.Skip("the guide's commands explore on few goroutines; the cli tests cover them under the race detector")
	}
	text, err := os.ReadFile(guide)
	if err != nil {
		t.Fatal(err)
	}
	cmds, quotes, refs := parseGuide(t, string(text))
	if len(cmds) < 8 {
		t.Fatalf("%s: %d commands found; the parser or the guide is broken", guide, len(cmds))
	}
	tmp := t.TempDir()
	t.Chdir("..")

	for _, q := range quotes {
		src, err := os.ReadFile(q.path)
		if err != nil {
			t.Errorf("%s:%d: %v", guide, q.line, err)
			continue
		}
		srcLines := strings.Split(string(src), "\n")
		at := 0
		for _, l := range q.lines {
			l = strings.TrimSpace(l)
			if l == "" || l == "..." || l == "// ..." {
				continue
			}
			found := false
			for ; at < len(srcLines); at++ {
				if strings.TrimSpace(srcLines[at]) == l {
					found = true
					at++
					break
				}
			}
			if !found {
				t.Errorf("%s:%d: the quoted line %q is not in %s (after the lines quoted before it)", guide, q.line, l, q.path)
				break
			}
		}
	}
	for _, r := range refs {
		files, _ := filepath.Glob(filepath.Join(r.dir, "*_test.go"))
		found := false
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if bytes.Contains(b, []byte("func "+r.name+"(")) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s:%d: no test %s in %s", guide, r.line, r.name, r.dir)
		}
	}

	var total time.Duration
	for _, c := range cmds {
		if testing.Short() && len(c.args) > 0 && c.args[0] == "verify" {
			t.Logf("%s:%d: check %s: left out under -short", guide, c.line, strings.Join(c.args, " "))
			continue
		}
		args := append([]string(nil), c.args...)
		kept := map[string]string{}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "--out" || args[i] == "--html" {
				dst := filepath.Join(tmp, filepath.Base(args[i+1]))
				kept[dst] = args[i+1]
				args[i+1] = dst
			}
		}
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := cli.Run(protocols.Registry(), args, &stdout, &stderr, nil)
		took := time.Since(start)
		total += took
		t.Logf("%s:%d: check %s: exit %d, %.2f s", guide, c.line, strings.Join(c.args, " "), code, took.Seconds())
		if code != c.status {
			t.Errorf("%s:%d: check %s: exit status %d, the guide says %d\nstdout:\n%s\nstderr:\n%s",
				guide, c.line, strings.Join(c.args, " "), code, c.status, stdout.String(), stderr.String())
			continue
		}
		if err := matches(outputLines(stdout.Bytes()), c.want); err != nil {
			t.Errorf("%s:%d: check %s: %v\nstdout:\n%s", guide, c.line, strings.Join(c.args, " "), err, stdout.String())
		}
		for dst, orig := range kept {
			want, err := os.ReadFile(orig)
			if err != nil {
				continue // a file the repository does not keep
			}
			got, err := os.ReadFile(dst)
			if err != nil {
				t.Errorf("%s:%d: %s not written: %v", guide, c.line, orig, err)
			} else if !bytes.Equal(got, want) {
				t.Errorf("%s:%d: the trace written differs from the one kept in %s", guide, c.line, orig)
			}
		}
	}
	t.Logf("the guide's commands took %.1f s in all", total.Seconds())
}

// The matcher itself: runs, anchors and elisions, of lines and in a line.
func TestMatches(t *testing.T) {
	got := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		want []string
		ok   bool
	}{
		{[]string{"a", "b", "c", "d"}, true},
		{[]string{"a", "..."}, true},
		{[]string{"...", "d"}, true},
		{[]string{"a", "...", "d"}, true},
		{[]string{"...", "b", "c", "..."}, true},
		{[]string{"b", "..."}, false},             // not at the start
		{[]string{"...", "c"}, false},             // not at the end
		{[]string{"...", "b", "d", "..."}, false}, // not consecutive
		{[]string{"...", "c", "...", "b", "..."}, false},
		{nil, false},
		{[]string{"..."}, true},
	} {
		if err := matches(got, tc.want); (err == nil) != tc.ok {
			t.Errorf("matches(%q, %q) = %v, want ok=%v", got, tc.want, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		got, want string
		ok        bool
	}{
		{"p/v  a=1 b=2 c=3  strategy bfs", "p/v a=1 b=2 c=3 strategy bfs", true},
		{"p/v  a=1 b=2 c=3  strategy bfs", "p/v ... b=2 ... strategy bfs", true},
		{"p/v  a=1 b=2 c=3  strategy bfs", "p/v ... strategy bfs", true},
		{"p/v  a=1 b=2 c=3  strategy bfs", "p/v ... b=3 ... strategy bfs", false},
		{"p/v  a=1 b=2 c=3  strategy bfs", "p/v ... c=3 ... b=2 ... strategy bfs", false},
		{"p/v  a=1 b=2 c=3  strategy bfs", "q/v ... strategy bfs", false},
		{"p/v  a=1 b=2 c=3  strategy bfs", "p/v ... strategy dfs", false},
	} {
		if equalLine(tc.got, tc.want) != tc.ok {
			t.Errorf("equalLine(%q, %q) = %v", tc.got, tc.want, !tc.ok)
		}
	}
}
