package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/protocols"
)

// FuzzRun feeds the command line arbitrary arguments (separated by NUL
// bytes, which no real argument contains) through Run: whatever they are,
// the command must not panic, must exit 0, 1, 2, 3 or 130, must say why on
// stderr when it exits 2, and must keep every line it prints there short
// (a message quotes a bounded part of the input). A command still running
// after a second is interrupted, as Ctrl-C would, so that a huge
// exploration ends. It runs in a temporary directory holding one trace,
// posted.json, and an argument that could name a file outside it (an
// absolute path, "..") is not tried, so that --out writes nowhere else.
func FuzzRun(f *testing.F) {
	posted, err := os.ReadFile(filepath.Join("..", "testdata", "pvflush", "posted.trace.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, args := range [][]string{
		{},
		{"help"},
		{"list"},
		{"list", "--json"},
		{"explain", "pvflush/posted"},
		{"explore", "cputlb/synced", "migration=0", "commit=0"},
		{"explore", "cputlb/non-synced", "--json", "--out", "t.json"},
		{"explore", "pvflush/posted", "--strategy", "random", "--seed", "7", "--runs", "3"},
		{"explore", "cputlb/synced", "migration=0", "commit=0", "--strategy", "dfs", "--preemptions", "1", "cpus=2"},
		{"explore", "pvflush/fixed", "vcpus=0"},
		{"explore", "--workers", "0", "x/y"},
		{"explore", "pvflush/fixed", "vcpus=99999999999999999999"},
		{"explore", "-h"},
		{"verify", "nosuch"},
		{"replay", "posted.json"},
		{"replay", "--json", "posted.json"},
		{"replay", "--impl", "posted.json"},
		{"replay", "--html", "p.html", "posted.json"},
		{"minimize", "posted.json"},
		{"compare", "cputlb", "synced", "non-synced", "--metric", "kicks"},
		{"stress", "cputlb/synced", "migration=0", "commit=0", "--runs", "2"},
		{"stress", "cputlb/synced", "migration=0", "commit=0", "--controlled", "--strategy", "pct", "--depth", "2", "--runs", "2"},
		{"stress", "pvflush/fixed", "--strategy", "pct"},
		{"bench", "cputlb/synced", "migration=0", "commit=0", "cpus=2"},
		{"explore", "--", "-h"},
		{"explore", "pvflush/posted", "--timing", "--progress", "json"},
	} {
		f.Add(strings.Join(args, "\x00"))
	}
	reg := protocols.Registry()
	f.Fuzz(func(t *testing.T, line string) {
		var args []string
		if line != "" {
			args = strings.Split(line, "\x00")
		}
		for _, a := range args {
			if strings.HasPrefix(a, "/") || strings.Contains(a, "=/") || strings.Contains(a, "..") || strings.HasPrefix(a, "~") {
				t.Skip("an argument that could name a file outside the test's directory")
			}
		}
		if len(args) > 32 {
			t.Skip("too many arguments")
		}
		t.Chdir(t.TempDir())
		if err := os.WriteFile("posted.json", posted, 0o644); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		timer := time.AfterFunc(time.Second, func() { close(stop) })
		defer timer.Stop()
		var stdout, stderr bytes.Buffer
		code := cli.Run(reg, args, &stdout, &stderr, stop)
		switch code {
		case cli.ExitOK, cli.ExitViolation, cli.ExitIncomplete, cli.ExitInterrupted:
		case cli.ExitUsage:
			if stderr.Len() == 0 {
				t.Errorf("check %q: exit 2 with nothing on stderr", args)
			}
		default:
			t.Errorf("check %q: exit %d", args, code)
		}
		for _, l := range strings.Split(stderr.String(), "\n") {
			if len(l) > 2500 {
				t.Errorf("check %q: a line of %d bytes on stderr: %.200q...", args, len(l), l)
			}
		}
	})
}
