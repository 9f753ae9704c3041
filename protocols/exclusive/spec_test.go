package exclusive

import (
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/model"
)

func op(client int, in, out any, call, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
}

// The spec rejects a stay in cpu_exec that sees an exclusive section's
// bump, accepts the same stay when it is ordered around the section, and
// accepts pending operations whatever they did.
func TestSpec(t *testing.T) {
	excl := op(clientExclusive, exclusiveOp{Thread: "vcpu0", Gen: 0}, 1, 2, 5)
	cases := []struct {
		name string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"exec sees two generations", []porcupine.Operation{excl, op(1, execOp{CPU: 1, Gen: 0}, 1, 1, 6)}, false},
		{"exec before the section", []porcupine.Operation{excl, op(1, execOp{CPU: 1, Gen: 0}, 0, 0, 1)}, true},
		{"exec after the section", []porcupine.Operation{excl, op(1, execOp{CPU: 1, Gen: 1}, 1, 6, 7)}, true},
		{"two sections overlap", []porcupine.Operation{excl, op(clientExclusive+1, exclusiveOp{Thread: "vcpu1", Gen: 0}, 1, 3, 4)}, false},
		{"pending section, then exec", []porcupine.Operation{
			op(clientExclusive, exclusiveOp{Thread: "vcpu0", Gen: 0}, model.Pending{}, 2, 9),
			op(1, execOp{CPU: 1, Gen: 1}, 1, 6, 7)}, true},
		{"pending exec", []porcupine.Operation{excl, op(1, execOp{CPU: 1, Gen: 0}, model.Pending{}, 1, 9)}, true},
		{"run_on_cpu ran once", []porcupine.Operation{op(clientRunOnCPU+1, rocOp{Item: "wi1"}, 1, 0, 3)}, true},
		{"run_on_cpu returned early", []porcupine.Operation{op(clientRunOnCPU+1, rocOp{Item: "wi1"}, 0, 0, 3)}, false},
	}
	for _, c := range cases {
		if got := model.CheckHistory(spec, c.ops) == nil; got != c.ok {
			t.Errorf("%s: linearizable=%v, want %v", c.name, got, c.ok)
		}
	}
}
