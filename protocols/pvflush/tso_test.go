package pvflush

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// b2a is the smallest size at which the B2(a) schedule exists: one target,
// a second flush round (vCPU0 reads the 3 its first round left), two
// preemptions, two accesses, x86-TSO, and a PTE clear without a barrier.
var b2a = model.Params{"vcpus": 2, "flushes": 2, "preemptions": 2, "accesses": 2, "memory": 1, "pte-clear": 1}

func with(p model.Params, k string, v int) model.Params {
	out := model.Params{}
	for kk, vv := range p {
		out[kk] = vv
	}
	out[k] = v
	return out
}

func explore(t *testing.T, variant string, p model.Params, strategy string) *explorer.Result {
	t.Helper()
	m, _, err := Protocol.Instantiate(variant, p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := explorer.Explore(m, explorer.Options{Strategy: strategy})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pvflush.md B2(a), settled: under x86-TSO, with a PTE clear that is a
// plain store and no barrier before the flush reads steal_time, the
// uncompared cmpxchg of ignore-cmpxchg drops a running vCPU that holds a
// translation of the page being freed; fixed (the compared cmpxchg) stays
// correct. Take away any one ingredient and ignore-cmpxchg is correct
// again.
func TestIgnoreCmpxchgUnderTSO(t *testing.T) {
	r := explore(t, "fixed", b2a, explorer.BFS)
	if r.Verdict != explorer.OK || r.Stats.States != 3236 {
		t.Errorf("fixed at B2(a) size: %s %v, %d states; want ok, 3236", r.Verdict, r.Violation, r.Stats.States)
	}
	if r := explore(t, "fixed", b2a, explorer.DFS); r.Verdict != explorer.OK || r.Stats.States != 3236 {
		t.Errorf("fixed at B2(a) size, dfs: %s %v, %d states; want ok, 3236", r.Verdict, r.Violation, r.Stats.States)
	}
	if r := explore(t, "ignore-cmpxchg", b2a, explorer.DFS); r.Verdict != explorer.Violation || r.Violation.Property != StaleTLB {
		t.Errorf("ignore-cmpxchg at B2(a) size, dfs: %s %v; want stale-tlb", r.Verdict, r.Violation)
	}

	r = explore(t, "ignore-cmpxchg", b2a, explorer.BFS)
	if r.Verdict != explorer.Violation || r.Violation.Property != StaleTLB || len(r.Schedule) != 23 {
		t.Fatalf("ignore-cmpxchg at B2(a) size: %s %v, %d steps; want stale-tlb in 23", r.Verdict, r.Violation, len(r.Schedule))
	}
	// The key steps of pvflush.md's schedule, in order.
	keys := []string{
		"cmpxchg st[1].preempted 1->3 ok, skip vCPU1",               // round 0 leaves 3 (the "I2 sets 3" of B2(a))
		"kvm_flush_tlb_others returns; free_page(P0)",               //
		"pte_clear (plain store, no barrier): clear PTE of X",       // round 1: the clear is buffered
		"read st[1].preempted = 3 (PREEMPTED)",                      // G2a reads 3
		"xchg st[1].preempted 3->0",                                 // H_T flushes ...
		"store buffer: vCPU0 commits pte[X] = 2",                    // ... memory holds X->P1, not the clear
		"guest: TLB miss, walk PTE: X->P1, fill TLB",                // T re-caches the old translation
		"store st[1].preempted = 1",                                 // T preempted again
		"cmpxchg st[1].preempted 3->3 failed (found 1), skip vCPU1", // the bug: 1 is non-zero
		"kvm_flush_tlb_others returns; free_page(P1)",               //
		"xchg st[1].preempted 1->0",                                 // entry without a flush
		"guest: read X through TLB entry X->P1",                     // stale
	}
	i := 0
	for _, l := range r.Labels {
		if i < len(keys) && strings.Contains(l, keys[i]) {
			i++
		}
	}
	if i < len(keys) {
		t.Errorf("the counterexample lacks, in order, %q:\n%s", keys[i], strings.Join(r.Labels, "\n"))
	}

	// Each ingredient is needed: without it ignore-cmpxchg is correct.
	for _, c := range []struct {
		k      string
		v      int
		states int64
	}{
		{"memory", 0, 1629},    // SC: the plain clear is visible at once
		{"pte-clear", 0, 2079}, // TSO with Linux's locked xchg: drained before the read
		{"flushes", 1, 1198},   // nothing left 3 to read
		{"preemptions", 1, 1303},
		{"accesses", 1, 1844},
	} {
		r := explore(t, "ignore-cmpxchg", with(b2a, c.k, c.v), explorer.BFS)
		if r.Verdict != explorer.OK || r.Stats.States != c.states {
			t.Errorf("ignore-cmpxchg %s=%d: %s %v, %d states; want ok, %d", c.k, c.v, r.Verdict, r.Violation, r.Stats.States, c.states)
		}
	}
}

// Under TSO with Linux's locked xchg (memory=1, pte-clear=0) every variant
// keeps its verdict at the default size: the store buffers change nothing
// the flush depends on.
func TestTSOKeepsVerdictsWithLockedClear(t *testing.T) {
	if testing.Short() {
		t.Skip("explores every variant")
	}
	for _, v := range Protocol.Variants {
		r := explore(t, v.Name, model.Params{"memory": 1}, explorer.BFS)
		found := model.ExpectOK
		if r.Violation != nil {
			found = r.Violation.Property
		}
		if found != v.Expect {
			t.Errorf("%s under TSO: %s, want %s", v.Name, found, v.Expect)
		}
	}
}

// The defaults build the plain machine: nothing of TSO is there.
func TestDefaultsAreSequentiallyConsistent(t *testing.T) {
	m, params, err := Protocol.Instantiate("fixed", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*machine); !ok || params["memory"] != 0 || params["pte-clear"] != 0 {
		t.Fatalf("defaults: %T %v", m, params)
	}
	tso, _, _ := Protocol.Instantiate("fixed", model.Params{"memory": 1})
	if th := tso.Threads(); th[len(th)-1] != model.StoreBufferThread {
		t.Fatalf("memory=1 threads %v", th)
	}
}
