package batchunmap

// The real concurrent implementation of the batched unmap flush, written
// against explorer/rt so that it runs under the Go scheduler (stress, the
// race detector) and under rt's controlled scheduler, and is tied step for
// step to the model (DESIGN.md, principle 3).
//
// It mirrors the same code as the model (doc.go): mm/rmap.c's
// try_to_unmap_one with TTU_BATCH_FLUSH, set_tlb_ubc_flush_pending,
// try_to_unmap_flush(_dirty) and flush_tlb_batched_pending (72b252aed506,
// d950c9477d51, b385d21f27d8, 3ea277194daa, 5ee2fa2f0636), mprotect's
// change_pte_range, and riscv's arch_tlbbatch_flush before and after
// 3951f6add519 (seed 004, 54d7431af73e). Every model variant is a code
// switch here, resolved by the model's own config (config.go), so the
// two cannot disagree on what a variant means.
//
// Goroutines are the model's threads, in its order and with its names:
// reclaimer (kswapd on CPU0), syscall (mprotect on CPU1), user0.. (CPUs
// 2..), and the allocator. The page-table locks are rt mutexes,
// tlb_flush_batched and mm_cpumask are rt words: each model step on them
// is the one rt operation of the real step, with the model's label (its
// static part as the operation's label, the value read completed with
// Env.Note).
//
// What has no rt primitive is hardware, and the model folds it into one
// step; here it is one scheduling point (an Env.Yield or the step's own rt
// operation), and its accesses are made race-free in real mode:
//
//   - The page table (pte[]) is read by the MMU's walk inside a user
//     access step, which has no scheduling point of its own (its one point
//     is the Choose of which va and which access). So PTEs are plain
//     sync/atomic words, and a kernel step on a PTE is Env.Yield with the
//     model's label followed by the atomic operation: exactly what an rt
//     word does (scheduling point, then the atomic), but readable by the
//     walk without a step. Multi-access steps are atomic read-modify-write
//     loops, as the hardware's locked dirty-bit update and
//     ptep_modify_prot_start's xchg are.
//   - Each CPU's TLB is an array guarded by its own sync.Mutex, which
//     stands for the CPU's serialization of its instructions against
//     invalidation IPIs: a user access holds it from lookup to access
//     (walk, fill and access are one step in the model), and a flush round
//     takes each target's in turn (one step in the model: flush_tlb_multi
//     returns when every target has acknowledged). It never spans an rt
//     scheduling point, so under control it is never contended and
//     blocks nobody.
//   - The observers the model keeps outside its memory layer (page states
//     and contents, which mprotect calls returned, which PTLs are held, a
//     shadow of tlb_flush_batched, the note explaining a loss) live in
//     obs, under one sync.Mutex taken after a TLB's and never across a
//     scheduling point.
//
// The allocator is the one thread rt cannot block exactly as the model
// does: the model enables it while some page is freed, and rt can only
// block on a held mutex, a condition variable (two steps, one with
// " (relock)" in its label) or a goroutine's exit. So the reclaimer starts
// it (Env.Go, not a step) inside the free_unref_folios step of the first
// batch, when it first becomes enabled; its steps within a freed batch are
// Yields, and it waits for the second (last) batch by joining the
// reclaimer, which exits at the end of that batch's free step. A third
// batch would need an rt primitive enabled on a shared condition (see
// New); thread ids are still the model's, since it is created after every
// other thread.
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
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// Impl is the real implementation of every variant.
var Impl = &rt.Impl{
	Variants: []string{Immediate, Generation, NoPendingFlush, BoolFlag, NoOverflowReset, NestedReset, NoFlushDirty, RiscvStickyMask},
	New:      newImpl,
}

