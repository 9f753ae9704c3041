// Package bfs is the exhaustive breadth-first search as a sequence of
// Apache Beam pipelines, one per level, with the frontier and the visited
// set in files (see pipeline.go for one level). The result is the local
// bfs's: the same states, transitions, depth, metric totals and verdict,
// and the same counterexample, whatever the runner, the number of
// workers, their timing and the partitioning, because every decision
// that the local search takes in its sequential order is taken here by
// comparing positions (see records.go), which encode that order.
package bfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/protocheck/protocheck/cluster/store"
	"github.com/protocheck/protocheck/cluster/target"
	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// Config configures a search.
type Config struct {
	Target   target.Target
	Symmetry bool
	// NoProgress says that progress properties were skipped on purpose:
	// a cluster search never checks them, and with NoProgress they are
	// listed as skipped (Result.Skipped, the verdict ok) instead of not
	// checked (Result.Unchecked, the verdict partial).
	NoProgress bool
	// MaxSteps bounds the depth as explorer.Options.MaxSteps does
	// (default 10000).
	MaxSteps int
	// MaxStates, when positive, stops the search (verdict bounded) after
	// the level at which the states exceed it: on a cluster the bound is
	// checked between levels.
	MaxStates int64
	// TimeLimit, when positive, stops the search (verdict bounded) once it
	// has run that long; a level cut short by it does not count.
	TimeLimit time.Duration
	// Partitions is the number of fingerprint partitions to start with
	// (rounded up to a power of two; default 1). The driver doubles it
	// whenever a level's candidates would exceed PartitionBytes per
	// partition (default 64 MiB): that is the memory of one merge task.
	Partitions     int
	PartitionBytes int64
	// Dir is a directory (or object-storage prefix) that the driver and
	// every worker can reach, for this search only.
	Dir string
	// Run runs one pipeline to completion.
	Run func(ctx context.Context, p *beam.Pipeline) error
	// Clock times the search; Progress, when set, receives a line per
	// level (one JSON object with ProgressJSON).
	Clock        func() time.Time
	Progress     io.Writer
	ProgressJSON bool
}

// maxBits caps the partitions at 4096: beyond that, the per-level file
// lists and summaries grow large, and so does the search.
const maxBits = 12

// A Level is what one level's pipeline did.
type Level struct {
	Depth       int
	Expanded    int64 // states expanded
	Transitions int64
	NewStates   int64
	Partitions  int
	Elapsed     time.Duration
}

// An Outcome is the search's result, in the explorer's terms, and its
// levels.
type Outcome struct {
	Result *explorer.Result
	Levels []Level
}

type driver struct {
	c       Config
	m       model.Machine
	exp     *explorer.Expander
	r       *explorer.Result
	out     *Outcome
	metrics []int64
	start   time.Time
	meter   explorer.Meter

	bits     int
	runs     []string
	stats    []store.RunStats
	frontier []string
}

// Explore runs the search.
func Explore(ctx context.Context, c Config) (*Outcome, error) {
	if c.Run == nil || c.Dir == "" {
		return nil, errors.New("bfs: a runner and a directory are needed")
	}
	if c.MaxSteps == 0 {
		c.MaxSteps = 10_000
	}
	if c.PartitionBytes <= 0 {
		c.PartitionBytes = 64 << 20
	}
	m, err := c.Target.Machine()
	if err != nil {
		return nil, err
	}
	exp, err := explorer.NewExpander(m, c.Symmetry)
	if err != nil {
		return nil, err
	}
	d := &driver{c: c, m: m, exp: exp, r: &explorer.Result{Strategy: explorer.BFS}, metrics: make([]int64, len(m.Properties().Metrics))}
	d.out = &Outcome{Result: d.r}
	if c.Clock != nil {
		d.start = c.Clock()
	}
	err = d.run(ctx)
	d.cleanup(ctx)
	if err != nil {
		return nil, err
	}
	d.finish()
	d.unchecked()
	return d.out, nil
}

