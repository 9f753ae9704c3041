package cputlb

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/protocheck/protocheck/model"
)

// maxCPUs bounds the cpus parameter; the state's fixed arrays and the
// per-CPU names below are sized for it.
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
// end are bookkeeping for work-once, outside the memory layer.
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

// state is one global state: plain data, the per-vCPU parts in arrays
// sized for the largest instance (of which the first n are used), so that
// copying a state is copying a struct and its memory's words.
type state struct {
	n   uint8 // vCPUs of the instance (the machine's; not encoded)
	mem model.Mem
	cpu [maxCPUs]vcpu

	listLock   model.Mutex // qemu_cpu_list_lock
	bql        model.Mutex
	cpuLock    [maxCPUs]model.Mutex // cpu->lock (work list, halt_cond)
	exclCond   model.Cond           // exclusive_cond
	resumeCond model.Cond           // exclusive_resume
	haltCond   [maxCPUs]model.Cond  // cpu->halt_cond

	// resumed is the observer of no-stale-translation: the source has
	// executed the guest instruction that follows the invalidate.
	resumed bool
}

// The encoding (AppendKey, Decode) is the form in which the explorer
// stores a state, so it is compact: the memory's words (one byte each,
// their values are small), then per vCPU of the instance one byte per
// field, its two booleans sharing one, its cpu->lock as the holder + 1 and
// its halt_cond as the set of its waiters (one bit per vCPU), then the
// global mutexes and condition variables the same way and the observer.
// Work-list slots beyond qlen are always itemNone (popNext clears them),
// so two states with the same encoding are the same state.
const cpuKeyLen = 15

// CopyFrom makes s a copy of src (model.Copier): the explorer decodes a
// state once per expansion and copies it for each step it tries. Every
// field is plain data but the memory, whose buffers s keeps.
func (s *state) CopyFrom(src model.State) {
	o := src.(*state)
	mem := s.mem
	*s = *o
	s.mem = mem
	s.mem.CopyFrom(o.mem)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func mutexByte(mu model.Mutex) byte { return byte(mu.Holder() + 1) }

func (s *state) AppendKey(b []byte) []byte {
	n := int(s.n)
	b = s.mem.AppendKey(b)
	for c := 0; c < n; c++ {
		v := &s.cpu[c]
		b = append(b, byte(v.pc), v.guest, v.idx, v.count, byte(v.cur), byte(v.queue[0]), byte(v.queue[1]), v.qlen,
			boolByte(v.halted)|boolByte(v.tlb)<<1, v.posted, v.ran, v.freedD, v.freedW,
			mutexByte(s.cpuLock[c]), byte(s.haltCond[c].Set()))
	}
	return append(b, mutexByte(s.listLock), mutexByte(s.bql),
		byte(s.exclCond.Set()), byte(s.resumeCond.Set()), boolByte(s.resumed))
}

// Decode reads a state encoded by AppendKey (of the same machine) into s,
// refusing an encoding of the wrong length or with a value no state has.
func (s *state) Decode(b []byte) error {
	n := int(s.n)
	b, err := s.mem.DecodeFrom(b)
	if err != nil {
		return err
	}
	if len(b) != n*cpuKeyLen+5 {
		return fmt.Errorf("cputlb: %d bytes of state after the memory, want %d", len(b), n*cpuKeyLen+5)
	}
	for c := 0; c < n; c++ {
		k := b[c*cpuKeyLen : (c+1)*cpuKeyLen]
		if int(k[0]) >= len(pcNames) || int(k[4]) >= len(itemNames) || int(k[5]) >= len(itemNames) ||
			int(k[6]) >= len(itemNames) || int(k[7]) > len(s.cpu[c].queue) || k[8] > 3 {
			return fmt.Errorf("cputlb: cpu%d: pc %d, items %d %d %d, %d queued, flags %#x", c, k[0], k[4], k[5], k[6], k[7], k[8])
		}
		if int(k[13]) > n || int(k[14]) >= 1<<uint(n) {
			return errSync
		}
		s.cpu[c] = vcpu{
			pc: pc(k[0]), guest: k[1], idx: k[2], count: k[3], cur: item(k[4]),
			queue: [2]item{item(k[5]), item(k[6])}, qlen: k[7],
			halted: k[8]&1 != 0, tlb: k[8]&2 != 0,
			posted: k[9], ran: k[10], freedD: k[11], freedW: k[12],
		}
		s.cpuLock[c] = model.HeldMutex(int(k[13]) - 1)
		s.haltCond[c] = model.CondWith(uint64(k[14]))
	}
	g := b[n*cpuKeyLen:]
	if int(g[0]) > n || int(g[1]) > n || int(g[2]) >= 1<<uint(n) || int(g[3]) >= 1<<uint(n) || g[4] > 1 {
		return errSync
	}
	s.listLock, s.bql = model.HeldMutex(int(g[0])-1), model.HeldMutex(int(g[1])-1)
	s.exclCond, s.resumeCond = model.CondWith(uint64(g[2])), model.CondWith(uint64(g[3]))
	s.resumed = g[4] != 0
	return nil
}

var errSync = errors.New("cputlb: state encoding: a mutex held by no vCPU of the machine, a waiter that is not one, or an observer out of range")

// Vars are the variables traces show, by the names and in the texts of
// QEMU's objects.
func (s *state) Vars() []model.Var {
	out := s.mem.Vars()
	out = append(out,
		model.Var{Name: "qemu_cpu_list_lock", Value: s.listLock.String()},
		model.Var{Name: "bql", Value: s.bql.String()},
		model.Var{Name: "exclusive_cond", Value: s.exclCond.String()},
		model.Var{Name: "exclusive_resume", Value: s.resumeCond.String()})
	for c := 0; c < int(s.n); c++ {
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
