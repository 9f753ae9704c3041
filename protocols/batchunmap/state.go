package batchunmap

import (
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// PTE and TLB entry bits. Page i is only ever mapped at va i, so the pfn is
// implicit; a cleared PTE (0) stands for the swap entry reclaim installs,
// or for no PTE at all after a zap.
const (
	bPresent = 1 << iota
	bWrite
	bDirty
	// Observer bits of a TLB entry (never in a PTE): the entry was cached
	// with more rights than the PTE a syscall left behind. bCur: the
	// syscall is still in flight; bNoWrite and bNoAccess: it has returned,
	// and a write (mprotect, MADV_FREE) or any access (munmap,
	// MADV_DONTNEED) through this entry breaks its postcondition.
	bCur
	bNoWrite
	bNoAccess

	entryBits = bPresent | bWrite | bDirty
)

func describePTE(v uint8) string {
	v &= entryBits
	if v&bPresent == 0 {
		return "none"
	}
	s := "ro"
	if v&bWrite != 0 {
		s = "rw"
	}
	if v&bDirty != 0 {
		s += ",dirty"
	}
	return s
}

// describeEntry renders a TLB entry with its observer marks.
func describeEntry(v uint8) string {
	s := describePTE(v)
	switch {
	case v&bNoAccess != 0:
		s += ",older than a returned munmap/MADV_DONTNEED"
	case v&bNoWrite != 0:
		s += ",older than a returned mprotect/MADV_FREE"
	}
	if v&bCur != 0 {
		s += ",older than the call in flight"
	}
	return s
}

// Page states, in the order reclaim moves a page through them.
const (
	pgMapped    = iota
	pgUnmapped  // PTE cleared by try_to_unmap_one
	pgWriteback // pageout took the swap snapshot; the page waits to be freed
	pgHeld      // the reclaimer let go, an mmu_gather still holds a reference
	pgFreed     // the last reference is gone: the page is back in the allocator
	pgReused    // the allocator handed it to a new owner
)

var pageStateNames = [...]string{"mapped", "unmapped", "writeback", "held by an mmu_gather", "freed", "reused"}

// Reclaimer program counters (shrink_folio_list for one page at a time).
const (
	rLock       = iota // spin_lock PTL of the page's va
	rClear             // ptep_get_and_clear
	rFlushRange        // immediate: flush_tlb_range under the PTL
	rAddPending        // arch_tlbbatch_add_pending (x86: cpumask_or; riscv: cpumask_or; arm64: tlbi)
	rIncGen            // x86 arch_tlbbatch_add_pending: inc_mm_tlb_gen
	rRead              // set_tlb_ubc_flush_pending: atomic_read
	rUpdate            // atomic_inc, or the overflow-reset cmpxchg
	rSetBool           // bool-flag: tlb_flush_batched = true
	rUnlock            // spin_unlock
	rFlushDirty        // try_to_unmap_flush_dirty
	rPageout           // pageout: the swap snapshot
	rFlush             // try_to_unmap_flush before freeing the batch
	rFree              // free_unref_folios
	rRound             // x86: a flush round's handler on its next target CPU
	rRestore           // try_to_unmap_one: a redirtied MADV_FREE folio gets its PTE back
	rMigrate           // arm64-migrate: the scheduler may move the reclaimer to another CPU
	rIsolate           // contend: isolate_lru_folios for the second pass
	rTrylock           // contend: folio_trylock
	rRemove            // contend: writeback done: __remove_mapping, folio_unlock
	rDone
)

// Syscall thread program counters.
const (
	sLock        = iota // pte_offset_map_lock
	sDrainRead          // flush_tlb_batched_pending: atomic_read
	sDrainFlush         // flush_tlb_mm (arm64 before 4b634918384c: dsb(ish))
	sDrainClear         // cmpxchg to flushed = pending, or the bool's store false
	sPTE                // examine and change the PTE
	sSplitUnlock        // madvise: drop the PTL to split a large folio
	sSplit              // split_folio
	sUnlock             // pte_unmap_unlock
	sFlush              // tlb_finish_mmu: flush the gathered range
	sRelease            // tlb_finish_mmu: release the gathered page
	sRound              // x86: a flush round's handler on its next target CPU
	sGather             // nested: tlb_gather_mmu: inc_tlb_flush_pending
	sNested             // nested: tlb_finish_mmu: mm_tlb_flush_nested
	sForce              // nested: tlb_finish_mmu: flush the whole mm
	sDec                // nested: tlb_finish_mmu: dec_tlb_flush_pending
	sLockNew            // mremap: spin_lock_nested the new address's PTL
	sUnlockNew          // mremap: spin_unlock it
	sDone
)

// Round kinds (x86 flush_tlb_info).
const (
	rkRange = iota // flush_tlb_mm_range of one page: f->mm set, partial if up to date
	rkMM           // flush_tlb_mm: f->mm set, freed_tables, full
	rkBatch        // arch_tlbbatch_flush: f->mm NULL, TLB_GENERATION_INVALID, full
)

// round is an x86 flush round in progress: flush_tlb_multi has chosen its
// targets, and their flush_tlb_func handlers run one step each.
type round struct {
	pend uint8 // target CPUs whose handler has not run
	kind uint8
	va   uint8
	mm   uint8
	lag  uint8 // how far f->new_tlb_gen lags behind the mm's tlb_gen
}

// The fixed-size parts of the state put their 16-bit fields first, so
// that they have no padding inside and the codec copies them together.

type reclaimer struct {
	word     uint16 // tlb_flush_batched as last read
	pc       uint8
	page     uint8 // the page being reclaimed
	pteval   uint8 // what ptep_get_and_clear returned
	flushReq bool  // tlb_ubc.flush_required
	writable bool  // tlb_ubc.writable
	mask     uint8 // tlb_ubc.arch.cpumask (riscv, x86)
	queued   uint8 // pages in the free batch (bit per page)
	inflight uint8 // arm64: vas whose TLBI this CPU issued and no DSB completed
	ret      uint8 // pc after the round
	list     uint8 // folios isolated for this pass and not yet taken up (bit per page)
	kept     uint8 // contend: folios kept, to go back on the LRU after the flush
	pass     uint8 // contend: 0 the first pass, 1 the second
	orphan   uint8 // arm64-switch-no-dsb: TLBIs left in flight on the CPU the reclaimer left
	moved    bool  // arm64-migrate: the reclaimer has migrated (once at most)
	ptlAt    uint8 // the PTL rLock takes (and rUnlock drops): where the page was mapped when the walk found it
	rnd      round
}

type syscaller struct {
	word     uint16 // tlb_flush_batched as read by the drain
	pc       uint8
	op       uint8 // index of the current call
	gathered bool  // the mmu_gather recorded a flush of the call's va
	page     bool  // the mmu_gather holds the call's page
	retaken  bool  // madvise re-took the PTL after splitting
	forced   bool  // the flush in flight is tlb_finish_mmu's of the whole mm
	ret      uint8 // pc after the round
	rnd      round
}

// Note kinds: the first place an execution lost a pending flush, kept so
// that a violation found later can say where and under which locks.
const (
	noteNone        = iota
	noteBoolCleared // bool-flag: the drain stored false over a newer deferral
	noteWrapped     // pending wrapped onto flushed
	noteNoDrain     // a syscall trusted a PTE with no drain at all
	noteNoFlush     // a syscall trusted a PTE after a drain that did not flush
	noteNestedReset // init_tlb_ubc cleared flush_required
	noteDirtySkip   // pageout with writable set and no flush_dirty
	noteMaskCleared // riscv switch_mm cleared a CPU that still caches the mm
	noteDSBOnly     // arm64 drain: dsb(ish) on the syscall's CPU only
	noteRetake      // madvise re-took the PTL and trusted a PTE without draining
	noteNoCatchUp   // x86 mutation: switch_mm ran an ASID behind tlb_gen unflushed
	noteGenZero     // x86 aa44284960d5: a batch flush handler compared f->new_tlb_gen 0
	notePutback     // mutation: a folio back on the LRU before its reclaimer's flush
	noteLateMremap  // mremap before eb66ae030829: reclaim unmapped the moved page before mremap's flush
	noteSwitchNoDSB // arm64 mutation: a reclaimer migrated without completing its TLBIs
)

type note struct {
	word uint16 // the tlb_flush_batched value involved
	kind uint8
	va   uint8 // the va whose flush was lost
	ptl  uint8 // the lock the other thread held
	page uint8 // nested reset: the page whose pageout reset it
	cpu  uint8 // mask cleared: the CPU
	op   uint8 // the syscall kind involved
}

// vars is the state's data: plain values, encoded by codec (copied field
// bytes, slices prefixed with their length). The parts sized by a
// parameter are slices of that length, so that a state's key is as short
// as its configuration allows, and the per-page and per-CPU bytes share
// one slice (cells), so that encoding and decoding copy few pieces.
type vars struct {
	mem model.Mem
	// wm holds, with memory=2, the words whose ordering ARMv8 may weaken:
	// tlb_flush_batched and the PTLs' lock words (empty otherwise). The
	// PTEs stay in mem, sequentially consistent: every access to a PTE is
	// made under its PTL (the lock words order those) or by a CPU's page
	// table walker, which the model keeps as it is under every memory.
	wm       model.Mem
	ptl      []model.Mutex // one per page-table lock
	cells    []uint8       // state.tlb, page, val, acc, task, loaded and ctx, in this order
	r        []reclaimer
	note     note        // outside the memory layer, like the TLBs
	sc       []syscaller // the syscall threads
	migrated uint8       // migrations made so far
	lazy     uint8       // pages MADV_FREE marked lazyfree (bit per page)
	lru      uint8       // contend: folios on the LRU (bit per page)
	flock    uint8       // contend: locked folios (bit per page)
	split    bool        // the large folio has been split
	moved    bool        // mremap moved mremapVA's page to the new address
}

var codec = model.MustCodec[vars]()

// state is a machine's state: its data, views into its cells, and the
// configuration that gives the data its meaning (sizes, names), shared by
// every state of the machine and not part of the encoding.
type state struct {
	vars
	// tlb holds the TLBs of the user CPUs, pages entries each: user CPU
	// i's entry for va is tlb[i*pages+va]. The reclaimers' CPUs run kernel
	// threads and the syscall thread makes no user access: they cache no
	// user translation.
	tlb    []uint8 // bits as in a PTE, plus the observer bits; 0 = no entry
	page   []uint8 // per page: pgMapped...
	val    []uint8 // page contents
	acc    []uint8 // accesses made by each user task
	task   []uint8 // the CPU each user task runs on
	loaded []uint8 // per user CPU: the mm it runs (c.other(): another process)
	// ctx is, per user CPU and mm, 1 + how far x86's
	// cpu_tlbstate.ctxs[].tlb_gen lags behind the mm's (0: the CPU has no
	// ASID for the mm, so switching to it flushes); see incGen.
	ctx []uint8
	c   *config
}

// newState returns a state of c with every variable zero.
func newState(c *config) *state {
	s := &state{c: c}
	s.mem = model.NewMem(c.memNames...)
	s.wm = model.NewMem(c.wmNames...)
	s.ptl = make([]model.Mutex, c.nptl())
	s.r = make([]reclaimer, c.reclaimers)
	s.sc = make([]syscaller, c.nsys)
	s.cells = make([]uint8, c.cells())
	s.views()
	return s
}

// views points the per-part slices into cells.
func (s *state) views() {
	c := s.c
	cut := func(n int) []uint8 {
		v := s.cells[:n:n]
		s.cells = s.cells[n:]
		return v
	}
	all := s.cells
	s.tlb = cut(c.userCPUs * c.pages)
	s.page = cut(c.pages)
	s.val = cut(c.pages)
	s.acc = cut(c.users)
	s.task = cut(c.users)
	s.loaded = cut(c.userCPUs)
	s.ctx = cut(c.ctxCells())
	s.cells = all
}

func (c *config) ctxCells() int {
	if c.arch != archX86 {
		return 0
	}
	return c.userCPUs * c.mms
}

// cells is the length of state.cells.
func (c *config) cells() int {
	return c.userCPUs*c.pages + 2*c.pages + 2*c.users + c.userCPUs + c.ctxCells()
}

func (s *state) AppendKey(b []byte) []byte { return codec.Append(b, &s.vars) }

// CopyFrom makes s a copy of src (model.Copier) through the codec, which
// reuses s's slices, so the views keep pointing into cells.
func (s *state) CopyFrom(src model.State) { codec.Copy(&s.vars, &src.(*state).vars) }

// Decode copies into the slices newState made, so the views keep pointing
// into cells: every encoding of this configuration has their lengths, and
// an encoding with other lengths is not one of this machine's. A failed
// decode may have replaced a slice (the codec makes a new one for a longer
// encoded slice), so it leaves a new zero state, views included.
func (s *state) Decode(b []byte) error {
	err := codec.Decode(b, &s.vars)
	c := s.c
	if err == nil && (len(s.ptl) != c.nptl() || len(s.cells) != c.cells() || len(s.r) != c.reclaimers || len(s.sc) != c.nsys) {
		err = fmt.Errorf("decode batchunmap state: the encoding is not of a machine with pages=%d ptls=%d users=%d reclaimers=%d", c.pages, c.ptls, c.users, c.reclaimers)
	}
	if err != nil {
		*s = *newState(c)
	}
	return err
}

// batched is where mm's tlb_flush_batched lives: in wm with memory=2,
// else in mem.
func (s *state) batched(mm int) (model.Mem, model.Addr) {
	if s.c.arm {
		return s.wm, s.c.wmBatched(mm)
	}
	return s.mem, s.c.batchedAddr(mm)
}

// slot is user CPU cpu's index among user CPUs (-1 for the others).
func (s *state) slot(cpu int) int { return s.c.userCPUAt[cpu] }

// entry is CPU cpu's TLB entry for va (0: none, or a CPU without user
// translations).
func (s *state) entry(cpu, va int) uint8 {
	i := s.slot(cpu)
	if i < 0 {
		return 0
	}
	return s.tlb[i*s.c.pages+va]
}

func (s *state) setEntry(cpu, va int, e uint8) { s.tlb[s.slot(cpu)*s.c.pages+va] = e }

// lazyTLB marks a user CPU's loaded mm as kept by a kernel thread in
// lazy TLB mode (x86's cpu_tlbstate.is_lazy).
const lazyTLB = 0x80

// loadedOn is the mm CPU cpu runs, or keeps loaded in lazy TLB mode (the
// syscall thread's runs mm0).
func (s *state) loadedOn(cpu int) int {
	if cpu == cpuSyscall {
		return 0
	}
	return int(s.loaded[s.slot(cpu)] &^ lazyTLB)
}

// mapping is where page va is mapped now: its page-table lock, its PTE,
// and the va a flush of it names (c.pages: mremap's new address, where
// no TLB entry is tracked).
func (s *state) mapping(va int) (ptl int, pte model.Addr, tva int) {
	c := s.c
	if va == c.mremapVA && s.moved {
		return c.ptls, c.dstPTE, c.pages
	}
	return c.ptlOf(va), c.pteAddr(va), va
}

// isLazy reports whether user CPU cpu runs a kernel thread in lazy TLB
// mode.
func (s *state) isLazy(cpu int) bool {
	return cpu != cpuSyscall && s.loaded[s.slot(cpu)]&lazyTLB != 0
}

func (s *state) ctxAt(cpu, mm int) *uint8 { return &s.ctx[s.slot(cpu)*s.c.mms+mm] }

func (s *state) Vars() []model.Var {
	c := s.c
	out := s.mem.Vars()
	for i := range out {
		a := model.Addr(i)
		switch {
		case i < c.pages || c.mremapVA >= 0 && a == c.dstPTE:
			out[i].Value = describePTE(uint8(s.mem.Peek(a)))
		case i < c.pages+c.mms:
			mem, w := s.batched(i - c.pages)
			out[i].Value = c.describeWord(mem.Peek(w))
		case i < c.pages+2*c.mms:
			out[i].Value = cpus(uint8(s.mem.Peek(a)))
		default:
			out[i].Value = fmt.Sprint(s.mem.Peek(a))
		}
	}
	for i := 0; i < c.nptl(); i++ {
		out = append(out, model.Var{Name: c.ptlName[i], Value: s.lockHolder(i)})
	}
	if c.arm {
		// The lock words, and the messages ARMv8 keeps readable (the
		// tlb_flush_batched words are shown above, at their newest).
		out = append(out, s.wm.Vars()[c.mms:]...)
	}
	if c.mremapVA >= 0 {
		at := fmt.Sprintf("va%d", c.mremapVA)
		if s.moved {
			at = "the new address (mremap)"
		}
		out = append(out, model.Var{Name: c.pageName[c.mremapVA] + ".mapped_at", Value: at})
	}
	for i := 0; i < c.userCPUs; i++ {
		cpu := c.userCPU0 + i
		var parts []string
		for va := 0; va < c.pages; va++ {
			if e := s.entry(cpu, va); e != 0 {
				parts = append(parts, fmt.Sprintf("va%d:%s", va, describeEntry(e)))
			}
		}
		out = append(out, model.Var{Name: c.tlbName[cpu], Value: "{" + strings.Join(parts, " ") + "}"})
		run := c.mmLabel(int(s.loaded[i] &^ lazyTLB))
		if s.loaded[i]&lazyTLB != 0 {
			run += " (lazy: a kernel thread runs)"
		}
		for u := 0; u < c.users; u++ {
			if int(s.task[u]) == cpu {
				run += " (" + c.userName[u] + ")"
			}
		}
		out = append(out, model.Var{Name: c.cpuName[cpu] + ".loaded_mm", Value: run})
		if c.arch == archX86 {
			var gens []string
			for mm := 0; mm < c.mms; mm++ {
				switch g := int(s.ctx[i*c.mms+mm]); {
				case g == 0:
					gens = append(gens, c.mmLabel(mm)+":no asid")
				case g == 1:
					gens = append(gens, c.mmLabel(mm)+":up to date")
				case g-1 < s.lagCap(mm):
					gens = append(gens, fmt.Sprintf("%s:%d behind", c.mmLabel(mm), g-1))
				default:
					gens = append(gens, fmt.Sprintf("%s:>=%d behind", c.mmLabel(mm), g-1))
				}
			}
			out = append(out, model.Var{Name: c.cpuName[cpu] + ".ctxs.tlb_gen", Value: strings.Join(gens, " ")})
		}
	}
	for p := 0; p < c.pages; p++ {
		v := fmt.Sprintf("%s val=%d", pageStateNames[s.page[p]], s.val[p])
		if p == c.largeVA && !s.split {
			v += " (in a large folio)"
		}
		if s.lazy&(1<<uint(p)) != 0 {
			v += " (lazyfree)"
		}
		out = append(out, model.Var{Name: c.pageName[p], Value: v})
	}
	for k := range s.r {
		r := &s.r[k]
		name := c.rName[k]
		out = append(out,
			model.Var{Name: name + ".pc", Value: fmt.Sprintf("%d page %d", r.pc, r.page)},
			model.Var{Name: name + ".tlb_ubc", Value: fmt.Sprintf("flush_required=%v writable=%v cpumask=%s", r.flushReq, r.writable, cpus(r.mask))},
			model.Var{Name: name + ".free_batch", Value: pageSet(r.queued)},
		)
		if c.contend {
			out = append(out, model.Var{Name: name + ".folio_list", Value: fmt.Sprintf("pass %d, isolated %s, kept %s", r.pass+1, pageSet(r.list), pageSet(r.kept))})
		}
		if c.arch == archARM64 {
			out = append(out, model.Var{Name: fmt.Sprintf("%s.tlbi_in_flight", name), Value: pageSet(r.inflight)})
		}
		if c.rMigrate {
			out = append(out, model.Var{Name: name + ".cpu", Value: fmt.Sprintf("CPU%d, TLBIs left in flight on CPU%d: %s", c.reclaimerCPU(k, r.moved), c.cpuR[k], pageSet(r.orphan))})
		}
		if c.arch == archX86 {
			out = append(out, model.Var{Name: name + ".flush_round", Value: c.describeRound(r.rnd)})
		}
	}
	for i := range s.sc {
		sc, name, gather := &s.sc[i], c.sysName[i], "mmu_gather"
		if i > 0 {
			gather = name + ".mmu_gather"
		}
		out = append(out, model.Var{Name: name + ".pc", Value: fmt.Sprintf("%d call %d", sc.pc, sc.op)},
			model.Var{Name: gather, Value: fmt.Sprintf("flush va=%v page=%v", sc.gathered, sc.page)})
		if c.arch == archX86 {
			out = append(out, model.Var{Name: name + ".flush_round", Value: c.describeRound(sc.rnd)})
		}
	}
	if c.contend {
		out = append(out, model.Var{Name: "lru", Value: pageSet(s.lru)}, model.Var{Name: "folio locks", Value: pageSet(s.flock)})
	}
	for u := 0; u < c.users; u++ {
		where := "off CPU"
		if s.task[u] != offCPU {
			where = "on " + c.cpuName[s.task[u]]
		}
		out = append(out, model.Var{Name: c.userName[u], Value: fmt.Sprintf("%s, %d accesses", where, s.acc[u])})
	}
	return append(out, model.Var{Name: "migrations", Value: fmt.Sprint(s.migrated)})
}

func (c *config) describeRound(r round) string {
	if r.pend == 0 {
		return "none"
	}
	what := [...]string{"flush_tlb_mm_range", "flush_tlb_mm", "arch_tlbbatch_flush"}[r.kind]
	if r.kind == rkBatch {
		return fmt.Sprintf("%s, handlers pending on %s", what, cpus(r.pend))
	}
	return fmt.Sprintf("%s va%d, f->new_tlb_gen %d behind, handlers pending on %s", what, r.va, r.lag, cpus(r.pend))
}

func (s *state) lockHolder(i int) string {
	h := s.ptl[i].Holder()
	if h < 0 {
		return "free"
	}
	return "held by " + s.c.names[h]
}

// cpus renders a cpumask as "{1,2}".
func cpus(m uint8) string {
	var parts []string
	for i := 0; i < 8; i++ {
		if m&(1<<uint(i)) != 0 {
			parts = append(parts, fmt.Sprint(i))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func pageSet(m uint8) string {
	var parts []string
	for i := 0; i < 8; i++ {
		if m&(1<<uint(i)) != 0 {
			parts = append(parts, fmt.Sprintf("va%d", i))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}
