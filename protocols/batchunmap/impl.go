package batchunmap

// The real concurrent implementation of the batched unmap flush, written
// against explorer/rt so that it runs under the Go scheduler (stress, the
// race detector) and under rt's controlled scheduler, and is tied step for
// step to the model (the steps and labels are the yield points, see package model).
//
// It mirrors the same code as the model (doc.go): mm/rmap.c's
// try_to_unmap_one with TTU_BATCH_FLUSH, set_tlb_ubc_flush_pending,
// try_to_unmap_flush(_dirty) and flush_tlb_batched_pending, mprotect's
// change_pte_range, zap_pte_range, madvise_free_pte_range with its PTL
// re-take, tlb_finish_mmu, and each architecture's switch_mm and flushes
// (riscv, x86 with tlb_gen in its four eras, arm64's asynchronous TLBIs). Every
// model variant is a code switch here, resolved by the model's own config
// (config.go), so the two cannot disagree on what a variant means. Unlike
// the model, which keeps x86's tlb_gen values as lags behind the mm's,
// this code keeps them as the kernel does: absolute generations.
//
// Goroutines are the model's threads, in its order and with its names:
// the reclaimers, the syscall thread, the user tasks. The page-table locks
// are rt mutexes and tlb_flush_batched is an rt word: each model step on
// them is the one rt operation of the real step, with the model's label
// (its static part as the operation's label, the values read completed
// with Env.Note).
//
// What has no rt primitive is hardware, or a step that touches several
// words, and the model folds it into one step; here it is one scheduling
// point (an Env.Yield or Env.Choose) followed by the step's accesses, made
// race-free in real mode:
//
//   - The page table (pte[]), mm_cpumask and x86's context.tlb_gen are
//     plain sync/atomic words: the MMU's walk inside a user access, a
//     switch_mm, and a flush round read or change them within one step.
//   - Each user CPU has a sync.Mutex standing for the CPU's serialization
//     of its instructions against invalidation IPIs (and for interrupts
//     being off in switch_mm): it guards the CPU's TLB, the mm it runs and
//     its ASIDs' tlb_gen. A user access holds it from lookup to access, a
//     flush takes each target's in turn, a syscall's PTE change takes
//     every CPU's (ascending) so that its marks of the entries older than
//     it are a consistent cut. It never spans an rt scheduling point, so
//     under control it is never contended and blocks nobody.
//   - The observers the model keeps outside its memory layer (page states
//     and contents, which pages are lazyfree, what the mmu_gather holds,
//     which PTLs are held, a shadow of tlb_flush_batched, the note
//     explaining a loss) live in obs, under one sync.Mutex taken after
//     the CPUs' and never across a scheduling point.
//
// The bookkeeping properties (flush-before-free, counter-sound) are
// invariants over the whole state after every step, as in the model: they
// are checked under control at the end of every step (before the stepping
// goroutine's next scheduling point, or at its exit), when only that
// goroutine runs. Real mode has no consistent cut at which to check them,
// so there they are not checked; the harm they predict (no-use-after-free,
// no-lost-write, syscall-postcondition) is checked at the access in both
// modes.

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// Impl is the real implementation of every variant.
var Impl = &rt.Impl{
	Variants: variantNames,
	New:      newImpl,
}

func newImpl(variant string, p model.Params) (rt.Body, error) {
	if p["memory"] != 0 || p["weaken"] != 0 {
		// Go's atomics and mutexes are sequentially consistent: the real
		// code cannot run under ARMv8 or lose an ordering.
		return nil, fmt.Errorf("batchunmap: the real implementation runs with sequentially consistent memory; memory=%d weaken=%d exist only in the model", p["memory"], p["weaken"])
	}
	c, err := newConfig(variant, p)
	if err != nil {
		return nil, err
	}
	return func(e *rt.Env) func() *model.Violation {
		k := &kernel{e: e, c: c, control: e.IsControlled()}
		k.start()
		return nil
	}, nil
}

// cpuState is one user CPU: its TLB (entries indexed by va, bits as in a
// PTE plus the observer bits), the mm it runs, and x86's per-ASID tlb_gen.
type cpuState struct {
	mu     sync.Mutex
	tlb    [maxPages]uint8
	loaded int
	lazy   bool        // x86 cpu_tlbstate.is_lazy: a kernel thread keeps loaded
	gen    [maxMMs]int // x86 cpu_tlbstate.ctxs[].tlb_gen; -1: no ASID
}

// kernel is one execution: the shared objects of the real code and the
// hardware and observers around it.
type kernel struct {
	e       *rt.Env
	c       *config
	control bool

	ptl     []*rt.Mutex  // page-table locks
	batched []*rt.Word64 // mm->tlb_flush_batched

	pte  [maxPages]atomic.Uint32 // the page table, walked by the MMU
	dst  atomic.Uint32           // mremap's PTE at the new address
	mask [maxMMs]atomic.Uint32   // mm_cpumask
	gen  [maxMMs]atomic.Int64    // x86 mm->context.tlb_gen
	cpu  [maxCPUs]cpuState       // the user CPUs (indexed by CPU number)

	// inflight is arm64's TLBIs issued by each reclaimer's CPU and not yet
	// completed by a DSB there (va bits).
	inflight [maxReclaimers]atomic.Uint32
	// sysOp is each syscall thread's current call (the calls returned).
	sysOp [maxSysThreads]atomic.Int32
	// pending is mm0's tlb_flush_pending (nested gathers).
	pending *rt.Word64

	obs struct {
		mu       sync.Mutex
		page     [maxPages]uint8 // pgMapped...
		val      [maxPages]uint8
		lazy     uint8              // lazyfree pages
		lru      uint8              // contend: folios on the LRU
		flock    uint8              // contend: locked folios
		split    bool               // the large folio was split
		held     [maxPages + 1]bool // PTL held (for counter-sound)
		moved    bool               // mremap moved its page to the new address
		word     [maxMMs]uint64     // shadow of tlb_flush_batched
		deferVA  [maxReclaimers]int
		gathered [maxSysThreads]int // the page each syscall's mmu_gather holds (-1: none)
		owes     [maxSysThreads]int // the va whose flush each syscall still owes (-1: none)
		note     note
	}
}

func (k *kernel) start() {
	e, c := k.e, k.c
	for l := 0; l < c.nptl(); l++ {
		k.ptl = append(k.ptl, e.Mutex(c.ptlName[l]))
	}
	for mm := 0; mm < c.mms; mm++ {
		k.batched = append(k.batched, e.Word64(c.mmName(mm)+"tlb_flush_batched"))
		k.mask[mm].Store(uint32(c.initMask[mm]))
	}
	for va := 0; va < c.pages; va++ {
		k.pte[va].Store(bPresent | bWrite)
	}
	for i := 0; i < c.userCPUs; i++ {
		cs := &k.cpu[c.userCPU0+i]
		cs.loaded = int(c.initLoaded[i])
		for mm := range cs.gen {
			cs.gen[mm] = -1
		}
		if cs.loaded < c.mms {
			cs.gen[cs.loaded] = 0
		}
	}
	for r := range k.obs.deferVA {
		k.obs.deferVA[r] = -1
	}
	for i := range k.obs.gathered {
		k.obs.gathered[i], k.obs.owes[i] = -1, -1
	}
	if c.trackPending() {
		k.pending = e.Word64(c.mmName(0) + "tlb_flush_pending")
	}
	for r := 0; r < c.reclaimers; r++ {
		e.Go(c.names[c.tReclaim[r]], func() { k.reclaim(r) })
	}
	for i := 0; i < c.nsys; i++ {
		e.Go(c.names[c.tSys[i]], func() { k.syscall(i) })
	}
	for u := 0; u < c.users; u++ {
		e.Go(c.names[c.tUser0+u], func() { k.user(u) })
	}
}

// step is a scheduling point with the model's label (formatted only under
// control).
func (k *kernel) step(format string, args ...any) {
	k.endStep()
	k.e.Yield("")
	k.e.Notef(format, args...)
}

// endStep ends the calling goroutine's step: under control, with the
// bookkeeping parameter, the model's invariants are checked on the state
// the step left, as the model checks them after every step.
func (k *kernel) endStep() {
	if !k.control || !k.c.bookkeeping {
		return
	}
	if msg := k.flushBeforeFree(); msg != "" {
		k.e.Fail(FlushBeforeFree, msg)
		return
	}
	if k.c.counter || k.c.boolFlag {
		if msg := k.counterSound(); msg != "" {
			k.e.Fail(CounterSound, msg)
		}
	}
}

