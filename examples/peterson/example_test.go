package peterson_test

import (
	"fmt"

	"github.com/protocheck/protocheck/examples/peterson"
	"github.com/protocheck/protocheck/explorer"
)

// Peterson's lock: safety under SC and x86-TSO, with and without the
// fence, and progress (liveness) under weak fairness.
func Example() {
	for _, c := range []struct {
		name           string
		or, tso, fence bool
		fairness       string
	}{
		{"sc", false, false, false, ""},
		{"sc, no fairness", false, false, false, explorer.FairnessNone},
		{"sc, ||", true, false, false, ""},
		{"tso", false, true, false, ""},
		{"tso, fence", false, true, true, ""},
	} {
		r, err := explorer.Explore(peterson.Lock(c.or, c.tso, c.fence), explorer.Options{Fairness: c.fairness})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s\n", c.name, r)
	}
	// Output:
	// sc: ok: 40 states, 80 transitions, depth 8
	// sc, no fairness: violation: 40 states, 80 transitions, depth 8; P0-enters: never discharged: steps 4 to 5 repeat forever with it pending throughout (without fairness; stepping in the cycle: P0)
	// sc, ||: violation: 20 states, 40 transitions, depth 7; P0-enters: never discharged: steps 5 to 6 repeat forever with it pending throughout (a fair cycle: every thread that could step throughout it steps in it; stepping in the cycle: P0, P1)
	// tso: violation: 141 states, 296 transitions, depth 8; mutual-exclusion: both threads are in the critical section
	// tso, fence: ok: 78 states, 200 transitions, depth 10
}
