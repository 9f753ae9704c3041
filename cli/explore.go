package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// exploreFlags are the exploration flags shared by explore and compare.
type exploreFlags struct {
	strategy    string
	seed        int64
	runs        int
	maxSteps    int
	maxStates   int
	progress    string
	workers     int
	fingerprint bool
	symmetry    bool
	noReduction bool
	preemptions int
	depth       int
	metrics     bool
	fairness    string
	noProgress  bool
	timeLimit   time.Duration
	maxMemory   int64 // MiB
	spillDir    string
	// set names the flags given on the command line (flag.FlagSet.Visit).
	set map[string]bool
}

func (f *exploreFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.strategy, "strategy", explorer.BFS, "bfs (exhaustive, shortest trace), dfs (exhaustive, partial-order reduction, --preemptions), random or random-threads (seeded walks), pct (probabilistic concurrency testing, --depth), or paths (every execution, no state merging)")
	fs.Int64Var(&f.seed, "seed", 1, "random: seed of the first walk")
	fs.IntVar(&f.runs, "runs", 0, "random: number of walks (default 1000); paths: bound on executions (default 1000000)")
	fs.IntVar(&f.maxSteps, "max-steps", 0, "bound on steps per execution, and on bfs depth (default 10000)")
	fs.IntVar(&f.maxStates, "max-states", 0, "bfs, dfs: bound on distinct states (default: no bound but --max-memory)")
	fs.StringVar(&f.progress, "progress", "text", "progress on stderr for runs longer than a second: text, json (one object per line) or none")
	fs.IntVar(&f.workers, "workers", runtime.NumCPU(), "bfs: goroutines expanding states (the result is identical for any number)")
	fs.BoolVar(&f.fingerprint, "fingerprint", false, "bfs, dfs: store 64-bit fingerprints instead of states (prints the estimated probability that a collision hid a state)")
	fs.BoolVar(&f.symmetry, "symmetry", false, "bfs, dfs: identify states up to permutations of interchangeable threads (the model must support it)")
	fs.BoolVar(&f.noReduction, "no-reduction", false, "dfs: turn partial-order reduction off")
	fs.IntVar(&f.preemptions, "preemptions", 0, "dfs: bound on preemptions per execution (0: none)")
	fs.IntVar(&f.depth, "depth", 3, "pct: bug depth")
	fs.BoolVar(&f.metrics, "metrics", false, "bfs: summarise every metric exactly over every complete execution (keeps the state graph)")
	fs.StringVar(&f.fairness, "fairness", explorer.FairnessWeak, "bfs: fairness assumed by progress properties: weak, strong or none, optionally with per-thread exceptions (weak,vcpu0=strong)")
	fs.BoolVar(&f.noProgress, "no-progress", false, "bfs: skip the progress properties (no state graph kept for them)")
	fs.DurationVar(&f.timeLimit, "time-limit", 0, "stop with verdict bounded after this long (e.g. 10m; 0: no limit)")
	fs.Int64Var(&f.maxMemory, "max-memory", defaultMaxMemory(), "stop with verdict bounded before the process holds this many MiB (0: no limit); the default is three quarters of the physical memory")
	fs.StringVar(&f.spillDir, "spill-dir", os.TempDir(), "bfs with --fingerprint or --symmetry: keep each level's states, each state's parent and the progress check's graph in temporary files in this directory (\"none\": in memory)")
}

