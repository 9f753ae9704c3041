package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/traces"
)

// --fairness names strong fairness and per-thread exceptions; the result,
// its JSON and the trace say which fairness the lasso is fair under, and
// the trace replays under it. A malformed spec or an unknown thread is a
// usage error.
func TestExploreNamesItsFairness(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lasso.json")
	code, out, stderr := check(t, "explore", "exclusive/no-kick", "--fairness", "weak,vcpu0=strong", "--out", path)
	if code != cli.ExitViolation || !strings.Contains(out, "a fair cycle under fairness weak,vcpu0=strong") {
		t.Fatalf("explore --fairness weak,vcpu0=strong: exit %d\n%s%s", code, out, stderr)
	}
	tr, err := traces.Load(path)
	if err != nil || tr.Fairness != "weak,vcpu0=strong" || tr.Cycle == 0 {
		t.Fatalf("trace: %v, fairness %q, cycle %d", err, tr.Fairness, tr.Cycle)
	}
	if code, out, stderr := check(t, "replay", path); code != cli.ExitViolation {
		t.Errorf("replay: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = check(t, "explore", "exclusive/no-kick", "--fairness", "strong", "--json")
	if code != cli.ExitViolation || !strings.Contains(out, `"fairness": "strong"`) {
		t.Errorf("--json: exit %d, no fairness\n%s", code, out)
	}
	for _, bad := range []string{"sometimes", "weak,nobody=strong"} {
		if code, _, stderr := check(t, "explore", "exclusive/no-kick", "--fairness", bad); code != cli.ExitUsage || !strings.Contains(stderr, "fairness") {
			t.Errorf("--fairness %s: exit %d, %s", bad, code, stderr)
		}
	}
}
