package pvflush

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// The host the seed was reviewed against and merged with (f38a7b75267f,
// v4.16 to v5.5): kvm_steal_time_set_preempted with no guard and no
// instruction-boundary gate, record_steal_time through a host copy
// written back three times. Every variant fails against it, the correct
// guest included; the shortest failure is CVE-2022-39189's (a vCPU
// reported preempted in the middle of an emulated instruction, B-S1).
func TestHost2017(t *testing.T) {
	host := model.Params{"host": 1}
	for _, v := range Protocol.Variants {
		r := bfs(t, instantiate(t, v.Name, host))
		if r.Violation == nil || r.Violation.Property != PreemptedNotRunning || len(r.Schedule) != 2 {
			t.Errorf("%s host=1: %s in %d steps, want preempted-not-running in 2", v.Name, r, len(r.Schedule))
		}
	}
	// What else the 2017 host allows, for posted and fixed: without B-S1,
	// the emulated access completes through a freed page (B5); without
	// emulation too, the write-back of the host copy loses the flush
	// (B4, CVE-2019-3016).
	for _, c := range []struct {
		variant  string
		edit     func(*machine)
		steps    int
		contains []string
	}{
		{"fixed", withoutBS1, 12, []string{"in the middle of an emulated instruction", "x86_emulate_insn: complete the access to X through the in-flight translation X->P0"}},
		{"posted", withoutBS1, 12, []string{"cmpxchg st[1].preempted 1->5 ok", "x86_emulate_insn: complete the access"}},
		{"fixed", func(m *machine) { withoutBS1(m); m.noEmulation = true }, 17, []string{
			"record_steal_time: kvm_read_guest_cached: host copy st.steal.preempted = 1; xchg(host copy, 0)",
			"kvm_flush_tlb_others: cmpxchg st[1].preempted 1->3 ok, skip vCPU1",
			"record_steal_time: kvm_write_guest_cached (write 1 of 3, version): st[1].preempted = 0 (host copy)",
			"guest: read X through TLB entry X->P0"}},
		{"posted", func(m *machine) { withoutBS1(m); m.noEmulation = true }, 17, []string{"cmpxchg st[1].preempted 1->5 ok", "host copy st.steal.preempted = 5"}},
	} {
		r := bfs(t, build(t, c.variant, host, c.edit))
		if r.Violation == nil || r.Violation.Property != StaleTLB || len(r.Schedule) != c.steps {
			t.Errorf("%s host=1: %s in %d steps, want stale-tlb in %d", c.variant, r, len(r.Schedule), c.steps)
			continue
		}
		all := strings.Join(r.Labels, "\n")
		for _, s := range c.contains {
			if !strings.Contains(all, s) {
				t.Errorf("%s host=1: the counterexample lacks %q:\n%s", c.variant, s, all)
			}
		}
	}
}

// A B4 schedule beyond the known one, which the two-step host-copy
// variant cannot produce: write 1 of record_steal_time's three clears the
// byte, the vCPU is preempted (the put sets the host copy and the byte to
// 1), an initiator defers its flush (1->3), and write 2 writes the copy,
// 1, over the 3. The flush is lost; the rerun of record_steal_time sees 1
// and enters without flushing.
func TestHost2017LosesFlushInSecondWriteBack(t *testing.T) {
	m := instantiate(t, "fixed", model.Params{"host": 1, "vcpus": 2})
	sched := []model.Choice{
		{Thread: 1, Alt: 0},                   // access X: fill X->P0
		{Thread: 0},                           // ptep_get_and_clear
		{Thread: 0},                           // inc_mm_tlb_gen
		{Thread: 1, Alt: 2},                   // preempted from guest: st = 1
		{Thread: 1},                           // kvm_sched_in
		{Thread: 1, Alt: 0},                   // record_steal_time: read 1 into the copy, xchg copy 0
		{Thread: 1, Alt: 0},                   // write 1 of 3: st = 0
		{Thread: 1, Alt: 1},                   // preempted in record_steal_time: copy = 1, st = 1
		{Thread: 0},                           // read st[1] = 1
		{Thread: 0},                           // cmpxchg 1->3, skip vCPU1
		{Thread: 0},                           // return, free P0
		{Thread: 1},                           // kvm_sched_in
		{Thread: 1},                           // write 2 of 3: st = copy = 1: FLUSH_TLB lost
		{Thread: 1},                           // write 3 of 3
		{Thread: 1},                           // KVM_REQ_STEAL_UPDATE again: read 1, no flush
		{Thread: 1}, {Thread: 1}, {Thread: 1}, // writes 1-3: st = 0
		{Thread: 1}, // VM entry
		{Thread: 1}, // read X through the stale entry
	}
	ex, err := explorer.Execute(m, sched)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Violation == nil || ex.Violation.Property != StaleTLB || ex.ViolationStep != len(sched) {
		t.Fatalf("violation %v at step %d", ex.Violation, ex.ViolationStep)
	}
	for i, want := range map[int]string{
		7:  "kvm_sched_out -> kvm_arch_vcpu_put -> kvm_steal_time_set_preempted: vcpu->arch.st.steal.preempted = 1; kvm_write_guest_offset_cached: store st[1].preempted = 1",
		9:  "kvm_flush_tlb_others: cmpxchg st[1].preempted 1->3 ok, skip vCPU1 (flush deferred to the host)",
		12: "record_steal_time: kvm_write_guest_cached (write 2 of 3, steal): st[1].preempted = 1 (host copy)",
		14: "vcpu_enter_guest -> record_steal_time: kvm_read_guest_cached: host copy st.steal.preempted = 1; xchg(host copy, 0)",
		19: "guest: read X through TLB entry X->P0",
	} {
		if got := ex.Steps[i].Label; got != want {
			t.Errorf("step %d: %q, want %q", i+1, got, want)
		}
	}
}

