package batchunmap

import (
	"fmt"
	"math/bits"

	"github.com/protocheck/protocheck/model"
)

// Metrics, indexed like machine.Metrics.
const (
	mFlushRounds  = iota // flush rounds caused by reclaim: per-PTE, batch and drain flushes
	mRemote              // remote invalidations (IPIs / SBI fences) of those rounds, per target CPU
	mDrain               // flushes by flush_tlb_batched_pending
	mUnmapped            // present PTEs cleared by try_to_unmap_one
	mBatchTargets        // CPUs in the batch cpumask at each arch_tlbbatch_flush
	mTLBI                // arm64: broadcast TLBI instructions of those flushes
	mDSB                 // arm64: DSBs that wait for them
)

var metricNames = []string{"flush-rounds", "remote-flushes", "drain-flushes", "unmapped-pages", "batch-flush-targets", "tlbis", "dsbs"}

// ---- TLB contents (bookkeeping outside the memory layer) ----

// dropVA invalidates va's entry on user CPU cpu.
func (s *state) dropVA(x *model.Exec, cpu, va int) {
	if s.slot(cpu) < 0 || va >= s.c.pages { // mremap's new address: untracked
		return
	}
	x.Touch(s.c.tlbName[cpu], true)
	s.setEntry(cpu, va, 0)
}

// dropMM invalidates every entry of mm on user CPU cpu (its ASID).
func (s *state) dropMM(x *model.Exec, cpu, mm int) {
	if s.slot(cpu) < 0 {
		return
	}
	x.Touch(s.c.tlbName[cpu], true)
	for va := 0; va < s.c.pages; va++ {
		if s.c.mmOf[va] == mm {
			s.setEntry(cpu, va, 0)
		}
	}
}

// dropAll invalidates every entry on user CPU cpu (all ASIDs).
func (s *state) dropAll(x *model.Exec, cpu int) {
	i := s.slot(cpu)
	if i < 0 {
		return
	}
	x.Touch(s.c.tlbName[cpu], true)
	clear(s.tlb[i*s.c.pages : (i+1)*s.c.pages])
}

// users returns the user CPUs of a cpumask.
func (c *config) userMask(m uint8) uint8 {
	var u uint8
	for i := 0; i < c.userCPUs; i++ {
		u |= m & (1 << uint(c.userCPU0+i))
	}
	return u
}

func (c *config) allUserCPUs() uint8 { return c.userMask(0xff) }

// countRound counts a reclaim-caused flush round from CPU from to the CPUs
// in mask.
func countRound(x *model.Exec, from int, mask uint8) {
	x.Count(mFlushRounds, 1)
	x.Count(mRemote, int64(bits.OnesCount8(mask&^(1<<uint(from)))))
}

// ---- riscv and the generic IPI round ----

// An IPI (or SBI remote fence) round on riscv is one step: the initiator
// reads the cpumask, and each target runs sfence.vma by ASID (or of all
// ASIDs), which reads no state of its CPU; flush_tlb_multi waits for every
// acknowledgement. An invalidation on one CPU only conflicts with that
// CPU's own accesses and switches: a switch_mm on the target between the
// mask read and its sfence commutes with the sfence (riscv's switch_mm
// touches no TLB entry with the ASID allocator), and an access there is
// equivalent to one made before the round (the initiator changed the PTE
// before reading the mask, so the access reads the same PTE) if that CPU
// had not yet invalidated, or after it. x86's handler reads the CPU's
// loaded mm and tlb_gen, so its rounds are a step per target (x86Start,
// x86Handle); arm64's completion is the issuing CPU's DSB.

// flushRangeMask is flush_tlb_range of one page on riscv: sfence.vma of va
// by mm's ASID on mm_cpumask.
func (s *state) flushRangeMask(x *model.Exec, mm, va int) uint8 {
	mask := uint8(x.Load(s.mem, s.c.maskAddr(mm)))
	for m := s.c.userMask(mask); m != 0; m &= m - 1 {
		s.dropVA(x, bits.TrailingZeros8(m), va)
	}
	return mask
}