// check rejects flags that the chosen strategy would ignore and explicit
// values that cannot mean what they say, instead of silently running
// something else than asked.
func (f *exploreFlags) check(fs *flag.FlagSet) error {
	f.set = flagsSet(fs)
	if !slices.Contains(explorer.Strategies, f.strategy) {
		return usagef("unknown strategy %q (strategies: %s)", clip(f.strategy), strings.Join(explorer.Strategies, ", "))
	}
	only := map[string][]string{
		"metrics":      {explorer.BFS},
		"fairness":     {explorer.BFS},
		"no-progress":  {explorer.BFS},
		"spill-dir":    {explorer.BFS},
		"preemptions":  {explorer.DFS},
		"no-reduction": {explorer.DFS},
		"depth":        {explorer.PCT},
		"workers":      {explorer.BFS},
		"fingerprint":  {explorer.BFS, explorer.DFS},
		"symmetry":     {explorer.BFS, explorer.DFS},
		"max-states":   {explorer.BFS, explorer.DFS},
		"seed":         {explorer.Random, explorer.RandomThreads, explorer.PCT},
		"runs":         {explorer.Random, explorer.RandomThreads, explorer.PCT, explorer.Paths},
	}
	for _, name := range []string{"metrics", "fairness", "no-progress", "spill-dir", "preemptions", "no-reduction", "depth", "workers", "fingerprint", "symmetry", "max-states", "seed", "runs"} {
		if !f.set[name] {
			continue
		}
		ok := false
		for _, st := range only[name] {
			ok = ok || st == f.strategy
		}
		if !ok {
			return usagef("--%s does nothing with --strategy %s (it applies to: %s)", name, f.strategy, strings.Join(only[name], ", "))
		}
	}
	// A slice, not a map: with two bad values, the same one is named on
	// every run.
	for _, n := range []struct {
		name string
		v    int
	}{{"runs", f.runs}, {"max-steps", f.maxSteps}, {"max-states", f.maxStates}, {"depth", f.depth}, {"workers", f.workers}} {
		if f.set[n.name] && n.v <= 0 {
			return usagef("--%s must be at least 1, got %d", n.name, n.v)
		}
	}
	if f.set["preemptions"] && f.preemptions < 0 {
		return usagef("--preemptions must not be negative (0: no bound), got %d", f.preemptions)
	}
	if err := explorer.CheckFairness(f.fairness); err != nil {
		return usagef("--fairness: %s", clip(err.Error()))
	}
	if f.timeLimit < 0 {
		return usagef("--time-limit must not be negative (0: no limit), got %s", f.timeLimit)
	}
	if f.maxMemory < 0 {
		return usagef("--max-memory must not be negative (0: no limit), got %d", f.maxMemory)
	}
	if f.set["fairness"] && f.noProgress {
		return usagef("--fairness does nothing with --no-progress (it is what the progress properties assume)")
	}
	if f.set["spill-dir"] && f.spillDir == "" {
		return usagef("--spill-dir needs a directory (or \"none\")")
	}
	if f.set["spill-dir"] && !f.fingerprint && !f.symmetry {
		return usagef("--spill-dir does nothing without --fingerprint or --symmetry (an exact search reads its levels back from the visited set)")
	}
	return nil
}

// progressTo is where --progress mode sends progress lines: stderr for
// text and json, nowhere for none.
func progressTo(mode string, stderr io.Writer) (io.Writer, error) {
	switch mode {
	case "text", "json":
		return stderr, nil
	case "none":
		return nil, nil
	}
	return nil, usagef("--progress must be text, json or none, got %q", clip(mode))
}

func (f *exploreFlags) options(stderr io.Writer) (explorer.Options, error) {
	progress, err := progressTo(f.progress, stderr)
	if err != nil {
		return explorer.Options{}, err
	}
	// Only the options the strategy uses: the explorer refuses the others
	// (the flags were checked above, and defaults are not the user's).
	o := explorer.Options{
		Strategy:     f.strategy,
		Runs:         f.runs,
		MaxSteps:     f.maxSteps,
		MaxStates:    f.maxStates,
		Clock:        time.Now,
		Progress:     progress,
		ProgressJSON: f.progress == "json",
		Fingerprint:  f.fingerprint,
		Symmetry:     f.symmetry,
		NoReduction:  f.noReduction,
		Preemptions:  f.preemptions,
		TimeLimit:    f.timeLimit,
		MaxMemory:    f.maxMemory << 20,
	}
	switch f.strategy {
	case explorer.Random, explorer.RandomThreads:
		o.Seed = f.seed
	case explorer.PCT:
		o.Seed, o.Depth = f.seed, f.depth
	case explorer.BFS:
		if f.workers > 1 {
			o.Workers = f.workers
		}
		o.Metrics, o.NoProgress = f.metrics, f.noProgress
		if f.set["fairness"] {
			o.Fairness = f.fairness // given, even as the default: exploreVariant refuses it where it does nothing
		}
		if (f.fingerprint || f.symmetry) && f.spillDir != "none" {
			o.SpillDir = f.spillDir
		}
	}
	return o, nil
}