// ---- hardware: TLBs, flushes, switch_mm ----

func (k *kernel) userCPUs(m uint8) uint8 { return k.c.userMask(m) }

// each runs f on every user CPU of mask, holding its lock.
func (k *kernel) each(mask uint8, f func(cpu int, cs *cpuState)) {
	for m := k.userCPUs(mask); m != 0; m &= m - 1 {
		cpu := bits.TrailingZeros8(m)
		cs := &k.cpu[cpu]
		cs.mu.Lock()
		f(cpu, cs)
		cs.mu.Unlock()
	}
}

func (k *kernel) dropVA(mask uint8, va int) {
	if va >= k.c.pages { // mremap's new address: untracked
		return
	}
	k.each(mask, func(_ int, cs *cpuState) { cs.tlb[va] = 0 })
}

// ptlNow is the model's ptlNow: the PTL under which page va is mapped.
func (k *kernel) ptlNow(va int) int {
	k.obs.mu.Lock()
	defer k.obs.mu.Unlock()
	if va == k.c.mremapVA && k.obs.moved {
		return k.c.ptls
	}
	return k.c.ptlOf(va)
}

// mremapOwes is the model's mremapOwes: syscall thread 0's mremap has
// moved its page and not yet flushed the old address.
func (k *kernel) mremapOwes() bool {
	k.obs.mu.Lock()
	defer k.obs.mu.Unlock()
	op := int(k.sysOp[0].Load())
	return op < len(k.c.sysKind[0]) && k.c.sysKind[0][op] == kMremap && k.obs.owes[0] >= 0
}

func (k *kernel) dropMM(mask uint8, mm int) {
	k.each(mask, func(_ int, cs *cpuState) {
		for va := 0; va < k.c.pages; va++ {
			if k.c.mmOf[va] == mm {
				cs.tlb[va] = 0
			}
		}
	})
}

func (k *kernel) dropAll(mask uint8) {
	k.each(mask, func(_ int, cs *cpuState) { cs.tlb = [maxPages]uint8{} })
}

// implRound is an x86 flush round in progress, as flush_tlb_info has it.
type implRound struct {
	kind   uint8
	mm, va int
	newGen int64 // f->new_tlb_gen
	pend   uint8 // target user CPUs whose handler has not run
}

// x86Start is the model's x86Start: inc_mm_tlb_gen, the mm_cpumask read
// and the choice of targets, after the step's scheduling point (trim is
// the environment's draw, for a range flush since v6.14).
func (k *kernel) x86Start(kind uint8, mm, va, from int, batch uint8, trim bool) (rnd implRound, st started) {
	c := k.c
	rnd = implRound{kind: kind, mm: mm, va: va}
	mask := batch
	if kind != rkBatch {
		rnd.newGen = k.gen[mm].Add(1)
		mask = uint8(k.mask[mm].Load())
	}
	if mask&^(1<<uint(from)) == 0 {
		return implRound{}, started{}
	}
	var stray uint8
	for m := mask; m != 0; m &= m - 1 {
		cpu := bits.TrailingZeros8(m)
		bit := uint8(1) << uint(cpu)
		loaded, lazy := k.loadedOn(cpu)
		switch {
		case kind == rkMM: // freed_tables: every CPU of the mask
			st.targets |= bit
		case lazy: // tlb_is_not_lazy, should_flush_tlb
			st.skipped |= bit
		case kind == rkBatch || !c.x86Trim() || loaded == mm:
			st.targets |= bit
		default:
			stray |= bit
		}
	}
	if trim && stray != 0 {
		st.targets |= stray
		st.trimmed = true
	}
	rnd.pend = c.userMask(st.targets)
	return rnd, st
}

// loadedOn is the mm CPU cpu runs or keeps lazily, and whether it is lazy
// (the syscall thread's runs mm0).
func (k *kernel) loadedOn(cpu int) (int, bool) {
	if cpu == cpuSyscall {
		return 0, false
	}
	cs := &k.cpu[cpu]
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.loaded, cs.lazy
}

// x86Handlers runs the round's flush_tlb_func handlers, a step each, in
// CPU order, as the model does.
func (k *kernel) x86Handlers(rnd *implRound, tail func() string) {
	c := k.c
	for rnd.pend != 0 {
		cpu := bits.TrailingZeros8(rnd.pend)
		rnd.pend &^= 1 << uint(cpu)
		k.endStep()
		k.e.Yield("")
		cs := &k.cpu[cpu]
		cs.mu.Lock()
		loaded := cs.loaded
		outcome, local := -1, -1
		if loaded != c.other() {
			local = cs.gen[loaded]
		}
		var g int64
		switch {
		case rnd.kind != rkBatch && rnd.mm != loaded && c.x86Era == eraLazyMask:
			outcome = hWrongCPU
			k.mask[rnd.mm].And(^uint32(1 << uint(cpu)))
		case rnd.kind != rkBatch && rnd.mm != loaded:
			outcome = hWrongMM
		case loaded == c.other():
			outcome = hOther
		case cs.lazy:
			outcome = hLazyLeave
			k.leaveLazy(cpu, cs)
		case c.x86Early() && rnd.kind != rkBatch && rnd.newGen <= int64(local):
			outcome = hAlready
		case rnd.kind == rkBatch && c.genZero: // f->new_tlb_gen 0 <= local
			outcome = hAlready
			cached := false
			for va := 0; va < c.pages; va++ {
				cached = cached || c.mmOf[va] == loaded && cs.tlb[va] != 0
			}
			if cached {
				k.setNote(note{kind: noteGenZero, cpu: uint8(cpu)})
			}
		default:
			g = k.gen[loaded].Load()
			switch {
			case int64(local) == g:
				outcome = hUpToDate
			case rnd.kind == rkRange && rnd.newGen == int64(local)+1 && rnd.newGen == g:
				outcome = hPartial
				if rnd.va < c.pages { // not mremap's new address
					cs.tlb[rnd.va] = 0
				}
			default:
				outcome = hFull
				for va := 0; va < c.pages; va++ {
					if c.mmOf[va] == loaded {
						cs.tlb[va] = 0
					}
				}
			}
			cs.gen[loaded] = int(g)
		}
		cs.mu.Unlock()
		if k.control {
			t := ""
			if rnd.pend == 0 && tail != nil {
				t = tail()
			}
			k.e.Notef("%s IPI: flush_tlb_func on %s%s", roundName(rnd.kind), c.describeHandler(cpu, outcome, loaded, rnd.mm, rnd.va, int(rnd.newGen), local, int(g)), t)
		}
	}
}

// switchIn is the model's switchIn: switch_mm(another process → mm) on
// cpu, with cs locked (interrupts off).
func (k *kernel) switchIn(cpu int, cs *cpuState, mm int) switched {
	c := k.c
	bit := uint32(1) << uint(cpu)
	cs.loaded = mm
	switch c.arch {
	case archX86:
		var sw switched
		if c.x86Clears() || k.mask[mm].Load()&bit == 0 {
			k.mask[mm].Or(bit)
			sw.set = true
		}
		g := k.gen[mm].Load()
		sw.g = int(g)
		switch {
		case cs.gen[mm] < 0:
			sw.outcome = swX86New
		case int64(cs.gen[mm]) < g && c.noCatchUp:
			sw.outcome = swX86Reused
			k.noteNoCatchUp(cpu, cs, mm)
			return sw
		case int64(cs.gen[mm]) < g:
			sw.outcome = swX86Stale
		default:
			sw.outcome = swX86Fresh
		}
		if sw.outcome != swX86Fresh {
			dropMMLocked(c, cs, mm)
		}
		cs.gen[mm] = int(g)
		return sw
	case archARM64:
		return switched{outcome: swARM64}
	}
	k.mask[mm].Or(bit)
	return switched{outcome: swSet}
}

// dropMMLocked invalidates every entry of mm in cs, which is locked.
func dropMMLocked(c *config, cs *cpuState, mm int) {
	for va := 0; va < c.pages; va++ {
		if c.mmOf[va] == mm {
			cs.tlb[va] = 0
		}
	}
}

