package explorer_test

import (
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	racebuild "github.com/protocheck/protocheck/internal/race"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/protocols"
)

// variantCase is one protocol variant at given parameters.
type variantCase struct {
	name string
	m    model.Machine
}

// allVariants instantiates every variant of every protocol, with params
// chosen by size (nil: defaults), but for those the variant fixes.
func allVariants(t *testing.T, size func(p *model.Protocol) model.Params) []variantCase {
	var out []variantCase
	for _, p := range protocols.All() {
		for _, v := range p.Variants {
			given := model.Params{}
			for k, x := range size(p) {
				if _, fixed := v.Fixed[k]; !fixed {
					given[k] = x
				}
			}
			m, params, err := p.Instantiate(v.Name, given)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, variantCase{fmt.Sprintf("%s/%s %s", p.Name, v.Name, params), m})
		}
	}
	return out
}

// smallest gives every parameter its minimum.
func smallest(p *model.Protocol) model.Params {
	out := model.Params{}
	for _, q := range p.Params {
		out[q.Name] = q.Min
	}
	return out
}

func defaults(*model.Protocol) model.Params { return nil }

// moderate is the default size, except where a protocol's default holds
// more than a million states for some variant: there one parameter is
// lowered, so that the determinism test explores every variant at well
// under half a million states each (cputlb without tcg_commit's thread,
// batchunmap with one reclaimer, e500mc with one guest operation).
func moderate(p *model.Protocol) model.Params {
	switch p.Name {
	case "cputlb":
		return model.Params{"commit": 0}
	case "batchunmap":
		return model.Params{"reclaimers": 1}
	case "e500mc":
		return model.Params{"ops": 1}
	}
	return nil
}

// comparable strips what may differ between runs of the same search: the
// timing and the process's memory.
func comparable(r *explorer.Result) explorer.Result {
	c := *r
	c.Stats.Elapsed, c.Stats.StatesPerSec = 0, 0
	c.Stats.PeakMemory, c.Stats.BytesPerState = 0, 0
	return c
}

// Any number of bfs workers gives the identical Result: verdict, counts,
// counterexample, labels, metrics and memory per state.
func TestWorkersGiveIdenticalResults(t *testing.T) {
	// Under -short and under the race detector (which slows the search
	// tenfold) the smallest sizes; the default sizes, lowered where they
	// exceed a million states, otherwise.
	size := moderate
	if testing.Short() || racebuild.Enabled {
		size = smallest
	}
	for _, c := range allVariants(t, size) {
		one, err := explorer.Explore(c.m, explorer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{2, 4} {
			r, err := explorer.Explore(c.m, explorer.Options{Workers: w})
			if err != nil {
				t.Fatal(err)
			}
			if a, b := comparable(one), comparable(r); !reflect.DeepEqual(a, b) {
				t.Errorf("%s: workers=%d differs from workers=1:\n%+v\n%+v", c.name, w, b, a)
			}
		}
		// Fingerprints with the levels in memory or spilled to files, on
		// one worker or two: the same result, but for the memory held.
		fp, err := explorer.Explore(c.m, explorer.Options{Fingerprint: true})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for _, w := range []int{1, 2} {
			r, err := explorer.Explore(c.m, explorer.Options{Fingerprint: true, SpillDir: dir, Workers: w})
			if err != nil {
				t.Fatal(err)
			}
			// Spilled, the parents and the progress check's graph are
			// on disk during the search: the structures' memory differs.
			a, b := comparable(fp), comparable(r)
			a.Stats.StoreBytesPerState, b.Stats.StoreBytesPerState = 0, 0
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: spilled levels with workers=%d differ:\n%+v\n%+v", c.name, w, b, a)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("%s: %d level files left in the spill directory", c.name, len(left))
			}
		}
	}
}

// progress reports whether v violates one of m's progress properties.
func progress(m model.Machine, v *model.Violation) bool {
	if v == nil {
		return false
	}
	for _, p := range m.Properties().Progress {
		if p.Name == v.Property {
			return true
		}
	}
	return false
}

// Every variant at its smallest size (and, with PROTOCHECK_AUDIT=1 in the
// environment, at its default size) gets the same verdict from every
// exhaustive configuration, and the same number of states where the whole
// space is explored: sleep sets prune transitions, never states.
func TestReductionsAgreeOnEveryVariant(t *testing.T) {
	configs := []struct {
		name string
		opts explorer.Options
	}{
		{"bfs workers=2", explorer.Options{Workers: 2}},
		{"bfs fingerprint", explorer.Options{Fingerprint: true}},
		{"dfs", explorer.Options{Strategy: explorer.DFS}},
		{"dfs no-reduction", explorer.Options{Strategy: explorer.DFS, NoReduction: true}},
		{"dfs fingerprint", explorer.Options{Strategy: explorer.DFS, Fingerprint: true}},
	}
	sizes := []func(*model.Protocol) model.Params{smallest}
	if os.Getenv("PROTOCHECK_AUDIT") != "" {
		sizes = append(sizes, defaults) // about a minute more
	}
	for _, size := range sizes {
		for _, c := range allVariants(t, size) {
			base, err := explorer.Explore(c.m, explorer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, cfg := range configs {
				r, err := explorer.Explore(c.m, cfg.opts)
				if err != nil {
					t.Fatalf("%s %s: %v", c.name, cfg.name, err)
				}
				if (base.Verdict == explorer.OK || progress(c.m, base.Violation)) && len(r.Unchecked) > 0 {
					// dfs keeps no graph, so it checks no progress
					// property: where bfs proves one or finds it
					// violated, dfs must say it did not check it
					// (partial, never ok), and agree on the states.
					if r.Verdict != explorer.Partial || r.Stats.States != base.Stats.States {
						t.Errorf("%s: %s says %s with progress unchecked, bfs says %s", c.name, cfg.name, r, base)
					}
					continue
				}
				if r.Verdict != base.Verdict {
					t.Errorf("%s: %s says %s, bfs says %s", c.name, cfg.name, r, base)
					continue
				}
				if r.Verdict == explorer.OK && r.Stats.States != base.Stats.States {
					t.Errorf("%s: %s reaches %d states, bfs %d", c.name, cfg.name, r.Stats.States, base.Stats.States)
				}
				switch {
				case r.Verdict != explorer.Violation:
				case progress(c.m, r.Violation):
					if _, err := explorer.CheckLasso(c.m, r.Schedule, r.Cycle, r.Violation.Property, explorer.FairnessWeak); err != nil {
						t.Errorf("%s: %s lasso does not check: %v", c.name, cfg.name, err)
					}
				default:
					ex, err := explorer.Execute(c.m, r.Schedule)
					if err != nil || ex.Violation == nil || ex.Violation.Property != r.Violation.Property {
						t.Errorf("%s: %s counterexample does not replay: %v", c.name, cfg.name, err)
					}
				}
			}
		}
	}
}
