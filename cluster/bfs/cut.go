package bfs

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/protocheck/protocheck/cluster/store"
)

// The local bfs stops in the middle of the level whose expansion finds a
// violation or a deadlock, and reports the states and transitions it
// merged until then (see Summary.cutoff). The level's pipeline has then
// expanded and merged the whole level; this second pipeline counts, per
// partition, what came before the cutoff, from the same spill files and
// the runs from before the level:
//
//	Impulse → the partitions that have spill files → Reshuffle
//	  → cut: the candidates at positions below the cutoff are the
//	    transitions merged; a fingerprint among them that the old run
//	    lacks is a state discovered (its first discovery is below the
//	    cutoff exactly when one of its discoveries is)
//	  → summaries → Combine → the cut's summary file
//
// The cutoff is known before this pipeline is built, so it is a field of
// the DoFn, not a side input (Prism 2.77 sometimes ran a stage before its
// singleton side input was ready).

func init() {
	register.DoFn3x1[context.Context, []byte, func(int), error](&cutPartsFn{})
	register.DoFn3x1[context.Context, int, func(string), error](&cutFn{})
	register.Emitter1[int]()
}

// A cutManifest is the cut pipeline's input.
type cutManifest struct {
	Runs   []string         // per partition, the visited run before the level
	Spills map[int][]string // per partition, the level's spill files
}

func readCutManifest(ctx context.Context, path string) (*cutManifest, error) {
	var m cutManifest
	return &m, store.ReadJSON(ctx, path, &m)
}

type cutPartsFn struct{ Manifest string }

func (f *cutPartsFn) ProcessElement(ctx context.Context, _ []byte, emit func(int)) error {
	m, err := readCutManifest(ctx, f.Manifest)
	if err != nil {
		return err
	}
	parts := make([]int, 0, len(m.Spills))
	for p := range m.Spills {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	for _, p := range parts {
		emit(p)
	}
	return nil
}

type cutFn struct {
	Manifest string
	Level    int // positions of candidates have Level ranks
	Bits     int
	Metrics  int
	Cut      []byte

	m *cutManifest
}

func (f *cutFn) Setup(ctx context.Context) error {
	var err error
	f.m, err = readCutManifest(ctx, f.Manifest)
	return err
}

func (f *cutFn) ProcessElement(ctx context.Context, part int, emit func(string)) error {
	if part < 0 || part >= len(f.m.Runs) {
		return fmt.Errorf("partition %d of %d", part, len(f.m.Runs))
	}
	cut := string(f.Cut)
	cands, err := loadCandidates(ctx, f.m.Spills[part], part, f.Bits, f.Level, f.Metrics,
		func(c *candidate) bool { return string(c.path) < cut })
	if err != nil {
		return err
	}
	sum := Summary{Metrics: make([]int64, f.Metrics)}
	lo, hi := store.PartRange(part, f.Bits)
	old, err := store.OpenRun(ctx, f.m.Runs[part], lo, hi)
	if err != nil {
		return err
	}
	defer old.Close()
	for i := range cands {
		c := &cands[i]
		sum.Transitions++
		sum.Metrics = addCounts(sum.Metrics, c.counts)
		if i > 0 && cands[i-1].fp == c.fp {
			continue
		}
		for old.OK && old.Cur < c.fp {
			if err := old.Next(); err != nil {
				return err
			}
		}
		if !old.OK || old.Cur != c.fp {
			sum.NewStates++
		}
	}
	emit(sum.encode())
	return nil
}

// cutPipeline counts a level's transitions and new states before cut.
func cutPipeline(manifest, summary string, level, bits, metrics int, cut []byte) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	parts := beam.Reshuffle(s, beam.ParDo(s, &cutPartsFn{Manifest: manifest}, beam.Impulse(s)))
	sums := beam.ParDo(s, &cutFn{Manifest: manifest, Level: level, Bits: bits, Metrics: metrics, Cut: cut}, parts)
	beam.ParDo0(s, &writeSummaryFn{Path: summary}, beam.Combine(s, mergeSummaries, sums))
	return p
}
