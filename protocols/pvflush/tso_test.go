package pvflush

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// b2a is the smallest size at which the B2(a) schedule exists
// with one initiator: one target, a second flush round (vCPU0 reads the 3
// its first round left), two preemptions, two accesses, x86-TSO, and the
// hypothetical PTE clear with no barrier before the flush (pte-clear=1).
var b2a = model.Params{"vcpus": 2, "flushes": 2, "preemptions": 2, "accesses": 2, "memory": 1, "pte-clear": 1}

// B2(a), with inc_mm_tlb_gen modelled. In Linux the PTE clear
// is followed by flush_tlb_mm_range's inc_mm_tlb_gen, a locked RMW that
// drains the store buffer before kvm_flush_tlb_others reads steal_time:
// ignore-cmpxchg is latent under x86-TSO with the locked clear
// (pte-clear=0) and with a plain clear (pte-clear=2) alike. Only the
// hypothetical caller with no barrier at all between the clear and the
// PV flush (pte-clear=1, which Linux does not have) makes the uncompared
// cmpxchg drop a running vCPU that holds a translation of the freed
// page; fixed stays correct even there.
func TestIgnoreCmpxchgUnderTSO(t *testing.T) {
	r := explore(t, "fixed", b2a, explorer.BFS)
	if r.Verdict != explorer.OK || r.Stats.States != 2900 {
		t.Errorf("fixed at B2(a) size: %s; want ok, 2900 states", r)
	}
	if r := explore(t, "fixed", b2a, explorer.DFS); r.Verdict != explorer.Partial || !r.CleanExcept(FlushReturns) || r.Stats.States != 2900 {
		t.Errorf("fixed at B2(a) size, dfs: %s; want every property but %s (partial), 2900 states", r, FlushReturns)
	}
	if r := explore(t, "ignore-cmpxchg", b2a, explorer.DFS); r.Verdict != explorer.Violation || r.Violation.Property != StaleTLB {
		t.Errorf("ignore-cmpxchg at B2(a) size, dfs: %s; want stale-tlb", r)
	}

	r = explore(t, "ignore-cmpxchg", b2a, explorer.BFS)
	if r.Verdict != explorer.Violation || r.Violation.Property != StaleTLB || len(r.Schedule) != 22 {
		t.Fatalf("ignore-cmpxchg at B2(a) size: %s, %d steps; want stale-tlb in 22", r, len(r.Schedule))
	}
	// The key steps of the B2(a) schedule, in order.
	keys := []string{
		"cmpxchg st[1].preempted 1->3 ok, skip vCPU1",               // round 0 leaves 3 (the "I2 sets 3" of B2(a))
		"kvm_flush_tlb_others returns; free_page(P0)",               //
		"pte_clear (plain store; hypothetical caller",               // round 1: the clear is buffered, no inc_mm_tlb_gen
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
	// pte-clear=0 and pte-clear=2 are Linux: the barrier is there.
	for _, c := range []struct {
		k      string
		v      int
		states int64
	}{
		{"memory", 0, 1433},    // SC: the plain clear is visible at once
		{"pte-clear", 0, 2130}, // ptep_get_and_clear and inc_mm_tlb_gen
		{"pte-clear", 2, 2481}, // a plain clear, then inc_mm_tlb_gen: the barrier alone suffices
		{"flushes", 1, 1158},   // nothing left 3 to read
		{"preemptions", 1, 1219},
		{"accesses", 1, 1644},
	} {
		r := explore(t, "ignore-cmpxchg", with(b2a, c.k, c.v), explorer.BFS)
		if r.Verdict != explorer.OK || r.Stats.States != c.states {
			t.Errorf("ignore-cmpxchg %s=%d: %s; want ok, %d states", c.k, c.v, r, c.states)
		}
	}
	// Latent at sizes above the default too, with the barrier.
	for _, c := range []struct {
		p      model.Params
		states int64
	}{
		{model.Params{"memory": 1}, 51677},
		{model.Params{"memory": 1, "pte-clear": 2}, 55132},
		{model.Params{"memory": 1, "flushes": 2}, 115021},
	} {
		if r := explore(t, "ignore-cmpxchg", c.p, explorer.BFS); r.Verdict != explorer.OK || r.Stats.States != c.states {
			t.Errorf("ignore-cmpxchg %v: %s; want ok, %d states", c.p, r, c.states)
		}
	}
}

// Under TSO with Linux's barriers (memory=1, pte-clear=0) every variant
// keeps the verdict it has under SC at the default size. (This needs the
// full barrier vcpu_enter_guest has before VM entry, srcu_read_unlock's
// smp_mb: without it the host-copy write-back could still sit in the host
// thread's store buffer while the vCPU runs.)
func TestTSOKeepsVerdicts(t *testing.T) {
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
