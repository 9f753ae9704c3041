package batchunmap

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// Size limits: the parameters' maxima, which size the config's tables.
const (
	maxPages = 6
	maxMMs   = 3
	maxUsers = 3
	maxCPUs  = 2 + maxUsers // CPU0 reclaimer, CPU1 syscall thread, one per user or idle mm
)

// The CPUs with a fixed role. kswapd runs on CPU0 and never runs a user mm,
// so it is never in an mm_cpumask and every flush it sends is remote.
const (
	cpuReclaim = 0
	cpuSyscall = 1
)

// config is a machine's variant and parameters, resolved once in newMachine.
type config struct {
	variant string

	// Variant switches.
	batched      bool // try_to_unmap_one defers into the reclaimer's batch
	drain        bool // the syscall thread calls flush_tlb_batched_pending
	boolFlag     bool // tlb_flush_batched is a bool
	counter      bool // tlb_flush_batched is the pending/flushed word
	overflowSafe bool // set_tlb_ubc_flush_pending resets pending when large
	nestedReset  bool // pageout's allocation clears flush_required
	flushDirty   bool // try_to_unmap_flush_dirty runs before pageout
	stickyMask   bool // arch_tlbbatch_flush keeps the batch cpumask

	pages, batch, ptls, mms, users, accesses, syscalls int
	width                                              uint
	reuse, bookkeeping                                 bool

	ncpu int
	// Thread ids.
	tReclaim, tSyscall, tUser0, tAlloc int
	names                              []string

	mmOf      [maxPages]int // the mm of va i
	userAddrs [maxUsers][]int
	sysAddrs  []int // the va of each mprotect call
	initMask  [maxMMs]uint8

	// Names, made once: a step names the objects it touches without
	// formatting them.
	memNames []string         // the words of the memory layer
	ptlName  [maxPages]string // "PTL0"...
	tlbName  [maxCPUs]string  // "tlb[cpu0]"...
	pageName [maxPages]string // "page0"...
	userName [maxUsers]string // "user0 on CPU2"...
}

// Memory layout: one PTE per va, then tlb_flush_batched and mm_cpumask per mm.
func (c *config) pteAddr(va int) model.Addr     { return model.Addr(va) }
func (c *config) batchedAddr(mm int) model.Addr { return model.Addr(c.pages + mm) }
func (c *config) maskAddr(mm int) model.Addr    { return model.Addr(c.pages + c.mms + mm) }

func (c *config) ptlOf(va int) int { return va % c.ptls }

// tlbAt is the index of CPU cpu's entry for va in state.tlb (cpu >= 1).
func (c *config) tlbAt(cpu, va int) int { return (cpu-1)*c.pages + va }

func (c *config) cpuOf(user int) int {
	return 2 + user
}

// Fields of tlb_flush_batched as 5ee2fa2f0636 lays them out, scaled to
// width bits: pending in bits [0,width), one guard bit that absorbs the
// carry of an unreset pending, flushed from bit width+1.
func (c *config) shift() uint             { return c.width + 1 }
func (c *config) pmask() uint64           { return 1<<c.width - 1 }
func (c *config) large() uint64           { return c.pmask() / 2 }
func (c *config) pending(w uint64) uint64 { return w & c.pmask() }
func (c *config) flushed(w uint64) uint64 { return w >> c.shift() & c.pmask() }

// armed reports whether a tlb_flush_batched value asks for a flush.
func (c *config) armed(w uint64) bool {
	if c.boolFlag {
		return w != 0
	}
	return c.pending(w) != c.flushed(w)
}

func (c *config) describeWord(w uint64) string {
	if c.boolFlag {
		return fmt.Sprint(w != 0)
	}
	return fmt.Sprintf("pending %d/flushed %d", c.pending(w), c.flushed(w))
}