// switchBack is the model's switchBack: x86's switch_mm(mm → mm) on a CPU
// back from lazy TLB mode, with cs locked.
func (k *kernel) switchBack(cpu int, cs *cpuState, mm int) switched {
	c := k.c
	cs.lazy = false
	g := k.gen[mm].Load()
	sw := switched{g: int(g)}
	switch {
	case int64(cs.gen[mm]) >= g:
		sw.outcome = swLazyFresh
	case c.noCatchUp:
		sw.outcome = swLazyReused
		k.noteNoCatchUp(cpu, cs, mm)
	default:
		sw.outcome = swLazyStale
		dropMMLocked(c, cs, mm)
		cs.gen[mm] = int(g)
	}
	return sw
}

// noteNoCatchUp is the model's: cs, locked, runs mm on an ASID behind its
// tlb_gen without flushing it.
func (k *kernel) noteNoCatchUp(cpu int, cs *cpuState, mm int) {
	for va := 0; va < k.c.pages; va++ {
		if k.c.mmOf[va] == mm && cs.tlb[va] != 0 {
			k.setNote(note{kind: noteNoCatchUp, cpu: uint8(cpu), op: uint8(mm)})
			return
		}
	}
}

// switchOut is the model's switchOut: switch_mm(mm → another process).
func (k *kernel) switchOut(cpu int, cs *cpuState, mm int) {
	c := k.c
	cs.loaded = c.other()
	switch {
	case c.arch == archRISCV && c.asidClear:
		k.mask[mm].And(^uint32(1 << uint(cpu)))
		cached := false
		for va := 0; va < c.pages; va++ {
			if c.mmOf[va] == mm && cs.tlb[va] != 0 {
				cached = true
			}
		}
		if cached {
			k.setNote(note{kind: noteMaskCleared, cpu: uint8(cpu), op: uint8(mm)})
		}
	case c.x86Clears():
		k.mask[mm].And(^uint32(1 << uint(cpu)))
	}
}

// leaveLazy is the model's leaveLazy, with cs locked:
// switch_mm_irqs_off(NULL, &init_mm) in a flush handler.
func (k *kernel) leaveLazy(cpu int, cs *cpuState) {
	mm := cs.loaded
	cs.loaded, cs.lazy = k.c.other(), false
	if k.c.x86Clears() {
		k.mask[mm].And(^uint32(1 << uint(cpu)))
	}
}

// ---- observers ----

// live is the model's live: cpu could use its entry for va without a
// flush first. cs must be locked.
func (k *kernel) live(cpu int, cs *cpuState, va int) bool {
	if cs.tlb[va] == 0 {
		return false
	}
	c := k.c
	mm := c.mmOf[va]
	if c.arch != archX86 || cs.loaded == mm && !cs.lazy || c.noCatchUp {
		return true
	}
	return int64(cs.gen[mm]) == k.gen[mm].Load()
}

// staleCPUs is the model's staleCPUs: CPUs with a live entry for va with
// more rights than its PTE gives. locked: the caller holds every CPU's
// lock.
func (k *kernel) staleCPUs(va int, locked bool) uint8 {
	var m uint8
	pte := uint8(k.pte[va].Load())
	check := func(cpu int, cs *cpuState) {
		e := cs.tlb[va]
		if e != 0 && (pte&bPresent == 0 || e&bWrite != 0 && pte&bWrite == 0 || e&bDirty != 0 && pte&bDirty == 0) && k.live(cpu, cs, va) {
			m |= 1 << uint(cpu)
		}
	}
	if locked {
		for i := 0; i < k.c.userCPUs; i++ {
			cpu := k.c.userCPU0 + i
			check(cpu, &k.cpu[cpu])
		}
		return m
	}
	k.each(k.c.allUserCPUs(), check)
	return m
}

// cause explains a violation from the first recorded loss, in the model's
// words.
func (k *kernel) cause() string {
	k.obs.mu.Lock()
	n := k.obs.note
	k.obs.mu.Unlock()
	return k.c.cause(n)
}

// setNote records the first loss of a pending flush.
func (k *kernel) setNote(n note) {
	k.obs.mu.Lock()
	if k.obs.note.kind == noteNone {
		k.obs.note = n
	}
	k.obs.mu.Unlock()
}

func (k *kernel) noteSet() bool {
	k.obs.mu.Lock()
	defer k.obs.mu.Unlock()
	return k.obs.note.kind != noteNone
}

func (k *kernel) setWord(mm int, w uint64) {
	k.obs.mu.Lock()
	k.obs.word[mm] = w
	k.obs.mu.Unlock()
}

func (k *kernel) setHeld(l int, held bool) {
	k.obs.mu.Lock()
	k.obs.held[l] = held
	k.obs.mu.Unlock()
}

// freePage is the model's freePage, with obs locked.
func (k *kernel) freePage(p int) {
	k.obs.page[p] = pgFreed
	if k.c.reuse {
		k.obs.page[p] = pgReused
		k.obs.val[p] = reusedVal
	}
}

// ---- reclaimers: shrink_folio_list ----

// reclaimer is one reclaimer's per-task batch and position.
type implReclaimer struct {
	k                  *kernel
	r, cpu             int
	mask               uint8 // tlb_ubc.arch.cpumask
	flushReq, writable bool  // tlb_ubc.flush_required, .writable
	queued             uint8 // the free batch
	kept               uint8 // contend: ret_folios, back on the LRU after the flush
	moved              bool  // arm64-migrate: migrated once
}

// migrate is the model's rMigrate: the scheduler may move the reclaimer
// to another CPU; __switch_to's dsb(ish) on the old one completes the
// TLBIs it issued there (not in the mutation, which leaves them in
// flight for good).
func (ir *implReclaimer) migrate() {
	k, c, e := ir.k, ir.k.c, ir.k.e
	k.endStep()
	from := c.cpuName[ir.cpu]
	if e.Choose("", 2) == 0 {
		e.Notef("schedule: %s stays on %s", c.rName[ir.r], from)
		return
	}
	ir.moved = true
	to := c.reclaimerCPU(ir.r, true)
	m := uint8(k.inflight[ir.r].Swap(0))
	if c.switchNoDSB {
		for v := m; v != 0 && !k.noteSet(); v &= v - 1 {
			va := bits.TrailingZeros8(v)
			held := false
			k.each(c.allUserCPUs(), func(cpu int, cs *cpuState) { held = held || k.live(cpu, cs, va) })
			if held {
				k.setNote(note{kind: noteSwitchNoDSB, va: uint8(va), cpu: uint8(ir.cpu), page: uint8(ir.r)})
			}
		}
		e.Notef("schedule: %s preempted, moves from %s to CPU%d: __switch_to without dsb(ish) (mutation): %s's TLBIs for %s stay in flight", c.rName[ir.r], from, to, from, pageSet(m))
		return
	}
	e.Notef("schedule: %s preempted, moves from %s to CPU%d: __switch_to: dsb(ish) completes %s's TLBIs for %s", c.rName[ir.r], from, to, from, pageSet(m))
	for ; m != 0; m &= m - 1 {
		k.dropVA(c.allUserCPUs(), bits.TrailingZeros8(m))
	}
}

// reclaim is reclaimer r's shrink_folio_list over its pages (stepReclaim):
// one model step per scheduling point below, in the model's order.
func (k *kernel) reclaim(r int) {
	c := k.c
	ir := &implReclaimer{k: k, r: r, cpu: c.cpuR[r]}
	list := c.ownPages[r]
	for pass := 0; ; pass++ {
		for list != 0 {
			va := bits.TrailingZeros8(list)
			list &^= 1 << uint(va)
			ir.page(va)
			// nextPage: on while the batch has room, else flush and free
			// it (and at the end of a pass that kept a folio or owes a
			// flush, put the kept folios back after the flush).
			last := list == 0
			owes := c.contend && last && (ir.kept != 0 || ir.flushReq)
			if bits.OnesCount8(ir.queued) < c.batch && !last || ir.queued == 0 && !owes {
				continue
			}
			if ir.flushReq {
				ir.batchFlush("try_to_unmap_flush: ")
			}
			ir.free(last)
		}
		if !c.contend || pass == 1 {
			break
		}
		// The second pass: isolate_lru_folios.
		k.endStep()
		k.e.Yield("")
		k.obs.mu.Lock()
		list, k.obs.lru = k.obs.lru, 0
		k.obs.mu.Unlock()
		k.e.Notef("shrink_inactive_list: isolate_lru_folios takes %s off the LRU (second pass)", pageSet(list))
	}
	k.endStep()
}

