package exclusive

import (
	"flag"
	"fmt"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/claimtest"
	"github.com/protocheck/protocheck/model"
)

var runMatrix = flag.Bool("matrix", false, "explore every variant at every configuration of the verification matrix (about 2 minutes on two cores)")

// TestMatrix explores every variant exhaustively at every configuration
// of Protocol.Matrix and compares the verdict with the expected one, as
// verification does. It is the heavy part of the suite, run with -matrix.
func TestMatrix(t *testing.T) {
	if !*runMatrix {
		t.Skip("the verification matrix runs with -matrix")
	}
	for _, c := range Protocol.Matrix {
		for _, v := range Protocol.Variants {
			if !c.Covers(v.Name) {
				continue
			}
			t.Run(fmt.Sprintf("%s/%v", v.Name, c.Params), func(t *testing.T) {
				m, params, err := Protocol.Instantiate(v.Name, c.Params)
				if err != nil {
					t.Fatal(err)
				}
				r, err := explorer.Explore(m, explorer.Options{Workers: 2})
				if err != nil {
					t.Fatal(err)
				}
				found := model.ExpectOK
				switch {
				case r.Verdict == explorer.Violation:
					found = r.Violation.Property
				case r.Verdict != explorer.OK || len(r.Unchecked) > 0:
					t.Fatalf("%v: not exhaustive: %s %v", params, r, r.Unchecked)
				}
				expect, also := c.Expected(v)
				ok := found == expect
				for _, p := range also {
					ok = ok || found == p
				}
				if !ok {
					t.Errorf("%v: found %s, expected %s: %s", params, found, expect, r)
				}
				t.Logf("%v: %s, %d states, %d transitions, trace %d", params, found, r.Stats.States, r.Stats.Transitions, len(r.Schedule))
			})
		}
	}
}

// Every claim holds: the two variants explored exhaustively at the
// claim's configuration, the metric summarised over every complete
// execution and judged by the claim's Holds.
func TestClaims(t *testing.T) { claimtest.Hold(t, Protocol, nil) }