// defaultMaxMemory is three quarters of the machine's physical memory, in
// MiB, or 0 (no limit) where it cannot be read: a search stops with a
// verdict before the machine swaps or the kernel kills it.
func defaultMaxMemory() int64 {
	if total := physicalMemory(); total > 0 {
		return total / 4 * 3 >> 20
	}
	return 0
}

// outcome is one exploration with its counterexample as a trace.
type outcome struct {
	protocol *model.Protocol
	machine  model.Machine // what was explored
	variant  string
	params   model.Params
	result   *explorer.Result
	trace    *traces.Trace // nil without a violation
	// replay is the trace replayed strictly, once, for the views.
	replay *traces.Replayed
	// minimized: the trace was not shortest by construction (non-bfs).
	minimized bool
	// linWalks is the number of random walks whose histories were checked
	// for linearizability for a clean bfs or dfs (after it, or beside it
	// with several workers).
	linWalks int64
	// linInterrupted: those walks were interrupted (maybe before the
	// first).
	linInterrupted bool
	// progressHeld names the progress properties a clean bfs checked,
	// and fairness the assumption they hold under.
	progressHeld []string
	fairness     string
	// metricsKept: the search kept the state graph for exact
	// per-execution metrics (--metrics).
	metricsKept bool
}

// linWalks random walks (seed 1), each of at most linWalkSteps steps,
// check the histories of a variant that bfs or dfs found clean: they merge
// paths and cannot. The bound matters for models with cycles (a spin
// loop), whose walks would otherwise run to the explorer's default.
const (
	linWalks     = 200
	linWalkSteps = 2000
)

// A linResult is the outcome of the linearizability walks.
type linResult struct {
	r   *explorer.Result
	err error
}

// startLinWalks runs the linearizability walks of m on a goroutine of
// their own; stop (the command's interrupt) or cancel ends them early.
func startLinWalks(m model.Machine, stop, cancel <-chan struct{}) <-chan linResult {
	walkStop, finished := make(chan struct{}), make(chan struct{})
	done := make(chan linResult, 1)
	go func() {
		// Either channel closing stops the walks; the watcher ends with
		// them.
		select {
		case <-stop:
			close(walkStop)
		case <-cancel:
			close(walkStop)
		case <-finished:
		}
	}()
	go func() {
		defer close(finished)
		r, err := explorer.Explore(m, explorer.Options{Strategy: explorer.Random, Seed: 1, Runs: linWalks, MaxSteps: linWalkSteps, Stop: walkStop})
		done <- linResult{r, err}
	}()
	return done
}