// trylock is the contended folio_trylock of va: false (and the folio
// kept) if madvise's split holds it; true with the folio locked, and
// removed when a pass before wrote it (then nothing is left to do).
func (ir *implReclaimer) trylock(va int) (go_ bool) {
	k, c, e := ir.k, ir.k.c, ir.k.e
	bit := uint8(1) << uint(va)
	k.endStep()
	e.Yield("")
	k.obs.mu.Lock()
	locked := k.obs.flock&bit != 0
	written := k.obs.page[va] == pgWriteback
	if locked {
		ir.kept |= bit
		if c.putbackEarly {
			k.obs.lru |= bit
		}
	} else {
		k.obs.flock |= bit
	}
	k.obs.mu.Unlock()
	switch {
	case locked:
		e.Notef("shrink_folio_list: folio_trylock page %d fails (madvise's split_folio holds it): keep%s", va, c.describePutbackEarly())
		return false
	case written:
		e.Notef("shrink_folio_list: folio_trylock page %d; not mapped, under writeback before", va)
		k.step("shrink_folio_list: writeback of page %d done, clean: __remove_mapping (swap cache), folio_unlock", va)
		k.obs.mu.Lock()
		k.obs.flock &^= bit
		k.obs.mu.Unlock()
		ir.queued |= bit
		return false
	}
	e.Notef("shrink_folio_list: folio_trylock page %d", va)
	return true
}

// keep is the model's keep, with obs locked.
func (ir *implReclaimer) keep(va int) {
	if !ir.k.c.contend {
		return
	}
	bit := uint8(1) << uint(va)
	ir.k.obs.flock &^= bit
	ir.kept |= bit
	if ir.k.c.putbackEarly {
		ir.k.obs.lru |= bit
	}
}

// page reclaims va up to its pageout or discard, which queue it in the
// free batch, or until try_to_unmap fails and the folio is kept.
func (ir *implReclaimer) page(va int) {
	k, c, e := ir.k, ir.k.c, ir.k.e
	mm := c.mmOf[va]

	if c.contend && !ir.trylock(va) {
		return
	}
	// page_vma_mapped_walk under the PTL where the page is mapped; if
	// mremap moves it meanwhile, the walk goes on to the new address.
	l := k.ptlNow(va)
	for {
		k.endStep()
		if l == c.ptls {
			k.ptl[l].Lock(fmt.Sprintf("try_to_unmap_one: spin_lock %s (page_vma_mapped_walk: page %d, moved by mremap)", c.ptlName[l], va))
		} else {
			k.ptl[l].Lock(fmt.Sprintf("try_to_unmap_one: spin_lock %s (page_vma_mapped_walk va%d)", c.ptlName[l], va))
		}
		k.setHeld(l, true)
		nl := k.ptlNow(va)
		if nl == l {
			break
		}
		k.endStep()
		k.ptl[l].Unlock(fmt.Sprintf("try_to_unmap_one: page_vma_mapped_walk: pte[%d] no longer maps page %d (mremap moved it): spin_unlock %s, on to the new address", va, va, c.ptlName[l]))
		k.setHeld(l, false)
		l = nl
	}
	lname := c.ptlName[l]
	pte, tva := &k.pte[va], va
	if l == c.ptls {
		pte, tva = &k.dst, c.pages
	}

	k.endStep()
	e.Yield("")
	if tva != va && !k.noteSet() && k.mremapOwes() {
		held := false
		k.each(c.allUserCPUs(), func(cpu int, cs *cpuState) { held = held || k.live(cpu, cs, va) })
		if held {
			k.setNote(note{kind: noteLateMremap, va: uint8(va)})
		}
	}
	pteval := uint8(pte.Swap(0))
	present := pteval&bPresent != 0
	pname := c.memNames[va]
	if tva != va {
		pname = c.memNames[c.dstPTE]
	}
	if present {
		e.Notef("try_to_unmap_one: ptep_get_and_clear %s (%s)", pname, describePTE(pteval))
	} else {
		e.Notef("try_to_unmap_one: page_vma_mapped_walk finds %s none: the page is mapped no more", pname)
	}
	k.obs.mu.Lock()
	if k.obs.page[va] == pgMapped {
		k.obs.page[va] = pgUnmapped
	}
	if c.boolFlag && c.batched && present {
		k.obs.deferVA[ir.r] = va
	}
	lazy := k.obs.lazy&(1<<uint(va)) != 0
	k.obs.mu.Unlock()

	switch {
	case !present:
	case !c.batched:
		// flush_tlb_range under the PTL: the IPIs are this step.
		switch c.arch {
		case archRISCV:
			k.endStep()
			e.Yield("")
			m := uint8(k.mask[mm].Load())
			k.dropVA(m, tva)
			e.Notef("try_to_unmap_one: flush_tlb_range %s → CPUs %s", c.vaName(tva), cpus(m))
		case archARM64:
			k.step("try_to_unmap_one: flush_tlb_range %s: tlbi vale1is; dsb(ish)", c.vaName(tva))
			k.dropVA(c.allUserCPUs(), tva)
		default:
			k.endStep()
			trim := k.chooseTrim()
			rnd, st := k.x86Start(rkRange, mm, tva, ir.cpu, 0, trim)
			e.Notef("try_to_unmap_one: flush_tlb_range %s: %s", c.vaName(tva), c.describeStart(int(k.gen[mm].Load()), st))
			k.x86Handlers(&rnd, nil)
		}
	default:
		if c.arch == archX86 {
			k.endStep()
			e.Yield("")
			g := k.gen[mm].Add(1)
			e.Notef("set_tlb_ubc_flush_pending: arch_tlbbatch_add_pending: inc_mm_tlb_gen → %d", g)
		}
		k.endStep()
		e.Yield("")
		if c.arch == archARM64 {
			if tva == va {
				k.inflight[ir.r].Or(1 << uint(va))
			}
			e.Notef("set_tlb_ubc_flush_pending: arch_tlbbatch_add_pending: dsb(ishst); tlbi vale1is %s (in flight); flush_required = true", c.vaName(tva))
		} else {
			m := uint8(k.mask[mm].Load())
			e.Notef("set_tlb_ubc_flush_pending: arch_tlbbatch_add_pending: batch cpumask %s |= mm_cpumask %s; flush_required = true", cpus(ir.mask), cpus(m))
			ir.mask |= m
		}
		ir.flushReq = true
		switch {
		case c.boolFlag:
			k.endStep()
			k.batched[mm].Store("set_tlb_ubc_flush_pending: mm->tlb_flush_batched = true", 1)
			k.obs.mu.Lock()
			k.obs.word[mm] = 1
			k.obs.deferVA[ir.r] = -1
			k.obs.mu.Unlock()
		case !c.counter: // no tlb_flush_batched before 3ea277194daa
		default:
			k.deferCount(va, mm)
		}
		if pteval&bDirty != 0 {
			ir.writable = true
		}
	}

	kept := false
	if present && lazy && pteval&bDirty != 0 {
		// The MADV_FREE page check: the folio was redirtied.
		k.step("try_to_unmap_one: lazyfree folio redirtied: set_ptes %s (%s) back, folio_set_swapbacked, walk_abort", pname, describePTE(pteval))
		pte.Store(uint32(pteval))
		k.obs.mu.Lock()
		k.obs.page[va] = pgMapped
		k.obs.lazy &^= 1 << uint(va)
		k.obs.mu.Unlock()
		kept, lazy = true, false
	}

	k.endStep()
	what := ""
	if kept {
		what = "; try_to_unmap failed: the folio is kept"
	}
	k.ptl[l].Unlock("try_to_unmap_one: spin_unlock " + lname + what)
	k.setHeld(l, false)
	if kept {
		k.obs.mu.Lock()
		ir.keep(va)
		k.obs.mu.Unlock()
		return
	}
	if c.rMigrate && !ir.moved && k.inflight[ir.r].Load() != 0 {
		ir.migrate()
	}

	if lazy || !present {
		if lazy {
			k.step("shrink_folio_list: clean lazyfree folio %d discarded without pageout", va)
		} else {
			k.step("shrink_folio_list: folio %d is mapped no more (zapped): freed without pageout", va)
		}
		k.obs.mu.Lock()
		k.obs.lazy &^= 1 << uint(va)
		k.obs.flock &^= 1 << uint(va)
		k.obs.mu.Unlock()
		ir.queued |= 1 << uint(va)
		return
	}

	if c.flushDirty && ir.writable {
		ir.batchFlush("try_to_unmap_flush_dirty: writable: ")
	}

	// pageout: the swap snapshot; writeback completes at once.
	k.endStep()
	e.Yield("")
	k.obs.mu.Lock()
	val := k.obs.val[va]
	k.obs.page[va] = pgWriteback
	if ir.writable && !c.flushDirty && k.obs.note.kind == noteNone {
		k.obs.note = note{kind: noteDirtySkip, va: uint8(va)}
	}
	nested := ""
	if c.nestedReset {
		nested = "; bio allocation enters nested reclaim: init_tlb_ubc clears flush_required"
		if ir.flushReq && (k.obs.note.kind == noteNone || k.obs.note.kind == noteNestedReset) {
			k.obs.note = note{kind: noteNestedReset, page: uint8(va)}
		}
		ir.flushReq = false
	}
	if c.contend {
		nested += "; folio_test_writeback: keep: folio_unlock" + c.describePutbackEarly()
		if c.putbackEarly && (ir.flushReq || k.inflight[ir.r].Load() != 0) && k.obs.note.kind == noteNone {
			k.obs.note = note{kind: notePutback, va: uint8(va), cpu: uint8(ir.r)}
		}
		ir.keep(va)
	} else {
		ir.queued |= 1 << uint(va)
	}
	k.obs.mu.Unlock()
	e.Notef("pageout: swap_writepage snapshots page %d (val=%d)%s", va, val, nested)
}

