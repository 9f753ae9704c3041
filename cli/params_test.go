package cli_test

import (
	"slices"
	"testing"

	"github.com/protocheck/protocheck/protocols"
)

// The parameters whose minimum is a value of its own rather than the
// smallest size are marked model.Param.Sentinel, so that the minimizer
// never reports a counterexample "at a smaller size" that is larger
// (traces.TestMinimizeNeverShrinksToASentinel); the others are sizes or
// bounds whose minimum is the least of them.
func TestSentinelParametersAreMarked(t *testing.T) {
	want := []string{
		"batchunmap/syscall", // 0: every program in turn
		"batchunmap/width",   // 0: the variant's own width
		"e500mc/scenario",    // 0: the general exploration, not the seed's workload
		"exclusive/tbs",      // 0: the guests never halt
	}
	var got []string
	for _, p := range protocols.Registry().Protocols {
		for _, q := range p.Params {
			if q.Sentinel {
				got = append(got, p.Name+"/"+q.Name)
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("sentinel parameters %v, want %v", got, want)
	}
}
