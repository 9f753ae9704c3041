package command

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/cluster/internal/beamtest"
	"github.com/protocheck/protocheck/cluster/target"
)

func TestMain(m *testing.M) { beamtest.Main(m) }

// cluster runs this command; check runs the check command on the same
// protocols.
func cluster(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func check(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	reg := &cli.Registry{Protocols: target.Protocols()}
	code := cli.Run(reg, args, &out, &errb, nil)
	return code, out.String(), errb.String()
}

func document(t *testing.T, s string) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		t.Fatalf("not a JSON document: %v\n%s", err, s)
	}
	return d
}

// The --json document is check explore's, but for the fingerprint
// collision estimate: a cluster search always stores fingerprints.
func TestSameDocumentAsCheck(t *testing.T) {
	for _, args := range [][]string{
		{"explore", "pvflush/fixed", "--json"},
		{"explore", "pvflush/posted", "--json"},
		{"explore", "exclusive/upstream", "--json"},
		{"explore", "exclusive/cpu-lock", "vcpus=2", "--json"},
		{"explore", "cputlb/synced-fixed", "migration=0", "--json"},
		{"explore", "cputlb/non-synced", "--json"},
		{"explore", "e500mc/per-lpid", "loads=2", "ops=1", "--symmetry", "--json"},
		{"explore", "batchunmap/generation", "--json"},
		{"explore", "batchunmap/no-flush-dirty", "--json"},
		{"explore", "exclusive/cpu-lock", "vcpus=2", "--strategy", "random", "--seed", "1", "--max-steps", "200", "--json"},
		{"explore", "pvflush/fixed", "--strategy", "pct", "--runs", "200", "--json"},
	} {
		t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
			code, out, stderr := cluster(t, args...)
			wantCode, wantOut, _ := check(t, args...)
			got, want := document(t, out), document(t, wantOut)
			if _, ok := got["fingerprint_collision"]; !ok && got["strategy"] == "bfs" {
				t.Errorf("no fingerprint_collision in a bfs document")
			}
			delete(got, "fingerprint_collision")
			delete(want, "store_bytes_per_state") // the local search's own structures
			if _, checked := want["unchecked"]; !checked && want["verdict"] == "ok" && got["verdict"] != "ok" {
				// The local bfs checked the progress properties on its
				// state graph and names them (ok, exit 0); a cluster
				// search keeps none, lists each of them as not checked
				// and is partial, exit 3: not a proof of them.
				if got["verdict"] != "partial" || code != cli.ExitIncomplete || wantCode != cli.ExitOK {
					t.Errorf("verdict %v, exit %d; check explore's ok, exit %d: want partial, exit %d", got["verdict"], code, wantCode, cli.ExitIncomplete)
				}
				got["verdict"], code = "ok", wantCode
				held, _ := want["progress_checked"].([]any)
				u, _ := got["unchecked"].([]any)
				if len(u) != len(held) {
					t.Errorf("not checked on the cluster: %v; checked by check explore: %v", u, held)
				}
				for i, x := range u {
					if !strings.Contains(x.(string), "progress is not checked on a cluster") ||
						i < len(held) && !strings.HasPrefix(x.(string), held[i].(string)+":") {
						t.Errorf("unchecked: %q; check explore checked %v", x, held)
					}
				}
				delete(got, "unchecked")
				delete(want, "progress_checked")
				delete(want, "fairness")
			}
			if code != wantCode {
				t.Fatalf("exit %d, check exits %d\n%s", code, wantCode, stderr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("cluster:\n%s\ncheck:\n%s", out, wantOut)
			}
			if !strings.Contains(stderr, "level 0:") && !strings.Contains(stderr, "walks 0..") {
				t.Errorf("no progress on stderr:\n%s", stderr)
			}
		})
	}
}

// The text report is check explore's, line for line, but for the
// fingerprint estimates, the local search's store and, after a clean bfs,
// the progress properties (checked by check explore, listed as not
// checked on a cluster).
func TestSameTextAsCheck(t *testing.T) {
	strip := func(s string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "fingerprints: ") || strings.HasPrefix(l, "progress: ") ||
				strings.HasPrefix(l, "not checked: ") && strings.Contains(l, "progress is not checked on a cluster") ||
				strings.HasPrefix(l, "verdict: ok") || strings.HasPrefix(l, "verdict: partial") {
				continue
			}
			if i := strings.Index(l, "  store bytes/state"); i >= 0 {
				l = l[:i]
			}
			keep = append(keep, l)
		}
		return strings.Join(keep, "\n")
	}
	for _, c := range []struct {
		args      []string
		code      int // the cluster's
		checkCode int // check explore's
	}{
		{[]string{"explore", "pvflush/posted", "--full"}, cli.ExitViolation, cli.ExitViolation},
		// Threads that never halt: every linearizability walk is cut. The
		// local bfs proves the progress properties (ok), the cluster does
		// not check them (partial, exit 3).
		{[]string{"explore", "exclusive/upstream", "vcpus=2"}, cli.ExitIncomplete, cli.ExitOK},
	} {
		code, out, _ := cluster(t, c.args...)
		wantCode, wantOut, _ := check(t, c.args...)
		if code != c.code || wantCode != c.checkCode {
			t.Fatalf("%q: exit %d and %d, want %d and %d", c.args, code, wantCode, c.code, c.checkCode)
		}
		if strip(out) != strip(wantOut) {
			t.Errorf("cluster:\n%s\ncheck:\n%s", out, wantOut)
		}
		if c.code == cli.ExitIncomplete && !strings.Contains(out, "verdict: partial — every reachable state explored") {
			t.Errorf("a cluster search that checked no progress property is not partial:\n%s", out)
		}
		if !strings.Contains(out, "fingerprints: the probability that a collision hid a state is about") {
			t.Errorf("no fingerprint estimate:\n%s", out)
		}
	}
}