// deferCount is the pending/flushed update of set_tlb_ubc_flush_pending
// (5ee2fa2f0636), with or without the overflow reset.
func (k *kernel) deferCount(va, mm int) {
	e, c := k.e, k.c
	w := k.batched[mm]
	var word uint64
	if c.overflowSafe {
		k.endStep()
		word = w.Load("set_tlb_ubc_flush_pending: atomic_read tlb_flush_batched = ")
		e.Note(c.describeWord(word))
	}
	for {
		k.endStep()
		if c.overflowSafe && c.pending(word) > c.large() {
			prev := w.CAS("set_tlb_ubc_flush_pending: atomic_try_cmpxchg", word, 1)
			if prev != word {
				e.Notef(" fails (now %s): retry", c.describeWord(prev))
				word = prev
				continue
			}
			k.setWord(mm, 1)
			e.Notef(" (pending %d > %d): reset to %s", c.pending(word), c.large(), c.describeWord(1))
			return
		}
		now := w.Add("set_tlb_ubc_flush_pending: atomic_inc tlb_flush_batched → ", 1) + 1
		k.setWord(mm, now)
		e.Note(c.describeWord(now))
		if !c.armed(now) {
			k.setNote(note{kind: noteWrapped, va: uint8(va), word: uint16(now)})
		}
		return
	}
}

// batchFlush is a step of arch_tlbbatch_flush and the reset of the
// batch, labelled with caller's words and what the flush did (x86: then
// a step per handler).
func (ir *implReclaimer) batchFlush(caller string) {
	k, c := ir.k, ir.k.c
	k.endStep()
	k.e.Yield("")
	mask := ir.mask
	if !c.stickyMask {
		ir.mask = 0
	}
	ir.flushReq, ir.writable = false, false
	switch c.arch {
	case archRISCV:
		k.dropAll(mask)
		k.e.Notef("%s%s", caller, c.describeBatchFlush(mask, 0, started{}))
	case archARM64:
		m := uint8(k.inflight[ir.r].Swap(0))
		k.e.Notef("%s%s", caller, c.describeBatchFlush(mask, m, started{}))
		for ; m != 0; m &= m - 1 {
			k.dropVA(c.allUserCPUs(), bits.TrailingZeros8(m))
		}
	default:
		rnd, st := k.x86Start(rkBatch, 0, 0, ir.cpu, mask, false)
		k.e.Notef("%s%s", caller, c.describeBatchFlush(mask, 0, st))
		k.x86Handlers(&rnd, nil)
	}
}

// chooseTrim draws should_trim_cpumask for a range flush (v6.14 on): the
// model's choice, made whatever the mask holds.
func (k *kernel) chooseTrim() bool {
	if !k.c.x86Trim() {
		k.e.Yield("")
		return false
	}
	return k.e.Choose("", 2) == 1
}

// free is free_unref_folios of the batch and, at the end of a pass
// (last), move_folios_to_lru of the kept folios.
func (ir *implReclaimer) free(last bool) {
	k, c := ir.k, ir.k.c
	k.endStep()
	k.e.Yield("")
	k.obs.mu.Lock()
	desc := ""
	if c.reuse {
		desc = "; the allocator hands them to a new owner, who writes 9"
	}
	held := func(p int) int {
		for i := 0; i < c.nsys; i++ {
			if k.obs.gathered[i] == p {
				return i
			}
		}
		return -1
	}
	for p := 0; p < c.pages; p++ {
		if i := held(p); i >= 0 && ir.queued&(1<<uint(p)) != 0 {
			desc = fmt.Sprintf(" (the mmu_gather of %s still holds page %d)", callName(c.sysKind[i][k.sysOp[i].Load()], p), p)
			break
		}
	}
	for p := 0; p < c.pages; p++ {
		if ir.queued&(1<<uint(p)) == 0 {
			continue
		}
		if held(p) >= 0 {
			k.obs.page[p] = pgHeld
			continue
		}
		k.freePage(p)
	}
	label := fmt.Sprintf("free_unref_folios: free %s%s", pageSet(ir.queued), desc)
	if ir.queued == 0 {
		label = "shrink_folio_list returns"
	}
	if last && ir.kept != 0 {
		if !c.putbackEarly {
			label += "; move_folios_to_lru puts " + pageSet(ir.kept) + " back on the LRU"
		}
		k.obs.lru |= ir.kept
		ir.kept = 0
	}
	k.obs.mu.Unlock()
	k.e.Note(label)
	ir.queued = 0
}

// ---- the syscall thread ----

// syscall runs syscall thread i's program (stepSyscall).
func (k *kernel) syscall(i int) {
	for op := range k.c.sysKind[i] {
		k.call(i, op)
	}
	k.endStep()
}

