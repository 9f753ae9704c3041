package cputlb

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
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

// TestBFSVerdicts explores every variant exhaustively at its default size:
// correct variants are clean with an exact state count, buggy ones are
// found with qemu.md's property and a shortest counterexample.
func TestBFSVerdicts(t *testing.T) {
	tests := []struct {
		variant     string
		verdict     explorer.Verdict
		states      int64
		transitions int64
		cexLen      int
	}{
		{"synced", explorer.OK, 3595, 6700, 0},
		{"synced-no-bql", explorer.OK, 3199, 5926, 0},
		{"non-synced", explorer.Violation, 110, 182, 13},
		{"synced-no-tb-end", explorer.Violation, 110, 182, 13},
		{"no-kick", explorer.Violation, 487, 823, 30},
	}
	if len(tests) != len(Protocol.Variants) {
		t.Fatalf("%d variants, %d tested", len(Protocol.Variants), len(tests))
	}
	for i, tc := range tests {
		v := Protocol.Variants[i]
		if v.Name != tc.variant {
			t.Fatalf("variant %d is %s, want %s", i, v.Name, tc.variant)
		}
		r, _ := explore(t, tc.variant, nil, explorer.Options{})
		if r.Verdict != tc.verdict || r.Stats.States != tc.states || r.Stats.Transitions != tc.transitions || len(r.Schedule) != tc.cexLen {
			t.Errorf("%s: %s, counterexample of %d steps; want %s with %d states, %d transitions, counterexample of %d steps",
				tc.variant, r, len(r.Schedule), tc.verdict, tc.states, tc.transitions, tc.cexLen)
		}
		want := v.Expect
		got := model.ExpectOK
		if r.Violation != nil {
			got = r.Violation.Property
		}
		if got != want {
			t.Errorf("%s: checker says %s, qemu.md expects %s (%v)", tc.variant, got, want, r.Violation)
		}
	}
}

// TestSeedVariantThreeCPUs checks seed 000's variant exhaustively with two
// target vCPUs, so that start_exclusive can count several running CPUs.
func TestSeedVariantThreeCPUs(t *testing.T) {
	r, _ := explore(t, "synced-no-bql", model.Params{"cpus": 3, "accesses": 1}, explorer.Options{})
	if r.Verdict != explorer.OK || r.Stats.States != 239241 {
		t.Errorf("synced-no-bql cpus=3 accesses=1: %s; want ok with 239241 states", r)
	}
}

// TestNonSyncedCounterexample pins the shape of H9's schedule: the target
// passed its exit_request test before the kick, and uses its stale entry
// after the source went on past the invalidate.
func TestNonSyncedCounterexample(t *testing.T) {
	r, m := explore(t, "non-synced", nil, explorer.Options{})
	want := []string{
		"cpu_exec_start(cpu0): atomic_set(running, true)",
		"cpu_exec_start(cpu0): smp_mb; pending_cpus == 0, enter cpu_exec",
		"cpu_exec(cpu0): exit_request clear, run the next TB",
		"cpu_exec(cpu0): guest clears pte(X) (*pte = 0; ptesync), then executes the broadcast invalidate",
		"tlb_flush_page_by_mmuidx_all_cpus: flush_all_helper: async_run_on_cpu_no_bql(cpu1, tlb_flush_page_by_mmuidx_async_2): qemu_mutex_lock(cpu1->lock), append to cpu1->work_list",
		"cpu_exec_start(cpu1): atomic_set(running, true)",
		"cpu_exec_start(cpu1): smp_mb; pending_cpus == 0, enter cpu_exec",
		"cpu_exec(cpu1): exit_request clear, run the next TB",
		"tlb_flush_page_by_mmuidx_all_cpus: flush_all_helper: async_run_on_cpu_no_bql(cpu1): qemu_cpu_kick(cpu1): qemu_cond_broadcast(cpu1->halt_cond), cpu_exit",
		"tlb_flush_page_by_mmuidx_all_cpus: flush_all_helper: async_run_on_cpu_no_bql(cpu1): qemu_mutex_unlock(cpu1->lock)",
		"tlb_flush_page_by_mmuidx_all_cpus: tlb_flush_page_by_mmuidx_async_0(cpu0): flush page X from cpu0's TLB at once",
		"cpu_exec(cpu0): the TB goes on: guest executes the instruction after the invalidate (*memP = 1): the flush must be complete",
		"cpu_exec(cpu1): guest load from page X hits the softmmu TLB entry X->P",
	}
	if len(r.Labels) != len(want) {
		t.Fatalf("counterexample has %d steps, want %d: %q", len(r.Labels), len(want), r.Labels)
	}
	for i := range want {
		if r.Labels[i] != want[i] {
			t.Errorf("step %d (%s): %q, want %q", i+1, m.Threads()[r.Schedule[i].Thread], r.Labels[i], want[i])
		}
	}
	const msg = "cpu1 translates page X with the TLB entry X->P cached before cpu0 cleared the PTE, after cpu0 executed the instruction following tlb_flush_page_by_mmuidx_all_cpus: cpu1's flush item has not run (it sits on the work list; exit_request is set but the TB runs before the next check)"
	if r.Violation.Message != msg {
		t.Errorf("message %q, want %q", r.Violation.Message, msg)
	}
}
