package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/conform"
	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// stress runs a protocol's real implementation: under the Go scheduler
// (real goroutines, real atomics, as long as --duration or --runs allow),
// or, with --controlled, under protocheck's scheduler, where every run is
// reproducible and a failing schedule becomes a trace that replays on the
// model and on the code.
//
// Code that never ends by itself (a guest that never halts) ends each run
// once it has met every obligation (rt.Env.End), and a run cut before is
// judged by progress: under the Go scheduler the watchdog reports the
// obligation still owed; under control a run cut at max-steps is a
// violation only if it has come back, on a fair cycle, to a state it was
// in with a progress obligation pending (conform.FindLasso), since an
// unfair strategy (pct) may simply have starved a goroutine.
func (c *command) stress(args []string) (int, error) {
	stdout := c.stdout
	fs := c.newFlags("stress", "stress [flags] PROTOCOL/VARIANT [key=value ...]")
	duration := fs.Duration("duration", 0, "run the real code for this long (e.g. 10s); with neither --duration nor --runs, 200 runs")
	runs := fs.Int("runs", 0, "number of executions (default 200 unless --duration is given)")
	seed := fs.Int64("seed", 1, "seed of the first run's environment choices (real) or of the strategy (controlled)")
	controlled := fs.Bool("controlled", false, "run under the controlled scheduler instead of the Go scheduler")
	strategy := fs.String("strategy", "random", "controlled: random, pct or dfs")
	depth := fs.Int("depth", 3, "controlled pct: bug depth")
	preemptions := fs.Int("preemptions", 2, "controlled dfs: preemption bound (-1: none)")
	maxSteps := fs.Int("max-steps", 10000, "controlled: bound on steps per run")
	timing := fs.Bool("timing", false, "show the wall-clock time on stdout (otherwise on stderr)")
	watchdog := fs.Duration("watchdog", 10*time.Second, "real: a run that has not ended after this long is reported: as the progress obligation it still owes, for code that never ends by itself (exclusive with tbs=0 ends its runs once every obligation is met), otherwise as a deadlock (a busy-wait that never ends; a deadlock in locks and condition variables is reported at once)")
	out := fs.String("out", "", "controlled: write the failing schedule as a trace (replays with check replay, and on the code with --impl)")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	set := flagsSet(fs)
	if err := stressFlags(set, *controlled, *strategy); err != nil {
		return 0, err
	}
	if set["runs"] && *runs <= 0 {
		return 0, usagef("--runs must be at least 1, got %d (without --runs and --duration, stress makes 200 runs)", *runs)
	}
	p, v, given, err := c.parseTarget("stress", pos)
	if err != nil {
		return 0, err
	}
	target, err := conform.NewTarget(p, c.reg.Impl(p.Name), v.Name, given)
	if err != nil {
		return 0, usageError{err}
	}
	if *runs < 0 || *duration < 0 {
		return 0, usagef("--runs and --duration must not be negative")
	}
	if *runs == 0 && *duration == 0 {
		*runs = 200
	}
	lim := limits{runs: *runs, duration: *duration, start: time.Now(), times: c.stderr}
	if *timing {
		lim.times = stdout
	}
	if *controlled {
		var s rt.Strategy
		switch *strategy {
		case "random":
			s = rt.Random(*seed)
		case "pct":
			s = rt.PCT(*seed, *depth)
		case "dfs":
			s = rt.DFS(*preemptions)
		default:
			return 0, usagef("unknown --strategy %q for the controlled scheduler (random, pct, dfs)", clip(*strategy))
		}
		if err := checkWritable("out", *out); err != nil {
			return 0, err
		}
		return c.stressControlled(target, s, *strategy == "dfs", lim, *maxSteps, *out)
	}
	if *out != "" {
		return 0, usagef("--out needs --controlled: a run under the Go scheduler has no schedule to replay")
	}
	if *watchdog <= 0 {
		return 0, usagef("--watchdog must be positive, got %s", *watchdog)
	}
	target.Watchdog = *watchdog
	return c.stressReal(target, *seed, lim)
}

