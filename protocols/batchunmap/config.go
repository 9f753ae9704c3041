package batchunmap

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// Size limits: the parameters' maxima, which size the config's tables.
const (
	maxPages      = 6
	maxMMs        = 3
	maxUsers      = 3
	maxReclaimers = 2
	maxSyscalls   = 4
	maxSysThreads = 2 // the syscall thread and, with nested=1, syscall2
	maxCPUs       = 8 // cpumasks are bytes
)

// Architectures: how mm_cpumask changes, how a flush reaches other CPUs,
// and when an invalidation completes.
const (
	// archRISCV: sfence.vma by ASID (or of all ASIDs for the batch) on the
	// CPUs of a cpumask, through IPIs or SBI remote fences; switch_mm sets
	// the new CPU's bit and, with the ASID allocator, keeps the old one
	// (82dd33fde026) or clears it without a flush (before it).
	archRISCV = iota
	// archX86: x86 with PCID and tlb_gen, in one of four eras (x86Era):
	// switch_mm sets the new CPU's bit, reads the mm's tlb_gen and
	// catches a stale ASID up by flushing it; before v6.14 it also clears
	// the old mm's bit, since v6.14 (209954cbc7d0, lazy mm_cpumask) a
	// flush sent to a CPU that no longer runs the mm clears it instead.
	archX86
	// archARM64: broadcast TLBI instructions that complete only when the
	// issuing CPU executes a DSB; mm_cpumask is not used for flushing.
	archARM64
)

var archNames = [...]string{"riscv", "x86", "arm64"}

// x86 eras: the arch/x86/mm/tlb.c code a variant runs, where it differs
// in what the model can see.
const (
	// eraLazyMask: v6.14 and later (209954cbc7d0 "x86/mm/tlb: Update
	// mm_cpumask lazily", 6db2526c1d69 should_flush_tlb with
	// trim_cpumask): the bit stays set at switch_mm; lazy TLB; the
	// handler's early return on f->new_tlb_gen.
	eraLazyMask = iota
	// eraV414: v4.14 to v4.19: PCID ASIDs (10af6235e0d3), switch_mm
	// clears the previous mm's bit, choose_new_asid flushes an ASID behind
	// the mm's tlb_gen; with PCID, enter_lazy_tlb switches to init_mm at
	// once (tlb_defer_switch_to_init_mm), so no CPU is ever lazy; every
	// CPU of the mask gets the flush IPI.
	eraV414
	// eraV420: v4.20 to v5.19, Rik van Riel's lazy TLB series: a kernel
	// thread keeps the mm loaded (is_lazy), flush IPIs skip lazy CPUs
	// unless page tables are freed (tlb_is_not_lazy), a lazy CPU that gets
	// one switches to init_mm, and switch_mm back from lazy compares
	// tlb_gen (was_lazy).
	eraV420
	// eraV60: v6.0 to v6.13: eraV420 plus flush_tlb_func's early return
	// when f->new_tlb_gen <= the local tlb_gen (aa44284960d5, with
	// 8f1d56f64f8d's TLB_GENERATION_INVALID guard).
	eraV60
)

// x86Clears: switch_mm clears the previous mm's mm_cpumask bit (before
// v6.14).
func (c *config) x86Clears() bool { return c.arch == archX86 && c.x86Era != eraLazyMask }

// x86Lazy: a user task's CPU may run a kernel thread in lazy TLB mode
// (v4.20 on).
func (c *config) x86Lazy() bool { return c.arch == archX86 && c.x86Era != eraV414 }

// x86Early: flush_tlb_func returns early when f->new_tlb_gen <= its
// local tlb_gen, without reading the mm's (v6.0 on).
func (c *config) x86Early() bool { return c.x86Era == eraLazyMask || c.x86Era == eraV60 }

// x86Trim: flush_tlb_mm_range may trim CPUs that left the mm
// (should_trim_cpumask, v6.14 on).
func (c *config) x86Trim() bool { return c.arch == archX86 && c.x86Era == eraLazyMask }

