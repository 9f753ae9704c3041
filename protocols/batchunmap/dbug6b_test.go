package batchunmap

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// witness wraps a machine with one more invariant, which fails in the
// states a test wants to show reachable: bfs then returns the shortest
// schedule into one.
type witness struct {
	model.Machine
	props model.Properties
}

func (w *witness) Properties() model.Properties { return w.props }

func withWitness(t *testing.T, m model.Machine, name string, check func(*state) string) model.Machine {
	t.Helper()
	props := m.Properties()
	props.Invariants = append(append([]model.Invariant(nil), props.Invariants...),
		model.Invariant{Name: name, Check: func(st model.State) string { return check(st.(*state)) }})
	return &witness{Machine: m, props: props}
}

func instantiate(t *testing.T, variant string, p model.Params) model.Machine {
	t.Helper()
	m, _, err := Protocol.Instantiate(variant, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// crossFlush is the state D-bug6b asks about: reclaimer k is about to run
// try_to_unmap_flush (a dsb(ish) on its own CPU, which completes only its
// own TLBIs) while the other reclaimer's tlbi for a va is still in flight
// and a user CPU still caches that va.
func crossFlush(s *state) string {
	for k := range s.r {
		if s.r[k].pc != rFlush {
			continue
		}
		for j := range s.r {
			if j == k {
				continue
			}
			for va := 0; va < s.c.pages; va++ {
				if s.r[j].inflight&(1<<uint(va)) != 0 && s.holders(va) != 0 {
					return "reached"
				}
			}
		}
	}
	return ""
}

// freesOthers is the state the contended-folio question is about: a
// reclaimer removes, to free it, a folio that the other reclaimer
// unmapped in its first pass, deferring the flush into its own batch.
func freesOthers(s *state) string {
	for k := range s.r {
		if r := &s.r[k]; r.pc == rRemove && s.c.ownerOf[r.page] != k {
			return "reached"
		}
	}
	return ""
}

func showWitness(t *testing.T, m model.Machine, what string) {
	t.Helper()
	r, err := explorer.Explore(m, explorer.Options{Workers: 2, NoProgress: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != explorer.Violation || r.Violation.Property != what {
		t.Fatalf("the state %s is not reached: %s", what, r)
	}
	t.Logf("%s reached in %d steps:", what, len(r.Schedule))
	for i, l := range r.Labels {
		t.Logf("  %2d. %-11s %s", i+1, m.Threads()[r.Schedule[i].Thread], l)
	}
}

// Must try_to_unmap_flush complete the invalidations another reclaimer
// deferred? With contend=1 the reclaimers contend for folios as
// shrink_folio_list does: folio_trylock, the keep path that unlocks a
// folio under writeback before try_to_unmap_flush, move_folios_to_lru
// after it, and a second pass that isolates whatever is on the LRU. The
// model's try_to_unmap_flush completes only its caller's batch (riscv and
// x86: the IPIs to its own batch cpumask; arm64: dsb(ish) on its own CPU).
// The checker answers no, on each architecture:
//
//   - the question is not vacuous: bfs reaches a state where a reclaimer
//     removes, to free, a folio the other unmapped with its flush deferred;
//   - yet every reachable state satisfies every property: riscv
//     (generation) and arm64 at contend=1, x86 (mainline) at contend=1
//     syscalls=1 (at contend=1 alone it is ok too, with 18 780 959
//     states, too many for a test);
//   - and that rests on the kept folio going back on the LRU only after
//     its reclaimer's flush: put it back at once (putback-before-flush,
//     on each architecture) and the other reclaimer frees a page a CPU
//     still caches.
//
// In the code's terms: isolation is exclusive (folio_test_clear_lru), so
// a reclaimer reaches a folio another unmapped only through the LRU, and
// shrink_folio_list's callers put folios back after it returns, its
// try_to_unmap_flush done.
func TestContendedFolios(t *testing.T) {
	for _, c := range []struct {
		variant string
		p       model.Params
		states  int64
		steps   int // putback-before-flush's shortest counterexample
	}{
		{Generation, model.Params{"contend": 1}, 1326373, 25},
		{ARM64, model.Params{"contend": 1}, 1135648, 25},
		{X86, model.Params{"contend": 1, "syscalls": 1}, 1950414, 29},
	} {
		t.Run(c.variant, func(t *testing.T) {
			showWitness(t, withWitness(t, instantiate(t, c.variant, c.p), "frees-a-folio-the-other-unmapped", freesOthers), "frees-a-folio-the-other-unmapped")
			r, _ := explore(t, c.variant, c.p, explorer.Options{})
			if r.Verdict != explorer.OK || r.Stats.States != c.states {
				t.Errorf("%s %v: got %s (%d states), want ok with %d states", c.variant, c.p, r, r.Stats.States, c.states)
			}
			// The mutation, on this architecture (a test-only config: the
			// putback-before-flush variant itself is riscv's).
			p, err := Protocol.Resolve(c.p)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := newConfig(c.variant, p)
			if err != nil {
				t.Fatal(err)
			}
			cfg.putbackEarly = true
			r, err = explorer.Explore(newModel(cfg), explorer.Options{Workers: 2, NoProgress: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != explorer.Violation || r.Violation.Property != NoUseAfterFree || len(r.Schedule) != c.steps {
				t.Errorf("%s %v with the kept folio put back before the flush: got %s in %d steps, want %s in %d", c.variant, c.p, r, len(r.Schedule), NoUseAfterFree, c.steps)
			}
		})
	}
}

// D-bug6b with the pages shared out as the reclaimers started them, page i
// to reclaimer i%2 (contend=0): arm64's try_to_unmap_flush (a dsb(ish) on
// the reclaimer's own CPU) meets another reclaimer's TLBI in flight, and
// every property holds (at the default size, 203 427 states, and with two
// deferrals in one batch, pages=3 width=3, 965 178 states): a reclaimer
// never frees a page it did not unmap. TestContendedFolios lets them
// contend.
func TestDBug6bCrossReclaimerCompletion(t *testing.T) {
	showWitness(t, withWitness(t, instantiate(t, ARM64, nil), "cross-reclaimer-flush", crossFlush), "cross-reclaimer-flush")
	sizes := []struct {
		p      model.Params
		states int64
	}{{nil, 203427}, {model.Params{"pages": 3, "width": 3}, 965178}}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, c := range sizes {
		r, _ := explore(t, ARM64, c.p, explorer.Options{})
		if r.Verdict != explorer.OK || r.Stats.States != c.states {
			t.Errorf("arm64 %v: got %s (%d states), want ok with %d states", c.p, r, r.Stats.States, c.states)
		}
	}
}