// unchecked names the progress properties the search did not check, with
// why, in the local bfs's words where it has the same reason. Progress
// (a cycle that keeps an obligation pending) is checked on the state
// graph, which a cluster search does not keep: a clean search says so,
// and its verdict is partial, as the local explorer's is for a complete
// search that left a property unchecked: ok never claims more than was
// explored. Progress skipped on request (NoProgress) is listed as
// skipped, and leaves ok ok.
func (d *driver) unchecked() {
	props := d.m.Properties()
	why := ""
	switch r := d.r; {
	case len(props.Progress) == 0:
		return
	case d.c.NoProgress:
		for _, p := range props.Progress {
			d.r.Skipped = append(d.r.Skipped, p.Name+": progress properties were skipped (no-progress)")
		}
		return
	case d.c.Symmetry:
		why = "progress is not checked under symmetry reduction: a cycle of orbits need not be a cycle of states"
	case r.Verdict == explorer.OK:
		why = "progress is not checked on a cluster: it needs the state graph, which a cluster search does not keep"
	case r.Verdict == explorer.Bounded || r.Verdict == explorer.Interrupted:
		why = "progress is not checked when the search was cut: " + r.Bound
	default:
		return // a violation: the local bfs stops before it checks progress
	}
	for _, p := range props.Progress {
		d.r.Unchecked = append(d.r.Unchecked, p.Name+": "+why)
	}
	if d.r.Verdict == explorer.OK {
		d.r.Verdict = explorer.Partial
	}
}

func (d *driver) file(name string) string { return store.Join(d.c.Dir, name) }

func levelPrefix(dir string, level int) string { return store.Join(dir, fmt.Sprintf("L%05d-", level)) }

