// Package swarm runs the explorer's sampling strategies (random,
// random-threads, pct) as Apache Beam pipelines: walk i is the explorer
// Sampler's walk i, the i-th walk the local explorer runs with the same
// options, wherever it runs. Walks are shared out in shards of
// consecutive indices, and batches of walks run in increasing order, so
// the result is the local one: the same first violating walk, the same
// counts up to it (distinct states included) and the same
// counterexample, whatever the sharding and the workers' timing.
//
// One batch is one pipeline:
//
//	Impulse → shard indices → Reshuffle
//	  → walk: a shard's walks in index order, up to its first violation;
//	    the fingerprints of the states each walk visits go to this
//	    bundle's spill file of their partition, with the walk's index
//	  → GroupByKey(partition)      groups of spill file NAMES
//	  → count: one task per partition finds the fingerprints new to the
//	    visited run, counts them by the first walk that visited them, and
//	    rewrites the run
//	  → summaries → Combine → the batch's summary file
//
// The driver then adds up the new states of the walks up to the batch's
// first violating walk, where the local explorer stops. (That walk is not
// known to the count tasks: a side input could say, but Prism 2.77
// sometimes ran a stage before its singleton side input was ready.)
package swarm

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/protocheck/protocheck/cluster/internal/jsoncombine"
	"github.com/protocheck/protocheck/cluster/store"
	"github.com/protocheck/protocheck/cluster/target"
	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

func init() {
	register.DoFn3x1[context.Context, []byte, func(int), error](&shardsFn{})
	register.DoFn4x1[context.Context, int, func(int, string), func(string), error](&walkFn{})
	register.DoFn4x1[context.Context, int, func(*string) bool, func(string), error](&countFn{})
	register.DoFn2x1[context.Context, string, error](&writeSummaryFn{})
	register.Function2x2[string, string, string, error](mergeSummaries)
	register.Emitter1[int]()
	register.Emitter1[string]()
	register.Emitter2[int, string]()
	register.Iter1[string]()
}

// Sampling are the options of a walk: what explorer.NewSampler takes.
type Sampling struct {
	Strategy string
	Seed     int64
	MaxSteps int
	Depth    int // pct only
}

func (s Sampling) options() explorer.Options {
	o := explorer.Options{Strategy: s.Strategy, Seed: s.Seed, MaxSteps: s.MaxSteps}
	if s.Strategy == explorer.PCT {
		o.Depth = s.Depth
	}
	return o
}

// Config configures a swarm.
type Config struct {
	Target   target.Target
	Sampling Sampling
	// Runs is the number of walks (default 1000).
	Runs int
	// Shards is the number of work items per batch (default 16); the
	// first batch has 16 walks per shard, and each next one twice as many
	// walks as the one before, up to 1024 per shard.
	Shards int
	// Partitions of the distinct-state count (rounded up to a power of
	// two; default 1).
	Partitions int
	Dir        string
	Run        func(ctx context.Context, p *beam.Pipeline) error
	// TimeLimit, when positive, stops the swarm (verdict bounded) once it
	// has run that long.
	TimeLimit    time.Duration
	Clock        func() time.Time
	Progress     io.Writer
	ProgressJSON bool
}

// A Batch is what one batch's pipeline did.
type Batch struct {
	First, End int // walks First..End-1
	States     int64
	Elapsed    time.Duration
}

// An Outcome is the swarm's result in the explorer's terms.
type Outcome struct {
	Result  *explorer.Result
	Batches []Batch
}

// ShardStats are the counts of one shard's walks, in the explorer's
// terms: a shard runs its walks in order and stops after its first
// violating walk (Violating, -1 for none).
type ShardStats struct {
	Lo, Hi      int
	Violating   int
	Violation   *model.Violation `json:",omitempty"`
	Transitions int64
	Depth       int
	Executions  int64 // complete walks without a violation
	Cut         int64 // walks stopped at max-steps
	// Per metric, over the complete walks: minimum, maximum and sum of
	// the per-walk totals; and the total over every walk's transitions.
	Min, Max, Sum, Trans []int64 `json:",omitempty"`
}

// Summary is a batch's result: every shard's stats, and from the count
// tasks the new distinct states, by the walk that visited them first, and
// the rewritten runs.
type Summary struct {
	Shards    []ShardStats    `json:",omitempty"`
	NewStates map[int]int64   `json:",omitempty"`
	Runs      map[int]RunInfo `json:",omitempty"`
}

// newStates is the number of new states first visited by walk last or
// an earlier one.
func (s *Summary) newStates(last int) int64 {
	var n int64
	for w, c := range s.NewStates {
		if w <= last {
			n += c
		}
	}
	return n
}