// exploreVariant instantiates and explores one variant; a counterexample
// from a strategy other than bfs is minimized, since only bfs gives a shortest one. The
// command's stop channel interrupts it.
func (c *command) exploreVariant(p *model.Protocol, variant string, given model.Params, opts explorer.Options) (*outcome, error) {
	opts.Stop = c.stop
	m, params, err := p.Instantiate(variant, given)
	if err != nil {
		return nil, usageError{err}
	}
	if opts.Fairness != "" && len(m.Properties().Progress) == 0 {
		return nil, usagef("--fairness does nothing: %s/%s has no progress property to check (the protocol has none, or --without left them out)", p.Name, variant)
	}
	// bfs and dfs merge paths, so they cannot check a property of whole
	// histories: seeded random walks do, so that "ok" covers every
	// property the protocol names. The walks depend on nothing the search
	// finds, so with several workers they run beside it: they share the
	// processors with its workers and take up the time it leaves idle (its
	// serial progress check, the ends of levels). Their result is used
	// only if the search ends clean, exactly as when they run after it.
	lin := (opts.Strategy == explorer.BFS || opts.Strategy == explorer.DFS) && m.Properties().Spec != nil
	var walks <-chan linResult
	linStop := make(chan struct{})
	defer close(linStop)
	if lin && opts.Workers > 1 {
		walks = startLinWalks(m, c.stop, linStop)
	}
	r, err := explorer.Explore(m, opts)
	if err != nil {
		if strings.HasPrefix(err.Error(), "internal error") {
			return nil, err
		}
		return nil, usageError{err}
	}
	o := &outcome{protocol: p, machine: m, variant: variant, params: params, result: r, metricsKept: opts.Metrics && r.Strategy == explorer.BFS}
	if r.Fairness != "" && (r.Verdict == explorer.OK || r.Verdict == explorer.Partial) {
		o.fairness = r.Fairness
	progress:
		for _, pp := range m.Properties().Progress {
			for _, u := range r.Unchecked {
				if strings.HasPrefix(u, pp.Name+":") {
					continue progress
				}
			}
			o.progressHeld = append(o.progressHeld, pp.Name)
		}
	}
	if r.Violation == nil && r.Verdict != explorer.Interrupted && lin {
		if walks == nil {
			walks = startLinWalks(m, c.stop, linStop)
		}
		w := <-walks
		lr, err := w.r, w.err
		if err != nil {
			return nil, err
		}
		// Every walk's history is checked, whether it ended or was cut
		// at linWalkSteps (a model whose threads never halt has only cut
		// walks); Executions counts the ended ones only.
		o.linWalks = linWalks
		if lr.Verdict == explorer.Interrupted {
			o.linWalks = lr.Stats.Executions
		}
		if lr.Verdict == explorer.Interrupted {
			// The states are all explored, but not every property is
			// checked: the verdict cannot be ok.
			r.Verdict, r.Bound, o.linInterrupted = explorer.Interrupted, "", true
		}
		if lr.Violation != nil {
			r.Verdict, r.Violation, r.Schedule = explorer.Violation, lr.Violation, lr.Schedule
			r.Strategy = explorer.Random
		}
	}
	if r.Violation == nil {
		return o, nil
	}
	if isProgress(m, r.Violation.Property) {
		// A lasso: recorded with its cycle and fairness, never minimized
		// (bfs found it after its shortest path to the cycle).
		fairness := r.Fairness
		if fairness == "" {
			fairness = progressFairness(opts)
		}
		t, err := traces.RecordProgress(p, variant, params, r.Schedule, r.Cycle, r.Violation, fairness)
		if err != nil {
			return nil, fmt.Errorf("recording the counterexample: %w", err)
		}
		o.trace = t
		if o.replay, err = traces.Replay(p, t); err != nil {
			return nil, fmt.Errorf("the counterexample does not replay: %w", err)
		}
		return o, nil
	}
	t, err := traces.Record(p, variant, params, r.Schedule)
	if err != nil {
		return nil, fmt.Errorf("recording the counterexample: %w", err)
	}
	if r.Strategy != explorer.BFS {
		// Only bfs guarantees a shortest counterexample.
		if t, err = traces.Minimize(p, t); err != nil {
			return nil, fmt.Errorf("minimizing the counterexample: %w", err)
		}
		o.minimized = true
	}
	o.trace = t
	if o.replay, err = traces.Replay(p, t); err != nil {
		return nil, fmt.Errorf("the counterexample does not replay: %w", err)
	}
	return o, nil
}

