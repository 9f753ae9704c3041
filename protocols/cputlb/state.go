package cputlb

import (
	"fmt"
	"strconv"

	"github.com/protocheck/protocheck/model"
)

// maxCPUs bounds the cpus parameter (and the per-CPU names below).
const maxCPUs = 4

// Shared words, in model.Mem: the page-table entry of page X, the exclusive
// protocol's pending_cpus, and per vCPU running, has_waiter and
// exit_request (three words each, starting at perCPU).
const (
	wPTE     model.Addr = 0
	wPending model.Addr = 1
	perCPU   model.Addr = 2
)

func wRunning(c int) model.Addr   { return perCPU + model.Addr(3*c) }
func wHasWaiter(c int) model.Addr { return perCPU + model.Addr(3*c) + 1 }
func wExitReq(c int) model.Addr   { return perCPU + model.Addr(3*c) + 2 }

func memNames(n int) []string {
	names := []string{"pte(X)", "pending_cpus"}
	for c := 0; c < n; c++ {
		names = append(names,
			fmt.Sprintf("cpu%d->running", c),
			fmt.Sprintf("cpu%d->has_waiter", c),
			fmt.Sprintf("cpu%d->exit_request", c))
	}
	return names
}

// The names of each vCPU's objects, made once: a step names the objects
// it touches, and formatting a name per step would cost more than the
// step.
var (
	cpuNames      = perCPUNames("")
	tlbNames      = perCPUNames("->tlb")
	workLists     = perCPUNames("->work_list")
	cpuLockNames  = perCPUNames("->lock")
	haltCondNames = perCPUNames("->halt_cond")
	cpuCondNames  = perCPUNames("->cond")
)

func perCPUNames(suffix string) [maxCPUs]string {
	var out [maxCPUs]string
	for c := range out {
		out[c] = fmt.Sprintf("cpu%d%s", c, suffix)
	}
	return out
}

func cpuName(c int) string     { return cpuNames[c] }
func cpuLockName(c int) string { return cpuLockNames[c] }
func workList(c int) string    { return workLists[c] }

// An item is a qemu_work_item on a vCPU's work list. Only the flush items
// of the one broadcast invalidate exist in the model.
type item uint8

const (
	itemNone item = iota
	// itemRemote: a remote flush queued by flush_all_helper; wi->bql says
	// whether the worker takes the BQL around it (async_run_on_cpu) or not
	// (async_run_on_cpu_no_bql, seed 000).
	itemRemoteBQL
	itemRemoteNoBQL
	// itemSafe: the source's own flush, queued by async_safe_run_on_cpu
	// (wi->exclusive) and run under start_exclusive.
	itemSafe
)

var itemNames = [...]string{"-", "flush(bql)", "flush(no-bql)", "flush(safe)"}

func (i item) String() string { return itemNames[i] }

// vcpu is one vCPU thread: where it is in mttcg's loop, its guest program,
// its softmmu TLB entry for page X and its work list. The observers at the
// end are bookkeeping for work-once, outside the memory layer. Every field
// is a byte, so a slice of vcpus encodes as one copy.
type vcpu struct {
	pc     pc
	guest  uint8 // guest program progress (see guest.go)
	idx    uint8 // CPU index of the loop in progress (flush_all_helper, start_exclusive's scan)
	count  uint8 // start_exclusive's running_cpus
	cur    item  // work item being run
	queue  [2]item
	qlen   uint8
	halted bool // cpu->halted: the guest executed its wait-for-interrupt
	tlb    bool // the softmmu TLB holds X->P (cached before the invalidate)

	posted uint8 // observer: flush items queued on this vCPU
	ran    uint8 // observer: flush items whose func ran
	freedD uint8 // observer: g_free(d) of the per-destination flush data
	freedW uint8 // observer: g_free(wi)
}

// state is one global state. The per-vCPU parts are slices of the
// configured length (not arrays of maxCPUs), so that the encoding holds
// no unused slots; model.Codec encodes it.
type state struct {
	mem      model.Mem
	cpu      []vcpu
	cpuLock  []model.Mutex // cpu->lock (work list, halt_cond)
	haltCond []model.Cond  // cpu->halt_cond

	listLock   model.Mutex // qemu_cpu_list_lock
	bql        model.Mutex
	exclCond   model.Cond // exclusive_cond
	resumeCond model.Cond // exclusive_resume

	// resumed is the observer of no-stale-translation: the source has
	// executed the guest instruction that follows the invalidate.
	resumed bool
}

var codec = model.MustCodec[state]()

func newState(mem []string, n int) *state {
	return &state{
		mem:      model.NewMem(mem...),
		cpu:      make([]vcpu, n),
		cpuLock:  make([]model.Mutex, n),
		haltCond: make([]model.Cond, n),
	}
}

func (s *state) AppendKey(b []byte) []byte { return codec.Append(b, s) }

func (s *state) Decode(b []byte) error { return codec.Decode(b, s) }

// Vars are the variables traces show, by the names and in the texts of
// QEMU's objects (the codec's generic names would be the struct's).
func (s *state) Vars() []model.Var {
	out := s.mem.Vars()
	out = append(out,
		model.Var{Name: "qemu_cpu_list_lock", Value: s.listLock.String()},
		model.Var{Name: "bql", Value: s.bql.String()},
		model.Var{Name: "exclusive_cond", Value: s.exclCond.String()},
		model.Var{Name: "exclusive_resume", Value: s.resumeCond.String()})
	for c := range s.cpu {
		v := &s.cpu[c]
		p := cpuNames[c] + "."
		q := "["
		for i := 0; i < int(v.qlen); i++ {
			if i > 0 {
				q += " "
			}
			q += v.queue[i].String()
		}
		q += "]"
		out = append(out,
			model.Var{Name: p + "pc", Value: v.pc.String()},
			model.Var{Name: p + "guest", Value: strconv.Itoa(int(v.guest))},
			model.Var{Name: p + "halted", Value: strconv.FormatBool(v.halted)},
			model.Var{Name: p + "tlb(X)", Value: tlbText(v.tlb)},
			model.Var{Name: p + "work_list", Value: q},
			model.Var{Name: p + "halt_cond", Value: s.haltCond[c].String()},
			model.Var{Name: p + "work", Value: fmt.Sprintf("posted=%d ran=%d freed(d)=%d freed(wi)=%d", v.posted, v.ran, v.freedD, v.freedW)})
	}
	return append(out, model.Var{Name: "source_resumed", Value: strconv.FormatBool(s.resumed)})
}

func tlbText(b bool) string {
	if b {
		return "X->P"
	}
	return "empty"
}