// Syscall kinds of the syscall thread's program.
const (
	kMprotect     = iota // mprotect(va, PROT_READ): change_pte_range
	kMadvFree            // madvise(va, MADV_FREE): madvise_free_pte_range
	kMunmap              // munmap(va): unmap_page_range/zap_pte_range
	kMadvDontneed        // madvise(va, MADV_DONTNEED): zap_pte_range
	kMadvCold            // madvise(va, MADV_COLD): madvise_cold_or_pageout_pte_range
	kMadvPageout         // madvise(va, MADV_PAGEOUT): madvise_cold_or_pageout_pte_range
	kMremap              // mremap(va, MREMAP_MAYMOVE) to a new address: move_ptes
)

var kindNames = [...]string{"mprotect", "madvise(MADV_FREE)", "munmap", "madvise(MADV_DONTNEED)", "madvise(MADV_COLD)", "madvise(MADV_PAGEOUT)", "mremap"}

// splits reports whether a call of kind splits a large folio it meets,
// dropping and re-taking the PTL (madvise_free_pte_range,
// madvise_cold_or_pageout_pte_range).
func splits(kind uint8) bool {
	return kind == kMadvFree || kind == kMadvCold || kind == kMadvPageout
}

// promises reports whether a call of kind makes a promise a stale entry
// can break once it returns (MADV_COLD and MADV_PAGEOUT make none).
func promises(kind uint8) bool { return kind != kMadvCold && kind != kMadvPageout }

// callName renders a call of kind on va as the program makes it.
func callName(kind uint8, va int) string {
	switch kind {
	case kMprotect:
		return fmt.Sprintf("mprotect(va%d, PROT_READ)", va)
	case kMadvFree:
		return fmt.Sprintf("madvise(va%d, MADV_FREE)", va)
	case kMunmap:
		return fmt.Sprintf("munmap(va%d)", va)
	case kMadvCold:
		return fmt.Sprintf("madvise(va%d, MADV_COLD)", va)
	case kMadvPageout:
		return fmt.Sprintf("madvise(va%d, MADV_PAGEOUT)", va)
	case kMremap:
		return fmt.Sprintf("mremap(va%d → new)", va)
	}
	return fmt.Sprintf("madvise(va%d, MADV_DONTNEED)", va)
}

// programs are the syscall parameter's programs: 0 mixes every kind, the
// others repeat one.
var programs = [...][]uint8{
	{kMprotect, kMadvFree, kMunmap, kMadvDontneed},
	{kMprotect}, {kMunmap}, {kMadvDontneed}, {kMadvFree},
	{kMadvCold}, {kMadvPageout},
	{kMprotect, kMadvFree, kMremap, kMadvDontneed},
	{kMremap},
}

// The fixed CPUs: the first reclaimer (kswapd) on CPU0, the syscall thread
// of mm0 on CPU1, the second reclaimer on CPU2. Reclaimers run kernel
// threads: they are in no mm_cpumask and cache no user translation.
const (
	cpuSyscall = 1
)

