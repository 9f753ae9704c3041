package cli_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/protocols"
	"github.com/protocheck/protocheck/traces"
)

// An output file that cannot be written is an error before any work: an
// exploration that would take hours returns at once.
func TestOutputPathsAreCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nonexistent", "x.json")
	trace := filepath.Join("..", "testdata", "pvflush", "posted.trace.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explore", "pvflush/fixed", "vcpus=5", "--out", missing}, "--out " + missing + ": cannot be written"},
		{[]string{"explore", "pvflush/fixed", "vcpus=5", "--html", dir}, "it is a directory"},
		{[]string{"explore", "pvflush/fixed", "vcpus=5", "--out", filepath.Join(trace, "x.json")}, "not a directory"},
		{[]string{"stress", "pvflush/posted", "--controlled", "--runs", "1000000", "--out", missing}, "cannot be written"},
		{[]string{"replay", "--html", missing, trace}, "cannot be written"},
		{[]string{"minimize", "--out", missing, trace}, "cannot be written"},
	} {
		start := time.Now()
		code, stdout, stderr := check(t, tc.args...)
		if code != cli.ExitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("check %q: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout and %q", tc.args, code, stdout, stderr, tc.want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("check %q took %s: the path was not checked before the work", tc.args, d)
		}
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Errorf("checking created %s", filepath.Dir(missing))
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("checking left files behind: %v", left)
	}
}

// A write that fails after the exploration (a full disk: /dev/full) loses
// neither the result on stdout nor the trace.
func TestAFailedWriteKeepsTheResult(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full to fail a write")
	}
	path := filepath.Join(t.TempDir(), "posted.json")
	code, stdout, stderr := check(t, "explore", "pvflush/posted", "--out", path, "--html", "/dev/full")
	if code != cli.ExitUsage || !strings.Contains(stdout, "counterexample: 14 steps") || !strings.Contains(stderr, "--html /dev/full") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := traces.Load(path); err != nil {
		t.Errorf("the trace was not written: %v", err)
	}
	code, stdout, stderr = check(t, "explore", "pvflush/posted", "--json", "--out", "/dev/full")
	if code != cli.ExitUsage || !strings.Contains(stdout, `"verdict": "violation"`) || !strings.Contains(stderr, "--out /dev/full") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// fullWriter fails every write, as stdout on a full disk does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// Every command whose result cannot be written to stdout exits 2 and says
// so on stderr, whether or not it checks its own writes: a user must not
// take an exit 0 for a result they never got.
func TestUnwritableStdoutExitsTwo(t *testing.T) {
	trace := filepath.Join("..", "testdata", "pvflush", "posted.trace.json")
	for _, args := range [][]string{
		{"-h"},
		{"list"},
		{"list", "--json"},
		{"explain", "pvflush/fixed"},
		{"explore", "-h"},
		{"explore", "pvflush/posted"},
		{"compare", "pvflush", "fixed", "posted"},
		{"bench", "--config", "bfs", "pvflush/fixed", "vcpus=2"},
		{"stress", "pvflush/fixed", "--runs", "2"},
		{"replay", trace},
		{"replay", "--impl", trace},
	} {
		var stderr strings.Builder
		code := cli.Main(protocols.Registry(), args, fullWriter{}, &stderr)
		if code != cli.ExitUsage || !strings.Contains(stderr.String(), "no space left on device") {
			t.Errorf("check %q with stdout full: exit %d, stderr %q; want exit 2 and the write error", args, code, stderr.String())
		}
	}
}
