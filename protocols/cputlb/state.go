package cputlb

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// Bounds of the parameters; the state's fixed arrays and the per-CPU
// names below are sized for them.
const (
	maxCPUs    = 4
	maxSources = 2
	// queueCap bounds a work list: a vCPU is queued at most one remote
	// flush per other source, its own safe flush, one run_on_cpu per
	// migration round and one tcg_commit item per transaction, never
	// more than four at once in any configuration (newMachine checks).
	queueCap = 4
)

// The names of each vCPU's objects, made once: a step names the objects
// it touches, and formatting a name per step would cost more than the
// step.
var (
	cpuNames      = perCPUNames("")
	tlbNames      = perCPUNames("->tlb")
	tlbLockNames  = perCPUNames("->tlb.c.lock")
	workLists     = perCPUNames("->work_list")
	cpuLockNames  = perCPUNames("->lock")
	haltCondNames = perCPUNames("->halt_cond")
	cpuCondNames  = perCPUNames("->cond")
	pageNames     = [maxSources]string{"X0", "X1"}
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

// An item is a qemu_work_item on a vCPU's work list: its kind in the low
// four bits and, for the flushes of a broadcast invalidate, the source
// whose page it flushes in bit 4.
type item uint8

const (
	itemNone item = iota
	// A remote flush queued by flush_all_helper: wi->bql says whether the
	// worker takes the BQL around it (async_run_on_cpu) or not
	// (async_run_on_cpu_no_bql, seed 000).
	itemRemoteBQL
	itemRemoteNoBQL
	// The source's own flush, queued by async_safe_run_on_cpu
	// (wi->exclusive) and run under start_exclusive.
	itemSafe
	// run_on_cpu(cpu, do_nothing) from tcg_log_global_after_sync: wi->bql,
	// on the caller's stack (wi->free false: the worker sets wi->done).
	itemRunOnCPU
	// tcg_commit's tlb_flush of another vCPU (tlb_flush_by_mmuidx ->
	// async_run_on_cpu, or async_run_on_cpu_no_bql after seed 000), or,
	// since 0d58c660689f, tcg_commit_cpu queued with async_run_on_cpu.
	itemCommitBQL
	itemCommitNoBQL
	itemCommitCPU
	numItemKinds
)

func (i item) kind() item { return i & 15 }
func (i item) src() int   { return int(i >> 4) }

func pageItem(kind item, s int) item { return kind | item(s)<<4 }

// bql reports whether the worker runs the item with the BQL (wi->bql).
func (i item) bql() bool {
	switch i.kind() {
	case itemRemoteBQL, itemRunOnCPU, itemCommitBQL, itemCommitCPU:
		return true
	}
	return false
}

// flush reports whether the item's function flushes a TLB.
func (i item) flush() bool { return i.kind() != itemRunOnCPU && i.kind() != itemNone }

func (i item) String() string {
	switch i.kind() {
	case itemRemoteBQL:
		return "flush " + pageNames[i.src()] + " (bql)"
	case itemRemoteNoBQL:
		return "flush " + pageNames[i.src()] + " (no-bql)"
	case itemSafe:
		return "flush " + pageNames[i.src()] + " (safe)"
	case itemRunOnCPU:
		return "do_nothing (run_on_cpu)"
	case itemCommitBQL:
		return "tlb_flush (bql)"
	case itemCommitNoBQL:
		return "tlb_flush (no-bql)"
	case itemCommitCPU:
		return "tcg_commit_cpu"
	}
	return "-"
}

// A vCPU's softmmu TLB holds at most one entry per page the model knows:
// X_s (mapped by source s's PTE until it clears it), D (a RAM page the
// first target stores to, whose dirty bit the migration thread tracks)
// and M (an MMIO page, whose iotlb entry holds a section index of the
// dispatch it was filled from).
const (
	tlbNone     uint8 = iota // no entry
	tlbNotDirty              // addr_write = D | TLB_NOTDIRTY: stores take notdirty_write
	tlbWritable              // addr_write = D: stores go straight to RAM
)

var tlbDNames = [...]string{"empty", "D|TLB_NOTDIRTY", "D"}

// vcpu is one vCPU thread: where it is in mttcg's loop, its guest program,
// its softmmu TLB and its work list. The observers at the end are
// bookkeeping for work-once, outside the memory layer.
type vcpu struct {
	pc     pc
	guest  uint8 // guest program progress (guest.go)
	sub    uint8 // the step within a guest access or a work item's function
	reg    uint8 // what an earlier step of the access read (softmmu.go)
	idx    uint8 // CPU index of the loop in progress (flush_all_helper, start_exclusive's scan)
	count  uint8 // start_exclusive's running_cpus
	cur    item  // work item being run
	queue  [queueCap]item
	qlen   uint8
	halted bool  // cpu->halted: the guest executed its wait-for-interrupt
	tlbX   uint8 // bit s: the TLB holds X_s->P (cached before source s's invalidate)
	tlbD   uint8 // the TLB entry of D: tlbNone, tlbNotDirty, tlbWritable
	tlbM   uint8 // the TLB entry of M: 0 none, 1+g filled under dispatch generation g

	// With rcu (rcu.go): inside cpu_exec's read section; a reader the
	// running grace period waits for; a device interrupt pending.
	inRCU, gpWait, irq bool

	posted uint8 // observer: work items queued on this vCPU
	ran    uint8 // observer: work items whose func ran
	freed  uint8 // observer: g_free(wi), or wi->done set for a run_on_cpu item
}

// envThread is the migration thread or the main loop: where it is in its
// program, the vCPU its loop is at, and what it found.
type envThread struct {
	pc    uint8
	idx   uint8 // the vCPU of CPU_FOREACH in progress
	sub   uint8 // the step of run_on_cpu / queue_work_on_cpu on that vCPU
	round uint8 // migration: rounds completed
	dirty bool  // migration: the sync found D dirty (its bit in rb->bmap)
}

// state is one global state: plain data, the per-vCPU parts in arrays
// sized for the largest instance (of which the first n are used), so that
// copying a state is copying a struct and its memory's words.
type state struct {
	n        uint8 // vCPUs of the instance (the machine's; not encoded)
	hasMig   bool  // the instance has a migration thread (not encoded)
	hasMain  bool  // the instance has a main-loop thread (not encoded)
	hasRCU   bool  // the instance has a call_rcu thread (not encoded)
	hasIOMMU bool  // the instance has an IOMMU thread (not encoded)

	mem  model.Mem
	cpu  [maxCPUs]vcpu
	mig  envThread
	main envThread

	// The call_rcu thread (rcu.go): where it is, whether the commit's
	// callback is queued, whether it freed the old map's dispatch.
	rcuPC    uint8
	cbQueued bool
	freed    bool

	iommu envThread // the IOMMU thread (iommu.go): its pc

	listLock   model.Mutex // qemu_cpu_list_lock
	bql        model.Mutex
	cpuLock    [maxCPUs]model.Mutex // cpu->lock (work list, halt_cond, cond)
	tlbLock    [maxCPUs]model.Mutex // env_tlb(env)->c.lock (a QemuSpin)
	exclCond   model.Cond           // exclusive_cond
	resumeCond model.Cond           // exclusive_resume
	haltCond   [maxCPUs]model.Cond  // cpu->halt_cond
	cpuCond    [maxCPUs]model.Cond  // cpu->cond (run_on_cpu waiters)

	// resumed is the observer of no-stale-translation: bit s, source s has
	// executed the guest instruction that follows its invalidate.
	resumed uint8
	// sent is the observer of dirty-tracking: the contents of D the
	// migration stream last carried.
	sent uint8
}

// The encoding (AppendKey, Decode) is the form in which the explorer
// stores a state, so it is compact: the memory's words (one byte each,
// their values are small), then per vCPU of the instance one byte per
// field (small fields share one), its mutexes as the holder + 1 and its
// condition variables as the set of their waiters (one bit per thread),
// then the environment threads the instance has, the global mutexes and
// condition variables and the observers. Work-list slots beyond qlen are
// always itemNone (the pop clears them), so two states with the same
// encoding are the same state.
const (
	cpuKeyLen    = 18
	envKeyLen    = 3
	globalKeyLen = 6
)

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
		b = append(b, byte(v.pc), v.guest, v.sub, v.reg, v.idx|v.count<<4, byte(v.cur),
			byte(v.queue[0]), byte(v.queue[1]), byte(v.queue[2]), byte(v.queue[3]),
			v.qlen|boolByte(v.halted)<<3|v.tlbX<<4, v.tlbD|v.tlbM<<2|boolByte(v.inRCU)<<4|boolByte(v.gpWait)<<5|boolByte(v.irq)<<6, v.posted, v.ran, v.freed,
			mutexByte(s.cpuLock[c])|mutexByte(s.tlbLock[c])<<4, byte(s.haltCond[c].Set()), byte(s.cpuCond[c].Set()))
	}
	if s.hasMig {
		b = append(b, s.mig.pc, s.mig.idx|s.mig.sub<<4, s.mig.round|boolByte(s.mig.dirty)<<4)
	}
	if s.hasMain {
		b = append(b, s.main.pc, s.main.idx|s.main.sub<<4, 0)
	}
	if s.hasIOMMU {
		b = append(b, s.iommu.pc)
	}
	if s.hasRCU {
		b = append(b, s.rcuPC|boolByte(s.cbQueued)<<3|boolByte(s.freed)<<4)
	}
	return append(b, mutexByte(s.listLock), mutexByte(s.bql),
		byte(s.exclCond.Set()), byte(s.resumeCond.Set()), s.resumed, s.sent)
}