func newImpl(variant string, p model.Params) (rt.Body, error) {
	m, err := newMachine(variant, p)
	if err != nil {
		return nil, err
	}
	c := m.(*machine).c
	if c.reuse && batches(c) > 2 {
		return nil, fmt.Errorf("batchunmap: the real allocator supports at most 2 free batches with reuse=1 (pages=%d, batch=%d make %d): rt has no operation that waits for a page freed by a middle batch in one step", c.pages, c.batch, batches(c))
	}
	return func(e *rt.Env) func() *model.Violation {
		k := &kernel{e: e, c: c, control: e.IsControlled()}
		k.start()
		return nil
	}, nil
}

func batches(c *config) int { return (c.pages + c.batch - 1) / c.batch }

// cpuTLB is one CPU's TLB: entries indexed by va, bits as in a PTE.
type cpuTLB struct {
	mu sync.Mutex
	e  [maxPages]uint8
}

// kernel is one execution: the shared objects of the real code and the
// hardware and observers around it.
type kernel struct {
	e       *rt.Env
	c       *config
	control bool

	ptl     []*rt.Mutex  // page-table locks
	batched []*rt.Word64 // mm->tlb_flush_batched
	mask    []*rt.Word8  // mm_cpumask (never changed after the body)

	pte [maxPages]atomic.Uint32 // the page table, walked by the MMU
	tlb [maxCPUs]cpuTLB

	obs struct {
		mu       sync.Mutex
		page     [maxPages]uint8 // pgMapped...
		val      [maxPages]uint8
		returned uint8          // va bit: its mprotect has returned
		held     [maxPages]bool // PTL held (for counter-sound)
		word     [maxMMs]uint64 // shadow of tlb_flush_batched
		deferVA  int            // bool-flag: va cleared, flag not yet set (-1)
		note     note
	}

	// The reclaimer's thread, for the allocator's join; set by the body
	// after Env.Go returns, read by the allocator much later.
	reclMu sync.Mutex
	recl   *rt.Thread
}

func (k *kernel) start() {
	e, c := k.e, k.c
	for l := 0; l < c.ptls; l++ {
		k.ptl = append(k.ptl, e.Mutex(fmt.Sprintf("PTL%d", l)))
	}
	for mm := 0; mm < c.mms; mm++ {
		k.batched = append(k.batched, e.Word64(c.mmName(mm)+"tlb_flush_batched"))
		w := e.Word8(c.mmName(mm) + "mm_cpumask")
		w.Store("init mm_cpumask", c.initMask[mm])
		k.mask = append(k.mask, w)
	}
	for va := 0; va < c.pages; va++ {
		k.pte[va].Store(bPresent | bWrite)
	}
	k.obs.deferVA = -1
	t := e.Go(c.names[c.tReclaim], k.reclaim)
	k.reclMu.Lock()
	k.recl = t
	k.reclMu.Unlock()
	e.Go(c.names[c.tSyscall], k.syscall)
	for u := 0; u < c.users; u++ {
		e.Go(c.names[c.tUser0+u], func() { k.user(u) })
	}
	// The allocator is started by the reclaimer's first free step.
}

