package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/protocheck/protocheck/cluster/store"
	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// Explore runs the swarm.
func Explore(ctx context.Context, c Config) (*Outcome, error) {
	if c.Run == nil || c.Dir == "" {
		return nil, errors.New("swarm: a runner and a directory are needed")
	}
	if c.Runs == 0 {
		c.Runs = 1000
	}
	if c.Shards <= 0 {
		c.Shards = 16
	}
	if c.Sampling.MaxSteps == 0 {
		c.Sampling.MaxSteps = 10_000
	}
	if c.Sampling.Strategy == explorer.PCT && c.Sampling.Depth == 0 {
		c.Sampling.Depth = 3
	}
	m, err := c.Target.Machine()
	if err != nil {
		return nil, err
	}
	// The driver's own sampler checks the options (as a worker would) and
	// reruns the violating walk for its schedule.
	sampler, err := explorer.NewSampler(m, c.Sampling.options())
	if err != nil {
		return nil, err
	}
	d := &driver{c: c, m: m, r: &explorer.Result{Strategy: c.Sampling.Strategy}}
	d.out = &Outcome{Result: d.r}
	defer d.cleanup(ctx)
	if c.Clock != nil {
		d.start = c.Clock()
	}
	d.bits = min(12, bits.Len(uint(max(1, c.Partitions)-1)))
	d.runs = make([]string, 1<<d.bits)
	if err := d.run(ctx, sampler); err != nil {
		return nil, err
	}
	for _, p := range m.Properties().Progress {
		// As the local explorer says of its walks.
		d.r.Unchecked = append(d.r.Unchecked, p.Name+": progress is checked by bfs only, which keeps the state graph")
	}
	d.finish()
	return d.out, nil
}

type driver struct {
	c     Config
	m     model.Machine
	r     *explorer.Result
	out   *Outcome
	start time.Time
	meter explorer.Meter
	bits  int
	runs  []string
	// totals of the complete walks so far
	exec  int64
	cut   int64
	min   []int64
	max   []int64
	sum   []int64
	trans []int64
}

func (d *driver) run(ctx context.Context, sampler *explorer.Sampler) error {
	r, c := d.r, d.c
	nm := len(d.m.Properties().Metrics)
	d.min, d.max, d.sum, d.trans = make([]int64, nm), make([]int64, nm), make([]int64, nm), make([]int64, nm)
	perShard := 16
	for first, batch := 0, 0; first < c.Runs; batch++ {
		walks := min(c.Runs-first, perShard*c.Shards)
		perShard = min(2*perShard, 1024)
		if why := d.timeUp(); why != "" {
			return d.bounded(why)
		}
		t0 := time.Now()
		sum, err := d.batch(ctx, batch, first, walks)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				r.Verdict, r.Bound = explorer.Interrupted, fmt.Sprintf("interrupted after %d states", r.Stats.States)
				r.Stats.Executions = d.exec
				return nil
			case d.timeUp() != "":
				return d.bounded(d.timeUp())
			}
			return fmt.Errorf("walks %d to %d: %w", first, first+walks-1, err)
		}
		v := sum.firstViolating()
		if v >= 0 {
			r.Stats.States += sum.newStates(v)
		} else {
			r.Stats.States += sum.newStates(first + walks)
		}
		for _, sh := range sum.Shards {
			if v >= 0 && sh.Lo > v {
				continue // walks after the first violation: the explorer never runs them
			}
			r.Stats.Transitions += sh.Transitions
			r.Stats.Depth = max(r.Stats.Depth, sh.Depth)
			d.add(sh)
		}
		for p, ri := range sum.Runs {
			d.runs[p] = ri.Path
		}
		d.meter.Memory()
		d.out.Batches = append(d.out.Batches, Batch{First: first, End: first + walks, States: r.Stats.States, Elapsed: time.Since(t0)})
		d.progress(first + walks)
		if v >= 0 {
			w := sampler.Walk(v)
			var want *model.Violation
			for _, sh := range sum.Shards {
				if sh.Violating == v {
					want = sh.Violation
				}
			}
			if w.Violation == nil || want == nil || *w.Violation != *want {
				return fmt.Errorf("walk %d: a worker found %v, the driver's rerun %v (a machine that is not deterministic?)", v, want, w.Violation)
			}
			r.Verdict, r.Violation, r.Schedule = explorer.Violation, w.Violation, w.Schedule
			r.Stats.Executions = int64(v + 1)
			return nil
		}
		first += walks
	}
	r.Stats.Executions = d.exec
	r.Verdict = explorer.Bounded
	if c.Sampling.Strategy == explorer.PCT {
		r.Bound = fmt.Sprintf("pct: %d walks of depth %d from seed %d", c.Runs, c.Sampling.Depth, c.Sampling.Seed)
	} else {
		r.Bound = fmt.Sprintf("%s: %d walks from seed %d", c.Sampling.Strategy, c.Runs, c.Sampling.Seed)
	}
	if d.cut > 0 {
		r.Bound += fmt.Sprintf(", %d of them stopped at max-steps=%d (a spin loop or livelock?)", d.cut, c.Sampling.MaxSteps)
	}
	d.metrics()
	return nil
}

