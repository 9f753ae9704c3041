package bfs

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/protocheck/protocheck/cluster/store"
	"github.com/protocheck/protocheck/cluster/target"
	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// One level of the search is one pipeline:
//
//	Impulse → list the level's frontier files → Reshuffle
//	  → expand: every state of a file, by the explorer's own Expander;
//	    each successor is appended to this bundle's spill file of its
//	    fingerprint's partition; FinishBundle emits (partition, spill
//	    file) pairs and a partial summary (the first violation and
//	    deadlock in bfs order among the bundle's states)
//	  → GroupByKey(partition)      groups of spill file NAMES, never states
//	  → merge: one task per partition sorts its candidates by
//	    (fingerprint, position), keeps the first of each fingerprint,
//	    merge-joins them with the partition's sorted visited run, and
//	    writes the new run and the next level's frontier file
//	  → summaries → Combine → the level's summary file
//
// A level whose expansion found a violation or a deadlock has a second,
// small pipeline (cut.go) that counts what the local bfs counted before
// it stopped.
//
// No state and no fingerprint goes through the runner's shuffle: the
// only GroupByKey carries file names, one per expansion bundle at most,
// so a group stays small however large the level (the Go SDK holds a
// group's values in memory, apache/beam#21817), elements stay far below
// gRPC message limits (apache/beam#29147), and there is no CoGroupByKey
// (apache/beam#31981). Deduplication is a sort in the merge task, with
// memory bounded by one partition's candidates in one level; the visited
// set is streamed from its files, never held.

func init() {
	register.DoFn3x1[context.Context, []byte, func(string), error](&listFn{})
	register.DoFn3x1[context.Context, []byte, func(int, string), error](&allPartsFn{})
	register.DoFn4x1[context.Context, string, func(int, string), func(string), error](&expandFn{})
	register.DoFn4x1[context.Context, int, func(*string) bool, func(string), error](&mergeFn{})
	register.DoFn2x1[context.Context, string, error](&writeSummaryFn{})
	register.Function2x2[string, string, string, error](mergeSummaries)
	register.Emitter1[string]()
	register.Emitter2[int, string]()
	register.Iter1[string]()
}

// A manifest is what the driver hands a level's pipeline in a file, so
// that the pipeline itself stays the same small size at any scale.
type manifest struct {
	Frontier []string // the level's frontier files
	Runs     []string // per partition, its visited run ("": empty)
}

func readManifest(ctx context.Context, path string) (*manifest, error) {
	var m manifest
	return &m, store.ReadJSON(ctx, path, &m)
}

// listFn emits the level's frontier files.
type listFn struct{ Manifest string }

func (f *listFn) ProcessElement(ctx context.Context, _ []byte, emit func(string)) error {
	m, err := readManifest(ctx, f.Manifest)
	if err != nil {
		return err
	}
	for _, p := range m.Frontier {
		emit(p)
	}
	return nil
}

// allPartsFn emits an empty spill list for every partition, so that each
// gets a merge task and rewrites its run: after the partitions were
// split, every run then holds exactly its own range again.
type allPartsFn struct{ Parts int }

func (f *allPartsFn) ProcessElement(_ context.Context, _ []byte, emit func(int, string)) error {
	for p := 0; p < f.Parts; p++ {
		emit(p, "")
	}
	return nil
}

// expandFn expands every state of a frontier file with the explorer's
// Expander: the successors, their order, keys, fingerprints and
// violations are exactly the local bfs's.
type expandFn struct {
	Target   target.Target
	Symmetry bool
	// Level is the depth of the states expanded (their positions have
	// Level ranks); Bits says how many partitions (1<<Bits) candidates go
	// to; Prefix is where spill files go.
	Level  int
	Bits   int
	Prefix string
	// Metrics: carry each transition's metric counts, from the explorer's
	// Stepper (the Expander does not report them).
	Metrics bool

	exp     *explorer.Expander
	step    *explorer.Stepper
	parent  model.State
	sum     Summary
	spill   map[int]*store.Writer
	id      string
	buf     []byte
	path    []byte
	counts  []int64
	nmetric int
}

func (f *expandFn) Setup() error {
	m, err := f.Target.Machine()
	if err != nil {
		return err
	}
	if f.exp, err = explorer.NewExpander(m, f.Symmetry); err != nil {
		return err
	}
	f.nmetric = len(m.Properties().Metrics)
	if f.Metrics && f.nmetric > 0 {
		f.step = explorer.NewStepper(m)
		f.parent = m.Init()
	}
	return nil
}