// flushMMMask is flush_tlb_mm on riscv: sfence.vma by mm's ASID on
// mm_cpumask.
func (s *state) flushMMMask(x *model.Exec, mm int) uint8 {
	mask := uint8(x.Load(s.mem, s.c.maskAddr(mm)))
	for m := s.c.userMask(mask); m != 0; m &= m - 1 {
		s.dropMM(x, bits.TrailingZeros8(m), mm)
	}
	return mask
}

// flushAllMask is riscv's arch_tlbbatch_flush: sfence.vma of all ASIDs on
// the batch cpumask.
func (s *state) flushAllMask(x *model.Exec, mask uint8) {
	for m := s.c.userMask(mask); m != 0; m &= m - 1 {
		s.dropAll(x, bits.TrailingZeros8(m))
	}
}

// ---- arm64 ----

// broadcastVA is a completed broadcast invalidation of va (tlbi vale1is
// followed by the issuer's dsb(ish)): every CPU's entry is gone.
func (s *state) broadcastVA(x *model.Exec, va int) {
	for m := s.c.allUserCPUs(); m != 0; m &= m - 1 {
		s.dropVA(x, bits.TrailingZeros8(m), va)
	}
}

// broadcastMM is a completed tlbi aside1is of mm's ASID.
func (s *state) broadcastMM(x *model.Exec, mm int) {
	for m := s.c.allUserCPUs(); m != 0; m &= m - 1 {
		s.dropMM(x, bits.TrailingZeros8(m), mm)
	}
}

// dsb is dsb(ish) on a reclaimer's CPU: it completes the TLBIs that CPU
// issued, on every CPU at once. The hardware may complete an invalidation
// on some CPU earlier; that only removes an entry sooner, which no access
// can tell from an access made after the DSB, so the model completes them
// all at the DSB, the latest the architecture allows.
func (s *state) dsb(x *model.Exec, r *reclaimer) {
	for m := r.inflight; m != 0; m &= m - 1 {
		s.broadcastVA(x, bits.TrailingZeros8(m))
	}
	r.inflight = 0
}

// ---- x86 (mainline: lazy mm_cpumask, tlb_gen) ----

// x86's tlb_gen. The model keeps mm->context.tlb_gen as the word it is,
// but each CPU's cpu_tlbstate.ctxs[].tlb_gen and each round's
// f->new_tlb_gen as how many generations they lag behind it: the code only
// compares them (local == mm's, new <= local, new == local+1 == mm's), and
// an increment moves every lag of the mm by one, so the differences are
// what decides. A CPU's lag is capped at max(2, one more than the largest
// lag of a round in flight): past that, no comparison the code makes can
// come out otherwise, and states that differ only in how far past it a
// CPU lags are one state. (Absolute values would multiply the states by
// every combination of catch-up points.) ctx holds 1 + the lag, 0 for a
// CPU without an ASID for the mm.

// incGen is inc_mm_tlb_gen(mm): the atomic increment, and every lag of
// the mm moves by one.
func (s *state) incGen(x *model.Exec, mm int) int {
	c := s.c
	g := int(x.FetchAdd(s.mem, c.genAddr(mm), 1) + 1)
	for i := 0; i < c.userCPUs; i++ {
		if p := &s.ctx[i*c.mms+mm]; *p != 0 {
			*p++
		}
	}
	for k := range s.r {
		if rnd := &s.r[k].rnd; inFlight(rnd, mm) {
			rnd.lag++
		}
	}
	for i := range s.sc {
		if rnd := &s.sc[i].rnd; inFlight(rnd, mm) {
			rnd.lag++
		}
	}
	s.capLags(mm)
	return g
}

// inFlight reports whether rnd is a round of mm with a new_tlb_gen whose
// handlers have not all run.
func inFlight(rnd *round, mm int) bool {
	return rnd.pend != 0 && rnd.kind != rkBatch && int(rnd.mm) == mm
}

// lagCap is the cap on a CPU's lag behind mm's tlb_gen.
func (s *state) lagCap(mm int) int {
	m := 0
	for k := range s.r {
		if rnd := &s.r[k].rnd; inFlight(rnd, mm) {
			m = max(m, int(rnd.lag))
		}
	}
	for i := range s.sc {
		if rnd := &s.sc[i].rnd; inFlight(rnd, mm) {
			m = max(m, int(rnd.lag))
		}
	}
	return max(m+1, 2)
}