func (c *command) explore(args []string) (int, error) {
	stdout, stderr := c.stdout, c.stderr
	fs := c.newFlags("explore", "explore [flags] PROTOCOL/VARIANT [key=value ...]")
	var ef exploreFlags
	ef.register(fs)
	out := fs.String("out", "", "write the counterexample trace to this file")
	asJSON := fs.Bool("json", false, "print one JSON document instead of text")
	html := fs.String("html", "", "write an HTML view of the counterexample to this file")
	full := fs.Bool("full", false, "show every step and every changed variable of the counterexample (default: a summary that fits on a screen)")
	timing := fs.Bool("timing", false, "show the wall-clock time on stdout (text) or as \"seconds\" (--json); otherwise it goes to stderr and stdout is the same for the same inputs")
	without := fs.String("without", "", "leave these properties out, comma-separated, to see what else the variant breaks (the trace records them, and replays with them left out)")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	if err := ef.check(fs); err != nil {
		return 0, err
	}
	var leftOut []string
	if flagsSet(fs)["without"] {
		for _, n := range strings.Split(*without, ",") {
			if n = strings.TrimSpace(n); n == "" {
				return 0, usagef("--without needs property names, comma-separated (check list names them), got %q", clip(*without))
			}
			leftOut = append(leftOut, n)
		}
	}
	if *asJSON {
		if err := unused(ef.set, "with --json (the trace is in the document, every step of it)", "full"); err != nil {
			return 0, err
		}
	}
	p, v, given, err := c.parseTarget("explore", pos)
	if err != nil {
		return 0, err
	}
	p = p.Without(leftOut...)
	opts, err := ef.options(stderr)
	if err != nil {
		return 0, err
	}
	if err := errors.Join(checkWritable("out", *out), checkWritable("html", *html)); err != nil {
		return 0, err
	}
	if opts.SpillDir != "" {
		if err := checkSpillDir(opts.SpillDir); err != nil {
			return 0, err
		}
	}
	o, err := c.exploreVariant(p, v.Name, given, opts)
	if err != nil {
		return 0, err
	}
	// The trace first, then the result on stdout, then the HTML view: a
	// file that cannot be written loses nothing else.
	var failed []error
	if *out != "" && o.trace != nil {
		if err := traces.Save(*out, o.trace); err != nil {
			failed = append(failed, outputError("out", *out, err))
		}
	}
	if *out != "" && o.trace == nil {
		fmt.Fprintf(stderr, "%s explore: no violation, so nothing was written to %s\n", c.reg.name(), *out)
	}
	if *html != "" && o.trace == nil {
		fmt.Fprintf(stderr, "%s explore: no violation, so no counterexample page was written to %s\n", c.reg.name(), *html)
	}
	if *asJSON {
		if err := writeJSON(stdout, o.document(*timing)); err != nil {
			return 0, err
		}
	} else {
		times := stderr
		if *timing {
			times = stdout
		}
		if err := o.print(stdout, times, *full); err != nil {
			return 0, err
		}
	}
	if *html != "" && o.trace != nil {
		if err := writeHTML(*html, o.replay); err != nil {
			failed = append(failed, outputError("html", *html, err))
		}
	}
	if len(failed) > 0 {
		return 0, errors.Join(failed...)
	}
	return o.exitCode(), nil
}

// exitCode is the exit status of an exploration: a violation wins over an
// interruption (it was found), which wins over an exhaustive search that
// did not finish (cut short by a limit, or a property left unchecked),
// which wins over a clean run. A sampling strategy's clean run exits 0:
// it did what it was asked, and its verdict says it is not a proof.
func (o *outcome) exitCode() int {
	switch {
	case o.trace != nil:
		return ExitViolation
	case o.result.Verdict == explorer.Interrupted:
		return ExitInterrupted
	case incomplete(o.result):
		return ExitIncomplete
	}
	return ExitOK
}

// incomplete reports whether r, with no violation, is an exhaustive
// search that did not finish what it set out to do: cut short by a limit
// (bounded) or a property left unchecked (partial). A CI job must not
// read it as a proof.
func incomplete(r *explorer.Result) bool {
	switch r.Verdict {
	case explorer.Partial:
		return true
	case explorer.Bounded:
		return explorer.Exhaustive(r.Strategy)
	}
	return false
}