// stressFlags rejects the flags that would do nothing: those of the
// controlled scheduler without --controlled, the watchdog with it, and
// those of another strategy than the one chosen.
func stressFlags(set map[string]bool, controlled bool, strategy string) error {
	if !controlled {
		return unused(set, "without --controlled (it applies to runs under protocheck's scheduler)", "strategy", "depth", "preemptions", "max-steps")
	}
	if err := unused(set, "with --controlled (it bounds runs under the Go scheduler)", "watchdog"); err != nil {
		return err
	}
	for _, f := range []struct{ flag, strategy string }{{"depth", "pct"}, {"preemptions", "dfs"}} {
		if strategy != f.strategy {
			if err := unused(set, fmt.Sprintf("with --strategy %s (it applies to: %s)", clip(strategy), f.strategy), f.flag); err != nil {
				return err
			}
		}
	}
	if strategy == "dfs" {
		return unused(set, "with --strategy dfs (it enumerates schedules, with no randomness)", "seed")
	}
	return nil
}

// limits says how long stress runs and where its wall-clock time goes.
type limits struct {
	runs     int           // 0: no bound
	duration time.Duration // 0: no bound
	start    time.Time
	times    io.Writer
}

// more reports whether run n (from 0) is within the limits.
func (l *limits) more(n int) bool {
	return (l.runs == 0 || n < l.runs) && (l.duration == 0 || time.Since(l.start) < l.duration)
}

func (l *limits) printTime() {
	fmt.Fprintf(l.times, "time: %s\n", time.Since(l.start).Round(time.Millisecond))
}

func (c *command) stressReal(t *conform.Target, seed int64, lim limits) (int, error) {
	stdout := c.stdout
	fmt.Fprintf(stdout, "%s  real goroutines under the Go scheduler\n", describeTarget(t.Protocol.Name, t.Variant, t.Params))
	n, ops := 0, 0
	defer lim.printTime()
	for ; lim.more(n); n++ {
		if c.interrupted() {
			fmt.Fprintf(stdout, "interrupted after %d runs, %d operations, %d histories checked by porcupine: 0 violations so far\n", n, ops, n)
			return ExitInterrupted, nil
		}
		v, k, err := t.Real(seed + int64(n))
		if err != nil {
			return 0, err
		}
		ops += k
		if v != nil {
			fmt.Fprintf(stdout, "run %d (seed %d): violation of %s: %s\n", n+1, seed+int64(n), v.Property, v.Message)
			fmt.Fprintf(stdout, "%d runs, %d operations, 1 violation (to get a replayable schedule, run with --controlled)\n", n+1, ops)
			return ExitViolation, nil
		}
	}
	fmt.Fprintf(stdout, "%d runs, %d operations, %d histories checked by porcupine: ok, 0 violations\n", n, ops, n)
	return ExitOK, nil
}

