package pvflush

import (
	"fmt"
	"testing"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

// TestEncodingRoundTrips: along random executions at the largest
// parameter values (every packed field at its widest), under both memory
// models, with one and two initiators, both hosts and the walker, every
// state round-trips through its encoding and steps the same from a
// decoded copy, so the packing of state.go loses nothing.
func TestEncodingRoundTrips(t *testing.T) {
	for _, c := range []struct {
		variant string
		p       model.Params
	}{
		{"posted", nil}, {"early-entry", nil}, {"busy-wait", nil},
		{"host-copy", model.Params{"memory": 1, "pte-clear": 1}},
		{"pt-free-rcu", model.Params{"initiators": 2}},
		{"fixed", model.Params{"initiators": 2, "host": 1, "memory": 1, "pte-clear": 2}},
	} {
		p := model.Params{"vcpus": maxVCPUs, "flushes": 4, "preemptions": 8, "accesses": 6}
		for k, v := range c.p {
			p[k] = v
		}
		m, _, err := Protocol.Instantiate(c.variant, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%s/%v", c.variant, p), func(t *testing.T) { modeltest.RoundTrip(t, m, 60) })
	}
}

// TestKeySize: under sequential consistency a key is one byte per memory
// word (every value is below 128) plus the packed globals, initiators and
// vCPUs, in every state.
func TestKeySize(t *testing.T) {
	for _, c := range []struct {
		p    model.Params
		want int
	}{
		{nil, 4 + 8},                            // pte, tlb_gen, st[1], st[2]; 7+19+2*18 bits
		{model.Params{"vcpus": 4}, 5 + 10},      // 7+19+3*18 bits: the benchmark's size
		{model.Params{"initiators": 2}, 6 + 15}, // two ptes, tlb_gen, three bytes; 10+2*19+3*24 bits
	} {
		m := instantiate(t, "fixed", c.p)
		small := with(c.p, "accesses", 1, "preemptions", 1)
		if c.p["initiators"] == 2 {
			small["accesses"] = 0
		}
		for i, s := range reachableStates(instantiate(t, "fixed", small)) {
			if n := len(s.AppendKey(nil)); n != c.want {
				t.Fatalf("%v: state %d has a key of %d bytes, want %d", c.p, i, n, c.want)
			}
		}
		if n := len(m.Init().AppendKey(nil)); n != c.want {
			t.Fatalf("%v: a key of %d bytes, want %d", c.p, n, c.want)
		}
	}
}