// plural is noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// notExplored says, for an exhaustive search cut short by a limit, what
// it left unexplored, from the limit that cut it (Result.Bound).
func notExplored(r *explorer.Result) string {
	b := r.Bound
	var n int
	switch {
	case r.Strategy == explorer.Paths && strings.HasPrefix(b, "paths: stopped after"):
		return fmt.Sprintf("every execution after the first %d", r.Stats.Executions)
	case strings.HasPrefix(b, "max-steps="):
		fmt.Sscanf(b, "max-steps=%d", &n)
		return fmt.Sprintf("every execution longer than %d steps, and every state only such executions reach", n)
	case strings.HasPrefix(b, "preemptions="):
		fmt.Sscanf(b, "preemptions=%d", &n)
		return fmt.Sprintf("every execution with more than %d %s, and every state only such executions reach", n, plural(n, "preemption"))
	case r.Strategy == explorer.Paths:
		return fmt.Sprintf("every execution after the %d followed", r.Stats.Executions)
	}
	return fmt.Sprintf("every state beyond the %d reached, and every execution through them", r.Stats.States)
}

// print writes the text report (verdict, statistics, metrics, trace) to w
// and the wall-clock time, which depends on the machine, to times.
func (o *outcome) print(w, times io.Writer, full bool) error {
	r := o.result
	fmt.Fprintf(w, "%s  strategy %s\n", describeTarget(o.protocol.Name, o.variant, o.params), r.Strategy)
	switch r.Verdict {
	case explorer.OK:
		fmt.Fprintf(w, "verdict: ok — every reachable state explored, no property violated\n")
	case explorer.Partial:
		fmt.Fprintf(w, "verdict: partial — every reachable state explored, no property violated, but not every property checked (not checked, below): not a proof of those\n")
	case explorer.Bounded:
		if !explorer.Exhaustive(r.Strategy) {
			fmt.Fprintf(w, "verdict: bounded — no violation within the bounds (%s)\n", r.Bound)
			break
		}
		fmt.Fprintf(w, "verdict: bounded — the search stopped before it was exhaustive (%s): no property violated in the part explored, nothing proved beyond it\n", r.Bound)
		fmt.Fprintf(w, "not explored: %s\n", notExplored(r))
	case explorer.Violation:
		fmt.Fprintf(w, "verdict: violation of %s\n", r.Violation.Property)
	case explorer.Interrupted:
		fmt.Fprintf(w, "verdict: interrupted — stopped before the exploration ended; no property violated in the part explored\n")
	}
	s := r.Stats
	fmt.Fprintf(w, "states: %d  transitions: %d  depth: %d", s.States, s.Transitions, s.Depth)
	if s.Executions > 0 {
		fmt.Fprintf(w, "  executions: %d", s.Executions)
	}
	if s.StoreBytesPerState > 0 && s.States >= 10000 {
		// Below that the structures' fixed size says nothing per state.
		fmt.Fprintf(w, "  store bytes/state: %.0f", s.StoreBytesPerState)
	}
	fmt.Fprintln(w)
	if len(o.protocol.LeftOut) > 0 {
		fmt.Fprintf(w, "left out: %s (--without: neither checked nor reported)\n", strings.Join(o.protocol.LeftOut, ", "))
	}
	if names, why := model.OmittedBy(o.machine); len(names) > 0 {
		fmt.Fprintf(w, "not checked: %s (%s)\n", strings.Join(names, ", "), why)
	}
	for _, u := range r.Unchecked {
		fmt.Fprintf(w, "not checked: %s\n", u)
	}
	for _, u := range r.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", u)
	}
	if len(o.progressHeld) > 0 && (r.Verdict == explorer.OK || r.Verdict == explorer.Partial) {
		under := "under weak fairness"
		switch o.fairness {
		case explorer.FairnessWeak:
		case explorer.FairnessNone:
			under = "with no fairness assumed"
		default:
			under = "under fairness " + o.fairness
		}
		fmt.Fprintf(w, "progress: %s checked on every cycle and end state, %s\n", strings.Join(o.progressHeld, ", "), under)
	}
	if o.linInterrupted {
		fmt.Fprintf(w, "linearizability: interrupted after the histories of %d of %d random walks (seed 1) were checked against the spec\n", o.linWalks, linWalks)
	} else if o.linWalks > 0 {
		fmt.Fprintf(w, "linearizability: the histories of %d random walks (seed 1) checked against the spec, since %s merges paths\n", o.linWalks, r.Strategy)
	}
	fmt.Fprintf(times, "time: %s (%.0f states/s); peak memory %d MiB (%.0f bytes/state)\n", s.Elapsed.Round(time.Millisecond), s.StatesPerSec, s.PeakMemory>>20, s.BytesPerState)
	if s.FingerprintCollision > 0 || s.FingerprintCollisionObserved > 0 {
		fmt.Fprintf(w, "fingerprints: the probability that a collision hid a state is about %.2g (optimistic estimate) and %.2g (from the fingerprints stored)\n", s.FingerprintCollision, s.FingerprintCollisionObserved)
	}
	printMetrics(w, r.Metrics, o.perExecution())
	if o.trace == nil {
		return nil
	}
	kind := "shortest, from bfs"
	if o.minimized {
		kind = fmt.Sprintf("minimized from %d steps", len(r.Schedule))
		if smaller := shrunkParams(o.params, o.trace.Params); smaller != "" {
			kind += ", at the smaller size " + smaller
		}
	}
	fmt.Fprintf(w, "\ncounterexample: %d steps (%s)\n", len(o.trace.Schedule), kind)
	return render(w, o.replay, full)
}