// config is a machine's variant and parameters, resolved once in newMachine.
type config struct {
	variant string

	// Variant switches.
	arch         int
	batched      bool // try_to_unmap_one defers into the reclaimer's batch
	drain        bool // syscalls call flush_tlb_batched_pending
	boolFlag     bool // tlb_flush_batched is a bool
	counter      bool // tlb_flush_batched is the pending/flushed word
	overflowSafe bool // set_tlb_ubc_flush_pending resets pending when large
	nestedReset  bool // pageout's allocation clears flush_required
	flushDirty   bool // try_to_unmap_flush_dirty runs before pageout
	stickyMask   bool // arch_tlbbatch_flush keeps the batch cpumask
	asidClear    bool // riscv switch_mm clears the old CPU's bit (before 82dd33fde026)
	retakeDrain  bool // madvise drains again after re-taking the PTL (383c4613c67c)
	dsbOnly      bool // arm64 flush_tlb_batched_pending is dsb(ish) only (before 4b634918384c)
	x86Era       int  // x86: which arch/x86/mm/tlb.c (eraLazyMask...)
	noCatchUp    bool // x86 mutation: switch_mm compares no tlb_gen, an ASID it finds is used as it is
	genZero      bool // x86 aa44284960d5 before 8f1d56f64f8d: f->new_tlb_gen 0 of the batch flush compared
	lateMremap   bool // move_ptes flushes after dropping the PTLs (before eb66ae030829)
	putbackEarly bool // mutation: a kept folio goes back on the LRU before try_to_unmap_flush
	nestedFlush  bool // tlb_gather_mmu counts mm->tlb_flush_pending, tlb_finish_mmu flushes the mm when nested (99baac21e458)
	rMigrate     bool // arm64: a reclaimer may migrate between deferring a page and flushing the batch
	switchNoDSB  bool // arm64 mutation: __switch_to without its dsb(ish)

	// arm: memory=2, the ARMv8 memory model (arm64 variants only):
	// tlb_flush_batched and the PTLs' lock words live in state.wm, run by
	// model.WithARMv8NoPromises. weaken is the ordering the mutation
	// weakens (weakNone...).
	arm    bool
	weaken int

	pages, batch, ptls, mms, users, accesses int
	reclaimers, migrations, syscalls         int
	width                                    uint
	largeFolio, reuse, bookkeeping           bool
	contend                                  bool // the reclaimers share the LRU: passes, folio locks, writeback kept
	nested                                   bool // a second syscall thread, whose mmu_gather nests with the first's

	// CPUs: reclaimer k on cpuR[k]; user CPUs userCPU0.. (the users' own,
	// then one spare to migrate to when migrations > 0).
	ncpu      int
	cpuR      [maxReclaimers]int
	userCPU0  int
	userCPUs  int
	userCPUAt [maxCPUs]int // cpu -> index among user CPUs, -1 for others

	// Thread ids.
	tReclaim [maxReclaimers]int
	tSys     [maxSysThreads]int // the syscall threads
	nsys     int
	tUser0   int
	names    []string

	mmOf      [maxPages]int // the mm of va i
	ownerOf   [maxPages]int // the reclaimer of page i (its first pass)
	ownPages  [maxReclaimers]uint8
	userAddrs [maxUsers][]int
	sysKind   [maxSysThreads][]uint8 // per syscall thread, the kind of each call
	sysAddr   [maxSysThreads][]uint8 // per syscall thread, the va of each call
	sysName   [maxSysThreads]string
	largeVA   int // the va mapped by a large folio (-1: none)
	mremapVA  int // the va mremap moves (-1: none); its page goes to a new address
	dstPTE    model.Addr
	pendAddr  model.Addr
	wmNames   []string // state.wm's words (memory=2): tlb_flush_batched per mm, then a lock word per PTL

	// Initial state.
	initMask   [maxMMs]uint8
	initLoaded [maxCPUs]uint8 // per user CPU: the mm it runs (mms = another process)

	// Names, made once: a step names the objects it touches without
	// formatting them.
	memNames []string
	ptlName  [maxPages + 1]string
	tlbName  [maxCPUs]string
	pageName [maxPages]string
	cpuName  [maxCPUs]string
	userName [maxUsers]string
	rName    [maxReclaimers]string
}

// Memory layout: one PTE per va; tlb_flush_batched, mm_cpumask and (x86)
// context.tlb_gen per mm.
func (c *config) pteAddr(va int) model.Addr     { return model.Addr(va) }
func (c *config) batchedAddr(mm int) model.Addr { return model.Addr(c.pages + mm) }
func (c *config) maskAddr(mm int) model.Addr    { return model.Addr(c.pages + c.mms + mm) }
func (c *config) genAddr(mm int) model.Addr     { return model.Addr(c.pages + 2*c.mms + mm) }

func (c *config) ptlOf(va int) int { return va % c.ptls }

// Orderings the weaken parameter takes away, each one the arm64 code has
// on the path from set_tlb_ubc_flush_pending to flush_tlb_batched_pending.
const (
	weakNone = iota
	// weakUnlock: spin_unlock (queued_spin_unlock's smp_store_release of
	// the locked byte) as a plain store.
	weakUnlock
	// weakLock: spin_lock (queued_spin_lock's atomic_try_cmpxchg_acquire)
	// as a relaxed cmpxchg.
	weakLock
	// weakDrainCAS: flush_tlb_batched_pending's atomic_cmpxchg (fully
	// ordered, as every value-returning atomic) as atomic_cmpxchg_relaxed.
	weakDrainCAS
	weakMax = weakDrainCAS
)

