package bfs

import (
	"bytes"

	"github.com/protocheck/protocheck/cluster/internal/jsoncombine"
	"github.com/protocheck/protocheck/cluster/store"
	"github.com/protocheck/protocheck/model"
)

// A Found is a state that ends the search: a violating transition (Path
// is the successor's position, Counts the transition's metric counts) or
// a deadlocked state (Path is its position).
type Found struct {
	Path      []byte
	Violation *model.Violation
	Counts    []int64 `json:",omitempty"`
}

// minFound keeps the one found first in bfs order: the smaller position.
func minFound(a, b *Found) *Found {
	if a == nil {
		return b
	}
	if b == nil || bytes.Compare(a.Path, b.Path) <= 0 {
		return a
	}
	return b
}

// RunInfo is a partition's visited run after a level.
type RunInfo struct {
	Path string
	store.RunStats
}

// A Summary is what a level reports. Every bundle of the expansion and
// every partition's merge emits a partial one (from FinishBundle, so that
// it is committed or dropped together with the files it names), and a
// global combine adds them up into one small element, written as the
// level's summary file: the level's commit point. The driver reads only
// the files a summary names, so files of failed attempts are never used.
type Summary struct {
	// From the expansion.
	Expanded   int64  // states expanded
	Successors int64  // transitions generated, violating ones included
	Violation  *Found `json:",omitempty"`
	Deadlock   *Found `json:",omitempty"`
	Candidates int64  // transitions written to spill files
	SpillBytes int64

	// From the merges (or, for a level cut by a violation, the counts
	// before the cutoff).
	Transitions int64
	NewStates   int64
	Metrics     []int64 `json:",omitempty"`
	// Frontier maps a partition to its file of new states, Runs to its
	// rewritten visited run (absent: unchanged), Spills to the spill
	// files its merge read.
	Frontier map[int]string   `json:",omitempty"`
	Runs     map[int]RunInfo  `json:",omitempty"`
	Spills   map[int][]string `json:",omitempty"`
}

func addCounts(a, b []int64) []int64 {
	if len(a) < len(b) {
		a = append(a, make([]int64, len(b)-len(a))...)
	}
	for i, v := range b {
		a[i] += v
	}
	return a
}

func (s *Summary) merge(o *Summary) {
	s.Expanded += o.Expanded
	s.Successors += o.Successors
	s.Violation = minFound(s.Violation, o.Violation)
	s.Deadlock = minFound(s.Deadlock, o.Deadlock)
	s.Candidates += o.Candidates
	s.SpillBytes += o.SpillBytes
	s.Transitions += o.Transitions
	s.NewStates += o.NewStates
	s.Metrics = addCounts(s.Metrics, o.Metrics)
	for p, f := range o.Frontier {
		if s.Frontier == nil {
			s.Frontier = map[int]string{}
		}
		s.Frontier[p] = f
	}
	for p, r := range o.Runs {
		if s.Runs == nil {
			s.Runs = map[int]RunInfo{}
		}
		s.Runs[p] = r
	}
	for p, names := range o.Spills {
		if s.Spills == nil {
			s.Spills = map[int][]string{}
		}
		s.Spills[p] = names
	}
}

func (s *Summary) encode() string { return jsoncombine.Encode(s) }

func decodeSummary(str string) (*Summary, error) {
	return jsoncombine.Decode[Summary](str, "level summary")
}

// mergeSummaries is the global combiner of partial summaries. Merging is
// associative and commutative (sums, minima by position, unions of maps
// keyed by partition), so the result does not depend on bundling.
func mergeSummaries(a, b string) (string, error) {
	return jsoncombine.Merge(a, b, "level summary", (*Summary).merge)
}

// cutoff is where the local bfs stops in a level whose expansion found a
// violation or a deadlock, as a position of the next level: transitions
// (and the new states they discover) at positions below it were merged
// before the stop. A deadlocked state D ends the search when the merge
// reaches it, so every transition of a state before D counts: the cutoff
// is D's position followed by rank 0 (D has no successors). A violating
// transition V stops the merge right after V, which itself counts
// (inclusive). When both exist the earlier one cuts; the verdict is the
// deadlock's all the same (the local bfs checks for a deadlock before it
// skips the states after a violation).
func (s *Summary) cutoff() (path []byte, inclusive, ok bool) {
	var d []byte
	if s.Deadlock != nil {
		d = append(append([]byte(nil), s.Deadlock.Path...), make([]byte, rankBytes)...)
	}
	switch {
	case s.Violation != nil && (d == nil || bytes.Compare(s.Violation.Path, d) < 0):
		return s.Violation.Path, true, true
	case d != nil:
		return d, false, true
	}
	return nil, false, false
}
