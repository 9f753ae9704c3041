package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/internal/race"
	"github.com/protocheck/protocheck/protocols"
	"github.com/protocheck/protocheck/traces"
)

// Run as the check command itself when the test binary is started by
// TestSignalStopsTheCommand: the in-process tests cannot send a real
// signal without stopping every test.
func TestMain(m *testing.M) {
	if os.Getenv("PROTOCHECK_CLI_MAIN") == "1" {
		os.Exit(cli.Main(protocols.Registry(), os.Args[1:], os.Stdout, os.Stderr))
	}
	// The verify tests run every protocol's matrix rows on the same
	// parallel search the explore tests exercise: under the race detector
	// they would take most of CI's time and find nothing new.
	os.Exit(race.MainSkipping(m, "TestVerify|TestJSONIsTheSameOnEveryRun"))
}

// runStopped runs the command in process and closes its stop channel
// after d (at once when d is 0), as a signal would.
func runStopped(t *testing.T, d time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	stop := make(chan struct{})
	if d == 0 {
		close(stop)
	} else {
		timer := time.AfterFunc(d, func() { close(stop) })
		defer timer.Stop()
	}
	var out, errb bytes.Buffer
	code = cli.Run(protocols.Registry(), args, &out, &errb, stop)
	return code, out.String(), errb.String()
}

// An exploration far too large to finish, interrupted, still prints its
// result: the verdict interrupted and the states explored so far, as text
// and as JSON, and exits 130.
func TestInterruptedExplorationKeepsItsResult(t *testing.T) {
	code, out, stderr := runStopped(t, time.Second, "explore", "pvflush/fixed", "vcpus=5", "--json", "--progress", "none")
	if code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s%s", code, cli.ExitInterrupted, out, stderr)
	}
	var doc struct {
		Verdict     string
		States      int64
		Transitions int64
		Depth       int
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if doc.Verdict != "interrupted" || doc.States < 2 || doc.Transitions < 1 || doc.Depth < 1 {
		t.Errorf("got %+v, want the verdict interrupted with the states explored", doc)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explore", "pvflush/fixed", "vcpus=5", "--strategy", "dfs"}, "verdict: interrupted"},
		{[]string{"explore", "pvflush/fixed", "vcpus=5", "--strategy", "random", "--runs", "100000000"}, "verdict: interrupted"},
		{[]string{"explore", "pvflush/fixed", "vcpus=5", "--strategy", "paths"}, "verdict: interrupted"},
		{[]string{"verify", "pvflush"}, "interrupted: 0 of the 0 rows checked before it match"},
		{[]string{"compare", "pvflush", "fixed", "native"}, "fixed: interrupted"},
		{[]string{"stress", "pvflush/fixed", "--duration", "1h"}, "interrupted after 0 runs"},
		{[]string{"stress", "pvflush/fixed", "--controlled", "--runs", "1000000"}, "interrupted after 0 runs"},
		{[]string{"bench", "cputlb/synced", "migration=0", "commit=0"}, "interrupted"},
	} {
		code, out, stderr := runStopped(t, 0, tc.args...)
		if code != cli.ExitInterrupted || !strings.Contains(out, tc.want) {
			t.Errorf("check %q stopped at once: exit %d, want %d and %q in\n%s%s", tc.args, code, cli.ExitInterrupted, tc.want, out, stderr)
		}
	}
}

// A violation found before the interruption is the result: the trace is
// written and the exit status is 1.
func TestInterruptAfterAViolationKeepsTheTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "found.json")
	// The violation is found in the first walk; the stop comes long after.
	code, out, stderr := runStopped(t, time.Hour, "explore", "pvflush/posted", "--strategy", "random", "--out", path)
	if code != cli.ExitViolation || !strings.Contains(out, "stale-tlb") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if _, err := traces.Load(path); err != nil {
		t.Fatal(err)
	}
}

// The built command, sent a real SIGINT once it has explored for a
// second, prints its result as JSON and exits 130; SIGTERM gives 143.
func TestSignalStopsTheCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT to send on Windows")
	}
	for _, tc := range []struct {
		sig  os.Signal
		code int
	}{{os.Interrupt, 130}, {syscall.SIGTERM, 143}} {
		cmd := exec.Command(os.Args[0], "explore", "pvflush/fixed", "vcpus=5", "--json", "--progress", "json")
		cmd.Env = append(os.Environ(), "PROTOCHECK_CLI_MAIN=1")
		var out bytes.Buffer
		cmd.Stdout = &out
		errPipe, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The first progress line comes after a second of exploring, long
		// after the command installed its signal handler.
		sc := bufio.NewScanner(errPipe)
		if !sc.Scan() {
			cmd.Process.Kill()
			t.Fatalf("no progress line: %v", sc.Err())
		}
		if err := cmd.Process.Signal(tc.sig); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() {
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
			t.Fatalf("%v: %v, want exit %d\n%s", tc.sig, err, tc.code, out.String())
		}
		var doc struct {
			Verdict string
			States  int64
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Verdict != "interrupted" || doc.States < 2 {
			t.Errorf("%v: stdout %q (%v), want a JSON document with the verdict interrupted and the states explored", tc.sig, out.String(), err)
		}
	}
}