// shrunkParams names the parameters whose values minimization lowered
// from the explored configuration's ("vcpus=2 preemptions=1"), in name
// order, or "" when it kept them all.
func shrunkParams(explored, trace model.Params) string {
	var out []string
	for _, k := range trace.Keys() {
		if v, ok := explored[k]; ok && trace[k] != v {
			out = append(out, fmt.Sprintf("%s=%d", k, trace[k]))
		}
	}
	return strings.Join(out, " ")
}

// perExecution says why a metric has no per-execution summary: what it
// needs, or, when --metrics was given, what the search lacked.
func (o *outcome) perExecution() string {
	switch {
	case !o.metricsKept:
		return "min, max and mean per execution: --metrics, on a complete search without cycles"
	case slices.ContainsFunc(o.result.Unchecked, func(u string) bool { return strings.HasPrefix(u, explorer.MetricsUnchecked+":") }):
		return "no min, max or mean per execution: not computed within --max-memory (see not checked)"
	case o.result.Verdict == explorer.OK || o.result.Verdict == explorer.Partial:
		return "no min, max or mean per execution: the state graph has cycles, so executions have no bound on their length"
	default:
		return "no min, max or mean per execution: the search did not explore every state"
	}
}

func printMetrics(w io.Writer, ms []explorer.Metric, perExecution string) {
	for _, m := range ms {
		if m.Executions > 0 {
			fmt.Fprintf(w, "metric %s: min %d, max %d, mean %.3f over %s executions (%d over all transitions)\n",
				m.Name, m.Min, m.Max, m.Mean, formatCount(m.Executions), m.Transitions)
		} else {
			fmt.Fprintf(w, "metric %s: %d over all transitions (%s)\n", m.Name, m.Transitions, perExecution)
		}
	}
}

func formatCount(f float64) string {
	if f < 1e15 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.3g", f)
}