func (d *driver) run(ctx context.Context) error {
	r := d.r
	state, _, fp, v := d.exp.Initial()
	r.Stats.States = 1
	if v != nil {
		r.Verdict, r.Violation, r.Schedule = explorer.Violation, v, []model.Choice{}
		return nil
	}
	d.bits = min(maxBits, bits.Len(uint(max(1, d.c.Partitions)-1)))
	d.runs = make([]string, 1<<d.bits)
	d.stats = make([]store.RunStats, 1<<d.bits)
	front := levelPrefix(d.c.Dir, 0) + "front-init.rec"
	w, err := store.Create(ctx, front)
	if err != nil {
		return err
	}
	if err := w.Write(appendFrontier(nil, fp, nil, state)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	run, err := store.CreateRun(ctx, d.file("run-init.fps"))
	if err != nil {
		return err
	}
	if err := run.Write(fp); err != nil {
		return err
	}
	if err := run.Close(); err != nil {
		return err
	}
	p := store.PartOf(fp, d.bits)
	d.runs[p], d.stats[p] = d.file("run-init.fps"), run.Stats()
	d.frontier = []string{front}
	frontierStates := int64(1)
	stateBytes := int64(len(state))
	var branching float64 = 1
	for level := 0; len(d.frontier) > 0; level++ {
		r.Stats.Depth = level
		if why := d.timeUp(); why != "" {
			r.Verdict, r.Bound = explorer.Bounded, why
			return nil
		}
		// Partitions: enough that one merge task's candidates fit in
		// PartitionBytes, estimated from the last level's branching.
		want := float64(frontierStates) * branching * float64(stateBytes+int64(8+(level+1)*rankBytes+len(d.metrics)))
		nb := d.bits
		for nb < maxBits && want/float64(int64(1)<<nb) > float64(d.c.PartitionBytes) {
			nb++
		}
		rewrite := nb > d.bits
		if rewrite {
			d.split(nb)
		}
		t0 := time.Now()
		sum, err := d.level(ctx, level, rewrite)
		if err != nil {
			if ctx.Err() != nil {
				r.Verdict, r.Bound = explorer.Interrupted, fmt.Sprintf("interrupted after %d states", r.Stats.States)
				return nil
			}
			if why := d.timeUp(); why != "" {
				r.Verdict, r.Bound = explorer.Bounded, why
				return nil
			}
			return fmt.Errorf("level %d: %w", level, err)
		}
		d.meter.Memory()
		if level >= d.c.MaxSteps && sum.Successors > 0 {
			// The local bfs stops before a level at depth max-steps if one
			// of its states can still step, without expanding it.
			r.Verdict = explorer.Bounded
			r.Bound = fmt.Sprintf("max-steps=%d: executions longer than that were not explored", d.c.MaxSteps)
			return nil
		}
		if cut, inclusive, ok := sum.cutoff(); ok {
			return d.stop(ctx, sum, level, t0, cut, inclusive)
		}
		r.Stats.States += sum.NewStates
		r.Stats.Transitions += sum.Transitions
		d.metrics = addCounts(d.metrics, sum.Metrics)
		if sum.Expanded > 0 {
			branching = float64(sum.Successors) / float64(sum.Expanded)
		}
		if sum.Candidates > 0 {
			stateBytes = sum.SpillBytes/sum.Candidates - int64(8+(level+1)*rankBytes)
		}
		frontierStates = sum.NewStates
		old := slices.Clone(d.runs)
		for p, ri := range sum.Runs {
			if p < 0 || p >= len(d.runs) {
				return fmt.Errorf("level %d: a summary names partition %d of %d", level, p, len(d.runs))
			}
			d.runs[p], d.stats[p] = ri.Path, ri.RunStats
		}
		d.frontier = d.frontier[:0]
		for p := 0; p < len(d.runs); p++ {
			if f, ok := sum.Frontier[p]; ok {
				d.frontier = append(d.frontier, f)
			}
		}
		d.drop(ctx, level, old)
		lv := Level{Depth: level, Expanded: sum.Expanded, Transitions: sum.Transitions, NewStates: sum.NewStates, Partitions: len(d.runs), Elapsed: time.Since(t0)}
		d.out.Levels = append(d.out.Levels, lv)
		d.progress(lv)
		if d.c.MaxStates > 0 && r.Stats.States > d.c.MaxStates && len(d.frontier) > 0 {
			r.Verdict = explorer.Bounded
			r.Bound = fmt.Sprintf("max-states=%d: the state space is larger", d.c.MaxStates)
			return nil
		}
	}
	r.Verdict = explorer.OK
	return nil
}

// timeUp says why the search must stop for its time limit, if it must.
func (d *driver) timeUp() string {
	if d.c.TimeLimit > 0 && d.c.Clock != nil && d.c.Clock().Sub(d.start) >= d.c.TimeLimit {
		return fmt.Sprintf("time-limit=%s: the search did not finish in time", d.c.TimeLimit)
	}
	return ""
}

// split doubles the partitions until there are 1<<nb: partition q inherits
// the run of the partition it was part of, which its merge reads through
// a range filter (and rewrites in this level).
func (d *driver) split(nb int) {
	runs := make([]string, 1<<nb)
	stats := make([]store.RunStats, 1<<nb)
	for q := range runs {
		runs[q] = d.runs[q>>(nb-d.bits)]
	}
	d.runs, d.stats, d.bits = runs, stats, nb
}

// level runs one level's pipeline and returns its summary.
func (d *driver) level(ctx context.Context, level int, rewrite bool) (*Summary, error) {
	prefix := levelPrefix(d.c.Dir, level)
	man, err := json.Marshal(manifest{Frontier: d.frontier, Runs: d.runs})
	if err != nil {
		return nil, err
	}
	lc := &levelConfig{
		target: d.c.Target, symmetry: d.c.Symmetry, level: level, bits: d.bits, metrics: len(d.metrics),
		rewrite: rewrite, manifest: prefix + "manifest.json", prefix: prefix,
		nextPrefix: levelPrefix(d.c.Dir, level+1), runPrefix: d.file("run-"), summary: prefix + "summary.json",
	}
	if err := store.WriteFile(ctx, lc.manifest, man); err != nil {
		return nil, err
	}
	if d.c.TimeLimit > 0 && d.c.Clock != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.c.TimeLimit-d.c.Clock().Sub(d.start))
		defer cancel()
	}
	if err := d.c.Run(ctx, levelPipeline(lc)); err != nil {
		return nil, err
	}
	b, err := store.ReadFile(ctx, lc.summary)
	if err != nil {
		return nil, fmt.Errorf("the pipeline ended without its summary: %w", err)
	}
	return decodeSummary(string(b))
}

