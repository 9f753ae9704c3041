package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/cli"
)

// An exhaustive search cut short by a limit exits 3, not 0, and says on
// stdout what it did not explore; one that explored every state but left a
// property unchecked (partial) exits 3 too. A sampling strategy's clean
// run exits 0 and says how many walks it made; a proof exits 0. A CI job
// can tell them apart by the exit code alone.
func TestExitCodesTellAProofFromAnUnfinishedSearch(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		// The seed's bug is 14 steps deep; paths gives up after a million
		// executions without reaching it.
		{[]string{"explore", "pvflush/posted", "--strategy", "paths"}, cli.ExitIncomplete, []string{
			"verdict: bounded — the search stopped before it was exhaustive (paths: stopped after 1000000 executions)",
			"not explored: every execution after the first 1000000",
		}},
		{[]string{"explore", "pvflush/fixed", "--max-states", "1000"}, cli.ExitIncomplete, []string{
			"verdict: bounded — the search stopped before it was exhaustive (max-states=1000: the state space is larger)",
			"not explored: every state beyond the 1000 reached",
		}},
		{[]string{"explore", "pvflush/fixed", "--strategy", "dfs", "--max-states", "1000"}, cli.ExitIncomplete, []string{"(max-states=1000", "not explored: "}},
		{[]string{"explore", "pvflush/fixed", "--time-limit", "1ns"}, cli.ExitIncomplete, []string{"(time-limit=1ns: the search did not finish in time)", "not explored: "}},
		{[]string{"explore", "pvflush/fixed", "--max-memory", "1"}, cli.ExitIncomplete, []string{"(max-memory=1 MiB", "not explored: "}},
		{[]string{"explore", "pvflush/fixed", "vcpus=2", "--max-steps", "5"}, cli.ExitIncomplete, []string{"not explored: every execution longer than 5 steps"}},
		{[]string{"explore", "pvflush/fixed", "vcpus=2", "--strategy", "dfs", "--preemptions", "1"}, cli.ExitIncomplete, []string{"not explored: every execution with more than 1 preemption,"}},
		// Every state explored, progress not checked: not a proof of it.
		{[]string{"explore", "pvflush/fixed", "vcpus=2", "--strategy", "dfs"}, cli.ExitIncomplete, []string{
			"verdict: partial — every reachable state explored, no property violated, but not every property checked",
			"not checked: flush-returns: progress is checked by bfs only",
		}},
		{[]string{"explore", "pvflush/fixed", "vcpus=2", "--symmetry"}, cli.ExitIncomplete, []string{"verdict: partial", "not checked: flush-returns: progress is not checked under symmetry reduction"}},
		{[]string{"compare", "pvflush", "fixed", "native", "--max-states", "1000"}, cli.ExitIncomplete, []string{"fixed: bounded", "note: fixed: the search stopped before it was exhaustive (max-states=1000"}},
		// Sampling: clean, with the number of walks, and exit 0 as before.
		{[]string{"explore", "pvflush/fixed", "--strategy", "random", "--runs", "50"}, cli.ExitOK, []string{"verdict: bounded — no violation within the bounds (random: 50 walks from seed 1)"}},
		{[]string{"explore", "pvflush/fixed", "--strategy", "pct", "--runs", "50"}, cli.ExitOK, []string{"verdict: bounded — no violation within the bounds (pct: 50 walks of depth 3 from seed 1)"}},
		// Proofs, and progress left out on request.
		{[]string{"explore", "pvflush/fixed", "vcpus=2"}, cli.ExitOK, []string{"verdict: ok — every reachable state explored", "progress: flush-returns checked"}},
		{[]string{"explore", "pvflush/fixed", "vcpus=2", "--no-progress"}, cli.ExitOK, []string{"verdict: ok", "skipped: flush-returns: progress properties were skipped (no-progress)"}},
		{[]string{"explore", "pvflush/fixed", "vcpus=2", "--without", "flush-returns"}, cli.ExitOK, []string{"verdict: ok"}},
	} {
		code, out, stderr := check(t, append(c.args, "--progress", "none")...)
		if code != c.code {
			t.Errorf("check %s: exit %d, want %d\n%s%s", strings.Join(c.args, " "), code, c.code, out, stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("check %s: no %q in\n%s", strings.Join(c.args, " "), w, out)
			}
		}
	}
	code, out, _ := check(t, "explore", "pvflush/fixed", "--max-states", "1000", "--json", "--progress", "none")
	var doc struct{ Verdict, Bound string }
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != cli.ExitIncomplete || doc.Verdict != "bounded" || !strings.HasPrefix(doc.Bound, "max-states=1000") {
		t.Errorf("--json: exit %d, %+v (%v)", code, doc, err)
	}
	_, help, _ := check(t, "--help")
	if !strings.Contains(help, "3 no violation but not a proof") {
		t.Errorf("--help does not name exit status 3:\n%s", help)
	}
}

// check explore ... | head: the reader goes away, the write fails, and
// the command says so and exits 2, as for any stdout that cannot be
// written, instead of dying of SIGPIPE (141) with nothing said.
func TestClosedPipeExitsTwo(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGPIPE on Windows")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd := exec.Command(os.Args[0], "explore", "pvflush/posted", "--progress", "none")
	cmd.Env = append(os.Environ(), "PROTOCHECK_CLI_MAIN=1")
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	w.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitUsage {
		t.Fatalf("%v, want exit %d\n%s", err, cli.ExitUsage, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stdout") || !strings.Contains(stderr.String(), "broken pipe") {
		t.Errorf("stderr does not say why:\n%s", stderr.String())
	}
}
