package pvflush

import (
	"fmt"
	"slices"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"pgregory.net/rapid"
)

// TestEncodingRoundTrips: along random executions at the largest
// parameter values (every packed field at its widest), under both memory
// models, decoding a state's key into a fresh state gives the same key and
// the same variables, so the packing of state.go loses nothing; under
// sequential consistency the key is one byte per word plus the packed
// initiator and targets.
func TestEncodingRoundTrips(t *testing.T) {
	for _, mem := range []int{0, 1} {
		for _, v := range []string{"fixed", "posted", "host-copy", "early-entry", "native"} {
			p := model.Params{"vcpus": maxVCPUs, "flushes": 4, "preemptions": 8, "accesses": 6, "memory": mem, "pte-clear": mem}
			m, _, err := Protocol.Instantiate(v, p)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("%s/memory=%d", v, mem), func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) {
					x := newExec(m)
					s := m.Init()
					for i := 0; i < 400; i++ {
						key := s.AppendKey(nil)
						back := m.Init()
						if err := back.Decode(key); err != nil {
							rt.Fatalf("step %d: %v", i, err)
						}
						if got := back.AppendKey(nil); string(got) != string(key) {
							rt.Fatalf("step %d: key %x decodes to %x", i, key, got)
						}
						if !slices.Equal(back.Vars(), s.Vars()) {
							rt.Fatalf("step %d: variables differ after decoding:\n%s\n%s", i, model.Describe(s), model.Describe(back))
						}
						if mem == 0 && len(key) != maxVCPUs+initiatorBytes+targetBytes*(maxVCPUs-1) {
							rt.Fatalf("step %d: a key of %d bytes", i, len(key))
						}
						en := explorer.Enabled(m, s)
						if len(en) == 0 {
							break
						}
						c := en[rapid.IntRange(0, len(en)-1).Draw(rt, "choice")]
						s = successor(m, s, c, x)
					}
					if err := m.Init().Decode([]byte{1, 2, 3}); err == nil {
						rt.Fatalf("a truncated key decodes")
					}
				})
			})
		}
	}
}