func (s *state) keyLen() int {
	n := int(s.n)*cpuKeyLen + globalKeyLen
	if s.hasMig {
		n += envKeyLen
	}
	if s.hasMain {
		n += envKeyLen
	}
	if s.hasRCU {
		n++
	}
	if s.hasIOMMU {
		n++
	}
	return n
}

// threads is the number of threads of the instance.
func (s *state) threads() int {
	t := int(s.n)
	if s.hasMig {
		t++
	}
	if s.hasMain {
		t++
	}
	if s.hasRCU {
		t++
	}
	if s.hasIOMMU {
		t++
	}
	return t
}

// Decode reads a state encoded by AppendKey (of the same machine) into s,
// refusing an encoding of the wrong length or with a value no state has.
func (s *state) Decode(b []byte) error {
	n := int(s.n)
	b, err := s.mem.DecodeFrom(b)
	if err != nil {
		return err
	}
	if len(b) != s.keyLen() {
		return fmt.Errorf("cputlb: %d bytes of state after the memory, want %d", len(b), s.keyLen())
	}
	nt := s.threads()
	holderOK := func(h byte) bool { return int(h) <= nt }
	setOK := func(set byte) bool { return int(set) < 1<<uint(nt) }
	for c := 0; c < n; c++ {
		k := b[c*cpuKeyLen : (c+1)*cpuKeyLen]
		if int(k[0]) >= int(numPCs) || !validItem(k[5]) || !validItem(k[6]) || !validItem(k[7]) || !validItem(k[8]) ||
			!validItem(k[9]) || int(k[10]&7) > queueCap || k[10]>>4 >= 1<<maxSources || k[11]&3 > tlbWritable || k[11]>>2&3 > 2 ||
			k[11]>>7 != 0 || !s.hasRCU && k[11]>>4 != 0 {
			return fmt.Errorf("cputlb: cpu%d: pc %d, items %d %d %d %d %d, flags %#x %#x", c, k[0], k[5], k[6], k[7], k[8], k[9], k[10], k[11])
		}
		if !holderOK(k[15]&15) || !holderOK(k[15]>>4) || !setOK(k[16]) || !setOK(k[17]) {
			return errSync
		}
		s.cpu[c] = vcpu{
			pc: pc(k[0]), guest: k[1], sub: k[2], reg: k[3], idx: k[4] & 15, count: k[4] >> 4, cur: item(k[5]),
			queue: [queueCap]item{item(k[6]), item(k[7]), item(k[8]), item(k[9])}, qlen: k[10] & 7,
			halted: k[10]&8 != 0, tlbX: k[10] >> 4, tlbD: k[11] & 3, tlbM: k[11] >> 2 & 3,
			inRCU: k[11]&16 != 0, gpWait: k[11]&32 != 0, irq: k[11]&64 != 0,
			posted: k[12], ran: k[13], freed: k[14],
		}
		s.cpuLock[c] = model.HeldMutex(int(k[15]&15) - 1)
		s.tlbLock[c] = model.HeldMutex(int(k[15]>>4) - 1)
		s.haltCond[c] = model.CondWith(uint64(k[16]))
		s.cpuCond[c] = model.CondWith(uint64(k[17]))
	}
	g := b[n*cpuKeyLen:]
	if s.hasMig {
		s.mig = envThread{pc: g[0], idx: g[1] & 15, sub: g[1] >> 4, round: g[2] & 15, dirty: g[2]&16 != 0}
		if g[2] > 31 {
			return errSync
		}
		g = g[envKeyLen:]
	}
	if s.hasMain {
		s.main = envThread{pc: g[0], idx: g[1] & 15, sub: g[1] >> 4}
		if g[2] != 0 {
			return errSync
		}
		g = g[envKeyLen:]
	}
	if s.hasIOMMU {
		if g[0] > imDone {
			return errSync
		}
		s.iommu = envThread{pc: g[0]}
		g = g[1:]
	}
	if s.hasRCU {
		s.rcuPC, s.cbQueued, s.freed = g[0]&7, g[0]&8 != 0, g[0]&16 != 0
		if g[0]>>5 != 0 || s.rcuPC > rcDone {
			return errSync
		}
		g = g[1:]
	}
	if !holderOK(g[0]) || !holderOK(g[1]) || !setOK(g[2]) || !setOK(g[3]) || g[4] >= 1<<maxSources {
		return errSync
	}
	s.listLock, s.bql = model.HeldMutex(int(g[0])-1), model.HeldMutex(int(g[1])-1)
	s.exclCond, s.resumeCond = model.CondWith(uint64(g[2])), model.CondWith(uint64(g[3]))
	s.resumed, s.sent = g[4], g[5]
	return nil
}