// call is one call of syscall thread i's program, on one va.
func (k *kernel) call(i, op int) {
	e, c := k.e, k.c
	va, kind := int(c.sysAddr[i][op]), c.sysKind[i][op]
	mm, l := c.mmOf[va], c.ptlOf(va)
	lname := c.ptlName[l]
	fn := ptlFunc[kind]
	var word uint64 // tlb_flush_batched as the last drain read it
	retaken := false
	gathered, page := false, false
	if c.trackPending() {
		// tlb_gather_mmu.
		k.endStep()
		n := k.pending.Add(callName(kind, va)+": tlb_gather_mmu: inc_tlb_flush_pending → ", 1) + 1
		e.Note(fmt.Sprint(n))
		e.Call(c.tSys[i], memIn{Op: callOps[kind], VA: uint8(va)})
	}
	for {
		k.endStep()
		if retaken {
			k.ptl[l].Lock(fmt.Sprintf("%s: pte_offset_map_lock %s again after split_folio", fn, lname))
		} else {
			k.ptl[l].Lock(fmt.Sprintf("%s: pte_offset_map_lock %s (%s)", fn, lname, callName(kind, va)))
			if !c.trackPending() {
				e.Call(c.tSys[i], memIn{Op: callOps[kind], VA: uint8(va)})
			}
		}
		k.setHeld(l, true)
		if kind == kMremap {
			k.endStep()
			k.ptl[c.ptls].Lock("move_ptes: spin_lock_nested " + c.ptlName[c.ptls])
			k.setHeld(c.ptls, true)
		}
		if c.drain && (!retaken || c.retakeDrain) {
			k.drain(mm, l, &word)
		}
		// The PTE step.
		k.endStep()
		e.Yield("")
		split := k.changePTE(i, va, kind, word, retaken, &gathered, &page)
		if !split {
			break
		}
		k.endStep()
		k.ptl[l].Unlock(fmt.Sprintf("%s: pte_unmap_unlock %s to split the large folio", fn, lname))
		k.setHeld(l, false)
		k.step("split_folio: the large folio at va%d becomes small; folio_unlock", va)
		k.obs.mu.Lock()
		k.obs.split = true
		k.obs.flock &^= 1 << uint(va)
		k.obs.mu.Unlock()
		retaken = true
	}

	ret := "; " + callName(kind, va) + " returns"
	if c.trackPending() {
		ret = "" // dec_tlb_flush_pending ends the call
	}
	if kind == kMremap {
		// move_ptes: the old address's flush under both PTLs (after
		// dropping them before eb66ae030829).
		if gathered && !c.lateMremap {
			k.rangeFlush(i, mm, va, "move_ptes: flush_tlb_range", "")
			gathered = false
		}
		k.endStep()
		k.ptl[c.ptls].Unlock("move_ptes: spin_unlock " + c.ptlName[c.ptls])
		k.setHeld(c.ptls, false)
	}
	k.endStep()
	tail := ""
	if !gathered && !page {
		tail = ret
	}
	k.ptl[l].Unlock(fmt.Sprintf("%s: pte_unmap_unlock %s%s", fn, lname, tail))
	k.setHeld(l, false)
	if c.trackPending() {
		// tlb_finish_mmu: mm_tlb_flush_nested.
		k.endStep()
		n := k.pending.Load("tlb_finish_mmu: mm_tlb_flush_nested: tlb_flush_pending = ")
		if n > 1 {
			e.Notef("%d > 1: another gather is in flight: fullmm, freed_tables", n)
			k.forceFlush(i, mm)
			gathered = false
		} else {
			e.Note(fmt.Sprint(n))
		}
	}
	if gathered {
		// tlb_finish_mmu: the gathered flush, after the PTL was dropped.
		t := ret
		if page {
			t = ""
		}
		what := "tlb_finish_mmu: flush_tlb_mm_range"
		if kind == kMremap {
			what = "move_ptes: flush_tlb_range"
		}
		k.rangeFlush(i, mm, va, what, t)
	}
	if page {
		// free_pages_and_swap_cache: the gather's reference goes.
		k.endStep()
		e.Yield("")
		k.obs.mu.Lock()
		k.obs.gathered[i] = -1
		freed := k.obs.page[va] == pgHeld
		if freed {
			k.freePage(va)
		}
		k.obs.mu.Unlock()
		what := "the reclaimer still holds it"
		switch {
		case freed && c.reuse:
			what = "the last reference: freed, and the allocator hands it to a new owner, who writes 9"
		case freed:
			what = "the last reference: freed"
		}
		e.Notef("tlb_finish_mmu: free_pages_and_swap_cache page %d (%s)%s", va, what, ret)
	}
	if c.trackPending() {
		k.endStep()
		n := k.pending.Add("tlb_finish_mmu: dec_tlb_flush_pending → ", ^uint64(0)) - 1
		e.Notef("%d; %s returns", n, callName(kind, va))
	}
	k.endCall(i, op, va, kind)
}

// rangeFlush is the flush of va by syscall thread i (the model's sFlush),
// labelled what, with tail t on its last step.
func (k *kernel) rangeFlush(i, mm, va int, what, t string) {
	e, c := k.e, k.c
	switch c.arch {
	case archRISCV:
		k.endStep()
		e.Yield("")
		m := uint8(k.mask[mm].Load())
		k.dropVA(m, va)
		k.setOwes(i, -1)
		e.Notef("%s va%d → CPUs %s%s", what, va, cpus(m), t)
	case archARM64:
		k.step("%s va%d: tlbi vale1is; dsb(ish)%s", what, va, t)
		k.dropVA(c.allUserCPUs(), va)
		k.setOwes(i, -1)
	default:
		k.endStep()
		trim := k.chooseTrim()
		rnd, st := k.x86Start(rkRange, mm, va, cpuSyscall, 0, trim)
		if rnd.pend != 0 {
			e.Notef("%s va%d: %s", what, va, c.describeStart(int(k.gen[mm].Load()), st))
			k.x86Handlers(&rnd, func() string { return t })
		} else {
			e.Notef("%s va%d: %s%s", what, va, c.describeStart(int(k.gen[mm].Load()), st), t)
		}
		k.setOwes(i, -1)
	}
}

// forceFlush is tlb_finish_mmu's flush of the whole mm when its gather
// nests with another (the model's sForce), by syscall thread i.
func (k *kernel) forceFlush(i, mm int) {
	e, c := k.e, k.c
	switch c.arch {
	case archRISCV:
		k.endStep()
		e.Yield("")
		m := uint8(k.mask[mm].Load())
		k.dropMM(m, mm)
		k.setOwes(i, -1)
		e.Notef("tlb_finish_mmu: tlb_flush_mmu: flush_tlb_mm → CPUs %s", cpus(m))
	case archARM64:
		k.step("tlb_finish_mmu: tlb_flush_mmu: flush_tlb_mm: dsb(ishst); tlbi aside1is; dsb(ish)")
		k.dropMM(c.allUserCPUs(), mm)
		k.setOwes(i, -1)
	default:
		k.endStep()
		e.Yield("")
		rnd, st := k.x86Start(rkMM, mm, 0, cpuSyscall, 0, false)
		e.Notef("tlb_finish_mmu: tlb_flush_mmu: flush_tlb_mm: %s", c.describeStart(int(k.gen[mm].Load()), st))
		k.x86Handlers(&rnd, nil)
		k.setOwes(i, -1)
	}
}

// drain is flush_tlb_batched_pending under PTL l.
func (k *kernel) drain(mm, l int, word *uint64) {
	e, c := k.e, k.c
	w := k.batched[mm]
	k.endStep()
	*word = w.Load("flush_tlb_batched_pending: atomic_read tlb_flush_batched = ")
	e.Note(c.describeWord(*word))
	if !c.armed(*word) {
		return
	}
	why := "tlb_flush_batched true"
	if !c.boolFlag {
		why = fmt.Sprintf("pending %d != flushed %d", c.pending(*word), c.flushed(*word))
	}
	switch {
	case c.arch == archRISCV:
		k.endStep()
		e.Yield("")
		m := uint8(k.mask[mm].Load())
		k.dropMM(m, mm)
		e.Notef("flush_tlb_batched_pending: flush_tlb_mm (%s) → CPUs %s", why, cpus(m))
	case c.arch == archARM64 && c.dsbOnly:
		k.step("flush_tlb_batched_pending: arch_flush_tlb_batched_pending (%s): dsb(ish) on CPU1", why)
		if !k.noteSet() {
			for r := 0; r < c.reclaimers; r++ {
				if m := k.inflight[r].Load(); m != 0 {
					k.setNote(note{kind: noteDSBOnly, va: uint8(bits.TrailingZeros32(m)), cpu: uint8(c.cpuR[r])})
					break
				}
			}
		}
	case c.arch == archARM64:
		k.step("flush_tlb_batched_pending: flush_tlb_mm (%s): dsb(ishst); tlbi aside1is; dsb(ish)", why)
		k.dropMM(c.allUserCPUs(), mm)
	default:
		k.endStep()
		e.Yield("")
		rnd, st := k.x86Start(rkMM, mm, 0, cpuSyscall, 0, false)
		e.Notef("flush_tlb_batched_pending: flush_tlb_mm (%s): %s", why, c.describeStart(int(k.gen[mm].Load()), st))
		k.x86Handlers(&rnd, nil)
	}

	k.endStep()
	if c.boolFlag {
		w.Store("flush_tlb_batched_pending: mm->tlb_flush_batched = false", 0)
		k.setWord(mm, 0)
		k.noteBoolCleared(l, mm)
		return
	}
	p := c.pending(*word)
	want := p | p<<c.shift()
	if prev := w.CAS("flush_tlb_batched_pending: atomic_cmpxchg", *word, want); prev == *word {
		k.setWord(mm, want)
		e.Notef(" → %s", c.describeWord(want))
	} else {
		e.Notef(" fails (now %s): a new deferral stays pending", c.describeWord(prev))
	}
}

// lockCPUs takes every user CPU's lock, ascending.
func (k *kernel) lockCPUs() {
	for i := 0; i < k.c.userCPUs; i++ {
		k.cpu[k.c.userCPU0+i].mu.Lock()
	}
}