// wmBatched is mm's tlb_flush_batched in state.wm (memory=2).
func (c *config) wmBatched(mm int) model.Addr { return model.Addr(mm) }

// wmLock is page-table lock l's lock word in state.wm (memory=2).
func (c *config) wmLock(l int) model.Addr { return model.Addr(c.mms + l) }

// reclaimerCPU is reclaimer k's CPU: cpuR[k], or after it migrated a CPU
// of its own beyond the model's (it runs kernel threads only).
func (c *config) reclaimerCPU(k int, moved bool) int {
	if moved {
		return c.ncpu + k
	}
	return c.cpuR[k]
}

// trackPending: the syscall threads' mmu_gathers count
// mm->tlb_flush_pending (steps only when another thread can read it).
func (c *config) trackPending() bool { return c.nested && c.nestedFlush }

// pendingAddr is mm0's tlb_flush_pending (with trackPending).
func (c *config) pendingAddr() model.Addr { return c.pendAddr }

// nptl is the number of page-table locks: with mremap, the new
// address's page table has one more.
func (c *config) nptl() int {
	if c.mremapVA >= 0 {
		return c.ptls + 1
	}
	return c.ptls
}

// vaName names a va in a label; c.pages stands for mremap's new address.
func (c *config) vaName(va int) string {
	if va >= c.pages {
		return "the new address"
	}
	return fmt.Sprintf("va%d", va)
}

// callStart is the first pc of a syscall.
func (c *config) callStart() uint8 {
	if c.trackPending() {
		return sGather
	}
	return sLock
}

// firstPC is where a reclaimer takes up a folio of its list.
func (c *config) firstPC() uint8 {
	if c.contend {
		return rTrylock
	}
	return rLock
}

// other is the mm index of "another process": what a user CPU runs when
// no user task of the model does. Its translations are not tracked.
func (c *config) other() int { return c.mms }

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
	c, err := newConfig(variant, p)
	if err != nil {
		return nil, err
	}
	if c.arm {
		// Safety and deadlock only: the wrapper drops syscall-returns.
		return model.WithARMv8NoPromises(newModel(c), func(st model.State) *model.Mem { return &st.(*state).wm }), nil
	}
	return newModel(c), nil
}

