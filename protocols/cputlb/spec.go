package cputlb

import (
	"fmt"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/model"
)

// The sequential specification: page X's mapping, in three states. The
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

type clearPTE struct{}
type invalidate struct{}
type access struct{}

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

func (clearPTE) String() string   { return "clear pte(X)" }
func (invalidate) String() string { return "tlbi(X)" }
func (access) String() string     { return "load(X)" }

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
		DescribeOperation: func(in, out interface{}) string {
			return fmt.Sprintf("%v -> %v", in, out)
		},
		DescribeState: func(st interface{}) string {
			return [...]string{"X->P", "pte(X) clear, TLBs may still map X", "X unmapped and flushed"}[st.(xState)]
		},
	},
}