// B3 with the 2017 host: a second put before the entry stores PREEMPTED
// over a pending FLUSH_TLB.
func TestHost2017ClobbersOnSecondPut(t *testing.T) {
	labels := reachableLabels(build(t, "fixed", model.Params{"host": 1, "vcpus": 2, "accesses": 1}, func(m *machine) { withoutBS1(m); m.noEmulation = true }))
	if got := filter(labels, "(was 3: FLUSH_TLB lost)"); len(got) == 0 {
		t.Fatalf("no put stores over a pending flush; puts: %v", filter(labels, "set_preempted"))
	}
}

// The put at the return of KVM_RUN to userspace reported PREEMPTED before
// 54aa83c90198, on the 2017 host as on every put. With no host
// preemption at all (preemptions=0) one return to userspace is enough:
// with an emulated access in flight (an MMIO exit) the vCPU is reported
// preempted in the middle of the instruction (B5; the trace is
// testdata/pvflush/host2017-user-exit.trace.json), and with emulation
// taken away the put at the exit, the entry's record_steal_time and its
// write-back of the host copy lose the flush an initiator deferred (B4).
func TestHost2017UserExits(t *testing.T) {
	p := model.Params{"host": 1, "preemptions": 0, "user-exits": 1}
	r := bfs(t, instantiate(t, "fixed", p))
	if r.Violation == nil || r.Violation.Property != PreemptedNotRunning || len(r.Schedule) != 2 ||
		!strings.Contains(r.Labels[1], "KVM_EXIT_MMIO") {
		t.Errorf("fixed host=1 preemptions=0 user-exits=1: %s in %d steps, want preempted-not-running in 2 at the MMIO exit", r, len(r.Schedule))
	}
	r = bfs(t, build(t, "fixed", p, func(m *machine) { withoutBS1(m); m.noEmulation = true }))
	if r.Violation == nil || r.Violation.Property != StaleTLB || len(r.Schedule) != 19 {
		t.Fatalf("fixed host=1 preemptions=0 user-exits=1, no emulation, without B-S1: %s in %d steps, want stale-tlb in 19", r, len(r.Schedule))
	}
	all := strings.Join(r.Labels, "\n")
	for _, s := range []string{
		"VM exit to userspace (KVM_EXIT_INTR, at_instruction_boundary = true); kvm_arch_vcpu_ioctl_run returns -> vcpu_put -> kvm_arch_vcpu_put -> kvm_steal_time_set_preempted: vcpu->arch.st.steal.preempted = 1; kvm_write_guest_offset_cached: store st[1].preempted = 1",
		"KVM_RUN: kvm_arch_vcpu_ioctl_run -> vcpu_load -> kvm_arch_vcpu_load: kvm_make_request(KVM_REQ_STEAL_UPDATE)",
		"vcpu_enter_guest -> record_steal_time: kvm_read_guest_cached: host copy st.steal.preempted = 1; xchg(host copy, 0)",
		"kvm_flush_tlb_others: cmpxchg st[1].preempted 1->3 ok, skip vCPU1",
		"record_steal_time: kvm_write_guest_cached (write 1 of 3, version): st[1].preempted = 0 (host copy)",
		"guest: read X through TLB entry X->P0",
	} {
		if !strings.Contains(all, s) {
			t.Errorf("the counterexample lacks %q:\n%s", s, all)
		}
	}
}

// On the fixed host (54aa83c90198) a return to userspace reports nothing:
// the same size explores clean, and no put at a return stores the byte.
func TestFixedHostUserExitReportsNothing(t *testing.T) {
	m := instantiate(t, "fixed", model.Params{"preemptions": 0, "user-exits": 2, "vcpus": 2})
	labels := reachableLabels(m)
	exits := filter(labels, "kvm_arch_vcpu_put")
	if len(exits) == 0 {
		t.Fatal("no return to userspace reached")
	}
	for _, l := range exits {
		if !strings.Contains(l, "vcpu->preempted is false, steal_time not touched") {
			t.Errorf("a return to userspace on the fixed host: %q", l)
		}
	}
	if r := bfs(t, m); r.Violation != nil {
		t.Errorf("fixed preemptions=0 user-exits=2 vcpus=2: %s", r)
	}
}