func (k *kernel) unlockCPUs() {
	for i := k.c.userCPUs - 1; i >= 0; i-- {
		k.cpu[k.c.userCPU0+i].mu.Unlock()
	}
}

// changePTE is the syscall's PTE step (the model's stepPTE), right after
// its scheduling point, with every CPU held so that the marks are a
// consistent cut. It reports whether madvise must drop the PTL to split.
func (k *kernel) changePTE(i, va int, kind uint8, word uint64, retaken bool, gathered, page *bool) (split bool) {
	e, c := k.e, k.c
	k.lockCPUs()
	defer k.unlockCPUs()
	p := &k.pte[va]
	old := uint8(p.Load())
	fn := ptlFunc[kind]
	if old&bPresent == 0 {
		what := "nothing to change, nothing to flush"
		switch kind {
		case kMadvFree, kMunmap, kMadvDontneed:
			what = "free_swap_and_cache_nr, clear_not_present_full_ptes, nothing to flush"
		case kMadvCold, kMadvPageout:
			what = "!pte_present: next"
		}
		e.Notef("%s: pte[%d] none (swap entry): %s", fn, va, what)
		if !promises(kind) {
			return false
		}
		k.mark(va, kind)
		if !k.noteSet() && k.staleCPUs(va, true) != 0 {
			n := note{kind: noteNoFlush, va: uint8(va), word: uint16(word), op: kind}
			switch {
			case !c.drain:
				n.kind = noteNoDrain
			case retaken && !c.retakeDrain:
				n.kind = noteRetake
			}
			k.setNote(n)
		}
		return false
	}
	if splits(kind) {
		k.obs.mu.Lock()
		isLarge := va == c.largeVA && !k.obs.split
		bit := uint8(1) << uint(va)
		busy := isLarge && c.contend && k.obs.flock&bit != 0
		if isLarge && c.contend && !busy {
			k.obs.flock |= bit
		}
		k.obs.mu.Unlock()
		if busy {
			e.Notef("%s: pte[%d] (%s) maps part of a large folio: folio_trylock fails (reclaim holds it): skip it", fn, va, describePTE(old))
			return false
		}
		if isLarge {
			e.Notef("%s: pte[%d] (%s) maps part of a large folio: folio_trylock, split it", fn, va, describePTE(old))
			return true
		}
	}
	// The hardware may set the dirty bit between the load and the change:
	// each change is a compare-and-swap loop, as the kernel's atomic
	// get-and-clear keeps such an update.
	switch kind {
	case kMremap:
		old = uint8(p.Swap(0))
		k.dst.Store(uint32(old))
		k.obs.mu.Lock()
		k.obs.moved = true
		k.obs.mu.Unlock()
		e.Notef("move_ptes: get_and_clear pte[%d] (%s), set_ptes pte[new]: force_flush", va, describePTE(old))
		*gathered = true
		k.setOwes(i, va)
	case kMadvCold, kMadvPageout:
		k.obs.mu.Lock()
		onLRU := c.contend && k.obs.lru&(1<<uint(va)) != 0
		k.obs.mu.Unlock()
		if !onLRU {
			e.Notef("%s: pte[%d] (%s): !folio_test_lru (reclaim has isolated it): next", fn, va, describePTE(old))
			return false
		}
		e.Notef("%s: clear_young_dirty_ptes(CYDP_CLEAR_YOUNG) pte[%d]; tlb_remove_tlb_entries records va%d; folio_deactivate", fn, va, va)
		*gathered = true
		k.setOwes(i, va)
		return false
	case kMprotect:
		for old&bWrite != 0 && !p.CompareAndSwap(uint32(old), uint32(old&^bWrite)) {
			old = uint8(p.Load())
		}
		if old&bWrite == 0 {
			e.Notef("change_pte_range: pte[%d] already ro", va)
			break
		}
		e.Call(protectClient, memIn{Op: opProtect, VA: uint8(va)})
		e.Return(protectClient, memOut{Res: resOK})
		e.Notef("change_pte_range: pte[%d] %s → %s; tlb_flush_pte_range records va%d", va, describePTE(old), describePTE(old&^bWrite), va)
		*gathered = true
		k.setOwes(i, va)
	case kMunmap, kMadvDontneed:
		old = uint8(p.Swap(0))
		e.Notef("zap_pte_range: ptep_get_and_clear_full pte[%d] (%s); tlb_remove_tlb_entry records va%d; the mmu_gather takes page %d", va, describePTE(old), va, va)
		*gathered, *page = true, true
		k.obs.mu.Lock()
		k.obs.gathered[i] = va
		k.obs.mu.Unlock()
		k.setOwes(i, va)
	case kMadvFree:
		k.obs.mu.Lock()
		k.obs.lazy |= 1 << uint(va)
		k.obs.mu.Unlock()
		for old&bDirty != 0 && !p.CompareAndSwap(uint32(old), uint32(old&^bDirty)) {
			old = uint8(p.Load())
		}
		if old&bDirty == 0 {
			e.Notef("madvise_free_pte_range: pte[%d] %s, clean: folio_mark_lazyfree, nothing to flush", va, describePTE(old))
			break
		}
		e.Notef("madvise_free_pte_range: clear_young_dirty_ptes pte[%d] %s → %s; tlb_remove_tlb_entries records va%d; folio_mark_lazyfree", va, describePTE(old), describePTE(old&^bDirty), va)
		*gathered = true
		k.setOwes(i, va)
	}
	k.mark(va, kind)
	return false
}

func (k *kernel) setOwes(i, va int) {
	k.obs.mu.Lock()
	k.obs.owes[i] = va
	k.obs.mu.Unlock()
}

// mark is the model's mark, with every CPU held.
func (k *kernel) mark(va int, kind uint8) {
	if !promises(kind) {
		return
	}
	for i := 0; i < k.c.userCPUs; i++ {
		p := &k.cpu[k.c.userCPU0+i].tlb[va]
		if *p == 0 {
			continue
		}
		switch kind {
		case kMprotect:
			if *p&bWrite == 0 {
				continue
			}
		case kMadvFree:
			if *p&(bWrite|bDirty) != bWrite|bDirty {
				continue
			}
		}
		*p |= bCur
	}
}

// endCall is the model's endCall: the return to user space.
func (k *kernel) endCall(i, op, va int, kind uint8) {
	level := uint8(bNoWrite)
	if kind == kMunmap || kind == kMadvDontneed || kind == kMremap {
		level = bNoAccess
	}
	k.each(k.c.allUserCPUs(), func(_ int, cs *cpuState) {
		if p := &cs.tlb[va]; *p&bCur != 0 && promises(kind) {
			*p = *p&^bCur | level
		}
	})
	k.e.Return(k.c.tSys[i], memOut{Res: resOK})
	k.sysOp[i].Store(int32(op + 1))
}

// noteBoolCleared is the model's: the drain under PTL l stored false while
// a va of mm under another lock has a stale entry whose deferral already
// set the flag.
func (k *kernel) noteBoolCleared(l, mm int) {
	c := k.c
	k.obs.mu.Lock()
	skip, deferVA := k.obs.note.kind != noteNone, k.obs.deferVA
	k.obs.mu.Unlock()
	if skip {
		return
	}
	for va := 0; va < c.pages; va++ {
		if c.mmOf[va] != mm || c.ptlOf(va) == l || k.staleCPUs(va, false) == 0 {
			continue
		}
		deferring := false
		for r := 0; r < c.reclaimers; r++ {
			deferring = deferring || deferVA[r] == va
		}
		if deferring {
			continue
		}
		k.setNote(note{kind: noteBoolCleared, va: uint8(va), ptl: uint8(l)})
		return
	}
}

// ---- user tasks ----

