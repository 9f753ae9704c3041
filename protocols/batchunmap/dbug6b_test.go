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
	*machine
	props model.Properties
}

func (w *witness) Properties() model.Properties { return w.props }

func withWitness(t *testing.T, variant string, p model.Params, name string, check func(*state) string) model.Machine {
	t.Helper()
	m, _, err := Protocol.Instantiate(variant, p)
	if err != nil {
		t.Fatal(err)
	}
	base := m.(*machine)
	props := base.props
	props.Invariants = append(append([]model.Invariant(nil), props.Invariants...),
		model.Invariant{Name: name, Check: func(st model.State) string { return check(st.(*state)) }})
	return &witness{machine: base, props: props}
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

// D-bug6b: with two reclaimers on arm64, must
// try_to_unmap_flush also complete the TLBIs another reclaimer issued?
// The model's try_to_unmap_flush is arm64's: dsb(ish) on the reclaimer's
// own CPU, completing only that CPU's TLBIs. The checker answers no:
//
//   - the question is not vacuous: bfs reaches a state where one
//     reclaimer flushes and goes on to free its pages while the other's
//     tlbi is in flight and a CPU still caches that va;
//   - yet every reachable state satisfies every property, at the default
//     size (two reclaimers with a page each, 203 427 states) and with a
//     reclaimer deferring two pages into one batch (pages=3 width=3,
//     965 178 states, the matrix's first row).
//
// Why, in the code's terms: a folio is unmapped, flushed and freed by the
// reclaimer that locked it, so a reclaimer never frees a page whose PTE
// only the other cleared; and the syscalls' drain is flush_tlb_mm, which
// invalidates the ASID everywhere, whoever's tlbi is in flight.
func TestDBug6bCrossReclaimerCompletion(t *testing.T) {
	m := withWitness(t, ARM64, nil, "cross-reclaimer-flush", crossFlush)
	r, err := explorer.Explore(m, explorer.Options{Workers: 2, NoProgress: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != explorer.Violation || r.Violation.Property != "cross-reclaimer-flush" {
		t.Fatalf("arm64: the state D-bug6b asks about is not reached: %s", r)
	}
	t.Logf("reached in %d steps:", len(r.Schedule))
	for i, l := range r.Labels {
		t.Logf("  %2d. %-11s %s", i+1, m.Threads()[r.Schedule[i].Thread], l)
	}

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
