package pvflush

import (
	"fmt"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/model"
)

// pteOp is an operation on the PTE of page Page (X, or X0 and X1 with two
// initiators) seen as a register holding frame+1 (0: not present). The
// initiator's map is an instantaneous write; its unmap-and-flush is a
// write of 0 that is called when the PTE is cleared and returns when
// kvm_flush_tlb_others returns. A guest access is a read whose output is
// the translation it used, called and returned in one step.
//
// An access that finds X not present (a page fault) uses no translation
// and is not an operation. Recording it as a read of 0 would make correct
// executions non-linearizable: while a flush is in flight, one target may
// fault on the cleared PTE and another still legally read the old page
// through its TLB, and no single register shows 0 and then the old value
// again. With only translations as outputs, a read is linearizable iff it
// used a translation that was not yet unmapped-and-flushed: B-SAFE.
type pteOp struct {
	Page  int
	Write bool
	Value int // the value written
}

// pteRegs is the spec's state: one register per page.
type pteRegs [maxInitiators]int

var pteSpec = &model.Spec{
	Name: "page-table entries of the pages (one register each)",
	Model: porcupine.Model{
		Init: func() any { return pteRegs{1, 1} }, // Xk maps its frame 0
		Step: func(st, in, out any) (bool, any) {
			op, regs := in.(pteOp), st.(pteRegs)
			if op.Write {
				regs[op.Page] = op.Value
				return true, regs
			}
			if _, ok := out.(model.Pending); ok {
				return true, st
			}
			return out.(int) == regs[op.Page], st
		},
		DescribeOperation: func(in, out any) string {
			op := in.(pteOp)
			page := fmt.Sprintf("X%d", op.Page)
			if op.Write {
				if op.Value == 0 {
					return "unmap " + page + " and flush"
				}
				return fmt.Sprintf("map %s->frame %d", page, op.Value-1)
			}
			if v, ok := out.(int); ok {
				return fmt.Sprintf("access %s through frame %d", page, v-1)
			}
			return fmt.Sprintf("access %s (%v)", page, out)
		},
	},
}
