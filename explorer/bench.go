package explorer

import (
	"fmt"
	"time"

	"github.com/protocheck/protocheck/model"
)

// A BenchConfig is one way to explore, for Bench.
type BenchConfig struct {
	Name    string // "bfs", "bfs workers=2", "bfs fingerprint", "dfs", ...
	Options Options
}

// BenchConfigs returns the configurations Bench compares by default: bfs
// with 1 and 2 workers, bfs with fingerprints (1 and 2 workers), dfs (with
// sleep sets when the machine allows them), dfs without reduction, and,
// when the machine implements model.Symmetric, bfs with symmetry.
func BenchConfigs(m model.Machine) []BenchConfig {
	cs := []BenchConfig{
		{"bfs", Options{Strategy: BFS}},
		{"bfs workers=2", Options{Strategy: BFS, Workers: 2}},
		{"bfs fingerprint", Options{Strategy: BFS, Fingerprint: true}},
		{"bfs fingerprint workers=2", Options{Strategy: BFS, Fingerprint: true, Workers: 2}},
		{"dfs", Options{Strategy: DFS}},
		{"dfs no-reduction", Options{Strategy: DFS, NoReduction: true}},
	}
	if _, ok := m.(model.Symmetric); ok {
		cs = append(cs, BenchConfig{"bfs symmetry", Options{Strategy: BFS, Symmetry: true}})
	}
	return cs
}

// A BenchRow is the measurement of one exploration.
type BenchRow struct {
	Config            string  `json:"config"`
	Verdict           Verdict `json:"verdict"`
	States            int64   `json:"states"`
	Transitions       int64   `json:"transitions"`
	Seconds           float64 `json:"seconds"`
	StatesPerSec      float64 `json:"states_per_second"`
	TransitionsPerSec float64 `json:"transitions_per_second"`
	// BytesPerState is the peak memory of the process over the states
	// (Stats.BytesPerState); StoreBytesPerState the search structures'
	// own share (Stats.StoreBytesPerState).
	BytesPerState      float64 `json:"bytes_per_state"`
	StoreBytesPerState float64 `json:"store_bytes_per_state"`
	PeakMemory         int64   `json:"peak_memory"`
	// FingerprintCollision is Stats.FingerprintCollision (fingerprint
	// configurations only).
	FingerprintCollision float64 `json:"fingerprint_collision,omitempty"`
}

// Bench explores m once per configuration, timing each run with clock
// (time.Now in the CLI; the explorer never reads a clock on its own), and
// returns one row per configuration in order. Counts and bytes per state
// are deterministic; seconds and states/s are not.
func Bench(m model.Machine, configs []BenchConfig, clock func() time.Time) ([]BenchRow, error) {
	var rows []BenchRow
	for _, c := range configs {
		opts := c.Options
		opts.Clock = clock
		r, err := Explore(m, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		row := BenchRow{
			Config: c.Name, Verdict: r.Verdict,
			States: r.Stats.States, Transitions: r.Stats.Transitions,
			Seconds: r.Stats.Elapsed.Seconds(), StatesPerSec: r.Stats.StatesPerSec,
			BytesPerState: r.Stats.BytesPerState, StoreBytesPerState: r.Stats.StoreBytesPerState,
			PeakMemory: r.Stats.PeakMemory, FingerprintCollision: r.Stats.FingerprintCollision,
		}
		if row.Seconds > 0 {
			row.TransitionsPerSec = float64(row.Transitions) / row.Seconds
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// FormatBench renders rows as an aligned text table with a header.
func FormatBench(rows []BenchRow) string {
	s := fmt.Sprintf("%-26s %-9s %10s %12s %8s %10s %13s %11s %11s\n", "config", "verdict", "states", "transitions", "seconds", "states/s", "transitions/s", "bytes/state", "store/state")
	for _, r := range rows {
		s += fmt.Sprintf("%-26s %-9s %10d %12d %8.2f %10.0f %13.0f %11.1f %11.1f\n", r.Config, r.Verdict, r.States, r.Transitions, r.Seconds, r.StatesPerSec, r.TransitionsPerSec, r.BytesPerState, r.StoreBytesPerState)
	}
	return s
}
