package cputlb

import (
	"fmt"
	"testing"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

// TestEncodingRoundTrips: along random executions of every variant, each
// at one size (one to three targets, one to three accesses), every state
// round-trips through its encoding and steps the same (successor and
// label) from a decoded copy as from itself, so the encoding misses
// nothing a step reads.
func TestEncodingRoundTrips(t *testing.T) {
	sizes := map[string]model.Params{
		"synced":           {"cpus": maxCPUs, "accesses": 2},
		"synced-no-bql":    {"cpus": 3, "accesses": 3},
		"non-synced":       {"cpus": 2, "accesses": 1},
		"synced-no-tb-end": {"cpus": 3, "accesses": 1},
		"no-kick":          {"cpus": maxCPUs, "accesses": 3},
	}
	for _, v := range Protocol.Variants {
		p := sizes[v.Name]
		m, _, err := Protocol.Instantiate(v.Name, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%s/cpus=%d,accesses=%d", v.Name, p["cpus"], p["accesses"]), func(t *testing.T) {
			modeltest.RoundTrip(t, m, 200)
		})
	}
}

// TestKeySize pins the size of an encoding: the memory's words (one byte
// each, the values are small), then per vCPU 14 bytes of state, 2 of
// cpu->lock and 8 of halt_cond (with a length byte per slice), then the
// two global mutexes and condition variables and the observer.
func TestKeySize(t *testing.T) {
	for n := 2; n <= maxCPUs; n++ {
		m, _, err := Protocol.Instantiate("synced", model.Params{"cpus": n})
		if err != nil {
			t.Fatal(err)
		}
		want := (2 + 3*n) + 3 + n*(14+2+8) + 2*2 + 2*8 + 1
		if got := len(m.Init().AppendKey(nil)); got != want {
			t.Errorf("cpus=%d: key of %d bytes, want %d", n, got, want)
		}
	}
}