// RunInfo is a partition's rewritten visited run.
type RunInfo struct {
	Path string
	store.RunStats
}

// firstViolating is the smallest violating walk of the batch, or -1.
func (s *Summary) firstViolating() int {
	first := -1
	for _, sh := range s.Shards {
		if sh.Violating >= 0 && (first < 0 || sh.Violating < first) {
			first = sh.Violating
		}
	}
	return first
}

func (s *Summary) encode() string { return jsoncombine.Encode(s) }

func decodeSummary(str string) (*Summary, error) {
	return jsoncombine.Decode[Summary](str, "batch summary")
}

// mergeSummaries is the global combiner (see merge).
func mergeSummaries(a, b string) (string, error) {
	return jsoncombine.Merge(a, b, "batch summary", (*Summary).merge)
}

// merge folds b into s: it concatenates shard lists (in index order, so
// the result does not depend on bundling) and adds the counts up.
func (s *Summary) merge(b *Summary) {
	s.Shards = append(s.Shards, b.Shards...)
	sort.Slice(s.Shards, func(i, j int) bool { return s.Shards[i].Lo < s.Shards[j].Lo })
	for w, n := range b.NewStates {
		if s.NewStates == nil {
			s.NewStates = map[int]int64{}
		}
		s.NewStates[w] += n
	}
	for p, r := range b.Runs {
		if s.Runs == nil {
			s.Runs = map[int]RunInfo{}
		}
		s.Runs[p] = r
	}
}

// shardsFn emits the batch's shard indices.
type shardsFn struct{ Shards int }

func (f *shardsFn) ProcessElement(_ context.Context, _ []byte, emit func(int)) error {
	for j := 0; j < f.Shards; j++ {
		emit(j)
	}
	return nil
}

// walkFn runs one shard's walks: indices First+j*Walks/Shards up to the
// next shard's first, in order, stopping after the first that violates.
// Stopping there keeps the answer: a smaller violating index is in this
// shard (already run) or in another one.
type walkFn struct {
	Target   target.Target
	Sampling Sampling
	First    int
	Walks    int
	Shards   int
	Bits     int
	Prefix   string

	m       model.Machine
	sampler *explorer.Sampler
	step    *explorer.Stepper
	nmetric int
	spill   map[int]*store.Writer
	id      string
}

func (f *walkFn) Setup() error {
	m, err := f.Target.Machine()
	if err != nil {
		return err
	}
	if f.sampler, err = explorer.NewSampler(m, f.Sampling.options()); err != nil {
		return err
	}
	f.m, f.step, f.nmetric = m, explorer.NewStepper(m), len(m.Properties().Metrics)
	return nil
}

func (f *walkFn) StartBundle(_ context.Context, _ func(int, string), _ func(string)) error {
	f.spill = map[int]*store.Writer{}
	var err error
	f.id, err = store.RandomName()
	return err
}

func (f *walkFn) ProcessElement(ctx context.Context, j int, _ func(int, string), emit func(string)) error {
	lo, hi := f.First+j*f.Walks/f.Shards, f.First+(j+1)*f.Walks/f.Shards
	st := ShardStats{Lo: lo, Hi: hi, Violating: -1}
	if f.nmetric > 0 {
		st.Min, st.Max, st.Sum, st.Trans = make([]int64, f.nmetric), make([]int64, f.nmetric), make([]int64, f.nmetric), make([]int64, f.nmetric)
	}
	for i := lo; i < hi; i++ {
		w := f.sampler.Walk(i)
		if err := f.visit(ctx, i, w.Schedule); err != nil {
			return fmt.Errorf("walk %d: %w", i, err)
		}
		st.Transitions += int64(len(w.Schedule))
		st.Depth = max(st.Depth, len(w.Schedule))
		for k, t := range w.Totals {
			st.Trans[k] += t
		}
		if w.Violation != nil {
			st.Violating, st.Violation = i, w.Violation
			break
		}
		if !w.Terminal {
			st.Cut++
			continue
		}
		for k, t := range w.Totals {
			if st.Executions == 0 || t < st.Min[k] {
				st.Min[k] = t
			}
			if st.Executions == 0 || t > st.Max[k] {
				st.Max[k] = t
			}
			st.Sum[k] += t
		}
		st.Executions++
	}
	emit((&Summary{Shards: []ShardStats{st}}).encode())
	return nil
}

// visit writes the fingerprints of the states walk i visits (the initial
// one and one per step, as the explorer counts them), replayed with the
// explorer's Stepper.
func (f *walkFn) visit(ctx context.Context, i int, sched []model.Choice) error {
	s := f.m.Init()
	if err := f.record(ctx, i, s); err != nil {
		return err
	}
	for _, c := range sched {
		next, _, ok := f.step.Step(s, c)
		if !ok {
			return fmt.Errorf("choice %v of the walk is not enabled on replay", c)
		}
		if err := f.record(ctx, i, next); err != nil {
			return err
		}
		s = next
	}
	return nil
}