// reclaimerThread waits (real mode only, for the instant between Env.Go
// and the body's store) for the reclaimer's handle.
func (k *kernel) reclaimerThread() *rt.Thread {
	for {
		k.reclMu.Lock()
		t := k.recl
		k.reclMu.Unlock()
		if t != nil {
			return t
		}
		runtime.Gosched()
	}
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

// ---- hardware: TLBs and flush rounds ----

func (k *kernel) entry(cpu, va int) uint8 {
	t := &k.tlb[cpu]
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.e[va]
}

// invalidate drops the entries keep rejects on every CPU in mask, one
// target at a time (the IPIs of one flush round; kswapd's CPU0 is never a
// target and holds no user entries).
func (k *kernel) invalidate(mask uint8, drop func(va int) bool) {
	for cpu := 1; cpu < k.c.ncpu; cpu++ {
		if mask&(1<<uint(cpu)) == 0 {
			continue
		}
		t := &k.tlb[cpu]
		t.mu.Lock()
		for va := 0; va < k.c.pages; va++ {
			if drop(va) {
				t.e[va] = 0
			}
		}
		t.mu.Unlock()
	}
}

func (k *kernel) flushAll(mask uint8) { k.invalidate(mask, func(int) bool { return true }) }
func (k *kernel) flushVA(va int, mask uint8) {
	k.invalidate(mask, func(v int) bool { return v == va })
}
func (k *kernel) flushMM(mm int, mask uint8) {
	k.invalidate(mask, func(v int) bool { return k.c.mmOf[v] == mm })
}

// staleCPUs is the model's staleCPUs: CPUs caching va with more rights
// than its PTE gives.
func (k *kernel) staleCPUs(va int) uint8 {
	var m uint8
	pte := uint8(k.pte[va].Load())
	for cpu := 1; cpu < k.c.ncpu; cpu++ {
		e := k.entry(cpu, va)
		if e != 0 && (pte&bPresent == 0 || e&bWrite != 0 && pte&bWrite == 0) {
			m |= 1 << uint(cpu)
		}
	}
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

// ---- reclaimer: shrink_folio_list on CPU0 ----

// reclaim is shrink_folio_list over pages 0..pages-1 (stepReclaim): one
// model step per scheduling point below, in the model's order.
func (k *kernel) reclaim() {
	e, c := k.e, k.c
	var (
		mask               uint8 // tlb_ubc.arch.cpumask
		flushReq, writable bool  // tlb_ubc.flush_required, .writable
		queued             uint8 // the free batch
		freed              int   // pages freed so far
	)
	batchFlush := func() {
		k.flushAll(mask)
		if !c.stickyMask {
			mask = 0
		}
		flushReq, writable = false, false
	}
	for va := 0; va < c.pages; va++ {
		mm, l := c.mmOf[va], c.ptlOf(va)
		lname := fmt.Sprintf("PTL%d", l)

		k.endStep()
		k.ptl[l].Lock(fmt.Sprintf("try_to_unmap_one: spin_lock %s (page_vma_mapped_walk va%d)", lname, va))
		k.setHeld(l, true)

		k.endStep()
		e.Yield(fmt.Sprintf("try_to_unmap_one: ptep_get_and_clear pte[%d]", va))
		pteval := uint8(k.pte[va].Swap(0))
		e.Notef(" (%s)", describePTE(pteval))
		k.obs.mu.Lock()
		k.obs.page[va] = pgUnmapped
		if c.boolFlag && c.batched && pteval&bPresent != 0 {
			k.obs.deferVA = va
		}
		k.obs.mu.Unlock()

		switch {
		case !c.batched:
			// flush_tlb_range under the PTL: the IPIs are this step.
			k.endStep()
			m := k.mask[mm].Load(fmt.Sprintf("try_to_unmap_one: flush_tlb_range va%d → CPUs ", va))
			k.flushVA(va, m)
			e.Note(cpus(m))
		case pteval&bPresent != 0: // pte_accessible
			k.endStep()
			m := k.mask[mm].Load(fmt.Sprintf("set_tlb_ubc_flush_pending: arch_tlbbatch_add_pending: batch cpumask %s |= mm_cpumask ", cpus(mask)))
			e.Note(cpus(m) + "; flush_required = true")
			mask |= m
			flushReq = true
			switch {
			case c.boolFlag:
				k.endStep()
				k.batched[mm].Store("set_tlb_ubc_flush_pending: mm->tlb_flush_batched = true", 1)
				k.obs.mu.Lock()
				k.obs.word[mm] = 1
				k.obs.deferVA = -1
				k.obs.mu.Unlock()
			case !c.counter: // no tlb_flush_batched before 3ea277194daa
			default:
				k.deferCount(va, mm)
			}
			if pteval&bDirty != 0 {
				writable = true
			}
		}

		k.endStep()
		k.ptl[l].Unlock(fmt.Sprintf("try_to_unmap_one: spin_unlock %s", lname))
		k.setHeld(l, false)

		if c.flushDirty && writable {
			k.endStep()
			e.Yield(fmt.Sprintf("try_to_unmap_flush_dirty: writable: arch_tlbbatch_flush → CPUs %s", cpus(mask)))
			batchFlush()
		}

		// pageout: the swap snapshot; writeback completes at once.
		k.endStep()
		e.Yield(fmt.Sprintf("pageout: swap_writepage snapshots page %d", va))
		k.obs.mu.Lock()
		val := k.obs.val[va]
		k.obs.page[va] = pgWriteback
		if writable && !c.flushDirty && k.obs.note.kind == noteNone {
			k.obs.note = note{kind: noteDirtySkip, va: uint8(va)}
		}
		detail := fmt.Sprintf(" (val=%d)", val)
		if c.nestedReset {
			detail += "; bio allocation enters nested reclaim: init_tlb_ubc clears flush_required"
			if flushReq && (k.obs.note.kind == noteNone || k.obs.note.kind == noteNestedReset) {
				k.obs.note = note{kind: noteNestedReset, page: uint8(va)}
			}
			flushReq = false
		}
		k.obs.mu.Unlock()
		e.Note(detail)
		queued |= 1 << uint(va)
		if bits.OnesCount8(queued) < c.batch && va+1 < c.pages {
			continue
		}

		if flushReq {
			k.endStep()
			e.Yield(fmt.Sprintf("try_to_unmap_flush: arch_tlbbatch_flush → CPUs %s", cpus(mask)))
			batchFlush()
		}

		k.endStep()
		e.Yield(fmt.Sprintf("free_unref_folios: free %s", pageSet(queued)))
		k.obs.mu.Lock()
		for p := 0; p < c.pages; p++ {
			if queued&(1<<uint(p)) != 0 {
				k.obs.page[p] = pgFreed
			}
		}
		k.obs.mu.Unlock()
		first := freed == 0
		freed += bits.OnesCount8(queued)
		queued = 0
		if first && c.reuse {
			// The allocator becomes enabled here; see the file comment.
			n := freed
			e.Go(c.names[c.tAlloc], func() { k.allocate(n) })
		}
	}
	k.endStep()
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

// ---- allocator ----

// allocate hands every page, lowest first, to a new owner once it is
// freed. firstBatch pages were freed by the step that started it; the
// rest are freed at the reclaimer's last step, just before it exits.
func (k *kernel) allocate(firstBatch int) {
	for p := 0; p < k.c.pages; p++ {
		label := fmt.Sprintf("get_page_from_freelist: page %d handed to a new owner, who writes %d", p, reusedVal)
		k.endStep()
		if p == firstBatch {
			k.reclaimerThread().Join(label)
		} else {
			k.e.Yield(label)
		}
		k.obs.mu.Lock()
		k.obs.page[p] = pgReused
		k.obs.val[p] = reusedVal
		k.obs.mu.Unlock()
	}
	k.endStep()
}

// ---- syscall thread: mprotect(PROT_READ) on CPU1 ----

func (k *kernel) syscall() {
	e, c := k.e, k.c
	var word uint64 // tlb_flush_batched as the last drain read it
	for op := 0; op < c.syscalls; op++ {
		va := c.sysAddrs[op]
		mm, l := c.mmOf[va], c.ptlOf(va)
		lname := fmt.Sprintf("PTL%d", l)

		k.endStep()
		k.ptl[l].Lock(fmt.Sprintf("change_pte_range: spin_lock %s (mprotect va%d PROT_READ)", lname, va))
		e.Call(c.tSyscall, memIn{Op: opMprotect, VA: uint8(va)})
		k.setHeld(l, true)

		if c.drain {
			k.drain(mm, l, &word)
		}

		// ptep_modify_prot_start/commit: one atomic read-modify-write
		// under the PTL, keeping a concurrent hardware dirty-bit update.
		k.endStep()
		e.Yield(fmt.Sprintf("change_pte_range: pte[%d] ", va))
		var old uint8
		for {
			old = uint8(k.pte[va].Load())
			if old&bPresent == 0 || old&bWrite == 0 || k.pte[va].CompareAndSwap(uint32(old), uint32(old&^bWrite)) {
				break
			}
		}
		needFlush := false
		switch {
		case old&bPresent == 0:
			e.Note("none (swap entry): nothing to change, nothing to flush")
			if h := k.staleCPUs(va); h != 0 {
				kind := uint8(noteNoFlush)
				if !c.drain {
					kind = noteNoDrain
				}
				k.setNote(note{kind: kind, va: uint8(va), word: uint16(word)})
			}
		case old&bWrite == 0:
			e.Note("already ro")
		default:
			e.Notef("%s → %s", describePTE(old), describePTE(old&^bWrite))
			e.Call(protectClient, memIn{Op: opProtect, VA: uint8(va)})
			e.Return(protectClient, memOut{Res: resOK})
			needFlush = true
		}

		if needFlush {
			k.endStep()
			m := k.mask[mm].Load(fmt.Sprintf("change_pte_range: flush_tlb_range va%d → CPUs ", va))
			k.flushVA(va, m)
			e.Note(cpus(m))
		}

		k.endStep()
		k.ptl[l].Unlock(fmt.Sprintf("change_pte_range: spin_unlock %s; mprotect(va%d) returns", lname, va))
		e.Return(c.tSyscall, memOut{Res: resOK})
		k.obs.mu.Lock()
		k.obs.held[l] = false
		k.obs.returned |= 1 << uint(va)
		k.obs.mu.Unlock()
	}
	k.endStep()
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
	k.endStep()
	m := k.mask[mm].Load(fmt.Sprintf("flush_tlb_batched_pending: flush_tlb_mm (%s) → CPUs ", why))
	k.flushMM(mm, m)
	e.Note(cpus(m))

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
		if c.mmOf[va] != mm || c.ptlOf(va) == l || k.staleCPUs(va) == 0 || va == deferVA {
			continue
		}
		k.setNote(note{kind: noteBoolCleared, va: uint8(va), ptl: uint8(l)})
		return
	}
}

// ---- user threads ----

// user runs the accesses of user thread u on its CPU (stepUser): each is
// one step, the Choose of the va and of read or write, in which the CPU
// looks up its TLB, walks the page table on a miss, fills, and accesses
// the page, holding its TLB against invalidations throughout.
func (k *kernel) user(u int) {
	e, c := k.e, k.c
	cpu := c.cpuOf(u)
	client := c.tUser0 + u
	addrs := c.userAddrs[u]
	who := fmt.Sprintf("user%d on CPU%d", u, cpu)
	for i := 0; i < c.accesses; i++ {
		k.endStep()
		alt := e.Choose(who+": ", 2*len(addrs))
		va := addrs[alt/2]
		write := alt%2 == 1
		in := memIn{Op: opRead, VA: uint8(va)}
		what := "read"
		if write {
			in = memIn{Op: opWrite, VA: uint8(va), Val: uint8(u + 1)}
			what = "write"
		}
		e.Call(client, in)
		t := &k.tlb[cpu]
		t.mu.Lock()
		e.Return(client, k.access(t, u, cpu, va, write, what))
		t.mu.Unlock()
	}
	k.endStep()
}

// access is one access with t (cpu's TLB) held; it returns the outcome.
func (k *kernel) access(t *cpuTLB, u, cpu, va int, write bool, what string) memOut {
	e := k.e
	pte := &k.pte[va]
	ent := t.e[va]
	switch {
	case ent != 0 && (!write || ent&bWrite != 0 && ent&bDirty != 0):
		e.Notef("%s va%d: TLB hit (%s)", what, va, describePTE(ent))
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
				t.e[va] = ent | bDirty
				e.Notef("write va%d: TLB hit (rw), walk sets pte[%d] dirty", va, va)
				return k.use(u, cpu, va, true, ent|bDirty)
			}
			t.e[va] = 0
			e.Notef("write va%d: TLB hit (rw, clean) but pte[%d] %s: page fault", va, va, describePTE(v))
			return fault(v)
		}

	case ent != 0:
		v := uint8(pte.Load())
		t.e[va] = 0
		e.Notef("write va%d: TLB hit (ro), pte[%d] %s: page fault", va, va, describePTE(v))
		return fault(v)
	}
	for {
		v := uint8(pte.Load())
		if v&bPresent == 0 || write && v&bWrite == 0 {
			e.Notef("%s va%d: TLB miss, pte[%d] %s: page fault", what, va, va, describePTE(v))
			return fault(v)
		}
		if write && v&bDirty == 0 {
			if !pte.CompareAndSwap(uint32(v), uint32(v|bDirty)) {
				continue
			}
			v |= bDirty
		}
		t.e[va] = v
		e.Notef("%s va%d: TLB miss, walk pte[%d] (%s), fill", what, va, va, describePTE(v))
		return k.use(u, cpu, va, write, v)
	}
}