// A counterexample written with --out replays with check replay.
func TestOutReplays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	code, _, stderr := cluster(t, "explore", "pvflush/posted", "--out", path)
	if code != cli.ExitViolation {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	code, out, stderr := check(t, "replay", path)
	if code != cli.ExitViolation || !strings.Contains(out, "stale-tlb") {
		t.Fatalf("check replay: exit %d\n%s%s", code, out, stderr)
	}
	_, local, _ := check(t, "explore", "pvflush/posted", "--json")
	var tr, want struct {
		Schedule []any `json:"schedule"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Trace *struct {
			Schedule []any `json:"schedule"`
		} `json:"trace"`
	}
	if err := json.Unmarshal([]byte(local), &doc); err != nil || doc.Trace == nil {
		t.Fatalf("check explore --json: %v\n%s", err, local)
	}
	want.Schedule = doc.Trace.Schedule
	if len(tr.Schedule) != len(want.Schedule) {
		t.Errorf("a trace of %d steps, the local bfs's has %d", len(tr.Schedule), len(want.Schedule))
	}
}

// Bad input is a usage error, exit 2, with a message; never a panic.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage:"},
		{[]string{"verify"}, "unknown command"},
		{[]string{"explore"}, "needs PROTOCOL/VARIANT"},
		{[]string{"explore", "nosuch/x"}, "unknown protocol"},
		{[]string{"explore", "pvflush/nosuch"}, "no variant"},
		{[]string{"explore", "pvflush/fixed", "vcpus=99"}, "out of range"},
		{[]string{"explore", "pvflush/fixed", "vcpus"}, "key=value"},
		{[]string{"explore", "pvflush/fixed", "--workers", "4"}, "--workers does nothing on a cluster"},
		{[]string{"explore", "pvflush/fixed", "--strategy", "dfs"}, "does not run on a cluster"},
		{[]string{"explore", "pvflush/fixed", "--runner", "flink"}, "needs --temp"},
		{[]string{"explore", "pvflush/fixed", "--runner", "nosuch"}, "unknown runner"},
		{[]string{"explore", "pvflush/fixed", "--seed", "3"}, "--seed does nothing"},
		{[]string{"explore", "pvflush/fixed", "--shards", "3"}, "--shards does nothing"},
		{[]string{"explore", "pvflush/fixed", "--partitions", "0"}, "--partitions must be"},
		{[]string{"explore", "pvflush/fixed", "--nosuchflag"}, "not defined"},
		{[]string{"explore", "pvflush/fixed", "--out", "/nonexistent/dir/t.json"}, "cannot be written"},
	} {
		code, _, stderr := cluster(t, c.args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// With --no-progress the progress properties are skipped on purpose, not
// left unchecked: a clean cluster search is then ok and exits 0, as check
// explore --no-progress does; a search cut by --max-states exits 3.
func TestClusterExitCodes(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"explore", "pvflush/fixed", "vcpus=2", "--no-progress"}, cli.ExitOK, "skipped: flush-returns: progress properties were skipped (no-progress)"},
		{[]string{"explore", "pvflush/fixed", "vcpus=2", "--max-states", "100"}, cli.ExitIncomplete, "not explored: every state beyond the"},
	} {
		code, out, stderr := cluster(t, c.args...)
		wantCode, _, _ := check(t, c.args...)
		if code != c.code || wantCode != c.code || !strings.Contains(out, c.want) {
			t.Errorf("%q: exit %d (check explore: %d), want %d and %q\n%s%s", c.args, code, wantCode, c.code, c.want, out, stderr)
		}
	}
}

// A job server that refuses the connection is reported within seconds,
// naming the endpoint, instead of after --level-timeout (an hour) as
// workers that cannot start.
func TestUnreachableJobServerFailsAtOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: the connection is refused
	// --endpoint is Beam's flag, a global: restore it for the other tests.
	g := flag.Lookup("endpoint")
	if g == nil {
		t.Fatal("Beam's --endpoint flag is not registered")
	}
	old := g.Value.String()
	t.Cleanup(func() { g.Value.Set(old) })
	for _, runner := range []string{"universal", "flink", "prism"} {
		start := time.Now()
		code, _, stderr := cluster(t, "explore", "pvflush/posted", "--runner", runner, "--endpoint", addr, "--temp", t.TempDir(), "--progress", "none")
		if code != cli.ExitUsage || !strings.Contains(stderr, "--endpoint "+addr) || !strings.Contains(stderr, "cannot be reached") || !strings.Contains(stderr, "refused") {
			t.Errorf("--runner %s: exit %d\n%s", runner, code, stderr)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("--runner %s: %s before it gave up", runner, d)
		}
	}
}
