package cputlb

import (
	"fmt"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/model"
)

// The sequential specification: page X's mapping as a register. The
// broadcast invalidate is a write (X becomes unmapped) that starts when the
// source clears the PTE and completes when the source executes its next
// instruction; each guest access to X by a target is a read that returns
// "mapped" (it translated X->P) or "fault". A read that starts after the
// write completed and still sees the mapping has no linearization.

type invalidate struct{}
type access struct{}

// result is an operation's output.
type result string

const (
	mapped result = "X->P"
	fault  result = "page fault"
	done   result = "done"
)

func (invalidate) String() string { return "tlbi(X)" }
func (access) String() string     { return "load(X)" }

// Spec returns the page-mapping register specification.
func (m *machine) Spec() *model.Spec { return spec }

var spec = &model.Spec{
	Name: "page mapping register (broadcast invalidate = write, guest access = read)",
	Model: porcupine.Model{
		Init: func() interface{} { return true }, // X is mapped
		Step: func(st, in, out interface{}) (bool, interface{}) {
			isMapped := st.(bool)
			if _, ok := in.(invalidate); ok {
				_, pending := out.(model.Pending)
				return pending || out == done, false
			}
			switch out {
			case mapped:
				return isMapped, isMapped
			case fault:
				return !isMapped, isMapped
			}
			_, pending := out.(model.Pending)
			return pending, isMapped
		},
		DescribeOperation: func(in, out interface{}) string {
			return fmt.Sprintf("%v -> %v", in, out)
		},
		DescribeState: func(st interface{}) string {
			if st.(bool) {
				return "X->P"
			}
			return "X unmapped"
		},
	},
}