// stressControlled runs t under the controlled scheduler with strategy s
// (exhaustive: dfs, which says when the run limit stopped it before it
// had tried every schedule within its bound).
func (c *command) stressControlled(t *conform.Target, s rt.Strategy, exhaustive bool, lim limits, maxSteps int, out string) (int, error) {
	stdout := c.stdout
	fmt.Fprintf(stdout, "%s  controlled scheduler, %s\n", describeTarget(t.Protocol.Name, t.Variant, t.Params), s)
	n, bounded, ended := 0, 0, 0
	firstCut := ""
	exhausted := false
	defer lim.printTime()
	for ; lim.more(n); n++ {
		if c.interrupted() {
			fmt.Fprintf(stdout, "interrupted after %d runs: no violation so far\n", n)
			return ExitInterrupted, nil
		}
		run, err := t.Controlled(s, maxSteps)
		if err != nil {
			return 0, err
		}
		if errors.Is(run.Err, rt.ErrExhausted) {
			exhausted = true
			break
		}
		if run.Err != nil {
			return 0, run.Err
		}
		if run.Ended {
			ended++
		}
		if run.BoundHit {
			// A run cut at max-steps is no verdict by itself, but one
			// that has come back, on a fair cycle, to a state it was in
			// with a progress obligation pending can go on so for ever.
			lasso, err := t.FindLasso(run)
			if err != nil {
				return 0, fmt.Errorf("run %d was cut at max-steps=%d and does not replay on the model: %w", n+1, maxSteps, err)
			}
			if lasso != nil {
				return c.stressLasso(t, n, lasso, out)
			}
			bounded++
			if firstCut == "" {
				firstCut = fmt.Sprintf("run %d: %s", n+1, run.Bound)
			}
		}
		if run.Violation == nil {
			continue
		}
		fmt.Fprintf(stdout, "run %d: violation of %s after %d steps\n%s\n", n+1, run.Violation.Property, len(run.Steps), run.Violation.Message)
		if out != "" {
			tr, err := traceOfRun(t, run)
			if err != nil {
				return 0, err
			}
			// The model agrees with the code step by step, so the model's
			// minimization gives a shorter schedule that breaks both.
			min, err := traces.Minimize(t.Protocol, tr)
			if err != nil {
				return 0, err
			}
			if err := traces.Save(out, min); err != nil {
				return 0, outputError("out", out, err)
			}
			fmt.Fprintf(stdout, "schedule minimized from %d to %d steps and written to %s (check replay %s; check replay --impl %s)\n", len(tr.Schedule), len(min.Schedule), out, out, out)
		}
		return ExitViolation, nil
	}
	how := fmt.Sprintf("%d runs", n)
	// dfs is exhaustive: unless it ran every schedule, with no bound
	// leaving one out and no run cut at max-steps, it proved nothing, and
	// says what it did not run (exit 3, as explore's bounded searches).
	var notRun []string
	pruned := false
	if p, ok := s.(rt.Pruner); ok {
		pruned = p.Pruned()
	}
	switch {
	case exhausted && pruned:
		how += ", every schedule within the bound"
		notRun = append(notRun, "the schedules with more preemptions than the bound (--preemptions -1: none)")
	case exhausted:
		how += ", every schedule"
	case exhaustive:
		limit := "--duration"
		if lim.runs > 0 && n >= lim.runs {
			limit = "--runs"
		}
		how += fmt.Sprintf(" (bounded: %s stopped dfs before it had tried every schedule within its preemption bound)", limit)
		notRun = append(notRun, fmt.Sprintf("the schedules after the first %d (%s)", n, limit))
	}
	if ended > 0 {
		how += fmt.Sprintf(", %d ended by the code once every obligation was met (it does not end by itself)", ended)
	}
	if bounded > 0 {
		how += fmt.Sprintf(", %d cut at max-steps=%d", bounded, maxSteps)
		if exhaustive {
			notRun = append(notRun, fmt.Sprintf("the steps after max-steps=%d of the %d runs cut there", maxSteps, bounded))
		}
	}
	fmt.Fprintf(stdout, "%s: no violation\n", how)
	if firstCut != "" {
		// Not a verdict: a strategy that is not fair (pct keeps running
		// the highest-priority goroutine) may starve a goroutine.
		fmt.Fprintf(stdout, "first cut, %s\n", firstCut)
	}
	if exhaustive && len(notRun) > 0 {
		fmt.Fprintf(stdout, "bounded: not run: %s; nothing proved beyond the schedules run\n", strings.Join(notRun, "; "))
		return ExitIncomplete, nil
	}
	return ExitOK, nil
}

