package pvflush

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

func instantiate(t *testing.T, variant string, p model.Params) *machine {
	t.Helper()
	m, _, err := Protocol.Instantiate(variant, p)
	if err != nil {
		t.Fatal(err)
	}
	return m.(*machine)
}

func bfs(t *testing.T, m model.Machine) *explorer.Result {
	t.Helper()
	r, err := explorer.Explore(m, explorer.Options{Strategy: explorer.BFS})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestVariantsAtDefaultSize is the variant table: every verdict is the
// explorer's, with exact state counts for the correct variants and the
// shortest counterexample's length for the buggy ones.
func TestVariantsAtDefaultSize(t *testing.T) {
	want := map[string]struct {
		states int64 // correct variants
		steps  int   // buggy variants: shortest counterexample
	}{
		"posted":            {steps: 13},
		"shift-bug":         {steps: 13},
		"ignore-cmpxchg":    {states: 36056},
		"fixed":             {states: 36056},
		"native":            {states: 19267},
		"host-clobber":      {steps: 17},
		"host-copy":         {steps: 14},
		"mid-instruction":   {steps: 11},
		"always-skip":       {steps: 13},
		"early-entry":       {steps: 13},
		"guest-plain-store": {steps: 13},
	}
	if len(want) != len(Protocol.Variants) {
		t.Fatalf("%d variants, %d expectations", len(Protocol.Variants), len(want))
	}
	for _, v := range Protocol.Variants {
		t.Run(v.Name, func(t *testing.T) {
			w, ok := want[v.Name]
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

// TestPostedCounterexample: the shortest trace of the seed as posted is
// Radim's first bug: cmpxchg sets bit 2, the host's xchg returns 5, tests
// bit 1 and does not flush. flag-shape does not fire on the way: 5 keeps
// PREEMPTED set next to the stray bit.
func TestPostedCounterexample(t *testing.T) {
	r := bfs(t, instantiate(t, "posted", nil))
	if len(r.Schedule) > 25 {
		t.Fatalf("posted counterexample has %d steps, want at most 25", len(r.Schedule))
	}
	all := strings.Join(r.Labels, "\n")
	for _, s := range []string{
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

// TestIgnoreCmpxchgLatent settles ignore-cmpxchg beyond the default size.
// With two flush rounds a failed cmpxchg can return non-zero (vCPU0 read
// 3, left by its previous round; the host then entered, flushed and was
// preempted again: 1), the posted code skips the target, and the checker
// still proves stale-tlb: the flush the host did at that entry came after
// vCPU0's PTE change.
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
	if r.Verdict != explorer.OK || r.Stats.States != 213421 {
		t.Fatalf("got %s, want ok with 213421 states", r)
	}
	// The contrast: skipping whatever cmpxchg returned is a real bug.
	if r := bfs(t, instantiate(t, "always-skip", p)); r.Violation == nil || r.Violation.Property != StaleTLB {
		t.Fatalf("always-skip: got %s, want stale-tlb", r)
	}
}

// TestFlagValues: the correct variants keep every steal_time byte in
// {0, 1, 3} (the strict form of B-S2), checked as an extra invariant.
func TestFlagValues(t *testing.T) {
	for _, v := range []string{"fixed", "ignore-cmpxchg", "native"} {
		m := strictFlags{instantiate(t, v, model.Params{"flushes": 2})}
		if r := bfs(t, m); r.Verdict != explorer.OK {
			t.Errorf("%s: %s", v, r)
		}
	}
}

type strictFlags struct{ *machine }

func (s strictFlags) Properties() model.Properties {
	p := s.machine.Properties()
	p.Invariants = append(slices.Clip(p.Invariants), model.Invariant{Name: "abi-values", Check: func(ms model.State) string {
		st := ms.(*state)
		for t := 1; t < s.n; t++ {
			if b := st.mem.Peek(stAddr(t)); b != 0 && b != 1 && b != 3 {
				return "st.preempted not in {0,1,3}"
			}
		}
		return ""
	}})
	return p
}

func TestFlagShapeMessage(t *testing.T) {
	m := instantiate(t, "fixed", nil)
	s := m.Init().(*state)
	if msg := m.flagShape(s); msg != "" {
		t.Fatalf("initial state: %s", msg)
	}
	s.mem.Init(stAddr(2), kvmVCPUFlushTLB)
	want := "st[2].preempted = 2: FLUSH_TLB is set but PREEMPTED is not, so vCPU2's host will never see the flush request"
	if msg := m.flagShape(s); msg != want {
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
	p, err := Protocol.Resolve(nil)
	if err != nil || p.String() != "accesses=2 flushes=1 memory=0 preemptions=2 pte-clear=0 vcpus=3" {
		t.Fatalf("defaults: %v %v", p, err)
	}
	if _, _, err := Protocol.Instantiate("nope", nil); err == nil {
		t.Error("unknown variant accepted")
	}
}

// TestSmallest: two vCPUs (one target) is the minimal configuration of
// pvflush.md Appendix C note 5.
func TestSmallest(t *testing.T) {
	if r := bfs(t, instantiate(t, "fixed", model.Params{"vcpus": 2})); r.Verdict != explorer.OK {
		t.Fatalf("fixed: %s", r)
	}
	if r := bfs(t, instantiate(t, "host-clobber", model.Params{"vcpus": 2})); r.Violation == nil || r.Violation.Property != StaleTLB {
		t.Fatalf("host-clobber: %s", r)
	}
}

// newExec returns an Exec for running m's steps by hand.
func newExec(m model.Machine) *model.Exec {
	x := model.NewExec(len(m.Properties().Metrics))
	x.SetThreadNames(m.Threads())
	return x
}

// successor runs choice c on a copy of s with labels and events on, and
// returns the successor; x then holds the step's record.
func successor(m model.Machine, s model.State, c model.Choice, x *model.Exec) model.State {
	n := model.Clone(m, s)
	x.SetModes(true, true)
	x.Reset(c.Thread, c.Alt)
	m.Step(n, c.Thread, x)
	return n
}

func reachableLabels(m model.Machine) map[string]bool {
	init := m.Init()
	seen := map[string]bool{string(init.AppendKey(nil)): true}
	out := map[string]bool{}
	queue := []model.State{init}
	x := newExec(m)
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, c := range explorer.Enabled(m, s) {
			n := successor(m, s, c, x)
			out[x.StepLabel()] = true
			if k := string(n.AppendKey(nil)); !seen[k] {
				seen[k] = true
				queue = append(queue, n)
			}
		}
	}
	return out
}

func filter(labels map[string]bool, sub string) []string {
	var out []string
	for l := range labels {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}