func (f *expandFn) StartBundle(_ context.Context, _ func(int, string), _ func(string)) error {
	f.sum = Summary{}
	f.spill = map[int]*store.Writer{}
	var err error
	f.id, err = store.RandomName()
	return err
}

func (f *expandFn) ProcessElement(ctx context.Context, file string, _ func(int, string), _ func(string)) error {
	return store.ReadRecords(ctx, file, func(rec []byte) error {
		_, path, state, err := decodeFrontier(rec, f.Level)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		return f.expand(ctx, path, state)
	})
}

func (f *expandFn) expand(ctx context.Context, path, state []byte) error {
	f.sum.Expanded++
	succs, deadlock := f.exp.Expand(state)
	if len(succs) == 0 {
		if deadlock != nil {
			f.sum.Deadlock = minFound(f.sum.Deadlock, &Found{Path: slices.Clone(path), Violation: deadlock})
		}
		return nil
	}
	if f.step != nil {
		if err := f.parent.Decode(state); err != nil {
			return fmt.Errorf("decoding a frontier state: %w", err)
		}
	}
	for k := range succs {
		s := &succs[k]
		f.sum.Successors++
		var err error
		if f.path, err = appendRank(append(f.path[:0], path...), k); err != nil {
			return err
		}
		f.counts = f.counts[:0]
		if f.step != nil {
			_, v, ok := f.step.Step(f.parent, s.Choice)
			if !ok || (v == nil) != (s.Violation == nil) {
				return fmt.Errorf("the Stepper and the Expander disagree on choice %v (a machine that is not deterministic?)", s.Choice)
			}
			f.counts = append(f.counts, f.step.Exec().Counts()...)
		}
		if s.Violation != nil {
			// The Expander stops after the first violating successor, as
			// bfs does; this transition is counted, its state is not
			// added.
			f.sum.Violation = minFound(f.sum.Violation, &Found{Path: slices.Clone(f.path), Violation: s.Violation, Counts: slices.Clone(f.counts)})
			break
		}
		p := store.PartOf(s.Hash, f.Bits)
		w := f.spill[p]
		if w == nil {
			if w, err = store.Create(ctx, fmt.Sprintf("%sspill-p%05d-%s.rec", f.Prefix, p, f.id)); err != nil {
				return err
			}
			f.spill[p] = w
		}
		f.buf = appendCandidate(f.buf[:0], s.Hash, f.path, f.counts, s.State)
		if err := w.Write(f.buf); err != nil {
			return err
		}
	}
	return nil
}