func (d *driver) add(sh ShardStats) {
	for k := range d.trans {
		d.trans[k] += sh.Trans[k]
		if sh.Executions > 0 {
			if d.exec == 0 || sh.Min[k] < d.min[k] {
				d.min[k] = sh.Min[k]
			}
			if d.exec == 0 || sh.Max[k] > d.max[k] {
				d.max[k] = sh.Max[k]
			}
			d.sum[k] += sh.Sum[k]
		}
	}
	d.exec += sh.Executions
	d.cut += sh.Cut
}

// metrics summarises the metrics over the complete walks, as the local
// explorer does.
func (d *driver) metrics() {
	for k, name := range d.m.Properties().Metrics {
		mt := explorer.Metric{Name: name, Transitions: d.trans[k]}
		if d.exec > 0 {
			n := float64(d.exec)
			mt.Executions, mt.Min, mt.Max, mt.Mean = n, d.min[k], d.max[k], float64(d.sum[k])/n
		}
		d.r.Metrics = append(d.r.Metrics, mt)
	}
}

func (d *driver) bounded(why string) error {
	d.r.Verdict, d.r.Bound = explorer.Bounded, why
	d.r.Stats.Executions = d.exec
	d.metrics()
	return nil
}

func (d *driver) timeUp() string {
	if d.c.TimeLimit > 0 && d.c.Clock != nil && d.c.Clock().Sub(d.start) >= d.c.TimeLimit {
		return fmt.Sprintf("time-limit=%s: the search did not finish in time", d.c.TimeLimit)
	}
	return ""
}

// batch runs walks first..first+walks-1 as one pipeline.
func (d *driver) batch(ctx context.Context, batch, first, walks int) (*Summary, error) {
	prefix := store.Join(d.c.Dir, fmt.Sprintf("B%05d-", batch))
	bc := &batchConfig{
		target: d.c.Target, sampling: d.c.Sampling, first: first, walks: walks,
		shards: min(d.c.Shards, walks), bits: d.bits, manifest: prefix + "runs.json",
		prefix: prefix, runs: store.Join(d.c.Dir, "run-"), summary: prefix + "summary.json",
	}
	man, err := json.Marshal(d.runs)
	if err != nil {
		return nil, err
	}
	if err := store.WriteFile(ctx, bc.manifest, man); err != nil {
		return nil, err
	}
	if d.c.TimeLimit > 0 && d.c.Clock != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.c.TimeLimit-d.c.Clock().Sub(d.start))
		defer cancel()
	}
	old := slices.Clone(d.runs)
	if err := d.c.Run(ctx, batchPipeline(bc)); err != nil {
		return nil, err
	}
	b, err := store.ReadFile(ctx, bc.summary)
	if err != nil {
		return nil, fmt.Errorf("the pipeline ended without its summary: %w", err)
	}
	sum, err := decodeSummary(string(b))
	if err != nil {
		return nil, err
	}
	// Best effort: what is left is removed at the end.
	var dead []string
	for p, ri := range sum.Runs {
		if old[p] != "" && old[p] != ri.Path {
			dead = append(dead, old[p])
		}
	}
	_ = store.Remove(ctx, dead...)
	_ = store.RemoveGlob(ctx, prefix+"*")
	return sum, nil
}

func (d *driver) progress(done int) {
	w := d.c.Progress
	if w == nil {
		return
	}
	var el time.Duration
	if d.c.Clock != nil {
		el = d.c.Clock().Sub(d.start)
	}
	s := d.r.Stats
	if d.c.ProgressJSON {
		fmt.Fprintf(w, `{"walks":%d,"states":%d,"transitions":%d,"depth":%d,"elapsed_seconds":%.3f}`+"\n", done, s.States, s.Transitions, s.Depth, el.Seconds())
		return
	}
	fmt.Fprintf(w, "walks 0..%d: %d states, %d transitions, depth %d, %s elapsed\n", done-1, s.States, s.Transitions, s.Depth, el.Round(time.Millisecond))
}

func (d *driver) cleanup(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	_ = store.RemoveGlob(ctx, store.Join(d.c.Dir, "B*"))
	_ = store.RemoveGlob(ctx, store.Join(d.c.Dir, "run-*"))
}

// finish fills the time and memory statistics.
func (d *driver) finish() {
	s := &d.r.Stats
	d.meter.Finish(s, d.c.Clock, d.start)
}
