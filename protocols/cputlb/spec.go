package cputlb

import (
	"fmt"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/model"
)

// The sequential specification: a page X_s's mapping, in three states
// (each source's page is checked on its own). The
// source's PTE clear is an instantaneous operation (X is cleared: mapped
// -> cleared); its broadcast invalidate is a second operation that starts
// in the same step and completes when the source executes its next
// instruction (cleared -> flushed). Each guest access to X by a target is
// a read that returns "mapped" (it translated X->P), allowed until the
// invalidate takes effect, or "fault", allowed once the PTE is clear. A
// read that starts after the invalidate completed and still sees the
// mapping has no linearization.
//
// Why not one register write: while the invalidate is in progress one
// target may already have flushed and fault while another, not yet
// flushed, legally still hits X->P; no single register order explains
// both (a random walk at cpus=3 finds such a history). Between the clear
// and the end of the invalidate both outcomes are legal, which the middle
// state says.

// The operations name the page they act on (the source's index): with two
// sources the history is checked per page (the model's Partition).
type clearPTE struct{ page int }
type invalidate struct{ page int }
type access struct{ page int }

// result is an operation's output.
type result string

// xState is the specification's state of page X.
type xState int

const (
	xMapped xState = iota
	xCleared
	xFlushed
)

const (
	mapped result = "X->P"
	fault  result = "page fault"
	done   result = "done"
)

func (o clearPTE) String() string   { return "clear pte(" + pageNames[o.page] + ")" }
func (o invalidate) String() string { return "tlbi(" + pageNames[o.page] + ")" }
func (o access) String() string     { return "load(" + pageNames[o.page] + ")" }

// pageOf is the page an operation acts on.
func pageOf(in interface{}) int {
	switch o := in.(type) {
	case clearPTE:
		return o.page
	case invalidate:
		return o.page
	case access:
		return o.page
	}
	return 0
}

// spec is the page-mapping register specification.
var spec = &model.Spec{
	Name: "page mapping register (broadcast invalidate = write, guest access = read)",
	Model: porcupine.Model{
		Init: func() interface{} { return xMapped },
		Step: func(st, in, out interface{}) (bool, interface{}) {
			x := st.(xState)
			_, pending := out.(model.Pending)
			switch in.(type) {
			case clearPTE:
				return x == xMapped && (pending || out == done), xCleared
			case invalidate:
				return x == xCleared && (pending || out == done), xFlushed
			}
			switch out {
			case mapped:
				return x != xFlushed, x
			case fault:
				return x != xMapped, x
			}
			return pending, x
		},
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			var parts [maxSources][]porcupine.Operation
			for _, op := range history {
				p := pageOf(op.Input)
				parts[p] = append(parts[p], op)
			}
			var out [][]porcupine.Operation
			for _, part := range parts {
				if len(part) > 0 {
					out = append(out, part)
				}
			}
			return out
		},
		DescribeOperation: func(in, out interface{}) string {
			return fmt.Sprintf("%v -> %v", in, out)
		},
		DescribeState: func(st interface{}) string {
			return [...]string{"X->P", "pte(X) clear, TLBs may still map X", "X unmapped and flushed"}[st.(xState)]
		},
	},
}