func validItem(b byte) bool { return item(b).kind() < numItemKinds && int(item(b).src()) < maxSources }

var errSync = errors.New("cputlb: state encoding: a mutex held by no thread of the machine, a waiter that is not one, or an observer out of range")

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
		var q strings.Builder
		q.WriteByte('[')
		for i := 0; i < int(v.qlen); i++ {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(v.queue[i].String())
		}
		q.WriteByte(']')
		out = append(out,
			model.Var{Name: p + "pc", Value: v.pc.String()},
			model.Var{Name: p + "guest", Value: strconv.Itoa(int(v.guest)) + "." + strconv.Itoa(int(v.sub))},
			model.Var{Name: p + "halted", Value: strconv.FormatBool(v.halted)},
			model.Var{Name: p + "tlb", Value: s.tlbText(v)},
			model.Var{Name: p + "tlb.c.lock", Value: s.tlbLock[c].String()},
			model.Var{Name: p + "lock", Value: s.cpuLock[c].String()},
			model.Var{Name: p + "work_list", Value: q.String()},
			model.Var{Name: p + "halt_cond", Value: s.haltCond[c].String()},
			model.Var{Name: p + "cond", Value: s.cpuCond[c].String()},
			model.Var{Name: p + "work", Value: fmt.Sprintf("posted=%d ran=%d freed=%d", v.posted, v.ran, v.freed)})
	}
	if s.hasMig {
		out = append(out, model.Var{Name: "migration", Value: fmt.Sprintf("%s (rounds done %d, D dirty at sync %v)", migPCNames[s.mig.pc], s.mig.round, s.mig.dirty)})
	}
	if s.hasMain {
		out = append(out, model.Var{Name: "main-loop", Value: commitPCNames[s.main.pc]})
	}
	if s.hasIOMMU {
		out = append(out, model.Var{Name: "iommu", Value: iommuPCNames[s.iommu.pc]})
	}
	if s.hasRCU {
		var readers []string
		for c := 0; c < int(s.n); c++ {
			if v := &s.cpu[c]; v.inRCU {
				r := cpuNames[c]
				if v.gpWait {
					r += " (waited for)"
				}
				readers = append(readers, r)
			}
		}
		old, irq := "live", false
		if s.freed {
			old = "freed"
		}
		for c := 0; c < int(s.n); c++ {
			irq = irq || s.cpu[c].irq
		}
		out = append(out,
			model.Var{Name: "call_rcu", Value: rcuPCNames[s.rcuPC]},
			model.Var{Name: "rcu_readers", Value: "[" + strings.Join(readers, ", ") + "]"},
			model.Var{Name: "dispatch(generation 0)", Value: old},
			model.Var{Name: "interrupt_pending", Value: strconv.FormatBool(irq)})
	}
	out = append(out, model.Var{Name: "source_resumed", Value: fmt.Sprintf("%02b", s.resumed)})
	if s.hasMig {
		out = append(out, model.Var{Name: "migration_stream(D)", Value: strconv.Itoa(int(s.sent))})
	}
	return out
}

// tlbText renders a vCPU's TLB: the entries it holds.
func (s *state) tlbText(v *vcpu) string {
	var parts []string
	for p := 0; p < maxSources; p++ {
		if v.tlbX&(1<<uint(p)) != 0 {
			parts = append(parts, pageNames[p]+"->P")
		}
	}
	if v.tlbD != tlbNone {
		parts = append(parts, tlbDNames[v.tlbD])
	}
	if v.tlbM != 0 {
		parts = append(parts, "M(gen "+strconv.Itoa(int(v.tlbM)-1)+")")
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, " ")
}
