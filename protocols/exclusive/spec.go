package exclusive

import (
	"fmt"
	"math/bits"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/model"
)

// The sequential specification (an execution object: guest execution
// reads a generation that only exclusive sections bump). The
// object is one counter, the generation:
//
//   - an exclusive section (client clientExclusive+thread) reads the
//     generation when it starts and leaves it one higher when it ends: it
//     must appear atomic, so it returns start+1;
//   - a stay of CPU c in cpu_exec (client c) reads the generation when it
//     enters and when it leaves: atomic means both reads agree;
//   - a run_on_cpu call (client clientRunOnCPU+item) returns how many times
//     its func ran, which must be once.
//
// The spec's state is the set of generations the object may hold (a bit
// mask), so that an operation still pending at the end of an execution,
// whose effect may or may not have happened, is accepted: a pending
// section may or may not have bumped the generation.

// Client ids of the three kinds of operations.
const (
	clientExclusive = 8
	clientRunOnCPU  = 16
)

// execOp is the input of a stay in cpu_exec: the generation on entry.
type execOp struct {
	CPU int
	Gen int
}

// exclusiveOp is the input of an exclusive section: the generation at its
// start.
type exclusiveOp struct {
	Thread string
	Gen    int
}

// rocOp is the input of a run_on_cpu call.
type rocOp struct{ Item string }

func specStep(st, in, out any) (bool, any) {
	gens := st.(uint64)
	_, pending := out.(model.Pending)
	switch op := in.(type) {
	case execOp:
		if pending {
			return true, gens
		}
		g := out.(int)
		if g != op.Gen || gens&(1<<uint(g)) == 0 {
			return false, gens
		}
		return true, uint64(1) << uint(g)
	case exclusiveOp:
		if pending {
			return true, gens | gens<<1
		}
		g := out.(int)
		if g != op.Gen+1 || gens&(1<<uint(op.Gen)) == 0 {
			return false, gens
		}
		return true, uint64(1) << uint(g)
	case rocOp:
		return pending || out.(int) == 1, gens
	}
	return false, gens
}

func describeOp(in, out any) string {
	switch op := in.(type) {
	case execOp:
		return fmt.Sprintf("cpu%d in cpu_exec: generation %d on entry, %v on exit", op.CPU, op.Gen, out)
	case exclusiveOp:
		return fmt.Sprintf("%s's exclusive section: generation %d at start, %v at end", op.Thread, op.Gen, out)
	case rocOp:
		return fmt.Sprintf("run_on_cpu(%s): func ran %v times", op.Item, out)
	}
	return fmt.Sprintf("%v -> %v", in, out)
}

func describeGens(st any) string {
	gens := st.(uint64)
	var out []int
	for g := gens; g != 0; g &= g - 1 {
		out = append(out, bits.TrailingZeros64(g))
	}
	return fmt.Sprintf("generation in %v", out)
}

var spec = &model.Spec{
	Name: "generation counter bumped only by atomic exclusive sections",
	Model: porcupine.Model{
		Init:              func() any { return uint64(1) },
		Step:              specStep,
		DescribeOperation: describeOp,
		DescribeState:     describeGens,
	},
}