// user runs user task u (stepUser): each access is one step, the Choose
// of the va and of read or write, in which the CPU looks up its TLB,
// walks the page table on a miss, fills, and accesses the page, holding
// its CPU throughout; user0 may instead be scheduled out, and then in on
// a CPU it draws.
func (k *kernel) user(u int) {
	e, c := k.e, k.c
	cpu := c.userCPU0 + u
	client := c.tUser0 + u
	addrs := c.userAddrs[u]
	mm := u % c.mms
	who := c.userName[u]
	migrated := 0
	for acc := 0; acc < c.accesses; {
		n := 2 * len(addrs)
		alts := n
		if u == 0 && migrated < c.migrations {
			alts++
			if c.x86Lazy() {
				alts++
			}
		}
		k.endStep()
		alt := e.Choose("", alts)
		if alt >= n {
			migrated++
			cs := &k.cpu[cpu]
			cs.mu.Lock()
			if alt > n {
				cs.lazy = true // enter_lazy_tlb
				cs.mu.Unlock()
				e.Note(c.describeLazy(u, cpu, mm))
			} else {
				k.switchOut(cpu, cs, mm)
				cs.mu.Unlock()
				e.Notef("schedule: %s leaves %s, which switches to another process: switch_mm(%s → other): %s", who, c.cpuName[cpu], c.mmLabel(mm), c.describeSwitchOut(cpu))
			}

			// Off CPU: scheduled in on a CPU no user task runs on (only
			// user0 migrates, and the others stay on their own CPUs).
			var free []int
			for i := 0; i < c.userCPUs; i++ {
				if i == 0 || i >= c.users {
					free = append(free, c.userCPU0+i)
				}
			}
			k.endStep()
			cpu = free[e.Choose("", len(free))]
			cs = &k.cpu[cpu]
			cs.mu.Lock()
			if cs.lazy {
				sw := k.switchBack(cpu, cs, mm)
				cs.mu.Unlock()
				e.Notef("schedule: %s runs on %s: switch_mm(%s → %s), %s", who, c.cpuName[cpu], c.mmLabel(mm), c.mmLabel(mm), c.describeSwitchIn(cpu, sw))
				continue
			}
			sw := k.switchIn(cpu, cs, mm)
			cs.mu.Unlock()
			e.Notef("schedule: %s runs on %s: switch_mm(other → %s): %s", who, c.cpuName[cpu], c.mmLabel(mm), c.describeSwitchIn(cpu, sw))
			continue
		}
		acc++
		va := addrs[alt/2]
		write := alt%2 == 1
		in := memIn{Op: opRead, VA: uint8(va)}
		if write {
			in = memIn{Op: opWrite, VA: uint8(va), Val: uint8(u + 1)}
		}
		e.Call(client, in)
		cs := &k.cpu[cpu]
		cs.mu.Lock()
		out := k.access(cs, u, cpu, va, write)
		cs.mu.Unlock()
		e.Return(client, out)
	}
	k.endStep()
}

// access is one access with cs (cpu's state) held; it returns the outcome.
func (k *kernel) access(cs *cpuState, u, cpu, va int, write bool) memOut {
	e, c := k.e, k.c
	pte := &k.pte[va]
	ent := cs.tlb[va]
	who, where := c.userName[u], c.cpuName[cpu]
	switch {
	case ent != 0 && (!write || ent&bWrite != 0 && ent&bDirty != 0):
		e.Notef("%s on %s: %s va%d: TLB hit (%s)", who, where, accessName(write), va, describeEntry(ent))
		return k.use(u, cpu, va, write, ent)

	case ent != 0 && ent&bWrite != 0:
		// A clean writable entry: the CPU writes the dirty bit through to
		// the PTE, and faults if the PTE is gone or read-only.
		for {
			v := uint8(pte.Load())
			if v&bPresent != 0 && v&bWrite != 0 {
				if !pte.CompareAndSwap(uint32(v), uint32(v|bDirty)) {
					continue
				}
				cs.tlb[va] = ent | bDirty
				e.Notef("%s on %s: write va%d: TLB hit (%s), walk sets pte[%d] dirty", who, where, va, describeEntry(ent), va)
				return k.use(u, cpu, va, true, ent|bDirty)
			}
			cs.tlb[va] = 0
			e.Notef("%s on %s: write va%d: TLB hit (%s) but pte[%d] %s: page fault", who, where, va, describeEntry(ent), va, describePTE(v))
			return fault(v)
		}

	case ent != 0:
		v := uint8(pte.Load())
		cs.tlb[va] = 0
		e.Notef("%s on %s: write va%d: TLB hit (%s), pte[%d] %s: page fault", who, where, va, describeEntry(ent), va, describePTE(v))
		return fault(v)
	}
	for {
		v := uint8(pte.Load())
		if v&bPresent == 0 || write && v&bWrite == 0 {
			e.Notef("%s on %s: %s va%d: TLB miss, pte[%d] %s: page fault", who, where, accessName(write), va, va, describePTE(v))
			return fault(v)
		}
		if write && v&bDirty == 0 {
			if !pte.CompareAndSwap(uint32(v), uint32(v|bDirty)) {
				continue
			}
			v |= bDirty
		}
		cs.tlb[va] = v
		e.Notef("%s on %s: %s va%d: TLB miss, walk pte[%d] (%s), fill", who, where, accessName(write), va, va, describePTE(v))
		return k.use(u, cpu, va, write, v)
	}
}

// use reads or writes page va through entry ent and checks the harm
// properties, as the model's use does.
func (k *kernel) use(u, cpu, va int, write bool, ent uint8) memOut {
	c := k.c
	who, where := c.userName[u], c.cpuName[cpu]
	k.obs.mu.Lock()
	st := k.obs.page[va]
	out := memOut{Res: resOK}
	if write {
		k.obs.val[va] = uint8(u + 1)
	} else {
		out.Val = k.obs.val[va]
	}
	k.obs.mu.Unlock()
	switch {
	case st == pgFreed || st == pgReused:
		k.e.Failf(NoUseAfterFree, "%s on %s %s va%d through a stale TLB entry (%s) to page %d, %s: %s",
			who, where, accessVerb(write), va, describePTE(ent), va, freedBy(st), k.cause())
	case write && st == pgWriteback:
		k.e.Failf(NoLostWrite, "%s on %s writes page %d through a writable dirty TLB entry after pageout snapshotted it for swap: the write is lost when the page is swapped back in; %s",
			who, where, va, k.cause())
	case ent&bNoAccess != 0:
		k.e.Failf(SyscallPostcondition, "%s on %s %s va%d through a TLB entry older than the zap of a munmap or MADV_DONTNEED that has returned: %s",
			who, where, accessVerb(write), va, k.cause())
	case write && ent&bNoWrite != 0:
		k.e.Failf(SyscallPostcondition, "%s on %s writes va%d through a stale %s TLB entry after %s: %s",
			who, where, va, describePTE(ent), c.returnedWhat(va, int(k.sysOp[0].Load())), k.cause())
	}
	return out
}

// ---- bookkeeping invariants (under control only; see the file comment) ----

func (k *kernel) flushBeforeFree() string {
	c := k.c
	k.obs.mu.Lock()
	page := k.obs.page
	k.obs.mu.Unlock()
	for p := 0; p < c.pages; p++ {
		var h uint8
		switch page[p] {
		case pgFreed, pgReused:
			k.each(c.allUserCPUs(), func(cpu int, cs *cpuState) {
				if k.live(cpu, cs, p) {
					h |= 1 << uint(cpu)
				}
			})
			if h != 0 {
				return fmt.Sprintf("page %d is %s while CPUs %s still cache va%d: %s", p, pageStateNames[page[p]], cpus(h), p, k.cause())
			}
		case pgWriteback:
			k.each(c.allUserCPUs(), func(cpu int, cs *cpuState) {
				if e := cs.tlb[p]; e&bWrite != 0 && e&bDirty != 0 && k.live(cpu, cs, p) {
					h |= 1 << uint(cpu)
				}
			})
			if h != 0 {
				return fmt.Sprintf("pageout snapshotted page %d while CPUs %s cache a writable dirty entry for va%d: %s", p, cpus(h), p, k.cause())
			}
		}
	}
	return ""
}

func (k *kernel) counterSound() string {
	c := k.c
	k.obs.mu.Lock()
	held, word, owes := k.obs.held, k.obs.word, k.obs.owes
	k.obs.mu.Unlock()
	for va := 0; va < c.pages; va++ {
		l := c.ptlOf(va)
		h := k.staleCPUs(va, false)
		if h == 0 || held[l] || owes[0] == va || owes[1] == va {
			continue
		}
		if w := word[c.mmOf[va]]; !c.armed(w) {
			return fmt.Sprintf("CPUs %s cache va%d although pte[%d] is %s and PTL%d is free, yet tlb_flush_batched = %s, so flush_tlb_batched_pending under PTL%d would not flush: %s",
				cpus(h), va, va, describePTE(uint8(k.pte[va].Load())), l, c.describeWord(w), l, k.cause())
		}
	}
	return ""
}
