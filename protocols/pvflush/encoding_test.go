package pvflush

import (
	"fmt"
	"testing"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

// TestEncodingRoundTrips: along random executions at the largest
// parameter values (every packed field at its widest), under both memory
// models, every state round-trips through its encoding and steps the same
// from a decoded copy, so the packing of state.go loses nothing.
func TestEncodingRoundTrips(t *testing.T) {
	for _, mem := range []int{0, 1} {
		for _, v := range []string{"fixed", "posted", "host-copy", "early-entry", "native"} {
			p := model.Params{"vcpus": maxVCPUs, "flushes": 4, "preemptions": 8, "accesses": 6, "memory": mem, "pte-clear": mem}
			m, _, err := Protocol.Instantiate(v, p)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("%s/memory=%d", v, mem), func(t *testing.T) { modeltest.RoundTrip(t, m, 400) })
		}
	}
}

// TestKeySize: under sequential consistency a key is one byte per memory
// word (every value is below 128) plus the packed initiator and targets:
// 17 bytes at the benchmark's vcpus=4, in every state.
func TestKeySize(t *testing.T) {
	m := instantiate(t, "fixed", model.Params{"vcpus": 4})
	for i, s := range reachableStates(instantiate(t, "fixed", nil)) {
		if n := len(s.AppendKey(nil)); n != 3+initiatorBytes+2*targetBytes {
			t.Fatalf("state %d at vcpus=3: a key of %d bytes", i, n)
		}
	}
	if n := len(m.Init().AppendKey(nil)); n != 17 {
		t.Fatalf("vcpus=4: a key of %d bytes, want 17", n)
	}
}
