package batchunmap

import (
	"fmt"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/model"
)

// Operations of the process's view of memory.
type opKind uint8

const (
	opRead opKind = iota
	opWrite
	opMprotect
)

type memIn struct {
	Op  opKind
	VA  uint8
	Val uint8 // written value
}

// Access results.
type result uint8

const (
	resOK   result = iota
	resSEGV        // write to a read-only mapping
	resSwap        // fault on a swapped-out page: swap-in is not modelled
)

type memOut struct {
	Res result
	Val uint8 // value read
}

func (i memIn) String() string {
	switch i.Op {
	case opRead:
		return fmt.Sprintf("read(va%d)", i.VA)
	case opWrite:
		return fmt.Sprintf("write(va%d, %d)", i.VA, i.Val)
	}
	return fmt.Sprintf("mprotect(va%d, PROT_READ)", i.VA)
}

func (o memOut) String() string {
	switch o.Res {
	case resSEGV:
		return "SIGSEGV"
	case resSwap:
		return "swap fault"
	}
	return fmt.Sprint(o.Val)
}

// vaState is one va as the process sees it: its contents and whether
// mprotect made it read-only. Reclaim is invisible to the process.
type vaState struct {
	val uint8
	ro  bool
}

// memorySpec is the process's memory as independent registers, one per va,
// each with a protection: a read returns the last write; a write succeeds
// until mprotect(PROT_READ), and raises SIGSEGV after. A swap fault (the
// model does not swap pages back in) and model.Pending leave the outcome
// unknown and are accepted without effect.
func memorySpec() *model.Spec {
	return &model.Spec{
		Name: "process memory (per-va register with protection)",
		Model: porcupine.Model{
			Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
				var parts [maxPages][]porcupine.Operation
				for _, op := range h {
					va := op.Input.(memIn).VA
					parts[va] = append(parts[va], op)
				}
				var out [][]porcupine.Operation
				for _, p := range parts {
					if len(p) > 0 {
						out = append(out, p)
					}
				}
				return out
			},
			Init: func() interface{} { return vaState{} },
			Step: func(st, input, output interface{}) (bool, interface{}) {
				v := st.(vaState)
				in := input.(memIn)
				if _, ok := output.(model.Pending); ok {
					// A pending operation returns after every other event, so
					// it can always be linearized last, where it changes
					// nothing that is observed.
					return true, v
				}
				out := output.(memOut)
				switch in.Op {
				case opRead:
					return out.Res == resSwap || out.Res == resOK && out.Val == v.val, v
				case opWrite:
					switch out.Res {
					case resSwap:
						return true, v
					case resSEGV:
						return v.ro, v
					}
					if v.ro {
						return false, v
					}
					return true, vaState{val: in.Val}
				}
				return true, vaState{val: v.val, ro: true}
			},
			DescribeOperation: func(input, output interface{}) string {
				return fmt.Sprintf("%v -> %v", input, output)
			},
			DescribeState: func(st interface{}) string {
				v := st.(vaState)
				if v.ro {
					return fmt.Sprintf("%d (ro)", v.val)
				}
				return fmt.Sprintf("%d (rw)", v.val)
			},
		},
	}
}
