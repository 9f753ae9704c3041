package pvflush

import (
	"slices"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// defaultVerdicts is the variant table at the default size: every verdict
// is the explorer's, with exact state counts for the correct variants and
// the shortest counterexample's length for the buggy ones.
var defaultVerdicts = map[string]struct {
	states int64 // correct variants
	steps  int   // buggy variants: shortest counterexample
}{
	"posted":            {steps: 14},
	"shift-bug":         {steps: 14},
	"ignore-cmpxchg":    {states: 35191},
	"fixed":             {states: 35191},
	"native":            {states: 21592},
	"busy-wait":         {states: 35191},
	"host-clobber":      {steps: 18},
	"host-copy":         {steps: 15},
	"mid-instruction":   {steps: 2},
	"always-skip":       {steps: 14},
	"early-entry":       {steps: 4},
	"guest-plain-store": {steps: 8},
	"pt-free-page":      {steps: 15},
	"pt-free-rcu":       {states: 155653},
	"pt-free-native":    {states: 81423},
}

func TestVariantsAtDefaultSize(t *testing.T) {
	if len(defaultVerdicts) != len(Protocol.Variants) {
		t.Fatalf("%d variants, %d expectations", len(Protocol.Variants), len(defaultVerdicts))
	}
	for _, v := range Protocol.Variants {
		t.Run(v.Name, func(t *testing.T) {
			w, ok := defaultVerdicts[v.Name]
			if !ok {
				t.Fatalf("no expectation for %s", v.Name)
			}
			r := bfs(t, instantiate(t, v.Name, nil))
			if v.Expect == model.ExpectOK {
				if r.Verdict != explorer.OK || r.Stats.States != w.states {
					t.Fatalf("got %s, want ok with %d states", r, w.states)
				}
				return
			}
			if r.Violation == nil || r.Violation.Property != v.Expect {
				t.Fatalf("got %s, want a %s violation", r, v.Expect)
			}
			if len(r.Schedule) != w.steps {
				t.Errorf("counterexample has %d steps, want %d:\n%s", len(r.Schedule), w.steps, strings.Join(r.Labels, "\n"))
			}
		})
	}
}

// Without preempted-not-running, the variants that break it first still
// break stale-tlb (their AlsoViolates): B-S1 is the earlier symptom of the
// same bug, not a different one.
func TestBS1IsTheEarlierSymptom(t *testing.T) {
	want := map[string]int{"mid-instruction": 12, "early-entry": 14, "guest-plain-store": 14}
	for _, v := range Protocol.Variants {
		if v.Expect != PreemptedNotRunning {
			continue
		}
		r := bfs(t, build(t, v.Name, nil, withoutBS1))
		if r.Violation == nil || !slices.Contains(v.AlsoViolates, r.Violation.Property) || r.Violation.Property != StaleTLB {
			t.Errorf("%s without B-S1: %s, want stale-tlb", v.Name, r)
			continue
		}
		if len(r.Schedule) != want[v.Name] {
			t.Errorf("%s without B-S1: %d steps, want %d:\n%s", v.Name, len(r.Schedule), want[v.Name], strings.Join(r.Labels, "\n"))
		}
	}
}

// TestPostedCounterexample: the shortest trace of the seed as posted is
// Radim's first bug: cmpxchg sets bit 2, the host's xchg returns 5, tests
// bit 1 and does not flush. flag-shape does not fire on the way: 5 keeps
// PREEMPTED set next to the stray bit.
func TestPostedCounterexample(t *testing.T) {
	r := bfs(t, instantiate(t, "posted", nil))
	all := strings.Join(r.Labels, "\n")
	for _, s := range []string{
		"flush_tlb_mm_range: inc_mm_tlb_gen: mm->context.tlb_gen = 1 -> kvm_flush_tlb_others",
		"cmpxchg st[1].preempted 1->5 ok, skip vCPU1",
		"record_steal_time: xchg st[1].preempted 5->0",
		"kvm_flush_tlb_others returns; free_page(P0)",
		"guest: read X through TLB entry X->P0",
	} {
		if !strings.Contains(all, s) {
			t.Errorf("counterexample lacks %q:\n%s", s, all)
		}
	}
	if !strings.HasPrefix(r.Violation.Message, "vCPU1 read X through a TLB entry X->P0 cached before vCPU0's flush of X returned") {
		t.Errorf("message: %s", r.Violation.Message)
	}
}

// TestIgnoreCmpxchgLatent settles ignore-cmpxchg beyond the default size
// under sequential consistency. With two flush rounds a failed cmpxchg
// can return non-zero (vCPU0 read 3, left by its previous round; the host
// then entered, flushed and was preempted again: 1), the posted code skips
// the target, and the checker still proves stale-tlb: the flush the host
// did at that entry came after vCPU0's PTE change.
func TestIgnoreCmpxchgLatent(t *testing.T) {
	p := model.Params{"flushes": 2, "preemptions": 3}
	m := instantiate(t, "ignore-cmpxchg", p)
	labels := reachableLabels(m)
	const skip = "kvm_flush_tlb_others: cmpxchg st[1].preempted 3->3 failed (found 1), skip vCPU1 (flush deferred to the host)"
	if !labels[skip] {
		t.Fatalf("the non-zero failed cmpxchg is not reached; labels with \"failed\": %v", filter(labels, "failed"))
	}
	for l := range labels {
		if strings.Contains(l, "failed (found") && !strings.Contains(l, "found 0)") && !strings.Contains(l, "found 1)") {
			t.Errorf("unexpected failed cmpxchg: %s", l)
		}
	}
	r := bfs(t, m)
	if r.Verdict != explorer.OK || r.Stats.States != 174522 {
		t.Fatalf("got %s, want ok with 174522 states", r)
	}
	// The contrast: skipping whatever cmpxchg returned is a real bug.
	if r := bfs(t, instantiate(t, "always-skip", p)); r.Violation == nil || r.Violation.Property != StaleTLB {
		t.Fatalf("always-skip: got %s, want stale-tlb", r)
	}
}

// TestFlagValues: the correct variants keep every steal_time byte in
// {0, 1, 3} (the strict form of B-S2), checked as an extra invariant,
// with one and with two initiators.
func TestFlagValues(t *testing.T) {
	for _, c := range []struct {
		variant string
		p       model.Params
	}{
		{"fixed", model.Params{"flushes": 2}}, {"ignore-cmpxchg", model.Params{"flushes": 2}}, {"native", model.Params{"flushes": 2}},
		{"fixed", model.Params{"initiators": 2, "vcpus": 2, "flushes": 2}}, {"fixed", model.Params{"host": 1, "vcpus": 2}},
	} {
		m := build(t, c.variant, c.p, func(m *machine) {
			if m.host2017 {
				withoutBS1(m)
			}
			m.props.Invariants = append(slices.Clip(m.props.Invariants), model.Invariant{Name: "abi-values", Check: func(ms model.State) string {
				s := ms.(*state)
				for u := 0; u < m.n; u++ {
					if m.stAddr[u] < 0 {
						continue
					}
					if b := s.mem.Peek(m.stAddr[u]); b != 0 && b != 1 && b != 3 {
						return "st.preempted not in {0,1,3}"
					}
				}
				return ""
			}})
		})
		r := bfs(t, m)
		if r.Violation != nil && r.Violation.Property == "abi-values" {
			t.Errorf("%s %v: %s", c.variant, c.p, r)
		}
	}
}

func TestInvariantMessages(t *testing.T) {
	m := instantiate(t, "fixed", nil)
	s := m.Init().(*state)
	if msg := m.flagShape(s); msg != "" {
		t.Fatalf("initial state: %s", msg)
	}
	if msg := m.preemptedNotRunning(s); msg != "" {
		t.Fatalf("initial state: %s", msg)
	}
	s.mem.Init(m.stAddr[2], kvmVCPUFlushTLB)
	want := "st[2].preempted = 2: FLUSH_TLB is set but PREEMPTED is not, so vCPU2's host will never see the flush request"
	if msg := m.flagShape(s); msg != want {
		t.Fatalf("got %q, want %q", msg, want)
	}
	s.mem.Init(m.stAddr[2], kvmVCPUPreempted)
	want = "st[2].preempted = 1 while vCPU2 runs in guest mode: an initiator reading it defers vCPU2's flush to an entry that has already happened"
	if msg := m.preemptedNotRunning(s); msg != want {
		t.Fatalf("got %q, want %q", msg, want)
	}
	s.v[2].mode, s.v[2].inflight = modeDesched, 0
	want = "st[2].preempted = 1 while vCPU2 is in the middle of an emulated instruction (translation X->P0 in flight): a deferred flush comes after the access it should precede"
	if msg := m.preemptedNotRunning(s); msg != want {
		t.Fatalf("got %q, want %q", msg, want)
	}
}

func TestParams(t *testing.T) {
	if _, err := Protocol.Resolve(model.Params{"vcpus": 0}); err == nil {
		t.Error("vcpus=0 accepted")
	}
	if _, err := Protocol.Resolve(model.Params{"vcpus": maxVCPUs + 1}); err == nil {
		t.Error("vcpus above the array size accepted")
	}
	if _, err := Protocol.Resolve(model.Params{"initiators": 3}); err == nil {
		t.Error("initiators=3 accepted")
	}
	p, err := Protocol.Resolve(nil)
	if err != nil || p.String() != "accesses=2 flushes=1 host=0 initiators=1 memory=0 preemptions=2 pte-clear=0 user-exits=0 vcpus=3" {
		t.Fatalf("defaults: %v %v", p, err)
	}
	if _, _, err := Protocol.Instantiate("nope", nil); err == nil {
		t.Error("unknown variant accepted")
	}
	if _, _, err := Protocol.Instantiate("pt-free-rcu", model.Params{"vcpus": 2, "initiators": 2}); err == nil || !strings.Contains(err.Error(), "walker") {
		t.Errorf("a walker without a vCPU to run on: %v", err)
	}
	if _, _, err := Protocol.Instantiate("fixed", model.Params{"vcpus": 2, "initiators": 2}); err != nil {
		t.Errorf("two initiators, each the other's target: %v", err)
	}
}

// TestSmallest: two vCPUs (one target) is the minimal configuration
// expected to reach the known counterexamples (B2(a) also needs a second
// flush).
func TestSmallest(t *testing.T) {
	if r := bfs(t, instantiate(t, "fixed", model.Params{"vcpus": 2})); r.Verdict != explorer.OK {
		t.Fatalf("fixed: %s", r)
	}
	if r := bfs(t, instantiate(t, "host-clobber", model.Params{"vcpus": 2})); r.Violation == nil || r.Violation.Property != StaleTLB {
		t.Fatalf("host-clobber: %s", r)
	}
}
