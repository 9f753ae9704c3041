package cli_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/internal/race"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/protocols"
)

// How check stress shows each buggy variant at its default configuration:
// the controlled flags (fixed seeds) whose runs break it, or, where the
// real code cannot show it within a test's budget, why. Every buggy
// variant of every protocol has an entry, so that a new variant cannot
// go untried (TestStressEveryVariantAtItsDefault).
type stressShow struct {
	// args: the controlled scheduler's flags that find it.
	args []string
	// also: properties a run may break before the variant's expected one,
	// with why in reason. Any violation stress reports under control has
	// replayed on the model (its trace is minimized there, or its lasso
	// checked), so these are the model's too.
	also []string
	// notShown: the real code does not show it here, for reason.
	notShown bool
	reason   string
}

func ctlArgs(strategy string, extra ...string) []string {
	return append([]string{"--controlled", "--strategy", strategy}, extra...)
}

var stressShows = map[string]stressShow{
	"pvflush/posted":            {args: ctlArgs("pct", "--seed", "1", "--runs", "50")},
	"pvflush/shift-bug":         {args: ctlArgs("pct", "--seed", "1", "--runs", "50")},
	"pvflush/host-clobber":      {args: ctlArgs("pct", "--seed", "1", "--depth", "5", "--runs", "2000")},
	"pvflush/host-copy":         {args: ctlArgs("pct", "--seed", "1", "--runs", "100")},
	"pvflush/mid-instruction":   {args: ctlArgs("random", "--seed", "1", "--runs", "20")},
	"pvflush/always-skip":       {args: ctlArgs("pct", "--seed", "1", "--depth", "5", "--runs", "4000")},
	"pvflush/early-entry":       {args: ctlArgs("random", "--seed", "1", "--runs", "5")},
	"pvflush/guest-plain-store": {args: ctlArgs("random", "--seed", "1", "--runs", "20")},
	"pvflush/pt-free-page":      {args: ctlArgs("pct", "--seed", "1", "--runs", "10")},

	"exclusive/cpu-lock":              {args: ctlArgs("random", "--seed", "7", "--runs", "200")},
	"exclusive/if-not-while":          {args: ctlArgs("random", "--seed", "1", "--runs", "10")},
	"exclusive/bql-held":              {args: ctlArgs("random", "--seed", "1", "--runs", "5")},
	"exclusive/finish-safe-work":      {args: ctlArgs("random", "--seed", "1", "--runs", "20")},
	"exclusive/non-recursive":         {args: ctlArgs("random", "--seed", "1", "--runs", "5")},
	"exclusive/exclusive-from-exec":   {args: ctlArgs("random", "--seed", "1", "--runs", "5")},
	"exclusive/end-decrements-always": {args: ctlArgs("random", "--seed", "1", "--runs", "5")},
	"exclusive/end-signals-resume":    {args: ctlArgs("random", "--seed", "1", "--runs", "20")},
	"exclusive/no-smp-mb": {notShown: true,
		reason: "its bug needs x86-TSO store buffers, and the real code's atomics are sequentially consistent: the implementation refuses the variant"},
	"exclusive/no-kick":           {args: ctlArgs("random", "--seed", "1", "--runs", "5")},
	"exclusive/safe-work-no-kick": {args: ctlArgs("random", "--seed", "1", "--runs", "5")},
	"exclusive/cpu-lock-no-idle": {args: ctlArgs("random", "--seed", "3", "--runs", "200"), also: []string{model.Deadlock},
		reason: "the I/O thread, which hot-plugged cpu3 during the section without exclusive_idle(), waits for ever on cpu3->exclusive_ongoing holding the BQL that the vCPUs wait for: the same missing wait, which that run shows as a deadlock before a vCPU is seen inside cpu_exec"},

	"cputlb/synced":            {args: ctlArgs("random", "--seed", "1", "--runs", "5")},
	"cputlb/synced-no-bql":     {args: ctlArgs("random", "--seed", "1", "--runs", "5")},
	"cputlb/sync-no-reset":     {args: ctlArgs("pct", "--seed", "1", "--runs", "50")},
	"cputlb/is-clean-unlocked": {args: ctlArgs("pct", "--seed", "1", "--depth", "2", "--runs", "100")},
	"cputlb/commit-direct":     {args: ctlArgs("random", "--seed", "1", "--runs", "5")},
	"cputlb/dispatch-uncached": {args: ctlArgs("random", "--seed", "1", "--runs", "10")},
	"cputlb/master":            {args: ctlArgs("pct", "--seed", "1", "--depth", "5", "--runs", "500")},
	"cputlb/non-synced":        {args: ctlArgs("random", "--seed", "1", "--runs", "30")},
	"cputlb/synced-no-tb-end":  {args: ctlArgs("pct", "--seed", "1", "--runs", "100")},
	"cputlb/no-kick": {args: ctlArgs("pct", "--seed", "1", "--runs", "10"), also: []string{model.Deadlock},
		reason: "the run deadlocks with cpu1 asleep on its halt_cond, which no kick wakes, before any stale translation is used (the Go scheduler shows either too)"},

	"e500mc/oldpir-only":    {args: ctlArgs("pct", "--seed", "1", "--depth", "2", "--runs", "17000")},
	"e500mc/never-flush":    {args: ctlArgs("pct", "--seed", "1", "--runs", "600")},
	"e500mc/preempt-window": {args: ctlArgs("random", "--seed", "1", "--runs", "4000")},
	"e500mc/ignore-request": {args: ctlArgs("pct", "--seed", "1", "--runs", "50")},
	"e500mc/no-oldpir":      {notShown: true, reason: notFound(12, 207761)},
	"e500mc/oldpir-zero":    {notShown: true, reason: notFound(12, 185153)},
	"e500mc/e6500-one-lpid": {notShown: true,
		reason: "its bug needs two hardware threads sharing a core's TLB (threads=2), which the real code does not have: the implementation refuses the variant"},

	"batchunmap/nested-reset": {args: ctlArgs("pct", "--seed", "1", "--runs", "400")},
	"batchunmap/riscv-asid-clear": {args: ctlArgs("pct", "--seed", "1", "--runs", "1100"), also: []string{"no-use-after-free"},
		reason: "the flushes sent to mm_cpumask miss the CPU whose bit switch_mm cleared, and in that run the page reclaim frees is read through that CPU's stale entry before a syscall's postcondition is checked"},
	"batchunmap/arm64-dsb-only":    {args: ctlArgs("pct", "--seed", "1", "--depth", "5", "--runs", "1800")},
	"batchunmap/no-pending-flush":  {notShown: true, reason: notFound(9, 4326)},
	"batchunmap/bool-flag":         {notShown: true, reason: notFound(22, 72944)},
	"batchunmap/no-overflow-reset": {notShown: true, reason: notFound(15, 25782)},
	"batchunmap/no-flush-dirty":    {notShown: true, reason: notFound(9, 3660)},
	"batchunmap/madvise-retake":    {notShown: true, reason: notFound(21, 80652)},
	"batchunmap/x86-no-catch-up": {args: ctlArgs("pct", "--seed", "1", "--runs", "1500"), also: []string{"no-use-after-free"},
		reason: "the CPU that came back on its stale ASID reads the page reclaim freed before any syscall's postcondition is checked"},
	"batchunmap/x86-gen-zero": {args: ctlArgs("pct", "--seed", "1", "--depth", "5", "--runs", "200"), also: []string{"no-use-after-free"},
		reason: "the batch flush that flushed nothing is try_to_unmap_flush before the free, not try_to_unmap_flush_dirty before pageout, in that run"},
	"batchunmap/putback-before-flush": {notShown: true, reason: notFound(25, 247203)},
	"batchunmap/mremap-late-flush": {args: ctlArgs("pct", "--seed", "1", "--depth", "5", "--runs", "600"), also: []string{"no-use-after-free"},
		reason: "the entry of the old address that outlives reclaim's flush of the new one is read after the free, not written after pageout, in that run"},
	"batchunmap/no-nested-flush": {args: ctlArgs("pct", "--seed", "1", "--depth", "5", "--runs", "1700")},
	"batchunmap/arm64-switch-no-dsb": {args: ctlArgs("pct", "--seed", "1", "--depth", "5", "--runs", "1400"), also: []string{"no-use-after-free"},
		reason: "the TLBI left in flight on the CPU the reclaimer left outlives try_to_unmap_flush as well as try_to_unmap_flush_dirty, and in that run the page is read after the free"},
}