// stressLasso reports run n (from 0), which FindLasso showed can go on
// for ever with a progress obligation pending, and writes it as a lasso
// trace to out if asked. A lasso is written as found: the minimizer
// shortens schedules that end in a violation, and a lasso's cycle must
// stay a cycle.
func (c *command) stressLasso(t *conform.Target, n int, l *conform.Lasso, out string) (int, error) {
	fmt.Fprintf(c.stdout, "run %d: violation of %s after %d steps\n%s\n", n+1, l.Violation.Property, len(l.Schedule), l.Violation.Message)
	if out == "" {
		return ExitViolation, nil
	}
	tr, err := traces.RecordProgress(t.Protocol, t.Variant, t.Params, l.Schedule, l.Cycle, l.Violation, explorer.FairnessWeak)
	if err != nil {
		return 0, err
	}
	if err := traces.Save(out, tr); err != nil {
		return 0, outputError("out", out, err)
	}
	fmt.Fprintf(c.stdout, "lasso of %d steps (its last %d repeat) written to %s (check replay %s)\n", len(l.Schedule), l.Cycle, out, out)
	return ExitViolation, nil
}

// traceOfRun turns a failing run of the real code into a model trace. The
// model must agree with the code step by step; if it does not, the
// disagreement is the finding and is reported as an error.
func traceOfRun(t *conform.Target, run *rt.Run) (*traces.Trace, error) {
	if err := t.CheckRun(run); err != nil {
		return nil, fmt.Errorf("the real code's failing run does not replay on the model: %w", err)
	}
	return traces.Record(t.Protocol, t.Variant, t.Params, run.Schedule)
}

// replayImpl drives the real implementation along a trace's schedule,
// checking every label, and says whether the violation reproduces on the
// code. The trace must first replay on the model exactly as check replay
// requires (every parameter recorded, the same threads, labels and
// violation), so that a trace edited by hand is rejected with the first
// step where it diverges rather than run on defaults it does not show.
func (c *command) replayImpl(path string, stdout io.Writer) (int, error) {
	r, err := c.load(path)
	if err != nil {
		return 0, err
	}
	tr := r.Trace
	if len(tr.Without) > 0 {
		return 0, usagef("%s: the trace was found with %s left out, and the real code checks every property: replay --impl drives only traces found with all of them", path, strings.Join(tr.Without, ", "))
	}
	p, err := c.reg.Lookup(tr.Protocol)
	if err != nil {
		return 0, usageError{err}
	}
	target, err := conform.NewTarget(p, c.reg.Impl(p.Name), tr.Variant, tr.Params)
	if err != nil {
		return 0, usageError{fmt.Errorf("%s: %w", path, err)}
	}
	run, err := target.ReplayModel(tr.Schedule, tr.Labels())
	if err != nil {
		return 0, err
	}
	if err := target.CheckThreads(run); err != nil {
		return 0, usageError{fmt.Errorf("%s: model and code disagree: %w", path, err)}
	}
	if run.Err != nil {
		return 0, usageError{fmt.Errorf("%s: model and code disagree: %w", path, run.Err)}
	}
	want, got := r.Execution.Violation, run.Violation
	if (want == nil) != (got == nil) || want != nil && want.Property != got.Property {
		return 0, usageError{fmt.Errorf("%s: model and code disagree at the end (step %d): the model gives %v, the code %v", path, len(tr.Schedule), describe(want), describe(got))}
	}
	fmt.Fprintf(stdout, "%s  the real implementation driven by %s (%d steps)\n", describeTarget(tr.Protocol, tr.Variant, tr.Params), path, len(tr.Schedule))
	for i, s := range run.Steps {
		fmt.Fprintf(stdout, "%4d  %-18s %s\n", i+1, s.Thread, s.Label)
	}
	if got == nil {
		fmt.Fprintln(stdout, "no violation, on the model and on the code")
		return ExitOK, nil
	}
	fmt.Fprintf(stdout, "reproduced on the real code: %s: %s\n", got.Property, got.Message)
	return ExitViolation, nil
}

func describe(v *model.Violation) string {
	if v == nil {
		return "no violation"
	}
	return v.Error()
}