// capLags applies the cap to every CPU's lag behind mm.
func (s *state) capLags(mm int) {
	c := s.c
	limit := uint8(s.lagCap(mm) + 1)
	for i := 0; i < c.userCPUs; i++ {
		if p := &s.ctx[i*c.mms+mm]; *p > limit {
			*p = limit
		}
	}
}

// started is what the first step of an x86 flush round decided: the CPUs
// its IPIs go to, the CPUs of the mask it skipped because they were lazy,
// and whether should_trim_cpumask said yes.
type started struct {
	targets, skipped uint8
	trimmed          bool
}

// x86Start is the first step of flush_tlb_mm_range (kind rkRange, rkMM) or
// arch_tlbbatch_flush (rkBatch, on the batch cpumask) on CPU from: the
// tlb_gen increment (not for the batch), the mm_cpumask read, and the
// choice of targets. flush_tlb_mm frees page tables (freed_tables): its
// IPIs go to every CPU of the mask. The others skip lazy CPUs (v4.20 on:
// tlb_is_not_lazy, should_flush_tlb since v6.14), and since v6.14, for a
// range flush, CPUs of the mask that do not run mm, unless
// should_trim_cpumask, true at most once a second, says to trim them: the
// environment's choice, drawn whatever the mask holds (its value only
// matters for CPUs of the mask that do not run mm), so that whether the
// step branches does not depend on what the step reads. rnd.pend holds
// the targets whose handler is a step of its own (the user CPUs: the
// syscall thread's CPU caches no user translation and its tracked state
// would not change).
func (s *state) x86Start(x *model.Exec, rnd *round, kind, mm, va, from int, batch uint8) started {
	c := s.c
	mask := batch
	if kind != rkBatch {
		s.incGen(x, mm)
		mask = uint8(x.Load(s.mem, c.maskAddr(mm)))
	}
	*rnd = round{kind: uint8(kind), mm: uint8(mm), va: uint8(va)}
	trim := c.x86Trim() && kind == rkRange && x.Choose(2) == 1
	if mask&^(1<<uint(from)) == 0 {
		// No other CPU: flush_tlb_func runs locally if from runs mm. Only
		// the syscall thread's CPU does, and it caches no user entry.
		*rnd = round{}
		return started{}
	}
	var st started
	var stray uint8 // v6.14 on: CPUs of the mask that do not run mm
	for m := mask; m != 0; m &= m - 1 {
		cpu := bits.TrailingZeros8(m)
		bit := uint8(1) << uint(cpu)
		if s.slot(cpu) >= 0 {
			x.Touch(c.cpuName[cpu], false) // its cpu_tlbstate: loaded_mm, is_lazy
		}
		switch {
		case kind == rkMM:
			st.targets |= bit
		case s.isLazy(cpu):
			st.skipped |= bit
		case kind == rkBatch || !c.x86Trim() || s.loadedOn(cpu) == mm:
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
	if rnd.pend == 0 {
		*rnd = round{}
	}
	return st
}

// Outcomes of x86's flush_tlb_func.
const (
	hWrongCPU  = iota // v6.14 on: f->mm is not loaded: clear the CPU's bit
	hWrongMM          // before v6.14: f->mm is not loaded: return
	hOther            // another process's mm (or init_mm) is loaded: nothing of the model's to flush
	hLazyLeave        // is_lazy: switch_mm_irqs_off(NULL, &init_mm)
	hAlready          // f->new_tlb_gen <= local tlb_gen (v6.0 on)
	hUpToDate         // local tlb_gen == mm tlb_gen
	hPartial          // flush the one page
	hFull             // flush the loaded mm's ASID
)

// handled is what one flush_tlb_func did, for its label.
type handled struct {
	rnd                  round // the round as the handler found it
	cpu, outcome, loaded int
	lag                  int // the CPU's lag before
	g                    int // the mm's tlb_gen it read
	gl                   int // the loaded mm's tlb_gen (for the label)
}

// x86Before is flush_tlb_func's decision before it reads the mm's
// tlb_gen: hWrongCPU or hWrongMM, hOther, hLazyLeave, hAlready, or -1
// (read it). lag is the CPU's lag behind the loaded mm, rlag the round's.
func (c *config) x86Before(kind uint8, fmm, loaded int, lazy bool, rlag, lag int) int {
	switch {
	case kind != rkBatch && fmm != loaded && c.x86Era == eraLazyMask:
		return hWrongCPU
	case kind != rkBatch && fmm != loaded:
		return hWrongMM
	case loaded == c.other():
		// The batch flush on a CPU running another process: that mm's
		// tlb_gen has not moved, so it is up to date.
		return hOther
	case lazy:
		return hLazyLeave
	case c.x86Early() && kind != rkBatch && rlag >= lag: // f->new_tlb_gen <= local_tlb_gen
		return hAlready
	case kind == rkBatch && c.genZero: // f->new_tlb_gen 0 <= local_tlb_gen
		return hAlready
	}
	return -1
}

// x86After is flush_tlb_func's decision once it has read the mm's tlb_gen.
func x86After(kind uint8, rlag, lag int) int {
	switch {
	case lag == 0:
		return hUpToDate
	case kind == rkRange && rlag == 0 && lag == 1: // new == local+1 == mm's
		return hPartial
	}
	return hFull
}

// x86Handle runs flush_tlb_func on the round's lowest pending target CPU.
// Handlers on different CPUs touch only their own CPU's TLB and ASID state
// and their own bit of mm_cpumask, so running them in CPU order loses no
// behaviour.
func (s *state) x86Handle(x *model.Exec, rnd *round) handled {
	c := s.c
	cpu := bits.TrailingZeros8(rnd.pend)
	rnd.pend &^= 1 << uint(cpu)
	h := handled{rnd: *rnd, cpu: cpu, loaded: s.loadedOn(cpu), lag: -1}
	defer s.afterHandler(rnd)
	x.Touch(c.cpuName[cpu], false)
	if h.loaded != c.other() {
		h.lag = int(*s.ctxAt(cpu, h.loaded)) - 1
		h.gl = s.genNow(h.loaded)
	}
	h.outcome = c.x86Before(rnd.kind, int(rnd.mm), h.loaded, s.isLazy(cpu), int(rnd.lag), h.lag)
	switch h.outcome {
	case hWrongCPU:
		s.clearBit(x, int(rnd.mm), cpu)
		return h
	case hLazyLeave:
		s.leaveLazy(x, cpu, h.loaded)
		return h
	case hWrongMM, hOther, hAlready:
		if h.outcome == hAlready && rnd.kind == rkBatch && s.note.kind == noteNone && s.cachedMM(cpu, h.loaded) {
			s.note = note{kind: noteGenZero, cpu: uint8(cpu)}
		}
		return h
	}
	h.g = int(x.Load(s.mem, c.genAddr(h.loaded)))
	h.outcome = x86After(rnd.kind, int(rnd.lag), h.lag)
	switch h.outcome {
	case hPartial:
		s.dropVA(x, cpu, int(rnd.va))
	case hFull:
		s.dropMM(x, cpu, h.loaded)
	}
	*s.ctxAt(cpu, h.loaded) = 1
	return h
}

// clearBit is cpumask_clear_cpu(cpu, mm_cpumask(mm)).
func (s *state) clearBit(x *model.Exec, mm, cpu int) {
	a := s.c.maskAddr(mm)
	cur := s.mem.Peek(a)
	x.CAS(s.mem, a, cur, cur&^(1<<uint(cpu)))
}

// leaveLazy is flush_tlb_func on a lazy CPU: switch_mm_irqs_off(NULL,
// &init_mm), which before v6.14 clears the CPU's bit of the mm it left.
// init_mm has no user translation: the model lets "another process's mm"
// stand for it.
func (s *state) leaveLazy(x *model.Exec, cpu, mm int) {
	c := s.c
	s.loaded[s.slot(cpu)] = uint8(c.other())
	x.Touch(c.cpuName[cpu], true)
	if c.x86Clears() {
		s.clearBit(x, mm, cpu)
	}
}

// afterHandler ends a round once its last handler has run: the round is
// forgotten, and the lag cap applied again without its lag.
func (s *state) afterHandler(rnd *round) {
	if rnd.pend != 0 {
		return
	}
	kind, mm := rnd.kind, int(rnd.mm)
	*rnd = round{}
	if kind != rkBatch {
		s.capLags(mm)
	}
}

// describeHandled says what a flush_tlb_func did; g is the round's mm's
// tlb_gen after the step.
func (c *config) describeHandled(h handled, g int) string {
	newGen := g - int(h.rnd.lag)
	if h.rnd.kind == rkBatch {
		newGen = 0 // TLB_GENERATION_INVALID
	}
	return c.describeHandler(h.cpu, h.outcome, h.loaded, int(h.rnd.mm), int(h.rnd.va), newGen, h.gl-h.lag, h.g)
}

// describeHandler says what a flush_tlb_func on cpu did: outcome, with the
// mm it found loaded, the round's mm, va and new_tlb_gen, the CPU's local
// tlb_gen (used by hAlready) and the mm's tlb_gen it read.
func (c *config) describeHandler(cpu, outcome, loaded, fmm, va, newGen, local, g int) string {
	name := c.cpuName[cpu]
	switch outcome {
	case hWrongCPU:
		return fmt.Sprintf("%s runs %s, not %s: cpumask_clear_cpu(%d, mm_cpumask), no flush", name, c.mmLabel(loaded), c.mmLabel(fmm), cpu)
	case hWrongMM:
		return fmt.Sprintf("%s runs %s, not %s (it left and cleared its bit): nothing to do", name, c.mmLabel(loaded), c.mmLabel(fmm))
	case hOther:
		return fmt.Sprintf("%s runs another process, whose tlb_gen is up to date", name)
	case hLazyLeave:
		what := "bit kept"
		if c.x86Era != eraLazyMask {
			what = fmt.Sprintf("cpumask_clear_cpu(%d, mm_cpumask(%s))", cpu, c.mmLabel(loaded))
		}
		return fmt.Sprintf("%s is lazy (a kernel thread keeps %s loaded): switch_mm_irqs_off(NULL, &init_mm), %s", name, c.mmLabel(loaded), what)
	case hAlready:
		if newGen == 0 {
			return name + ": f->new_tlb_gen 0 (TLB_GENERATION_INVALID) <= local tlb_gen, nothing to do"
		}
		return fmt.Sprintf("%s: f->new_tlb_gen %d <= local tlb_gen %d, nothing to do", name, newGen, local)
	case hUpToDate:
		return fmt.Sprintf("%s: local tlb_gen %d == mm tlb_gen, nothing to do", name, g)
	case hPartial:
		return fmt.Sprintf("%s: partial flush of va%d, local tlb_gen %d -> %d", name, va, g-1, g)
	}
	return fmt.Sprintf("%s: full flush of %s's ASID, local tlb_gen -> %d", name, c.mmLabel(loaded), g)
}

// roundName is the function whose IPIs a round's handler serves.
func roundName(kind uint8) string {
	return [...]string{"flush_tlb_mm_range", "flush_tlb_mm", "arch_tlbbatch_flush"}[kind]
}

// ---- switch_mm ----

// Outcomes of switch_mm.
const (
	swSet        = iota // riscv: cpumask_set_cpu, ASID kept
	swARM64             // arm64: ASID kept
	swX86New            // x86: new ASID, flushed
	swX86Stale          // x86: ASID behind tlb_gen: flushed
	swX86Fresh          // x86: ASID up to date
	swX86Reused         // x86 mutation: ASID found, used without comparing tlb_gen
	swLazyStale         // x86, back from lazy: tlb_gen moved: flushed
	swLazyFresh         // x86, back from lazy: up to date
	swLazyReused        // x86 mutation, back from lazy: tlb_gen not compared
)

// switched is what a switch_mm into a user mm did, for its label.
type switched struct {
	outcome int
	set     bool // x86: the bit was set here
	g       int  // x86: the mm's tlb_gen
}

// switchIn is switch_mm(another process → mm) on user CPU cpu, as the
// architecture does it, with interrupts off. It is one step: no flush
// handler runs on this CPU meanwhile, and x86 sets the bit before it reads
// tlb_gen, so a concurrent flush either sees the bit (and its IPI, handled
// right after the switch, catches the CPU up) or bumped tlb_gen before the
// read (and the switch catches up itself).
func (s *state) switchIn(x *model.Exec, cpu, mm int) switched {
	c := s.c
	bit := uint8(1) << uint(cpu)
	a := c.maskAddr(mm)
	s.loaded[s.slot(cpu)] = uint8(mm)
	x.Touch(c.cpuName[cpu], true)
	switch c.arch {
	case archX86:
		// "Start receiving IPIs and then read tlb_gen": set the bit (since
		// v6.14 only if not set), then choose_new_asid.
		var sw switched
		if c.x86Clears() || uint8(s.mem.Peek(a))&bit == 0 {
			x.FetchOr(s.mem, a, uint64(bit))
			sw.set = true
		}
		sw.g = int(x.Load(s.mem, c.genAddr(mm)))
		ctx := s.ctxAt(cpu, mm)
		switch {
		case *ctx == 0:
			sw.outcome = swX86New
		case *ctx > 1 && c.noCatchUp:
			sw.outcome = swX86Reused
			s.noteNoCatchUp(cpu, mm)
			return sw // need_flush false: ctxs[asid].tlb_gen is not written
		case *ctx > 1:
			sw.outcome = swX86Stale
		default:
			sw.outcome = swX86Fresh
		}
		if sw.outcome != swX86Fresh {
			s.dropMM(x, cpu, mm)
		}
		*ctx = 1
		return sw
	case archARM64:
		// The ASID is kept; mm_cpumask plays no part in arm64's flushes.
		return switched{outcome: swARM64}
	}
	x.FetchOr(s.mem, a, uint64(bit))
	return switched{outcome: swSet}
}

// switchBack is x86's switch_mm(mm → mm) on a CPU that a kernel thread
// kept in lazy TLB mode with mm loaded (real_prev == next, was_lazy): the
// bit is still set; smp_mb(), read tlb_gen and, if it moved, flush the
// ASID.
func (s *state) switchBack(x *model.Exec, cpu, mm int) switched {
	c := s.c
	s.loaded[s.slot(cpu)] = uint8(mm)
	x.Touch(c.cpuName[cpu], true)
	sw := switched{g: int(x.Load(s.mem, c.genAddr(mm)))}
	ctx := s.ctxAt(cpu, mm)
	switch {
	case *ctx <= 1:
		sw.outcome = swLazyFresh
	case c.noCatchUp:
		sw.outcome = swLazyReused
		s.noteNoCatchUp(cpu, mm)
	default:
		sw.outcome = swLazyStale
		s.dropMM(x, cpu, mm)
		*ctx = 1
	}
	return sw
}

// noteNoCatchUp records the mutation's loss: a CPU runs mm again on an
// ASID behind its tlb_gen without flushing it.
func (s *state) noteNoCatchUp(cpu, mm int) {
	if s.note.kind == noteNone && s.cachedMM(cpu, mm) {
		s.note = note{kind: noteNoCatchUp, cpu: uint8(cpu), op: uint8(mm)}
	}
}

func (c *config) describeSwitchIn(cpu int, sw switched) string {
	switch sw.outcome {
	case swSet:
		return fmt.Sprintf("cpumask_set_cpu(%d, mm_cpumask); set_mm_asid: ASID kept, no flush", cpu)
	case swARM64:
		return "ASID kept, no flush"
	case swLazyStale:
		return fmt.Sprintf("was_lazy: tlb_gen %d moved while lazy: flush the ASID", sw.g)
	case swLazyFresh:
		return fmt.Sprintf("was_lazy: tlb_gen %d, the ASID is up to date", sw.g)
	case swLazyReused:
		return fmt.Sprintf("was_lazy: tlb_gen %d not compared (mutation), no flush", sw.g)
	}
	what := "bit already set"
	if sw.set {
		what = fmt.Sprintf("cpumask_set_cpu(%d, mm_cpumask)", cpu)
	}
	switch sw.outcome {
	case swX86New:
		return fmt.Sprintf("%s; choose_new_asid: new ASID, flushed (tlb_gen %d)", what, sw.g)
	case swX86Stale:
		return fmt.Sprintf("%s; choose_new_asid: ASID behind tlb_gen %d: flush", what, sw.g)
	case swX86Reused:
		return fmt.Sprintf("%s; choose_new_asid: ASID found, used without comparing its tlb_gen with %d (mutation)", what, sw.g)
	}
	return fmt.Sprintf("%s; choose_new_asid: ASID up to date (tlb_gen %d)", what, sw.g)
}

// switchOut is switch_mm(mm → another process) on user CPU cpu.
func (s *state) switchOut(x *model.Exec, cpu, mm int) {
	c := s.c
	s.loaded[s.slot(cpu)] = uint8(c.other())
	x.Touch(c.cpuName[cpu], true)
	switch {
	case c.arch == archRISCV && c.asidClear:
		s.clearBit(x, mm, cpu)
		if s.note.kind == noteNone && s.cachedMM(cpu, mm) {
			s.note = note{kind: noteMaskCleared, cpu: uint8(cpu), op: uint8(mm)}
		}
	case c.x86Clears():
		s.clearBit(x, mm, cpu)
	}
}

// enterLazy is a kernel thread taking user CPU cpu, which runs mm:
// enter_lazy_tlb keeps mm loaded and its bit set (x86, v4.20 on).
func (s *state) enterLazy(x *model.Exec, cpu, mm int) {
	s.loaded[s.slot(cpu)] = uint8(mm) | lazyTLB
	x.Touch(s.c.cpuName[cpu], true)
}

func (c *config) describeSwitchOut(cpu int) string {
	switch {
	case c.x86Clears():
		return fmt.Sprintf("cpumask_clear_cpu(%d, mm_cpumask(prev)), ASID kept", cpu)
	case c.arch == archX86:
		return "mm_cpumask bit kept (a later flush clears it)"
	case c.arch == archARM64:
		return "__switch_to: dsb(ish) (no TLBI of this CPU in flight)"
	case c.asidClear:
		return fmt.Sprintf("cpumask_clear_cpu(%d, mm_cpumask(prev)), no flush (ASID kept)", cpu)
	}
	return "mm_cpumask bit kept (\"keep all CPUs footmarks\"), ASID kept"
}

// cachedMM reports whether cpu caches any entry of mm.
func (s *state) cachedMM(cpu, mm int) bool {
	for va := 0; va < s.c.pages; va++ {
		if s.c.mmOf[va] == mm && s.entry(cpu, va) != 0 {
			return true
		}
	}
	return false
}

// ---- stale entries ----

// stale reports whether cpu caches va with more rights than its PTE gives:
// the PTE is gone, the entry is writable and the PTE no longer is, or the
// entry is dirty and the PTE no longer is.
func (s *state) stale(cpu, va int) bool {
	e := s.entry(cpu, va)
	if e == 0 {
		return false
	}
	pte := uint8(s.mem.Peek(s.c.pteAddr(va)))
	return pte&bPresent == 0 || (e&bWrite != 0 && pte&bWrite == 0) || (e&bDirty != 0 && pte&bDirty == 0)
}

// live reports whether cpu could use its entry for va without a flush
// first: on x86 a CPU that does not run the mm (or keeps it lazily) and is
// behind its tlb_gen flushes the ASID before it runs the mm again (but
// for the no-catch-up mutation).
func (s *state) live(cpu, va int) bool {
	if s.entry(cpu, va) == 0 {
		return false
	}
	c := s.c
	mm := c.mmOf[va]
	if c.arch != archX86 || s.loadedOn(cpu) == mm && !s.isLazy(cpu) || c.noCatchUp {
		return true
	}
	return *s.ctxAt(cpu, mm) == 1
}

// staleCPUs returns the CPUs with a live stale entry for va.
func (s *state) staleCPUs(va int) uint8 {
	var m uint8
	for i := 0; i < s.c.userCPUs; i++ {
		cpu := s.c.userCPU0 + i
		if s.stale(cpu, va) && s.live(cpu, va) {
			m |= 1 << uint(cpu)
		}
	}
	return m
}

// holders returns the CPUs with a live entry for va.
func (s *state) holders(va int) uint8 {
	var m uint8
	for i := 0; i < s.c.userCPUs; i++ {
		cpu := s.c.userCPU0 + i
		if s.live(cpu, va) {
			m |= 1 << uint(cpu)
		}
	}
	return m
}

// genNow is mm's tlb_gen (for labels).
func (s *state) genNow(mm int) int { return int(s.mem.Peek(s.c.genAddr(mm))) }
