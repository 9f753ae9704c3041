package cli_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/protocols"
	"github.com/protocheck/protocheck/traces"
	"github.com/protocheck/protocheck/traces/htmltest"
)

var update = flag.Bool("update", false, "rewrite golden files and testdata traces")

// check runs the CLI in process.
func check(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Main(protocols.Registry(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageErrorsExitTwo(t *testing.T) {
	dir := t.TempDir()
	truncated := filepath.Join(dir, "truncated.json")
	os.WriteFile(truncated, []byte(`{"format": "protocheck-trace", "version": 1, "protocol": "pvf`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"explore"}, "explore needs PROTOCOL/VARIANT"},
		{[]string{"explore", "nosuch/x"}, `unknown protocol "nosuch"`},
		{[]string{"explore", "pvflush/nosuch"}, `no variant "nosuch"`},
		{[]string{"explore", "pvflush"}, "expected PROTOCOL/VARIANT"},
		{[]string{"explore", "pvflush/fixed", "nosuch=1"}, `no parameter "nosuch"`},
		{[]string{"explore", "pvflush/fixed", "vcpus=0"}, "vcpus=0 is out of range"},
		{[]string{"explore", "pvflush/fixed", "vcpus=two"}, `"two" is not an integer`},
		{[]string{"explore", "pvflush/fixed", "vcpus"}, `expected key=value`},
		{[]string{"explore", "--strategy", "dfs9", "pvflush/fixed"}, `unknown strategy "dfs9"`},
		{[]string{"explore", "--bogus", "pvflush/fixed"}, "flag provided but not defined: -bogus"},
		{[]string{"explore", "--progress", "loud", "pvflush/fixed"}, "--progress must be"},
		{[]string{"replay", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"replay", truncated}, "truncated.json"},
		{[]string{"replay"}, "replay takes one trace FILE"},
		{[]string{"verify", "nosuch"}, `unknown protocol "nosuch"`},
		{[]string{"list", "exclusive", "nosuch"}, `unknown protocol "nosuch"`},
		{[]string{"compare", "pvflush", "fixed"}, "compare needs PROTOCOL VARIANT_A VARIANT_B"},
		{[]string{"compare", "pvflush", "fixed", "native", "--metric", "nosuch"}, `no metric "nosuch"`},
		{[]string{"explain", "pvflush/nosuch"}, `no variant "nosuch"`},
		{[]string{"explore", "pvflush/posted", "--strategy", "pct", "--depth", "9223372036854775807"}, "pct depth must be between 1 and 64"},
		{[]string{"explore", "pvflush/fixed", "--workers", "2000000000"}, "workers must be between 1 and 1024"},
		{[]string{"explore", "pvflush/fixed", "--preemptions", "1"}, "--preemptions does nothing with --strategy bfs"},
		{[]string{"explore", "pvflush/fixed", "--strategy", "random", "--fingerprint"}, "--fingerprint does nothing with --strategy random"},
		{[]string{"explore", "pvflush/fixed", "--strategy", "random", "--runs", "0"}, "--runs must be at least 1"},
		{[]string{"explore", "pvflush/fixed", "--max-steps", "0"}, "--max-steps must be at least 1"},
		{[]string{"explore", "exclusive/upstream", "--symmetry"}, "does not implement model.Symmetric"},
		{[]string{"explore", "e500mc/per-cpu", "--strategy", "dfs", "--symmetry", "--preemptions", "1"}, "symmetry and a preemption bound cannot be combined"},
		{[]string{"explore", "pvflush/fixed", "vcpus=99999999999999999999"}, "not an integer"},
		{[]string{"compare", "pvflush", "fixed", "nosuch"}, `no variant "nosuch"`},
		{[]string{"bench", "pvflush/nosuch"}, `no variant "nosuch"`},
		// A level file that cannot be written would end the search at once
		// with the verdict bounded: refused before it starts.
		{[]string{"explore", "pvflush/posted", "--fingerprint", "--spill-dir", filepath.Join(dir, "missing")}, "cannot hold the search's level files"},
		{[]string{"explore", "pvflush/posted", "--symmetry", "--spill-dir", truncated}, "it is not a directory"},
		{[]string{"explore", "pvflush/posted", "--spill-dir", dir}, "--spill-dir does nothing without --fingerprint or --symmetry"},
		{[]string{"verify", "--progress", "loud"}, "--progress must be text, json or none"},
		{[]string{"compare", "pvflush", "fixed", "native", "--metrics"}, "--metrics does nothing with compare"},
	} {
		code, stdout, stderr := check(t, tc.args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("check %q: exit %d, stdout %q, stderr %q; want exit 2, %q on stderr and nothing on stdout", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

func TestList(t *testing.T) {
	code, out, _ := check(t, "list", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var ps []struct {
		Name       string
		Variants   []model.Variant
		Properties struct{ Invariants, Assertions, Progress []string }
	}
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		t.Fatal(err)
	}
	if len(ps) != len(protocols.All()) || len(ps) == 0 {
		t.Fatalf("list --json shows %d protocols, registry has %d", len(ps), len(protocols.All()))
	}
	// Every property a variant is expected to violate is listed: the
	// assertions of the steps with the invariants.
	for _, p := range ps {
		listed := append(append(append([]string{model.Deadlock}, p.Properties.Invariants...), p.Properties.Assertions...), p.Properties.Progress...)
		for _, v := range p.Variants {
			if v.Expect != "ok" && !slices.Contains(listed, v.Expect) {
				t.Errorf("%s/%s expects %s, which list does not name (listed: %v)", p.Name, v.Name, v.Expect, listed)
			}
		}
	}
	code, out, _ = check(t, "list")
	if code != 0 || !strings.Contains(out, "pvflush/posted") || !strings.Contains(out, "stale-tlb, pt-use-after-free") {
		t.Errorf("list: exit %d, output lacks pvflush/posted or pvflush's assertions:\n%s", code, out)
	}
}

// The main job of the README: seed 003's bug, found, shown, saved and
// replayed.
func TestExplorePostedFindsStaleTLB(t *testing.T) {
	out := filepath.Join(t.TempDir(), "posted.json")
	code, stdout, _ := check(t, "explore", "pvflush/posted", "--out", out)
	if code != cli.ExitViolation || !strings.Contains(stdout, "stale-tlb") {
		t.Fatalf("explore pvflush/posted: exit %d\n%s", code, stdout)
	}
	tr, err := traces.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tr.Schedule); n > 25 {
		t.Errorf("trace has %d steps, want at most 25", n)
	}
	code, replayed, _ := check(t, "replay", out)
	if code != cli.ExitViolation || !strings.Contains(replayed, "stale-tlb") {
		t.Errorf("replay: exit %d\n%s", code, replayed)
	}
	// --json carries the documented fields.
	code, js, _ := check(t, "explore", "--json", "pvflush/posted")
	var doc map[string]any
	if err := json.Unmarshal([]byte(js), &doc); err != nil || code != cli.ExitViolation {
		t.Fatalf("explore --json: exit %d, %v", code, err)
	}
	for _, k := range []string{"protocol", "variant", "params", "strategy", "verdict", "states", "transitions", "violation", "trace", "metrics"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("--json lacks %q", k)
		}
	}
	if doc["verdict"] != "violation" {
		t.Errorf("verdict %v", doc["verdict"])
	}
}

func TestRandomFindsPostedDeterministically(t *testing.T) {
	dir := t.TempDir()
	var traces2 [2][]byte
	for i := range traces2 {
		out := filepath.Join(dir, "r.json")
		code, stdout, _ := check(t, "explore", "pvflush/posted", "--strategy", "random", "--seed", "1", "--out", out)
		if code != cli.ExitViolation || !strings.Contains(stdout, "minimized") {
			t.Fatalf("random: exit %d\n%s", code, stdout)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		traces2[i] = b
	}
	if !bytes.Equal(traces2[0], traces2[1]) {
		t.Errorf("the same random exploration wrote different traces")
	}
	tr, _ := traces.Decode(traces2[0])
	code, js, _ := check(t, "explore", "--json", "pvflush/posted")
	var doc struct{ Trace traces.Trace }
	json.Unmarshal([]byte(js), &doc)
	if code != cli.ExitViolation || len(tr.Schedule) > 2*len(doc.Trace.Schedule) {
		t.Errorf("random trace %d steps, bfs %d: want at most twice", len(tr.Schedule), len(doc.Trace.Schedule))
	}
}

func TestCorruptedTraceIsAnInputError(t *testing.T) {
	src := filepath.Join("..", "testdata", "pvflush", "posted.trace.json")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := traces.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	tr.Steps[2].Label += " (edited)"
	bad := filepath.Join(t.TempDir(), "edited.json")
	if err := traces.Save(bad, tr); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := check(t, "replay", bad)
	if code != cli.ExitUsage || !strings.Contains(stderr, "step 3") {
		t.Errorf("replay of an edited label: exit %d, %q; want exit 2 naming step 3", code, stderr)
	}
}

// Every trace in testdata/ replays and reproduces the property it records,
// and every buggy variant of every protocol has one.
func TestTestdataTracesReplay(t *testing.T) {
	root := filepath.Join("..", "testdata")
	for _, p := range protocols.All() {
		for _, v := range p.Variants {
			path := filepath.Join(root, p.Name, v.Name+".trace.json")
			if v.Expect == model.ExpectOK {
				continue
			}
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				code, _, stderr := check(t, "explore", p.Name+"/"+v.Name, "--out", path, "--progress", "none")
				if code != cli.ExitViolation {
					t.Errorf("%s/%s: exit %d %s", p.Name, v.Name, code, stderr)
				}
			}
			t.Run(p.Name+"/"+v.Name, func(t *testing.T) {
				tr, err := traces.Load(path)
				if err != nil {
					t.Fatalf("buggy variant without a trace in testdata: %v", err)
				}
				r, err := traces.Replay(p, tr)
				if err != nil {
					t.Fatal(err)
				}
				if r.Execution.Violation == nil || r.Execution.Violation.Property != v.Expect {
					t.Fatalf("replay gives %v, want %s", r.Execution.Violation, v.Expect)
				}
			})
		}
	}
}

// The CLI's text rendering of one trace, kept as a golden file.
func TestReplayGolden(t *testing.T) {
	trace := filepath.Join("..", "testdata", "pvflush", "posted.trace.json")
	golden := filepath.Join("..", "testdata", "golden", "replay-pvflush-posted.txt")
	code, out, stderr := check(t, "replay", trace)
	if code != cli.ExitViolation {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if *update {
		os.MkdirAll(filepath.Dir(golden), 0o755)
		os.WriteFile(golden, []byte(out), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("replay output differs from %s (go test -update regenerates):\n%s", golden, out)
	}
}

// Every counterexample in testdata/, as the CLI renders it by default,
// fits on one screen and names the violated property and the threads.
func TestTracesRenderInFortyLines(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "*", "*.trace.json"))
	if len(paths) == 0 {
		t.Fatal("no traces in testdata")
	}
	for _, path := range paths {
		code, out, stderr := check(t, "replay", path)
		if code != cli.ExitViolation {
			t.Errorf("%s: exit %d %s", path, code, stderr)
			continue
		}
		tr, _ := traces.Load(path)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) > traces.DefaultLines {
			t.Errorf("%s: %d lines, want at most %d", path, len(lines), traces.DefaultLines)
		}
		if !strings.Contains(lines[len(lines)-1], tr.Violation.Property) {
			t.Errorf("%s: last line %q does not name %s", path, lines[len(lines)-1], tr.Violation.Property)
		}
		for _, s := range tr.Steps {
			if !strings.Contains(lines[1], s.Thread) {
				t.Errorf("%s: the column header %q lacks thread %s", path, lines[1], s.Thread)
			}
		}
	}
}

// The real implementation: stress under the Go scheduler, a bug found by
// the controlled scheduler and written as a trace, and that trace (and the
// bfs one in testdata) reproduced on the code.
func TestStressAndReplayOnTheRealCode(t *testing.T) {
	code, out, _ := check(t, "stress", "pvflush/fixed", "--runs", "50")
	if code != cli.ExitOK || !strings.Contains(out, "50 runs") || !strings.Contains(out, "0 violations") {
		t.Errorf("stress pvflush/fixed: exit %d\n%s", code, out)
	}
	path := filepath.Join(t.TempDir(), "found.json")
	// dfs cut by --runs says that it did not try every schedule, and
	// exits 3: an exhaustive search cut short proves nothing.
	code, out, _ = check(t, "stress", "pvflush/fixed", "--controlled", "--strategy", "dfs", "--runs", "20")
	if code != cli.ExitIncomplete || !strings.Contains(out, "20 runs (bounded: --runs stopped dfs before it had tried every schedule") ||
		!strings.Contains(out, "bounded: not run: the schedules after the first 20 (--runs)") {
		t.Errorf("stress --controlled --strategy dfs --runs 20: exit %d\n%s", code, out)
	}
	code, out, _ = check(t, "stress", "pvflush/posted", "--controlled", "--strategy", "pct", "--seed", "1", "--runs", "500", "--out", path)
	if code != cli.ExitViolation || !strings.Contains(out, "stale-tlb") {
		t.Fatalf("stress --controlled pvflush/posted: exit %d\n%s", code, out)
	}
	for _, trace := range []string{path, filepath.Join("..", "testdata", "pvflush", "posted.trace.json")} {
		code, out, stderr := check(t, "replay", "--impl", trace)
		if code != cli.ExitViolation || !strings.Contains(out, "reproduced on the real code: stale-tlb") {
			t.Errorf("replay --impl %s: exit %d\n%s%s", trace, code, out, stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stress", "pvflush/fixed", "--controlled", "--strategy", "bfs"}, `unknown --strategy "bfs"`},
		{[]string{"stress", "pvflush/fixed", "--out", "x.json"}, "--out needs --controlled"},
		{[]string{"stress", "pvflush/fixed", "--runs", "-1"}, "--runs must be at least 1"},
		{[]string{"stress", "pvflush/fixed", "--runs", "0"}, "--runs must be at least 1"},
		{[]string{"stress", "pvflush/fixed", "--duration", "-1s"}, "must not be negative"},
		{[]string{"stress", "pvflush/nosuch"}, `no variant "nosuch"`},
	} {
		code, _, stderr := check(t, tc.args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("check %q: exit %d, %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// check replay --html on a pvflush trace writes a page that, in headless
// Chromium with the network disabled, shows the swimlanes, and a click on
// a step reveals that step's state. Skips where no Chromium is installed.
func TestReplayHTMLInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the page is not tried in a browser")
	}
	bin := htmltest.Chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "posted.html")
	code, _, stderr := check(t, "replay", "--html", page, filepath.Join("..", "testdata", "pvflush", "posted.trace.json"))
	if code != cli.ExitViolation {
		t.Fatalf("replay --html: exit %d %s", code, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	clicked := filepath.Join(dir, "clicked.html")
	if err := os.WriteFile(clicked, htmltest.Click(b, 5), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := htmltest.DumpDOM(t, bin, "file://"+clicked)
	if !strings.Contains(dom, `<table id="swimlane">`) || !strings.Contains(dom, "vCPU0 (initiator)") {
		t.Fatalf("no swimlanes with the pvflush threads in the DOM")
	}
	if row, state := htmltest.Selection(t, dom); row != "5" || state != "5" {
		t.Fatalf("after a click on step 5: row %s and state %s selected", row, state)
	}
	i := strings.Index(dom, `id="state-5"`)
	panel := dom[i:]
	panel = panel[:strings.Index(panel, "</section>")]
	if !strings.Contains(panel, "st[1].preempted") || !strings.Contains(panel, `class="changed"`) {
		t.Errorf("step 5's panel does not show st[1].preempted changed by the cmpxchg:\n%s", panel)
	}
}

// --out names a file to write a counterexample to; a clean run leaves
// whatever is there alone.
func TestExploreOutNeverDeletes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keep.txt")
	if err := os.WriteFile(path, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := check(t, "explore", "cputlb/synced", "migration=0", "commit=0", "--out", path); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "mine\n" {
		t.Errorf("the file named by --out changed: %q %v", b, err)
	}
	// --html on a clean run says it wrote nothing, as --out does.
	page := filepath.Join(t.TempDir(), "clean.html")
	code, _, stderr := check(t, "explore", "pvflush/fixed", "--html", page, "--progress", "none")
	if _, err := os.Stat(page); code != cli.ExitOK || err == nil || !strings.Contains(stderr, "no counterexample page was written") {
		t.Errorf("explore pvflush/fixed --html: exit %d, stat %v, stderr %q", code, err, stderr)
	}
}

// --without sets a property aside to see what else breaks: the 2017 host
// breaks preempted-not-running in two steps for every guest; without it,
// the correct guest breaks stale-tlb in twelve. The trace says what was
// left out and replays only so; the real code checks every property, so
// replay --impl refuses it.
func TestExploreWithout(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "without.json")
	code, out, _ := check(t, "explore", "pvflush/fixed", "host=1", "--without", "preempted-not-running", "--out", path, "--progress", "none")
	if code != cli.ExitViolation || !strings.Contains(out, "verdict: violation of stale-tlb") || !strings.Contains(out, "counterexample: 12 steps") ||
		!strings.Contains(out, "left out: preempted-not-running") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	tr, err := traces.Load(path)
	if err != nil || strings.Join(tr.Without, ",") != "preempted-not-running" || tr.Version != 3 {
		t.Fatalf("trace: %v, without %q, version %d", err, tr.Without, tr.Version)
	}
	if code, out, _ := check(t, "replay", path); code != cli.ExitViolation || !strings.Contains(out, "stale-tlb") {
		t.Errorf("replay: exit %d\n%s", code, out)
	}
	// The same schedule with every property checked stops at step 4.
	tr.Without, tr.Version = nil, 1
	all := filepath.Join(dir, "all.json")
	if err := traces.Save(all, tr); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := check(t, "replay", all); code != cli.ExitUsage || !strings.Contains(stderr, "model gives violation preempted-not-running") {
		t.Errorf("replay with every property: exit %d, %s", code, stderr)
	}
	if code, _, stderr := check(t, "replay", "--impl", path); code != cli.ExitUsage || !strings.Contains(stderr, "the real code checks every property") {
		t.Errorf("replay --impl: exit %d, %s", code, stderr)
	}
	for _, tc := range []struct{ arg, want string }{
		{"nosuch", `no property "nosuch" to leave out`},
		{"deadlock", "deadlock cannot be left out"},
		{"stale-tlb,", "--without needs property names"},
	} {
		if code, _, stderr := check(t, "explore", "pvflush/fixed", "--without", tc.arg); code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("--without %q: exit %d, %s", tc.arg, code, stderr)
		}
	}
}

// A minimized counterexample that minimization moved to a smaller size
// says so: it is not a run of the configuration explored.
func TestMinimizedCounterexampleNamesItsSize(t *testing.T) {
	code, out, _ := check(t, "explore", "pvflush/posted", "--strategy", "dfs", "--progress", "none")
	if code != cli.ExitViolation || !strings.Contains(out, "vcpus=3") || !strings.Contains(out, ", at the smaller size ") || !strings.Contains(out, "vcpus=2") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

// compare exits 1 when either variant violates a property, like explore.
func TestCompareExitsOneOnAViolation(t *testing.T) {
	code, out, _ := check(t, "compare", "cputlb", "synced", "non-synced", "--metric", "kicks")
	if code != cli.ExitViolation || !strings.Contains(out, "non-synced violates no-stale-translation") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if code, _, _ := check(t, "compare", "cputlb", "synced", "synced-no-bql", "migration=0", "commit=0"); code != cli.ExitOK {
		t.Errorf("two clean variants: exit %d", code)
	}
	// --json: each variant's explore document, with the metric named.
	code, out, _ = check(t, "compare", "pvflush", "fixed", "native", "--metric", "ipis", "--json")
	var doc struct {
		Variants []struct {
			Variant, Verdict string
			Metrics          []struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != cli.ExitOK || len(doc.Variants) != 2 ||
		doc.Variants[1].Variant != "native" || len(doc.Variants[0].Metrics) != 1 || doc.Variants[0].Metrics[0].Name != "ipis" {
		t.Errorf("compare --json: exit %d, %v\n%s", code, err, out)
	}
	// bench of a buggy variant times a search that found a violation, and
	// exits 1 as explore does.
	if code, _, _ := check(t, "bench", "--config", "bfs", "pvflush/posted"); code != cli.ExitViolation {
		t.Errorf("bench pvflush/posted: exit %d, want %d", code, cli.ExitViolation)
	}
}

// A clean bfs also checks the protocol's histories on random walks, and
// says so; timing goes to stderr, so stdout is the same on every run.
func TestExploreChecksHistoriesAndKeepsTimingOffStdout(t *testing.T) {
	_, out1, stderr := check(t, "explore", "cputlb/synced", "migration=0", "commit=0")
	_, out2, _ := check(t, "explore", "cputlb/synced", "migration=0", "commit=0")
	if !strings.Contains(out1, "linearizability: the histories of 200 random walks") {
		t.Errorf("no linearizability line:\n%s", out1)
	}
	if !strings.Contains(stderr, "states/s") || strings.Contains(out1, "states/s") {
		t.Errorf("timing belongs on stderr: stdout\n%s\nstderr\n%s", out1, stderr)
	}
	if out1 != out2 {
		t.Errorf("two runs printed different stdout:\n%s\n%s", out1, out2)
	}
}

// A deadlock of the real code under the Go scheduler is a verdict: exit 1
// with who waits for what, never Go's fatal error (which would end this
// test binary).
func TestStressReportsARealDeadlock(t *testing.T) {
	code, out, stderr := check(t, "stress", "exclusive/non-recursive", "--runs", "3")
	if code != cli.ExitViolation || !strings.Contains(out, "violation of deadlock: every goroutine waits: vcpu0 waits on exclusive_resume") {
		t.Errorf("stress exclusive/non-recursive: exit %d\n%s%s", code, out, stderr)
	}
	// no-kick breaks no-stale-translation or deadlocks, as the Go
	// scheduler has it; either is a violation.
	code, out, stderr = check(t, "stress", "cputlb/no-kick", "--runs", "100")
	if code != cli.ExitViolation || !strings.Contains(out, "violation of no-stale-translation") && !strings.Contains(out, "violation of deadlock: every goroutine waits: cpu") {
		t.Errorf("stress cputlb/no-kick: exit %d\n%s%s", code, out, stderr)
	}
}

// A clean bfs names the progress properties it checked and the fairness
// they hold under; --no-progress checks none and says nothing.
func TestCleanBFSNamesItsProgressProperties(t *testing.T) {
	_, out, _ := check(t, "explore", "pvflush/fixed")
	if !strings.Contains(out, "progress: flush-returns checked on every cycle and end state, under weak fairness") {
		t.Errorf("no progress line:\n%s", out)
	}
	_, out, _ = check(t, "explore", "pvflush/fixed", "--fairness", "none")
	if !strings.Contains(out, "progress: flush-returns checked on every cycle and end state, with no fairness assumed") {
		t.Errorf("no progress line without fairness:\n%s", out)
	}
	_, out, _ = check(t, "explore", "pvflush/fixed", "--no-progress")
	if strings.Contains(out, "progress:") {
		t.Errorf("--no-progress still names progress properties:\n%s", out)
	}
	_, out, _ = check(t, "explore", "e500mc/per-lpid", "loads=1", "--json")
	var doc struct {
		Progress []string `json:"progress_checked"`
		Fairness string   `json:"fairness"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Progress) != 1 || doc.Progress[0] != "host-flush-returns" || doc.Fairness != "weak" {
		t.Errorf("--json: progress %q under %q (%v)", doc.Progress, doc.Fairness, err)
	}
}

// With several workers the linearizability walks run beside the search;
// what explore prints is the same as with one worker, where they run
// after it, and a violation the search finds is reported as before.
func TestExploreSameOutputForAnyWorkerCount(t *testing.T) {
	for _, args := range [][]string{
		{"explore", "cputlb/synced", "migration=0", "commit=0"},
		{"explore", "pvflush/posted"},
	} {
		code1, out1, _ := check(t, append(args, "--workers", "1")...)
		code2, out2, _ := check(t, append(args, "--workers", "2")...)
		if code1 != code2 || out1 != out2 {
			t.Errorf("%v: workers 1 exit %d, workers 2 exit %d\n%s\n%s", args, code1, code2, out1, out2)
		}
		if !strings.Contains(out1, "linearizability: the histories of 200 random walks") && code1 == cli.ExitOK {
			t.Errorf("%v: no linearizability line:\n%s", args, out1)
		}
	}
}

// bench --config runs only the named configurations, in the order given,
// and names the ones there are when asked for another.
func TestBenchRunsOnlyTheNamedConfigurations(t *testing.T) {
	code, out, _ := check(t, "bench", "pvflush/fixed", "vcpus=2", "--config", "bfs workers=2, bfs")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "bfs") || strings.HasPrefix(line, "dfs") {
			rows = append(rows, strings.Join(strings.Fields(line)[:2], " "))
		}
	}
	if strings.Join(rows, "; ") != "bfs workers=2; bfs ok" {
		t.Errorf("rows %q, want bfs workers=2 then bfs\n%s", rows, out)
	}
	code, out, stderr := check(t, "bench", "pvflush/fixed", "vcpus=2", "--config", "bfs workers=9")
	if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, `no configuration "bfs workers=9" (there are: bfs, bfs workers=2,`) {
		t.Errorf("exit %d\n%s%s", code, out, stderr)
	}
	// A configuration some targets lack (symmetry) runs where it exists
	// and is named as missing where it does not; nothing is cut short.
	code, out, _ = check(t, "bench", "exclusive/upstream", "pvflush/fixed", "vcpus=2", "--config", "bfs symmetry")
	if code != cli.ExitOK || !strings.Contains(out, "none of the configurations named applies") || !strings.Contains(out, "bfs symmetry") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

// check list PROTOCOL... lists the protocols named, in that order.
func TestListNamedProtocols(t *testing.T) {
	code, out, stderr := check(t, "list", "cputlb", "exclusive")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ci, ei := strings.Index(out, "cputlb — "), strings.Index(out, "exclusive — ")
	if ci != 0 || ei < 0 || strings.Contains(out, "pvflush — ") {
		t.Errorf("check list cputlb exclusive lists other protocols or another order:\n%s", out)
	}
	if !strings.Contains(out, "exclusive/cpu-lock-pause-recheck") {
		t.Errorf("exclusive's variants are missing:\n%s", out)
	}
}