func (f *walkFn) record(ctx context.Context, i int, s model.State) error {
	fp := explorer.Fingerprint(s.AppendKey(nil))
	p := store.PartOf(fp, f.Bits)
	w := f.spill[p]
	if w == nil {
		var err error
		if w, err = store.Create(ctx, fmt.Sprintf("%sspill-p%05d-%s.rec", f.Prefix, p, f.id)); err != nil {
			return err
		}
		f.spill[p] = w
	}
	var rec [16]byte
	binary.LittleEndian.PutUint64(rec[:], fp)
	binary.LittleEndian.PutUint64(rec[8:], uint64(i))
	return w.Write(rec[:])
}

func (f *walkFn) FinishBundle(_ context.Context, emitSpill func(int, string), _ func(string)) error {
	parts := make([]int, 0, len(f.spill))
	for p := range f.spill {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	for _, p := range parts {
		if err := f.spill[p].Close(); err != nil {
			return err
		}
		emitSpill(p, f.spill[p].Path())
	}
	return nil
}

// countFn counts a partition's distinct states new to its visited run,
// by the first walk that visited them, and rewrites the run with them.
type countFn struct {
	Bits     int
	Manifest string
	Prefix   string

	runs []string
}

func (f *countFn) Setup(ctx context.Context) error {
	return store.ReadJSON(ctx, f.Manifest, &f.runs)
}

func (f *countFn) ProcessElement(ctx context.Context, part int, files func(*string) bool, emit func(string)) error {
	if part < 0 || part >= len(f.runs) {
		return fmt.Errorf("partition %d of %d", part, len(f.runs))
	}
	var names []string
	var name string
	for files(&name) {
		names = append(names, name)
	}
	sort.Strings(names)
	type visit struct{ fp, walk uint64 }
	var vs []visit
	for _, n := range names {
		err := store.ReadRecords(ctx, n, func(rec []byte) error {
			if len(rec) != 16 {
				return fmt.Errorf("%s: a record of %d bytes, want 16", n, len(rec))
			}
			vs = append(vs, visit{binary.LittleEndian.Uint64(rec), binary.LittleEndian.Uint64(rec[8:])})
			return nil
		})
		if err != nil {
			return err
		}
	}
	// By fingerprint, then walk: the first of a fingerprint is its first
	// visit.
	slices.SortFunc(vs, func(a, b visit) int {
		switch {
		case a.fp != b.fp:
			return cmp.Compare(a.fp, b.fp)
		}
		return cmp.Compare(a.walk, b.walk)
	})
	merge, err := store.MergeRun(ctx, f.runs[part], f.Prefix, part, f.Bits)
	if err != nil {
		return err
	}
	defer merge.Close()
	out := Summary{NewStates: map[int]int64{}}
	for i, v := range vs {
		if i > 0 && vs[i-1].fp == v.fp {
			continue
		}
		isNew, err := merge.Add(v.fp)
		if err != nil {
			return err
		}
		if isNew {
			out.NewStates[int(v.walk)]++
		}
	}
	stats, err := merge.Finish()
	if err != nil {
		return err
	}
	out.Runs = map[int]RunInfo{part: {Path: merge.Path, RunStats: stats}}
	emit(out.encode())
	return nil
}

type writeSummaryFn struct{ Path string }

func (f *writeSummaryFn) ProcessElement(ctx context.Context, sum string) error {
	return store.WriteFile(ctx, f.Path, []byte(sum))
}

// batchConfig is what one batch's pipeline needs.
type batchConfig struct {
	target   target.Target
	sampling Sampling
	first    int
	walks    int
	shards   int
	bits     int
	manifest string
	prefix   string
	runs     string
	summary  string
}

func batchPipeline(c *batchConfig) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	shards := beam.Reshuffle(s, beam.ParDo(s, &shardsFn{Shards: c.shards}, beam.Impulse(s)))
	spills, walked := beam.ParDo2(s, &walkFn{
		Target: c.target, Sampling: c.sampling, First: c.first, Walks: c.walks, Shards: c.shards,
		Bits: c.bits, Prefix: c.prefix,
	}, shards)
	counted := beam.ParDo(s, &countFn{Bits: c.bits, Manifest: c.manifest, Prefix: c.runs}, beam.GroupByKey(s, spills))
	total := beam.Combine(s, mergeSummaries, beam.Flatten(s, walked, counted))
	beam.ParDo0(s, &writeSummaryFn{Path: c.summary}, total)
	return p
}