// use reads or writes page va through entry ent and checks the harm
// properties, as the model's access does.
func (k *kernel) use(u, cpu, va int, write bool, ent uint8) memOut {
	who := fmt.Sprintf("user%d on CPU%d", u, cpu)
	what := "reads"
	if write {
		what = "writes"
	}
	k.obs.mu.Lock()
	st, returned := k.obs.page[va], k.obs.returned&(1<<uint(va)) != 0
	out := memOut{Res: resOK}
	if write {
		k.obs.val[va] = uint8(u + 1)
	} else {
		out.Val = k.obs.val[va]
	}
	k.obs.mu.Unlock()
	switch {
	case st == pgFreed || st == pgReused:
		owner := "which reclaim freed"
		if st == pgReused {
			owner = "which reclaim freed and the allocator handed to a new owner"
		}
		k.e.Failf(NoUseAfterFree, "%s %s va%d through a stale TLB entry (%s) to page %d, %s: %s",
			who, what, va, describePTE(ent), va, owner, k.cause())
	case write && st == pgWriteback:
		k.e.Failf(NoLostWrite, "%s writes page %d through a writable dirty TLB entry after pageout snapshotted it for swap: the write is lost when the page is swapped back in; %s",
			who, va, k.cause())
	case write && returned:
		k.e.Failf(SyscallPostcondition, "%s writes va%d through a stale writable TLB entry after mprotect(va%d, PROT_READ) returned: %s",
			who, va, va, k.cause())
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
			for cpu := 1; cpu < c.ncpu; cpu++ {
				if k.entry(cpu, p) != 0 {
					h |= 1 << uint(cpu)
				}
			}
			if h != 0 {
				return fmt.Sprintf("page %d is %s while CPUs %s still cache va%d: %s", p, pageStateNames[page[p]], cpus(h), p, k.cause())
			}
		case pgWriteback:
			for cpu := 1; cpu < c.ncpu; cpu++ {
				if e := k.entry(cpu, p); e&bWrite != 0 && e&bDirty != 0 {
					h |= 1 << uint(cpu)
				}
			}
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
	held, word := k.obs.held, k.obs.word
	k.obs.mu.Unlock()
	for va := 0; va < c.pages; va++ {
		l := c.ptlOf(va)
		h := k.staleCPUs(va)
		if h == 0 || held[l] {
			continue
		}
		if w := word[c.mmOf[va]]; !c.armed(w) {
			return fmt.Sprintf("CPUs %s cache va%d although pte[%d] is %s and PTL%d is free, yet tlb_flush_batched = %s, so flush_tlb_batched_pending under PTL%d would not flush: %s",
				cpus(h), va, va, describePTE(uint8(k.pte[va].Load())), l, c.describeWord(w), l, k.cause())
		}
	}
	return ""
}
