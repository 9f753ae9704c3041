package cputlb

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

func explore(t *testing.T, variant string, p model.Params, opts explorer.Options) (*explorer.Result, model.Machine) {
	t.Helper()
	m, _, err := Protocol.Instantiate(variant, p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := explorer.Explore(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, m
}

// bfsCache keeps the plain bfs results of this test binary, so that the
// tests that need the same exhaustive search (the verdicts, the kept
// traces) run it once.
var bfsCache sync.Map

// bfs is a plain exhaustive bfs (two workers: the result is the same for
// any worker count), cached.
func bfs(t *testing.T, variant string, p model.Params) *explorer.Result {
	t.Helper()
	params, err := Protocol.Resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	key := variant + " " + params.String()
	if r, ok := bfsCache.Load(key); ok {
		return r.(*explorer.Result)
	}
	r, _ := explore(t, variant, p, explorer.Options{Workers: 2, MaxStates: 20_000_000})
	bfsCache.Store(key, r)
	return r
}

// defaultVerdicts is every variant's exhaustive bfs at the default size
// (cpus=2 accesses=1 sources=1 migration=1 commit=1): correct variants
// clean with an exact state count, buggy ones found with their property
// and a shortest counterexample. heavy rows (millions of states) run with
// -matrix.
var defaultVerdicts = []struct {
	variant     string
	verdict     explorer.Verdict
	property    string
	states      int64
	transitions int64
	cexLen      int
	heavy       bool
}{
	{"synced", explorer.Violation, DispatchCoherent, 1363, 3436, 12, false},
	{"synced-no-bql", explorer.Violation, DispatchCoherent, 1363, 3436, 12, false},
	{"synced-fixed", explorer.OK, "", 4712662, 12919645, 0, true},
	{"synced-no-bql-fixed", explorer.OK, "", 4655551, 12905933, 0, true},
	{"sync-no-reset", explorer.Violation, DirtyTracking, 457312, 1210047, 52, false},
	{"is-clean-unlocked", explorer.Violation, DirtyTracking, 3195972, 8732623, 84, false},
	{"commit-direct", explorer.Violation, DispatchCoherent, 1101, 2682, 12, false},
	{"dispatch-uncached", explorer.Violation, DispatchCoherent, 206, 435, 7, false},
	{"master", explorer.Violation, DirtyTracking, 3162977, 8522582, 84, false},
	{"master-rfc", explorer.OK, "", 4712662, 12919645, 0, true},
	{"master-map-gen", explorer.OK, "", 4831697, 13239667, 0, true},
	{"non-synced", explorer.Violation, NoStaleTranslation, 1221, 2910, 13, false},
	{"synced-no-tb-end", explorer.Violation, NoStaleTranslation, 2080, 5063, 15, false},
	{"no-kick", explorer.Violation, NoStaleTranslation, 56410, 147970, 34, false},
}

// TestBFSVerdicts explores every variant exhaustively at its default size:
// correct variants are clean with an exact state count, buggy ones are
// found with the expected property and a shortest counterexample.
func TestBFSVerdicts(t *testing.T) {
	if len(defaultVerdicts) != len(Protocol.Variants) {
		t.Fatalf("%d variants, %d tested", len(Protocol.Variants), len(defaultVerdicts))
	}
	for i, tc := range defaultVerdicts {
		v := Protocol.Variants[i]
		if v.Name != tc.variant {
			t.Fatalf("variant %d is %s, want %s", i, v.Name, tc.variant)
		}
		t.Run(tc.variant, func(t *testing.T) {
			if tc.heavy && !*runMatrix {
				t.Skip("millions of states: runs with -matrix")
			}
			r := bfs(t, tc.variant, nil)
			got := model.ExpectOK
			if r.Violation != nil {
				got = r.Violation.Property
			}
			if r.Verdict != tc.verdict || r.Stats.States != tc.states || r.Stats.Transitions != tc.transitions || len(r.Schedule) != tc.cexLen {
				t.Errorf("%s, counterexample of %d steps; want %s with %d states, %d transitions, counterexample of %d steps",
					r, len(r.Schedule), tc.verdict, tc.states, tc.transitions, tc.cexLen)
			}
			if got != v.Expect || tc.property != "" && got != tc.property {
				t.Errorf("checker says %s, the variant expects %s (%v)", got, v.Expect, r.Violation)
			}
		})
	}
}

// TestHistoricalTracesIdentical: on the code of the seed's era, seed 000
// changes nothing the checker can see. synced and synced-no-bql have the
// same shortest counterexample, step for step, at the default size (the
// tcg_commit race) and without the main loop (the dirty-tracking race of
// aa8dc044772), and the same labels but for the name of the call the seed
// renames (tcg_commit's tlb_flush queues its job with
// async_run_on_cpu_no_bql): the BQL is on neither path.
func TestHistoricalTracesIdentical(t *testing.T) {
	for _, p := range []model.Params{nil, {"commit": 0}} {
		a, b := bfs(t, "synced", p), bfs(t, "synced-no-bql", p)
		if a.Violation == nil || b.Violation == nil {
			t.Fatalf("%v: synced %s, synced-no-bql %s: both should fail", p, a, b)
		}
		if !reflect.DeepEqual(a.Schedule, b.Schedule) || *a.Violation != *b.Violation || len(a.Labels) != len(b.Labels) {
			t.Fatalf("%v: the counterexamples differ:\nsynced %v\nsynced-no-bql %v", p, a.Labels, b.Labels)
		}
		for i := range a.Labels {
			if strings.ReplaceAll(b.Labels[i], "async_run_on_cpu_no_bql", "async_run_on_cpu") != a.Labels[i] {
				t.Errorf("%v: step %d: %q and %q", p, i+1, a.Labels[i], b.Labels[i])
			}
		}
		t.Logf("%v: both %s, the same %d steps", p, a.Violation.Property, len(a.Schedule))
	}
}

// TestEachPathAloneClean explores the fixed code exhaustively with each
// foreign path on its own, in both flavours of the seed: the migration
// thread (tlb_reset_dirty and run_on_cpu on every vCPU) without the main
// loop, and the main loop (tcg_commit's flush of every vCPU) without
// migration. The default size, with both, runs with -matrix.
func TestEachPathAloneClean(t *testing.T) {
	for _, p := range []model.Params{{"commit": 0}, {"migration": 0}} {
		for _, v := range []string{"synced-fixed", "synced-no-bql-fixed"} {
			r := bfs(t, v, p)
			if r.Verdict != explorer.OK {
				t.Errorf("%s %v: %s", v, p, r)
			}
			t.Logf("%s %v: %s", v, p, r)
		}
	}
}

// TestNonSyncedCounterexample pins the shape of H9's schedule: the target
// passed its exit_request test before the kick, and uses its stale entry
// after the source went on past the invalidate.
func TestNonSyncedCounterexample(t *testing.T) {
	r := bfs(t, "non-synced", nil)
	in := []string{
		"cpu_exec(cpu0): guest clears pte(X0) (*pte = 0; ptesync), then executes the broadcast invalidate",
		"cpu_exec(cpu1): exit_request clear, run the next TB",
		"tlb_flush_page_by_mmuidx_all_cpus: flush_all_helper: async_run_on_cpu_no_bql(cpu1): " + kickLabel(1),
		"cpu_exec(cpu0): the TB goes on: guest executes the instruction after the invalidate (*memP = 1): the flush must be complete",
		"cpu_exec(cpu1): guest load from page X0 hits the softmmu TLB entry X0->P",
	}
	i := 0
	for _, l := range r.Labels {
		if i < len(in) && l == in[i] {
			i++
		}
	}
	if i != len(in) {
		t.Fatalf("the counterexample lacks %q in order:\n%s", in[i], strings.Join(r.Labels, "\n"))
	}
	if last := r.Labels[len(r.Labels)-1]; last != in[len(in)-1] {
		t.Errorf("the counterexample ends with %q, not the stale use", last)
	}
}

// TestTwoSourcesInterleave: with two sources the interleaving the
// sources=2 verdict rests on is reachable. One source's start_exclusive
// loses to the other's and sleeps in exclusive_idle, its own safe item
// already popped, while the other source's flush of its page sits queued
// behind it; it runs that item before it re-enters cpu_exec (bfs explores
// the configuration clean in the matrix). Found by seeded random walks.
func TestTwoSourcesInterleave(t *testing.T) {
	m, _, err := Protocol.Instantiate("synced-no-bql", model.Params{"sources": 2, "cpus": 3, "migration": 0, "commit": 0})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for walk := 0; walk < 2000; walk++ {
		s := m.Init()
		for step := 0; step < 400; step++ {
			st := s.(*state)
			for src := 0; src < 2; src++ {
				v := &st.cpu[src]
				if v.pc == pcExclIdleRelock && st.resumeCond.Waiting(src) && v.qlen > 0 && v.queue[0].kind() == itemRemoteNoBQL {
					t.Logf("walk %d, step %d: cpu%d waits in start_exclusive's exclusive_idle with %v queued", walk, step, src, v.queue[:v.qlen])
					return
				}
			}
			succs, _, _ := modeltest.Successors(m, s)
			if len(succs) == 0 {
				break
			}
			s = succs[rng.IntN(len(succs))].State
		}
	}
	t.Fatal("no walk reached a source sleeping in start_exclusive with the other's flush queued")
}

// TestDispatchLiveEras: with the old map freed through RCU (rcu=1, the
// main loop alone), the use-after-free is found where a pointer into a
// dispatch is kept across read sections (the cached dispatch of
// 0d58c660689f to 10.0, master's full->section), and dispatch-live holds,
// with the incoherence left out, where it is not: the v5.0 code switches
// the cached dispatch in tcg_commit itself, and 10.1 reads the current
// map. The fix holds both.
func TestDispatchLiveEras(t *testing.T) {
	p := model.Params{"rcu": 1, "migration": 0}
	for _, c := range []struct {
		variant string
		without []string
		want    string
		steps   int
	}{
		{"synced-fixed", nil, DispatchLive, 17},
		{"master", nil, DispatchLive, 22},
		{"synced", []string{DispatchCoherent}, "", 0},
		{"commit-direct", []string{DispatchCoherent}, "", 0},
		{"dispatch-uncached", []string{DispatchCoherent}, "", 0},
		{"master-map-gen", nil, "", 0},
	} {
		m, _, err := Protocol.Instantiate(c.variant, p)
		if err != nil {
			t.Fatal(err)
		}
		if c.without != nil {
			if m, err = model.Without(m, c.without...); err != nil {
				t.Fatal(err)
			}
		}
		r, err := explorer.Explore(m, explorer.Options{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == "" && r.Verdict != explorer.OK:
			t.Errorf("%s %v without %v: %s, want ok", c.variant, p, c.without, r)
		case c.want != "" && (r.Violation == nil || r.Violation.Property != c.want || len(r.Schedule) != c.steps):
			t.Errorf("%s %v: %s, want %s in %d steps", c.variant, p, r, c.want, c.steps)
		}
	}
}

// TestVCPUCommitEras: a commit from the first target's own MMIO write, in
// an instruction whose second access uses what mmu_lookup found before it
// (vcpu-commit=1, the main loop and the migration thread left out). v5.0
// switches the writer's cached dispatch in tcg_commit and 10.1 reads the
// current map, so the second access resolves the old index in the new map
// (0d58c660689f's race (2)); from 0d58c660689f on, and in master, it does
// not, with or without the old map freed through RCU.
func TestVCPUCommitEras(t *testing.T) {
	for _, rcu := range []int{0, 1} {
		p := model.Params{"vcpu-commit": 1, "commit": 0, "migration": 0, "rcu": rcu}
		for _, c := range []struct {
			variant string
			ok      bool
		}{
			{"synced", false}, {"dispatch-uncached", false},
			{"synced-fixed", true}, {"master", true}, {"master-map-gen", true},
		} {
			r, _ := explore(t, c.variant, p, explorer.Options{Workers: 2})
			switch {
			case c.ok && r.Verdict != explorer.OK:
				t.Errorf("%s %v: %s, want ok", c.variant, p, r)
			case !c.ok && (r.Violation == nil || r.Violation.Property != DispatchCoherent):
				t.Errorf("%s %v: %s, want dispatch-coherent", c.variant, p, r)
			}
		}
	}
}

// TestIOMMUNotifierEras: the IOMMU notifier's tlb_flush of another vCPU
// runs on the notifying thread since 30933c4fb4f3, between the target's
// comparator read and its addend read; before, and in the fix, it is
// queued on the vCPU.
func TestIOMMUNotifierEras(t *testing.T) {
	p := model.Params{"iommu": 1, "commit": 0, "migration": 0}
	for _, c := range []struct {
		variant string
		want    string
		steps   int
	}{
		{"synced-fixed", "", 0}, {"master-map-gen", "", 0},
		{"master", TLBOwnerOnly, 7}, {"dispatch-uncached", TLBOwnerOnly, 7},
	} {
		r, _ := explore(t, c.variant, p, explorer.Options{Workers: 2})
		switch {
		case c.want == "" && r.Verdict != explorer.OK:
			t.Errorf("%s %v: %s, want ok", c.variant, p, r)
		case c.want != "" && (r.Violation == nil || r.Violation.Property != c.want || len(r.Schedule) != c.steps):
			t.Errorf("%s %v: %s, want %s in %d steps", c.variant, p, r, c.want, c.steps)
		}
	}
}
