package pvflush

import (
	"fmt"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/model"
)

// pteOp is an operation on the PTE of X seen as a register holding frame+1
// (0: not present). vCPU0's map is an instantaneous write; its
// unmap-and-flush is a write of 0 that is called when the PTE is cleared
// and returns when kvm_flush_tlb_others returns. A guest access is a read
// whose output is the translation it used, called and returned in one
// step.
//
// An access that finds X not present (a page fault) uses no translation
// and is not an operation. Recording it as a read of 0 would make correct
// executions non-linearizable: while a flush is in flight, one target may
// fault on the cleared PTE and another still legally read the old page
// through its TLB, and no single register shows 0 and then the old value
// again. With only translations as outputs, a read is linearizable iff it
// used a translation that was not yet unmapped-and-flushed: B-SAFE.
type pteOp struct {
	Write bool
	Value int // the value written
}

var pteSpec = &model.Spec{
	Name: "page-table entry of X (a register)",
	Model: porcupine.Model{
		Init: func() any { return 1 }, // X maps P0
		Step: func(st, in, out any) (bool, any) {
			op := in.(pteOp)
			if op.Write {
				return true, op.Value
			}
			if _, ok := out.(model.Pending); ok {
				return true, st
			}
			return out.(int) == st.(int), st
		},
		DescribeOperation: func(in, out any) string {
			op := in.(pteOp)
			if op.Write {
				if op.Value == 0 {
					return "unmap X and flush"
				}
				return fmt.Sprintf("map %s", pteName(uint64(op.Value)))
			}
			if v, ok := out.(int); ok {
				return fmt.Sprintf("access X through %s", pteName(uint64(v)))
			}
			return fmt.Sprintf("access X (%v)", out)
		},
	},
}