// document is the --json form of an outcome.
type document struct {
	Protocol             string           `json:"protocol"`
	Variant              string           `json:"variant"`
	Params               model.Params     `json:"params"`
	Strategy             string           `json:"strategy"`
	Verdict              explorer.Verdict `json:"verdict"`
	Bound                string           `json:"bound,omitempty"`
	Without              []string         `json:"without,omitempty"` // the properties left out
	States               int64            `json:"states"`
	Transitions          int64            `json:"transitions"`
	Depth                int              `json:"depth"`
	Executions           int64            `json:"executions,omitempty"`
	Seconds              float64          `json:"seconds,omitempty"`         // with --timing only
	PeakMemory           int64            `json:"peak_memory,omitempty"`     // with --timing only
	BytesPerState        float64          `json:"bytes_per_state,omitempty"` // with --timing only: the peak memory over the states
	StoreBytesPerState   float64          `json:"store_bytes_per_state,omitempty"`
	Unchecked            []string         `json:"unchecked,omitempty"`
	Skipped              []string         `json:"skipped,omitempty"`          // the properties skipped on request (--no-progress)
	ProgressChecked      []string         `json:"progress_checked,omitempty"` // clean bfs: the progress properties that hold
	Fairness             string           `json:"fairness,omitempty"`         // the fairness the progress properties were checked under (bfs)
	FingerprintCollision float64          `json:"fingerprint_collision,omitempty"`
	Violation            *model.Violation `json:"violation"`
	Trace                *traces.Trace    `json:"trace"`
	Metrics              []metricDoc      `json:"metrics"`
}

type metricDoc struct {
	Name        string  `json:"name"`
	Executions  float64 `json:"executions"`
	Min         int64   `json:"min"`
	Max         int64   `json:"max"`
	Mean        float64 `json:"mean"`
	Transitions int64   `json:"transitions"`
}

// document is the --json form of o; the time only with timing, so that
// the same inputs give the same bytes.
func (o *outcome) document(timing bool) document {
	r := o.result
	d := document{
		Protocol: o.protocol.Name, Variant: o.variant, Params: o.params, Strategy: r.Strategy,
		Verdict: r.Verdict, Bound: r.Bound, States: r.Stats.States, Transitions: r.Stats.Transitions,
		Depth: r.Stats.Depth, Executions: r.Stats.Executions,
		StoreBytesPerState: r.Stats.StoreBytesPerState, FingerprintCollision: r.Stats.FingerprintCollision,
		Unchecked: r.Unchecked, Skipped: r.Skipped, Violation: r.Violation, Trace: o.trace, Metrics: []metricDoc{},
		Without: o.protocol.LeftOut, Fairness: r.Fairness,
	}
	if (r.Verdict == explorer.OK || r.Verdict == explorer.Partial) && len(o.progressHeld) > 0 {
		d.ProgressChecked, d.Fairness = o.progressHeld, o.fairness
	}
	if timing {
		d.Seconds = r.Stats.Elapsed.Seconds()
		d.PeakMemory, d.BytesPerState = r.Stats.PeakMemory, r.Stats.BytesPerState
	}
	for _, m := range r.Metrics {
		d.Metrics = append(d.Metrics, metricDoc{m.Name, m.Executions, m.Min, m.Max, m.Mean, m.Transitions})
	}
	return d
}

// isProgress reports whether property is one of m's progress properties.
func isProgress(m model.Machine, property string) bool {
	for _, p := range m.Properties().Progress {
		if p.Name == property {
			return true
		}
	}
	return false
}

// progressFairness is the fairness a search's progress check assumed.
func progressFairness(o explorer.Options) string {
	if o.Fairness == "" {
		return explorer.FairnessWeak
	}
	return o.Fairness
}

// describeTarget names a variant and its parameters as the reports' first line
// does: "pvflush/fixed  vcpus=3 ...".
func describeTarget(protocol, variant string, params model.Params) string {
	if len(params) == 0 {
		return protocol + "/" + variant
	}
	return fmt.Sprintf("%s/%s  %s", protocol, variant, params)
}

// spillDir is where searches that keep their levels outside the visited
// set (fingerprints, symmetry) write them: the system's temporary
// directory.
func spillDir() string { return os.TempDir() }