func (f *expandFn) FinishBundle(_ context.Context, emitSpill func(int, string), emitSum func(string)) error {
	parts := make([]int, 0, len(f.spill))
	for p := range f.spill {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	for _, p := range parts {
		w := f.spill[p]
		if err := w.Close(); err != nil {
			return err
		}
		f.sum.Candidates += w.Count()
		f.sum.SpillBytes += w.Size()
		emitSpill(p, w.Path())
	}
	emitSum(f.sum.encode())
	return nil
}

// mergeFn turns one partition's candidates into new states: sort by
// (fingerprint, position), keep the first of each fingerprint (its
// canonical discovery), drop those in the visited run, and write the new
// run, the next level's frontier file and the partition's summary.
type mergeFn struct {
	// Level is the depth of the candidates' states (their positions have
	// Level ranks).
	Level    int
	Bits     int
	Metrics  int // metric counts per candidate record
	Manifest string
	// Prefix is where the next level's frontier files go, RunPrefix where
	// runs go.
	Prefix    string
	RunPrefix string
	// Rewrite: write the run even without new states (after a split).
	Rewrite bool

	runs []string
}

func (f *mergeFn) Setup(ctx context.Context) error {
	m, err := readManifest(ctx, f.Manifest)
	if err != nil {
		return err
	}
	if len(m.Runs) != 1<<f.Bits {
		return fmt.Errorf("the manifest lists %d runs for %d partitions", len(m.Runs), 1<<f.Bits)
	}
	f.runs = m.Runs
	return nil
}

func (f *mergeFn) ProcessElement(ctx context.Context, part int, files func(*string) bool, emit func(string)) error {
	if part < 0 || part >= len(f.runs) {
		return fmt.Errorf("partition %d of %d", part, len(f.runs))
	}
	var names []string
	var name string
	for files(&name) {
		if name != "" {
			names = append(names, name)
		}
	}
	sort.Strings(names) // the order is irrelevant to the result; keep it fixed anyway
	cands, err := loadCandidates(ctx, names, part, f.Bits, f.Level, f.Metrics, nil)
	if err != nil {
		return err
	}
	sum := Summary{Metrics: make([]int64, f.Metrics)}
	if len(names) > 0 {
		sum.Spills = map[int][]string{part: names}
	}
	merge, err := store.MergeRun(ctx, f.runs[part], f.RunPrefix, part, f.Bits)
	if err != nil {
		return err
	}
	defer merge.Close()
	var front *store.Writer
	var buf []byte
	for i := range cands {
		c := &cands[i]
		sum.Transitions++
		sum.Metrics = addCounts(sum.Metrics, c.counts)
		if i > 0 && cands[i-1].fp == c.fp {
			continue // a later discovery of the same state
		}
		isNew, err := merge.Add(c.fp)
		if err != nil {
			return err
		}
		if !isNew {
			continue
		}
		if front == nil {
			if front, err = store.Create(ctx, fmt.Sprintf("%sfront-p%05d-%s.rec", f.Prefix, part, merge.ID)); err != nil {
				return err
			}
		}
		buf = appendFrontier(buf[:0], c.fp, c.path, c.state)
		if err := front.Write(buf); err != nil {
			return err
		}
		sum.NewStates++
	}
	stats, err := merge.Finish()
	if err != nil {
		return err
	}
	if front != nil {
		if err := front.Close(); err != nil {
			return err
		}
		sum.Frontier = map[int]string{part: front.Path()}
	}
	if front != nil || f.Rewrite {
		sum.Runs = map[int]RunInfo{part: {Path: merge.Path, RunStats: stats}}
	} else if err := store.Remove(ctx, merge.Path); err != nil {
		return err
	}
	emit(sum.encode())
	return nil
}

// loadCandidates reads a partition's candidates from its spill files,
// those keep accepts (all with nil), sorted by (fingerprint, position).
func loadCandidates(ctx context.Context, names []string, part, bits, level, metrics int, keep func(*candidate) bool) ([]candidate, error) {
	var cands []candidate
	for _, n := range names {
		err := store.ReadRecords(ctx, n, func(rec []byte) error {
			c, err := decodeCandidate(rec, level, metrics, make([]int64, 0, metrics))
			if err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
			if store.PartOf(c.fp, bits) != part {
				return fmt.Errorf("%s: fingerprint %016x is not in partition %d", n, c.fp, part)
			}
			if keep == nil || keep(&c) {
				cands = append(cands, c)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int { return less(&a, &b) })
	return cands, nil
}

// writeSummaryFn writes the level's combined summary: the commit point.
type writeSummaryFn struct{ Path string }

func (f *writeSummaryFn) ProcessElement(ctx context.Context, sum string) error {
	return store.WriteFile(ctx, f.Path, []byte(sum))
}

// levelPipeline builds the pipeline of one level.
func levelPipeline(c *levelConfig) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	files := beam.Reshuffle(s, beam.ParDo(s, &listFn{Manifest: c.manifest}, beam.Impulse(s)))
	spills, partial := beam.ParDo2(s, &expandFn{
		Target: c.target, Symmetry: c.symmetry, Level: c.level, Bits: c.bits,
		Prefix: c.prefix, Metrics: c.metrics > 0,
	}, files)
	if c.rewrite {
		spills = beam.Flatten(s, spills, beam.ParDo(s, &allPartsFn{Parts: 1 << c.bits}, beam.Impulse(s)))
	}
	merged := beam.ParDo(s, &mergeFn{
		Level: c.level + 1, Bits: c.bits, Metrics: c.metrics, Manifest: c.manifest,
		Prefix: c.nextPrefix, RunPrefix: c.runPrefix, Rewrite: c.rewrite,
	}, beam.GroupByKey(s, spills))
	total := beam.Combine(s, mergeSummaries, beam.Flatten(s, partial, merged))
	beam.ParDo0(s, &writeSummaryFn{Path: c.summary}, total)
	return p
}

// levelConfig is what one level's pipeline needs.
type levelConfig struct {
	target     target.Target
	symmetry   bool
	level      int
	bits       int
	metrics    int
	rewrite    bool
	manifest   string
	prefix     string // this level's files
	nextPrefix string // the next level's frontier files
	runPrefix  string
	summary    string
}
