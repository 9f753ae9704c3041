package pvflush

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// B11: the PV flush skips a vCPU preempted inside
// get_user_pages_fast with interrupts off; freeing the page-table page
// right after the flush (tlb_remove_page) frees the table it is walking.
func TestPageTableFreedUnderWalker(t *testing.T) {
	r := bfs(t, instantiate(t, "pt-free-page", nil))
	if r.Violation == nil || r.Violation.Property != PTUseAfterFree {
		t.Fatalf("got %s, want %s", r, PTUseAfterFree)
	}
	keys := []string{
		"get_user_pages_fast: local_irq_disable; gup_pmd_range: READ_ONCE(pmd of X) = Q",
		"free_pgtables -> free_pte_range: pmd_clear(pmd of X); pte_free_tlb(Q) -> tlb_remove_page",
		"store st[1].preempted = 1",
		"cmpxchg st[1].preempted 1->3 ok, skip vCPU1",
		"tlb_flush_mmu_free: free_page(Q)",
		"gup_pte_range: READ_ONCE(pte) in Q, which has been freed",
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
	// The same walk with the IPI of a native flush: the initiator waits
	// for the walker's ack, which comes after local_irq_enable; with RCU
	// table freeing the grace period waits for it instead.
	for _, v := range []string{"pt-free-native", "pt-free-rcu"} {
		for _, p := range []model.Params{nil, {"flushes": 2}, {"vcpus": 2, "flushes": 2, "preemptions": 3}} {
			if r := bfs(t, instantiate(t, v, p)); r.Verdict != explorer.OK {
				t.Errorf("%s %v: %s", v, p, r)
			}
		}
	}
}

// With tlb_remove_table, the grace period after call_rcu_sched(Q) cannot
// end while the preempted walker is inside its IRQ-off section; it reads
// Q, still allocated, leaves, and only then is Q freed.
func TestGracePeriodWaitsForPreemptedWalker(t *testing.T) {
	m := instantiate(t, "pt-free-rcu", nil)
	sched := []model.Choice{
		{Thread: 1, Alt: 2}, // vCPU1: get_user_pages_fast, IRQs off, PMD -> Q
		{Thread: 1, Alt: 1}, // vCPU1 preempted inside the walk: st[1] = 1
		{Thread: 0},         // clear the PTE
		{Thread: 0},         // pmd_clear, pte_free_tlb(Q)
		{Thread: 0},         // inc_mm_tlb_gen
		{Thread: 0},         // read st[1] = 1
		{Thread: 0},         // cmpxchg 1->3: skip vCPU1
		{Thread: 0},         // read st[2] = 0
		{Thread: 0},         // IPI to vCPU2
		{Thread: 2, Alt: 3}, // vCPU2 takes it
		{Thread: 2},         // and acks
		{Thread: 0},         // acked
		{Thread: 0},         // return: call_rcu_sched(Q)
		{Thread: 1},         // kvm_sched_in
		{Thread: 1},         // record_steal_time: xchg 3->0, flush TLB
		{Thread: 1},         // VM entry
		{Thread: 1},         // the walk reads the PTE from Q: still allocated
		{Thread: 1},         // local_irq_enable
		{Thread: 3},         // the grace period ends: free Q
	}
	ex, err := explorer.Execute(m, sched)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Violation != nil {
		t.Fatalf("%v\n%v", ex.Violation, ex.Steps)
	}
	if st := explorer.Statuses(m, ex.States[13]); st[3].WaitsFor != "rcu_sched grace period: waits for vCPU1 to leave its IRQ-off section" {
		t.Errorf("after call_rcu_sched: rcu_sched is %+v", st[3])
	}
	for i, want := range map[int]string{
		12: "kvm_flush_tlb_others returns; tlb_table_flush: call_rcu_sched(Q); free_page(P0): the page is reused by another process",
		16: "gup_pte_range: READ_ONCE(pte of X) in Q: not present, goto pte_unmap",
		18: "rcu_sched grace period ends -> tlb_remove_table_rcu: free_page(Q)",
	} {
		if got := ex.Steps[i].Label; got != want {
			t.Errorf("step %d: %q, want %q", i+1, got, want)
		}
	}
}