// drop removes what a finished level no longer needs: its frontier and
// spill files, its manifest and summary (all named with the level's
// prefix), and the runs it replaced.
func (d *driver) drop(ctx context.Context, level int, oldRuns []string) {
	live := map[string]bool{}
	for _, r := range d.runs {
		live[r] = true
	}
	var dead []string
	for _, r := range oldRuns {
		if r != "" && !live[r] {
			dead = append(dead, r)
			live[r] = true // once
		}
	}
	// Best effort: a file left behind costs space, not correctness, and
	// the directory is removed at the end.
	_ = store.Remove(ctx, dead...)
	_ = store.RemoveGlob(ctx, levelPrefix(d.c.Dir, level)+"*")
}

// cleanup removes every file of the search.
func (d *driver) cleanup(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	_ = store.RemoveGlob(ctx, store.Join(d.c.Dir, "L*"))
	_ = store.RemoveGlob(ctx, store.Join(d.c.Dir, "run-*"))
}

// stop ends the search in the level whose expansion found a violation or
// a deadlock: the counts are the local bfs's at the moment it stops (the
// transitions and new states before the cutoff), the verdict and the
// schedule those of the first deadlock in bfs order, else of the first
// violating transition.
func (d *driver) stop(ctx context.Context, sum *Summary, level int, t0 time.Time, cut []byte, inclusive bool) error {
	r := d.r
	lv := Level{Depth: level, Expanded: sum.Expanded, Partitions: len(d.runs)}
	if len(sum.Spills) > 0 {
		before, err := d.cut(ctx, sum, level, cut)
		if err != nil {
			return fmt.Errorf("level %d: %w", level, err)
		}
		r.Stats.States += before.NewStates
		r.Stats.Transitions += before.Transitions
		d.metrics = addCounts(d.metrics, before.Metrics)
		lv.NewStates, lv.Transitions = before.NewStates, before.Transitions
	}
	if inclusive {
		r.Stats.Transitions++
		d.metrics = addCounts(d.metrics, sum.Violation.Counts)
	}
	found := sum.Violation
	if sum.Deadlock != nil {
		found = sum.Deadlock
	}
	sched, err := d.schedule(found)
	if err != nil {
		return err
	}
	r.Verdict, r.Violation, r.Schedule = explorer.Violation, found.Violation, sched
	r.Stats.Depth = max(level, len(sched))
	if inclusive {
		lv.Transitions++
	}
	lv.Elapsed = time.Since(t0)
	d.out.Levels = append(d.out.Levels, lv)
	d.progress(lv)
	return nil
}

// cut runs the pipeline that counts the level's transitions and new
// states before the cutoff (cut.go).
func (d *driver) cut(ctx context.Context, sum *Summary, level int, cut []byte) (*Summary, error) {
	prefix := levelPrefix(d.c.Dir, level)
	man, err := json.Marshal(cutManifest{Runs: d.runs, Spills: sum.Spills})
	if err != nil {
		return nil, err
	}
	manifest, summary := prefix+"cut-manifest.json", prefix+"cut-summary.json"
	if err := store.WriteFile(ctx, manifest, man); err != nil {
		return nil, err
	}
	if err := d.c.Run(ctx, cutPipeline(manifest, summary, level+1, d.bits, len(d.metrics), cut)); err != nil {
		return nil, err
	}
	b, err := store.ReadFile(ctx, summary)
	if err != nil {
		return nil, fmt.Errorf("the pipeline ended without its summary: %w", err)
	}
	return decodeSummary(string(b))
}

