package explorer_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/protocols"
)

// benchCases are the first correct variant of each protocol at its default
// size: large enough to take a good fraction of a second per exploration.
func benchCases(b *testing.B) []benchCase {
	var out []benchCase
	for _, p := range protocols.All() {
		for _, v := range p.Variants {
			if v.Expect != model.ExpectOK {
				continue
			}
			m, _, err := p.Instantiate(v.Name, nil)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, benchCase{p.Name + "/" + v.Name, m})
			break
		}
	}
	return out
}

type benchCase struct {
	name string
	m    model.Machine
}

// BenchmarkBFS explores each protocol's first correct variant; it reports
// states/s and the explorer's bytes per stored state.
func BenchmarkBFS(b *testing.B) {
	for _, c := range benchCases(b) {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", c.name, workers), func(b *testing.B) {
				benchExplore(b, c.m, explorer.Options{Workers: workers})
			})
		}
	}
}

// BenchmarkReductions compares fingerprints and dfs with bfs.
func BenchmarkReductions(b *testing.B) {
	for _, c := range benchCases(b) {
		for _, o := range []struct {
			name string
			opts explorer.Options
		}{
			{"bfs-fingerprint", explorer.Options{Fingerprint: true}},
			{"dfs", explorer.Options{Strategy: explorer.DFS}},
		} {
			b.Run(c.name+"/"+o.name, func(b *testing.B) { benchExplore(b, c.m, o.opts) })
		}
	}
}

func benchExplore(b *testing.B, m model.Machine, opts explorer.Options) {
	var r *explorer.Result
	for i := 0; i < b.N; i++ {
		var err error
		if r, err = explorer.Explore(m, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(r.Stats.States)*float64(b.N)/b.Elapsed().Seconds(), "states/s")
	b.ReportMetric(r.Stats.BytesPerState, "bytes/state")
	b.ReportMetric(float64(r.Stats.States), "states")
}

// TestBenchTable prints Bench's table for every protocol's correct
// variants at their default size, when PROTOCHECK_BENCH=1 is set:
//
//	PROTOCHECK_BENCH=1 go test -run TestBenchTable -v ./explorer/
func TestBenchTable(t *testing.T) {
	if os.Getenv("PROTOCHECK_BENCH") == "" {
		t.Skip("set PROTOCHECK_BENCH=1 to print the benchmark table")
	}
	for _, p := range protocols.All() {
		for _, v := range p.Variants {
			if v.Expect != model.ExpectOK {
				continue
			}
			m, params, err := p.Instantiate(v.Name, nil)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := explorer.Bench(m, explorer.BenchConfigs(m), time.Now)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s/%s %s\n%s", p.Name, v.Name, params, explorer.FormatBench(rows))
		}
	}
}

func TestBenchRowsAreConsistent(t *testing.T) {
	m := counterRace(3)
	rows, err := explorer.Bench(m, explorer.BenchConfigs(m), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Verdict != explorer.Violation {
			t.Errorf("%s: %s", r.Config, r.Verdict)
		}
	}
	if !strings.Contains(explorer.FormatBench(rows), "bfs workers=2") {
		t.Error("table lacks a row")
	}
}
