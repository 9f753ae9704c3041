package pvflush

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/schedtest"
	"github.com/protocheck/protocheck/model"
	"pgregory.net/rapid"
)

// maxWalk bounds a walk; every execution at these sizes is shorter.
const maxWalk = 200

// TestRapidCorrect: the correct variants never fail on a schedule drawn
// by rapid, at a size above the default.
func TestRapidCorrect(t *testing.T) {
	for _, c := range []struct {
		v string
		p model.Params
	}{
		{"fixed", model.Params{"vcpus": 4, "flushes": 2, "preemptions": 3}},
		{"native", model.Params{"vcpus": 4, "flushes": 2, "preemptions": 3}},
		{"ignore-cmpxchg", model.Params{"vcpus": 4, "flushes": 2, "preemptions": 3}},
		{"fixed", model.Params{"vcpus": 4, "initiators": 2, "flushes": 2, "preemptions": 4}},
		{"pt-free-rcu", model.Params{"vcpus": 4, "flushes": 2, "preemptions": 3}},
	} {
		v := c.v
		m := instantiate(t, c.v, c.p)
		t.Run(fmt.Sprintf("%s/%v", v, c.p), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				w := schedtest.Walk(rt, m, maxWalk)
				if w.Violation != nil {
					rt.Fatalf("%s after %d steps: %v", w.Violation.Property, len(w.Schedule), w.Violation)
				}
				if !w.Terminal {
					rt.Fatalf("walk did not end within %d steps", maxWalk)
				}
			})
		})
	}
}

// TestRandomSchedulesFindBugs: a schedtest-like picker (0 = keep the
// current thread), fed by a seeded generator, finds every buggy variant's
// property within a bounded number of walks. Each variant gets its own
// stream, so the counts below are exact and reproducible.
func TestRandomSchedulesFindBugs(t *testing.T) {
	// The walk (1-based) that first fails, per variant: the B-S1
	// violations come early (a state, not a use, is enough), the rarest
	// bug needs both targets preempted around the reads (always-skip).
	want := map[string]int{
		"posted": 395, "shift-bug": 395, "host-clobber": 395, "host-copy": 188,
		"mid-instruction": 12, "always-skip": 2203, "early-entry": 5, "guest-plain-store": 22,
		"pt-free-page": 297,
	}
	for _, v := range Protocol.Variants {
		if v.Expect == model.ExpectOK {
			continue
		}
		m := instantiate(t, v.Name, nil)
		found := 0
		for i := 0; i < 200000 && found == 0; i++ {
			rng := rand.New(rand.NewPCG(3, uint64(i)))
			w := explorer.RunWalk(m, stickyPicker(rng), maxWalk)
			if w.Violation != nil {
				if w.Violation.Property != v.Expect {
					t.Fatalf("%s: walk %d found %v, want %s", v.Name, i, w.Violation, v.Expect)
				}
				found = i + 1
			}
		}
		if found != want[v.Name] {
			t.Errorf("%s: %s first found by walk %d, want %d (0: not in 200000 walks)", v.Name, v.Expect, found, want[v.Name])
		}
	}
}

// stickyPicker mirrors schedtest.Picker: draw 0 (continue the previous
// thread) half of the time, otherwise any enabled choice.
func stickyPicker(rng *rand.Rand) explorer.Picker {
	return func(en []model.Choice, prev int) model.Choice {
		if rng.IntN(2) == 0 {
			for _, c := range en {
				if c.Thread == prev {
					return c
				}
			}
		}
		return en[rng.IntN(len(en))]
	}
}