// schedule rebuilds the choices that reach a found state from its
// position, expanding from the initial state as the pipeline did, and
// checks that they end in the violation the pipeline reported.
func (d *driver) schedule(f *Found) ([]model.Choice, error) {
	state, _, _, _ := d.exp.Initial()
	var sched []model.Choice
	var last *model.Violation
	for i := 0; i < ranks(f.Path); i++ {
		succs, _ := d.exp.Expand(state)
		k := rankAt(f.Path, i)
		if k >= len(succs) {
			return nil, fmt.Errorf("the counterexample's position names successor %d of %d at step %d", k+1, len(succs), i+1)
		}
		sched = append(sched, succs[k].Choice)
		last = succs[k].Violation
		state = slices.Clone(succs[k].State)
	}
	if f.Violation.Property == model.Deadlock {
		succs, dl := d.exp.Expand(state)
		last = dl
		if len(succs) > 0 {
			last = nil
		}
	}
	if last == nil || *last != *f.Violation {
		return nil, fmt.Errorf("the rebuilt counterexample does not end in the reported violation %v (it ends in %v)", f.Violation, last)
	}
	return sched, nil
}

func (d *driver) progress(lv Level) {
	w := d.c.Progress
	if w == nil {
		return
	}
	s := d.r.Stats
	var el time.Duration
	if d.c.Clock != nil {
		el = d.c.Clock().Sub(d.start)
	}
	rate := 0.0
	if el > 0 {
		rate = float64(s.States) / el.Seconds()
	}
	if d.c.ProgressJSON {
		fmt.Fprintf(w, `{"level":%d,"expanded":%d,"new_states":%d,"states":%d,"transitions":%d,"partitions":%d,"level_seconds":%.3f,"states_per_second":%.0f,"elapsed_seconds":%.3f}`+"\n",
			lv.Depth, lv.Expanded, lv.NewStates, s.States, s.Transitions, lv.Partitions, lv.Elapsed.Seconds(), rate, el.Seconds())
		return
	}
	fmt.Fprintf(w, "level %d: expanded %d, new %d; %d states, %d transitions, %d partitions; level %s, %.0f states/s, %s elapsed\n",
		lv.Depth, lv.Expanded, lv.NewStates, s.States, s.Transitions, lv.Partitions, lv.Elapsed.Round(time.Millisecond), rate, el.Round(time.Millisecond))
}

// finish fills the statistics: metric totals, time, memory, and the
// fingerprint collision estimates (the cluster always stores 64-bit
// fingerprints): TLC's optimistic n*(m-n)/2^64 and 1/(the smallest gap
// between two stored fingerprints).
func (d *driver) finish() {
	r := d.r
	s := &r.Stats
	for k, name := range d.m.Properties().Metrics {
		r.Metrics = append(r.Metrics, explorer.Metric{Name: name, Transitions: d.metrics[k]})
	}
	d.meter.Finish(s, d.c.Clock, d.start)
	n, m := float64(s.States), float64(s.Transitions+1)
	s.FingerprintCollision = n * math.Max(m-n, 0) / math.Exp2(64)
	var gap uint64 = math.MaxUint64
	var last uint64
	have := false
	for _, st := range d.stats {
		if st.Count == 0 {
			continue
		}
		gap = min(gap, st.Gap)
		if have {
			gap = min(gap, st.First-last)
		}
		last, have = st.Last, true
	}
	if s.States > 1 && gap != math.MaxUint64 {
		s.FingerprintCollisionObserved = 1 / float64(gap)
	}
}
