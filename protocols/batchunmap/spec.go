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
	// opProtect is change_pte_range's PTE update, recorded as an
	// instantaneous operation of its own (by client protectClient) inside
	// the mprotect call: from then on a write may fault, until mprotect
	// returns a write may still succeed through an old TLB entry.
	opProtect
	opMunmap
	opDontneed
	opFree
	opCold    // MADV_COLD: nothing the process sees
	opPageout // MADV_PAGEOUT: the page may go to swap, its contents kept
	opMremap  // mremap(va → new): va is gone, its contents live on elsewhere
)

// callOps is the operation of each syscall kind.
var callOps = [...]opKind{kMprotect: opMprotect, kMadvFree: opFree, kMunmap: opMunmap, kMadvDontneed: opDontneed, kMadvCold: opCold, kMadvPageout: opPageout, kMremap: opMremap}

// protectClient is the porcupine client of opProtect events: mprotect's
// own client has the mprotect call in flight.
const protectClient = 1 << 10

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
	resSwap        // fault on a swapped-out or zapped page: the fault's outcome is not modelled
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
	case opProtect:
		return fmt.Sprintf("pte[%d] made read-only", i.VA)
	case opMunmap:
		return fmt.Sprintf("munmap(va%d)", i.VA)
	case opDontneed:
		return fmt.Sprintf("madvise(va%d, MADV_DONTNEED)", i.VA)
	case opFree:
		return fmt.Sprintf("madvise(va%d, MADV_FREE)", i.VA)
	case opCold:
		return fmt.Sprintf("madvise(va%d, MADV_COLD)", i.VA)
	case opPageout:
		return fmt.Sprintf("madvise(va%d, MADV_PAGEOUT)", i.VA)
	case opMremap:
		return fmt.Sprintf("mremap(va%d → new)", i.VA)
	}
	return fmt.Sprintf("mprotect(va%d, PROT_READ)", i.VA)
}

func (o memOut) String() string {
	switch o.Res {
	case resSEGV:
		return "SIGSEGV"
	case resSwap:
		return "page fault (not modelled)"
	}
	return fmt.Sprint(o.Val)
}

// vaState is one va as the process sees it: its contents and its
// protection. Reclaim is invisible to the process.
type vaState struct {
	val  uint8
	prot protection
	// gone: munmap returned; every access faults.
	gone bool
	// maybeZero: MADV_FREE returned and nothing was written since: the
	// kernel may have discarded the page, so a read may return 0.
	maybeZero bool
}

// protection is a va's write permission as the process may observe it.
type protection uint8

const (
	// writable: writes succeed.
	writable protection = iota
	// protecting: mprotect has made the PTE read-only but not returned:
	// a write may fault (the PTE) or succeed (a TLB entry not yet
	// flushed); Linux allows both.
	protecting
	// readOnly: mprotect returned; every write faults.
	readOnly
)

// memorySpec is the process's memory as independent registers, one per va,
// each with a protection: a read returns the last write; a write succeeds
// until mprotect(PROT_READ) changes the PTE, may succeed or raise SIGSEGV
// while mprotect is still flushing, and raises SIGSEGV once it returned.
// (An atomic mprotect was too strong: with two users, one can fault on
// the new PTE while the other still writes through its old TLB entry.) A swap fault (the
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
					if out.Res == resSwap {
						return true, v
					}
					return out.Res == resOK && !v.gone && (out.Val == v.val || v.maybeZero && out.Val == 0), v
				case opWrite:
					switch out.Res {
					case resSwap:
						return true, v
					case resSEGV:
						return v.prot != writable || v.gone, v
					}
					if v.prot == readOnly || v.gone {
						return false, v
					}
					v.val, v.maybeZero = in.Val, false
					return true, v
				case opProtect:
					v.prot = max(v.prot, protecting)
					return true, v
				case opMunmap, opMremap:
					v.gone = true
					return true, v
				case opDontneed:
					v.val, v.maybeZero = 0, false
					return true, v
				case opFree:
					v.maybeZero = true
					return true, v
				case opCold, opPageout:
					return true, v
				}
				v.prot = readOnly
				return true, v
			},
			DescribeOperation: func(input, output interface{}) string {
				return fmt.Sprintf("%v -> %v", input, output)
			},
			DescribeState: func(st interface{}) string {
				v := st.(vaState)
				s := fmt.Sprintf("%d (%s)", v.val, [...]string{"rw", "pte ro, flush pending", "ro"}[v.prot])
				if v.maybeZero {
					s += " or 0 (MADV_FREE)"
				}
				if v.gone {
					s = "unmapped"
				}
				return s
			},
		},
	}
}