func newMachine(variant string, p model.Params) (model.Machine, error) {
	c := &config{
		variant:  variant,
		pages:    p["pages"],
		batch:    p["batch"],
		ptls:     p["ptls"],
		mms:      p["mms"],
		users:    p["users"],
		accesses: p["accesses"],
		syscalls: p["syscalls"],
		width:    uint(p["width"]),
		reuse:    p["reuse"] == 1,
		// bookkeeping adds invariants only, never state.
		bookkeeping: p["bookkeeping"] == 1,
	}
	c.batched, c.drain, c.counter, c.overflowSafe, c.flushDirty = true, true, true, true, true
	switch variant {
	case Immediate:
		// Mainline with should_defer_flush false: the drain still runs and
		// always finds nothing pending.
		c.batched = false
	case Generation:
	case NoPendingFlush:
		// 2015-2017: no tlb_flush_batched at all.
		c.drain, c.counter = false, false
	case BoolFlag:
		c.counter, c.boolFlag = false, true
	case NoOverflowReset:
		c.overflowSafe = false
	case NestedReset:
		c.nestedReset = true
	case NoFlushDirty:
		c.flushDirty = false
	case RiscvStickyMask:
		c.stickyMask = true
	default:
		return nil, fmt.Errorf("unknown variant %q", variant)
	}
	if c.ptls > c.pages {
		return nil, fmt.Errorf("ptls=%d exceeds pages=%d: every page-table lock guards at least one va", c.ptls, c.pages)
	}
	if c.mms > 1 && c.ptls != c.pages {
		return nil, fmt.Errorf("with mms=%d every va needs its own page table: set ptls=pages=%d", c.mms, c.pages)
	}
	if c.mms > c.pages {
		return nil, fmt.Errorf("mms=%d exceeds pages=%d: every mm has at least one page", c.mms, c.pages)
	}
	c.ncpu = 2 + max(c.users, c.mms)
	for va := 0; va < c.pages; va++ {
		c.mmOf[va] = va % c.mms
	}
	for u := 0; u < c.users; u++ {
		for va := 0; va < c.pages; va++ {
			if c.mmOf[va] == u%c.mms {
				c.userAddrs[u] = append(c.userAddrs[u], va)
			}
		}
	}
	var mm0 []int
	for va := 0; va < c.pages; va += c.mms {
		mm0 = append(mm0, va)
	}
	for k := 0; k < c.syscalls; k++ {
		c.sysAddrs = append(c.sysAddrs, mm0[k%len(mm0)])
	}
	// mm_cpumask: the syscall thread's CPU for mm0, each user's CPU, and
	// CPU 2+m, where a thread of mm m last ran (an idle footprint when no
	// user runs m; riscv with ASIDs never clears these bits).
	c.initMask[0] |= 1 << cpuSyscall
	for m := 0; m < c.mms; m++ {
		c.initMask[m] |= 1 << uint(2+m)
	}
	for u := 0; u < c.users; u++ {
		c.initMask[u%c.mms] |= 1 << uint(c.cpuOf(u))
	}
	c.tReclaim, c.tSyscall, c.tUser0 = 0, 1, 2
	c.names = []string{"reclaimer", "syscall"}
	for u := 0; u < c.users; u++ {
		c.names = append(c.names, fmt.Sprintf("user%d", u))
	}
	c.tAlloc = -1
	if c.reuse {
		c.tAlloc = len(c.names)
		c.names = append(c.names, "allocator")
	}
	for va := 0; va < c.pages; va++ {
		c.memNames = append(c.memNames, fmt.Sprintf("pte[%d]", va))
	}
	for mm := 0; mm < c.mms; mm++ {
		c.memNames = append(c.memNames, c.mmName(mm)+"tlb_flush_batched")
	}
	for mm := 0; mm < c.mms; mm++ {
		c.memNames = append(c.memNames, c.mmName(mm)+"mm_cpumask")
	}
	for i := range c.ptlName {
		c.ptlName[i] = fmt.Sprintf("PTL%d", i)
		c.pageName[i] = fmt.Sprintf("page%d", i)
	}
	for u := 0; u < c.users; u++ {
		c.userName[u] = fmt.Sprintf("user%d on CPU%d", u, c.cpuOf(u))
	}
	for cpu := range c.tlbName {
		c.tlbName[cpu] = fmt.Sprintf("tlb[cpu%d]", cpu)
	}
	return newModel(c), nil
}