// notFound is the reason of a variant that the controlled strategies did
// not show when they were last measured.
func notFound(depth, states int) string {
	return "20000 controlled runs each of random, pct depth 2 and pct depth 5 (seed 1) do not break it: bfs's shortest counterexample has only " +
		strconv.Itoa(depth) + " steps, but among " + strconv.Itoa(states) + " states, and needs one order of several threads' steps and environment choices that none of those runs happens to take"
}

var violationOf = regexp.MustCompile(`violation of (\S+)`)

// TestStressEveryVariantAtItsDefault runs check stress on every variant of
// every protocol at its default configuration: a variant expected correct
// exits 0 under the Go scheduler and under the controlled scheduler
// (random and pct), and a buggy one exits 1 under the controlled flags of
// its entry in stressShows, breaking its expected property (or one its
// entry explains), unless the entry says why the real code cannot show
// it. Under the race detector only the Go scheduler's runs of the correct
// variants are made: they are the ones with real parallelism.
func TestStressEveryVariantAtItsDefault(t *testing.T) {
	reg := protocols.Registry()
	seen := map[string]bool{}
	for _, p := range reg.Protocols {
		t.Run(p.Name, func(t *testing.T) {
			for _, v := range p.Variants {
				name := p.Name + "/" + v.Name
				seen[name] = true
				if v.Expect == model.ExpectOK {
					stressOK(t, name)
					continue
				}
				show, ok := stressShows[name]
				if !ok {
					t.Errorf("%s (expect %s) has no entry in stressShows: say how stress shows it, or why it cannot", name, v.Expect)
					continue
				}
				if race.Enabled {
					continue
				}
				stressBuggy(t, name, v.Expect, show)
			}
		})
	}
	var stale []string
	for name := range stressShows {
		if !seen[name] {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("stressShows has entries for variants that do not exist: %v", stale)
	}
}

// stressOK: a correct variant runs clean under both schedulers.
func stressOK(t *testing.T, name string) {
	t.Helper()
	runs := [][]string{{"--runs", "3"}}
	if !race.Enabled {
		runs = append(runs, ctlArgs("random", "--seed", "1", "--runs", "20"), ctlArgs("pct", "--seed", "1", "--runs", "20"))
	}
	for _, args := range runs {
		args = append([]string{"stress", name}, args...)
		code, out, stderr := check(t, args...)
		if code != cli.ExitOK || strings.Contains(out, "violation of") {
			t.Errorf("check %s: exit %d, want 0\n%s%s", strings.Join(args, " "), code, out, stderr)
		}
	}
}

// stressBuggy: a buggy variant is broken by its entry's controlled runs,
// or, when the real code cannot show it, stress still runs without error.
func stressBuggy(t *testing.T, name, expect string, show stressShow) {
	t.Helper()
	if show.reason == "" && (show.notShown || len(show.also) > 0) {
		t.Errorf("%s: an entry that is not shown or accepts other properties needs a reason", name)
	}
	if show.notShown {
		code, out, stderr := check(t, append([]string{"stress", name}, ctlArgs("random", "--seed", "1", "--runs", "20")...)...)
		if code != cli.ExitOK && code != cli.ExitViolation && !strings.Contains(stderr, "does not implement") {
			t.Errorf("check stress %s: exit %d\n%s%s", name, code, out, stderr)
		}
		return
	}
	path := filepath.Join(t.TempDir(), "found.json")
	args := append(append([]string{"stress", name}, show.args...), "--out", path)
	code, out, stderr := check(t, args...)
	m := violationOf.FindStringSubmatch(out)
	if code != cli.ExitViolation || m == nil {
		t.Errorf("check %s: exit %d, want 1 (a violation of %s)\n%s%s", strings.Join(args, " "), code, expect, out, stderr)
		return
	}
	if got := m[1]; got != expect && !slices.Contains(show.also, got) {
		t.Errorf("check %s: violation of %s, want %s (or one of %v)\n%s", strings.Join(args, " "), got, expect, show.also, out)
	}
	if !strings.Contains(out, "written to "+path) {
		t.Errorf("check %s: no trace written\n%s", strings.Join(args, " "), out)
	}
}