func newConfig(variant string, p model.Params) (*config, error) {
	c := &config{
		variant:    variant,
		pages:      p["pages"],
		batch:      p["batch"],
		ptls:       p["ptls"],
		mms:        p["mms"],
		users:      p["users"],
		accesses:   p["accesses"],
		reclaimers: p["reclaimers"],
		migrations: p["migrations"],
		syscalls:   p["syscalls"],
		width:      uint(p["width"]),
		largeFolio: p["large"] == 1,
		reuse:      p["reuse"] == 1,
		// bookkeeping adds invariants only, never state.
		bookkeeping: p["bookkeeping"] == 1,
		contend:     p["contend"] == 1,
		nested:      p["nested"] == 1,
	}
	c.batched, c.drain, c.counter, c.overflowSafe, c.flushDirty, c.retakeDrain = true, true, true, true, true, true
	c.nestedFlush = true
	switch variant {
	case Immediate:
		// Mainline with should_defer_flush false: the drains still run and
		// always find nothing pending.
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
	case RiscvASIDClear:
		c.asidClear = true
	case MadviseRetake:
		c.retakeDrain = false
	case X86:
		c.arch = archX86
	case X86V414:
		c.arch, c.x86Era = archX86, eraV414
	case X86V420:
		c.arch, c.x86Era = archX86, eraV420
	case X86V60:
		c.arch, c.x86Era = archX86, eraV60
	case X86NoCatchUp:
		c.arch, c.x86Era, c.noCatchUp = archX86, eraV414, true
	case X86GenZero:
		c.arch, c.x86Era, c.genZero = archX86, eraV60, true
	case PutbackEarly:
		c.putbackEarly = true // contend=1: Fixed
	case MremapLateFlush:
		c.batched, c.lateMremap = false, true // syscall=8 syscalls=1: Fixed
	case NoNestedFlush:
		c.nestedFlush = false // nested=1: Fixed
	case ARM64Migrate:
		c.arch, c.rMigrate = archARM64, true
	case ARM64SwitchNoDSB:
		c.arch, c.rMigrate, c.switchNoDSB = archARM64, true, true
	case ARM64:
		c.arch = archARM64
	case ARM64DSBOnly:
		c.arch, c.dsbOnly = archARM64, true
	default:
		return nil, fmt.Errorf("unknown variant %q", variant)
	}
	switch p["memory"] {
	case 0:
	case 2:
		if c.arch != archARM64 {
			return nil, fmt.Errorf("memory=2 (ARMv8) is for the arm64 variants: %s runs on %s", variant, archNames[c.arch])
		}
		c.arm = true
	default:
		return nil, fmt.Errorf("memory=%d: batchunmap has 0 (sequentially consistent) and 2 (ARMv8, for the arm64 variants); x86-TSO is not modelled", p["memory"])
	}
	c.weaken = p["weaken"]
	if c.weaken != weakNone && !c.arm {
		return nil, fmt.Errorf("weaken=%d takes an ordering away that only memory=2 (ARMv8) can miss: set memory=2", c.weaken)
	}
	if c.width == 0 {
		c.width = 2
		if variant == NoOverflowReset {
			c.width = 1
		}
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
	if c.reclaimers > c.pages {
		return nil, fmt.Errorf("reclaimers=%d exceeds pages=%d: every reclaimer reclaims at least one page", c.reclaimers, c.pages)
	}
	if c.arch == archX86 && c.users < c.mms-1 {
		// mm0 always has the syscall thread's CPU in its mask; every other
		// mm needs a user task for arch_tlbbatch_should_defer to defer.
		return nil, fmt.Errorf("x86 needs a user task in every mm but mm0 (users >= mms-1): arch_tlbbatch_should_defer, which defers only while another CPU is in mm_cpumask, is not modelled")
	}

	// CPUs.
	c.cpuR[0] = 0
	next := 2
	if c.reclaimers > 1 {
		c.cpuR[1] = 2
		next = 3
	}
	c.userCPU0 = next
	c.userCPUs = c.users
	if c.migrations > 0 {
		c.userCPUs++
	}
	c.ncpu = c.userCPU0 + c.userCPUs
	for i := range c.userCPUAt {
		c.userCPUAt[i] = -1
	}
	for i := 0; i < c.userCPUs; i++ {
		c.userCPUAt[c.userCPU0+i] = i
	}

	for va := 0; va < c.pages; va++ {
		c.mmOf[va] = va % c.mms
		c.ownerOf[va] = va % c.reclaimers
		c.ownPages[va%c.reclaimers] |= 1 << uint(va)
	}
	for u := 0; u < c.users; u++ {
		for va := 0; va < c.pages; va++ {
			if c.mmOf[va] == u%c.mms {
				c.userAddrs[u] = append(c.userAddrs[u], va)
			}
		}
	}

	// The syscall program: call k of the program's kinds, on mm0's vas in
	// turn; munmap removes its va, so no later call may use it.
	var mm0 []int
	for va := 0; va < c.pages; va += c.mms {
		mm0 = append(mm0, va)
	}
	prog := programs[p["syscall"]]
	c.largeVA, c.mremapVA = -1, -1
	unmapped := map[int]int{}
	for k := 0; k < c.syscalls; k++ {
		kind := prog[k%len(prog)]
		va := mm0[k%len(mm0)]
		if j, ok := unmapped[va]; ok {
			return nil, fmt.Errorf("syscall %d (%s) would use va%d, which syscall %d unmapped: lower syscalls or raise pages", k, kindNames[kind], va, j)
		}
		if kind == kMunmap || kind == kMremap {
			unmapped[va] = k
		}
		if kind == kMremap {
			if c.mremapVA >= 0 {
				return nil, fmt.Errorf("syscall %d would be a second mremap: the model moves one page: lower syscalls", k)
			}
			c.mremapVA = va
		}
		if kind == kMadvPageout && c.contend {
			return nil, fmt.Errorf("contend=1 with MADV_PAGEOUT: the folio it isolates would be reclaimed by the syscall thread itself (reclaim_pages), a third reclaimer the model does not have")
		}
		if splits(kind) && c.largeFolio && c.largeVA < 0 {
			c.largeVA = va
		}
		c.sysKind[0] = append(c.sysKind[0], kind)
		c.sysAddr[0] = append(c.sysAddr[0], uint8(va))
	}
	c.nsys = 1
	if c.nested {
		// mprotect takes mmap_lock for writing, and munmap for unlinking
		// the vma: only madvise calls, under the read lock, nest.
		for _, kind := range c.sysKind[0] {
			if kind == kMprotect || kind == kMunmap || kind == kMremap {
				return nil, fmt.Errorf("nested=1: the first syscall thread's %s takes mmap_lock for writing and cannot run beside syscall2's madvise: use syscall=3 (MADV_DONTNEED) or 4 (MADV_FREE)", kindNames[kind])
			}
		}
		c.nsys = 2
		c.sysKind[1] = []uint8{kMadvDontneed}
		c.sysAddr[1] = []uint8{0}
	}

	// mm_cpumask at the start: the syscall thread's CPU for mm0, and each
	// user's CPU; a spare CPU runs another process.
	c.initMask[0] |= 1 << cpuSyscall
	for i := 0; i < c.userCPUs; i++ {
		c.initLoaded[i] = uint8(c.other())
	}
	for u := 0; u < c.users; u++ {
		c.initMask[u%c.mms] |= 1 << uint(c.userCPU0+u)
		c.initLoaded[u] = uint8(u % c.mms)
	}

	// Threads: the reclaimers, the syscall thread, the users.
	if c.reclaimers == 1 {
		c.names = []string{"reclaimer"}
	} else {
		c.names = []string{"reclaimer0", "reclaimer1"}
	}
	for k := 0; k < c.reclaimers; k++ {
		c.tReclaim[k] = k
		c.rName[k] = c.names[k]
	}
	for i := 0; i < c.nsys; i++ {
		c.sysName[i] = "syscall"
		if i > 0 {
			c.sysName[i] = fmt.Sprintf("syscall%d", i+1)
		}
		c.tSys[i] = len(c.names)
		c.names = append(c.names, c.sysName[i])
	}
	c.tUser0 = len(c.names)
	for u := 0; u < c.users; u++ {
		c.names = append(c.names, fmt.Sprintf("user%d", u))
		c.userName[u] = fmt.Sprintf("user%d", u)
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
	if c.arch == archX86 {
		for mm := 0; mm < c.mms; mm++ {
			c.memNames = append(c.memNames, c.mmName(mm)+"context.tlb_gen")
		}
	}
	if c.trackPending() {
		c.pendAddr = model.Addr(len(c.memNames))
		c.memNames = append(c.memNames, c.mmName(0)+"tlb_flush_pending")
	}
	if c.mremapVA >= 0 {
		c.dstPTE = model.Addr(len(c.memNames))
		c.memNames = append(c.memNames, "pte[new]")
	}
	if c.arm {
		for mm := 0; mm < c.mms; mm++ {
			c.wmNames = append(c.wmNames, c.mmName(mm)+"tlb_flush_batched")
		}
		for l := 0; l < c.nptl(); l++ {
			name := fmt.Sprintf("PTL%d.locked", l)
			if l == c.ptls {
				name = "PTL(new).locked"
			}
			c.wmNames = append(c.wmNames, name)
		}
	}
	for i := range c.pageName {
		c.ptlName[i] = fmt.Sprintf("PTL%d", i)
		c.pageName[i] = fmt.Sprintf("page%d", i)
	}
	if c.mremapVA >= 0 {
		c.ptlName[c.ptls] = "PTL(new)"
	}
	for cpu := range c.tlbName {
		c.tlbName[cpu] = fmt.Sprintf("tlb[cpu%d]", cpu)
		c.cpuName[cpu] = fmt.Sprintf("CPU%d", cpu)
	}
	return c, nil
}

func (c *config) mmName(mm int) string {
	if mm == c.other() {
		return "another process's mm"
	}
	if c.mms == 1 {
		return ""
	}
	return fmt.Sprintf("mm%d.", mm)
}

// mmLabel names an mm in a label.
func (c *config) mmLabel(mm int) string {
	if mm == c.other() {
		return "another process's mm"
	}
	return fmt.Sprintf("mm%d", mm)
}
