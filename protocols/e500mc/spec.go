package e500mc

import (
	"fmt"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/model"
)

// The sequential specification: each vCPU's guest TLB entry for EA 0 is
// an object of its own. install(page) maps EA 0 to page, invalidate
// removes the mapping, and translate returns the page mapped (0 when
// there is none, which the guest sees as a TLB miss). What the hardware
// TLB caches must never be visible: a translation that differs from the
// vCPU's own guest TLB is a history with no linearization.

type opKind uint8

const (
	opTranslate opKind = iota
	opInstall
	opInvalidate
)

// op is an operation's input.
type op struct {
	VCPU uint8 // vCPU incarnation id: the partition
	Kind opKind
	Page uint8 // install
}

// result is an operation's output: translate's page (0 = miss).
type result struct{ Page uint8 }

// guestTLBSpec is the specification for guests whose TLB maps EA 0 to
// boot at first (0: unmapped).
func guestTLBSpec(boot uint8) *model.Spec {
	return &model.Spec{
		Name: "per-vCPU guest TLB entry (install, local invalidate, translate)",
		Model: porcupine.Model{
			Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
				var ids []uint8
				parts := map[uint8][]porcupine.Operation{}
				for _, o := range h {
					id := o.Input.(op).VCPU
					if _, ok := parts[id]; !ok {
						ids = append(ids, id)
					}
					parts[id] = append(parts[id], o)
				}
				out := make([][]porcupine.Operation, len(ids))
				for i, id := range ids {
					out[i] = parts[id]
				}
				return out
			},
			Init: func() any { return boot },
			Step: func(st, in, out any) (bool, any) {
				page := st.(uint8)
				o := in.(op)
				switch o.Kind {
				case opInstall:
					return true, o.Page
				case opInvalidate:
					return true, uint8(0)
				}
				if _, pending := out.(model.Pending); pending {
					return true, page
				}
				return out.(result).Page == page, page
			},
			DescribeOperation: func(in, out any) string {
				o := in.(op)
				switch o.Kind {
				case opInstall:
					return fmt.Sprintf("vCPU %s: tlbwe EA 0 -> page %d", vcpuName(o.VCPU), o.Page)
				case opInvalidate:
					return fmt.Sprintf("vCPU %s: tlbilx EA 0", vcpuName(o.VCPU))
				}
				if _, pending := out.(model.Pending); pending {
					return fmt.Sprintf("vCPU %s: load EA 0 -> pending", vcpuName(o.VCPU))
				}
				if p := out.(result).Page; p != 0 {
					return fmt.Sprintf("vCPU %s: load EA 0 -> page %d", vcpuName(o.VCPU), p)
				}
				return fmt.Sprintf("vCPU %s: load EA 0 -> guest TLB miss", vcpuName(o.VCPU))
			},
			DescribeState: func(st any) string {
				if p := st.(uint8); p != 0 {
					return fmt.Sprintf("EA 0 -> page %d", p)
				}
				return "EA 0 unmapped"
			},
		},
	}
}
