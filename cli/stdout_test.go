package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/traces"
)

// A mistake prints nothing on stdout: the error and a hint on stderr.
// Help asked for is the result, on stdout.
func TestStdoutHoldsTheResultOnly(t *testing.T) {
	code, stdout, stderr := check(t, "explore", "--bogus", "pvflush/fixed")
	if code != cli.ExitUsage || stdout != "" || !strings.Contains(stderr, "-bogus") || !strings.Contains(stderr, `run "check explore -h" for its flags`) {
		t.Errorf("bad flag: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = check(t, "stress", "--runs", "many", "pvflush/fixed")
	if code != cli.ExitUsage || stdout != "" || !strings.Contains(stderr, `invalid value "many" for flag -runs`) {
		t.Errorf("bad flag value: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = check(t, "explore", "-h")
	if code != cli.ExitOK || !strings.Contains(stdout, "usage: check explore") || !strings.Contains(stdout, "-strategy") || stderr != "" {
		t.Errorf("explore -h: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// --json prints the same bytes on every run; the time only with --timing.
func TestJSONIsTheSameOnEveryRun(t *testing.T) {
	for _, args := range [][]string{
		{"explore", "pvflush/posted", "--json"},
		{"explore", "cputlb/synced", "migration=0", "commit=0", "--json"},
		{"verify", "exclusive", "--quick", "--json"},
		{"explore", "cputlb/synced", "migration=0", "commit=0"},
		{"verify", "exclusive", "--quick"},
		{"stress", "cputlb/synced", "migration=0", "commit=0", "--controlled", "--runs", "20"},
	} {
		_, first, _ := check(t, args...)
		_, second, _ := check(t, args...)
		if first != second {
			t.Errorf("check %q printed different stdout on two runs:\n%s\n---\n%s", args, first, second)
		}
		if showsTime(first) {
			t.Errorf("check %q shows a time without --timing:\n%s", args, first)
		}
	}
	_, out, _ := check(t, "explore", "cputlb/synced", "migration=0", "commit=0", "--json", "--timing")
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["seconds"] == nil {
		t.Errorf("--timing: no seconds in %s (%v)", out, err)
	}
	_, out, _ = check(t, "verify", "exclusive", "--quick", "--timing")
	if !showsTime(out) {
		t.Errorf("verify --timing shows no time column:\n%s", out)
	}
}

// An error that quotes the user's input quotes a bounded part of it.
func TestMessagesQuotingInputAreBounded(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	dir := t.TempDir()
	tr, err := traces.Load(filepath.Join("..", "testdata", "pvflush", "posted.trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr.Steps[2].Label = huge
	edited := filepath.Join(dir, "huge-label.json")
	if err := traces.Save(edited, tr); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{huge},
		{"explore", huge},
		{"explore", "pvflush/" + huge},
		{"explore", huge + "/fixed"},
		{"explore", "pvflush/fixed", huge + "=1"},
		{"explore", "pvflush/fixed", "vcpus=" + huge},
		{"explore", "--" + huge, "pvflush/fixed"},
		{"explore", "--runs", huge, "pvflush/fixed"},
		{"replay", edited},
		{"replay", "--impl", edited},
	} {
		code, stdout, stderr := check(t, args...)
		if code != cli.ExitUsage || len(stderr) > 4000 || stdout != "" {
			t.Errorf("check %.40q...: exit %d, %d bytes on stdout, %d bytes on stderr: want exit 2 and a short message", args, code, len(stdout), len(stderr))
		}
		if !strings.Contains(stderr, "bytes left out") {
			t.Errorf("check %.40q...: the message does not say it left input out: %.300s", args, stderr)
		}
	}
	if _, err := os.Stat(edited); err != nil {
		t.Fatal(err)
	}
}

// A piece of input longer than a message quotes, but short enough that
// the bound on a whole message would not cut it, is shortened where it is
// quoted: a variant, a parameter, a property, a metric, a configuration,
// a file name, a trace file's fields.
func TestMessagesQuoteAtMostAPieceOfInput(t *testing.T) {
	long := strings.Repeat("q", 1000)
	dir := t.TempDir()
	tr, err := traces.Load(filepath.Join("..", "testdata", "pvflush", "posted.trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr.Variant = long
	badVariant := filepath.Join(dir, "variant.json")
	if err := traces.Save(badVariant, tr); err != nil {
		t.Fatal(err)
	}
	badFormat := filepath.Join(dir, "format.json")
	if err := os.WriteFile(badFormat, []byte(`{"format": "`+long+`", "version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"explore", "pvflush/" + long},
		{"explain", "pvflush/" + long},
		{"explore", "pvflush/fixed", long + "=1"},
		{"explore", "pvflush/posted", "--without", long},
		{"compare", "pvflush", "fixed", "posted", "--metric", long},
		{"bench", "--config", long, "pvflush/fixed"},
		{"replay", filepath.Join(dir, long)},
		{"minimize", filepath.Join(dir, long)},
		{"explore", "pvflush/posted", "--out", filepath.Join(dir, "missing", long)},
		{"explore", "pvflush/fixed", "--fingerprint", "--spill-dir", filepath.Join(dir, long)},
		{"list", long},
		{"replay", badVariant},
		{"replay", badFormat},
	} {
		code, stdout, stderr := check(t, args...)
		if code != cli.ExitUsage || stdout != "" || strings.Contains(stderr, long[:300]) || !strings.Contains(stderr, "bytes left out") {
			t.Errorf("check %.60q...: exit %d, %d bytes on stdout, stderr %.400q: want exit 2 and the input shortened", args, code, len(stdout), stderr)
		}
	}
}

// showsTime reports whether output has a "seconds" field, a "time:" line
// or a time column.
func showsTime(out string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"seconds"`) || strings.HasPrefix(line, "time:") || slices.Contains(strings.Fields(line), "time") {
			return true
		}
	}
	return false
}

// A flag that would do nothing in the combination given is an error, the
// same way in every command; so are values explore already rejects.
func TestIgnoredFlagsAreErrors(t *testing.T) {
	trace := filepath.Join("..", "testdata", "pvflush", "posted.trace.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "cputlb", "--workers", "0"}, "--workers must be at least 1, got 0"},
		{[]string{"explore", "cputlb/synced", "--workers", "0"}, "--workers must be at least 1, got 0"},
		{[]string{"verify", "cputlb", "--strategy", "dfs", "--workers", "2"}, "--workers does nothing with --strategy dfs"},
		{[]string{"verify", "cputlb", "--strategy", ""}, "--strategy must be bfs or dfs"},
		{[]string{"explore", "cputlb/synced", "--strategy", ""}, `unknown strategy ""`},
		{[]string{"compare", "cputlb", "synced", "non-synced", "--strategy", ""}, `unknown strategy ""`},
		{[]string{"stress", "cputlb/synced", "--strategy", "pct"}, "--strategy does nothing without --controlled"},
		{[]string{"stress", "cputlb/synced", "--depth", "2"}, "--depth does nothing without --controlled"},
		{[]string{"stress", "cputlb/synced", "--preemptions", "1"}, "--preemptions does nothing without --controlled"},
		{[]string{"stress", "cputlb/synced", "--max-steps", "10"}, "--max-steps does nothing without --controlled"},
		{[]string{"stress", "cputlb/synced", "--controlled", "--watchdog", "1s"}, "--watchdog does nothing with --controlled"},
		{[]string{"stress", "cputlb/synced", "--controlled", "--depth", "2"}, "--depth does nothing with --strategy random"},
		{[]string{"stress", "cputlb/synced", "--controlled", "--strategy", "pct", "--preemptions", "1"}, "--preemptions does nothing with --strategy pct"},
		{[]string{"stress", "cputlb/synced", "--controlled", "--strategy", "dfs", "--seed", "3"}, "--seed does nothing with --strategy dfs"},
		{[]string{"stress", "cputlb/synced", "--controlled", "--strategy", ""}, `unknown --strategy ""`},
		{[]string{"stress", "cputlb/synced", "--watchdog", "0s"}, "--watchdog must be positive"},
		{[]string{"replay", "--impl", "--json", trace}, "--json does nothing with --impl"},
		{[]string{"replay", "--impl", "--html", "x.html", trace}, "--html does nothing with --impl"},
		{[]string{"replay", "--impl", "--full", trace}, "--full does nothing with --impl"},
		{[]string{"replay", "--json", "--full", trace}, "--full does nothing with --json"},
		{[]string{"explore", "pvflush/posted", "--json", "--full"}, "--full does nothing with --json"},
		{[]string{"explore", "pvflush/fixed", "--fairness", "none", "--no-progress"}, "--fairness does nothing with --no-progress"},
		{[]string{"explore", "pvflush/fixed", "--fairness", "none", "--without", "flush-returns"}, "pvflush/fixed has no progress property"},
	} {
		code, stdout, stderr := check(t, tc.args...)
		if code != cli.ExitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("check %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}
