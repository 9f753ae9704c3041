package cputlb

// The real implementation of the broadcast TLB invalidate and of the other
// threads that touch a vCPU's TLB, written against explorer/rt: one
// goroutine per vCPU running mttcg's loop of the per-CPU-lock branch
// (qemu_tcg_cpu_thread_fn: cpu_exec_start, cpu_exec, cpu_exec_end,
// atomic_mb_set(exit_request, 0), qemu_tcg_wait_io_event,
// process_queued_cpu_work), the sources executing the guest TLB invalidate
// whose helper calls tlb_flush_page_by_mmuidx_all_cpus_synced
// (flush_all_helper with async_run_on_cpu or async_run_on_cpu_no_bql and
// qemu_cpu_kick, then async_safe_run_on_cpu for its own flush and
// cpu_loop_exit), the targets loading, storing and reading MMIO through
// their softmmu TLB, the migration thread (dirty sync, tlb_reset_dirty,
// run_on_cpu) and the main loop (tcg_commit).
//
// It mirrors the code the model mirrors (doc.go).
//
// # Steps
//
// Every model step is exactly one rt scheduling point, with the model's
// label (the static part given to the primitive, the values the step read
// appended with Env.Note). A primitive's kind (a wait, an unlock, a
// yield) must be known before the scheduling point is reached, so where a
// step's primitive depends on shared state, that state is read with a
// lock held that its writers need, at the end of the previous step:
//
//   - The BQL, qemu_cpu_list_lock and each cpu->lock are rt.Mutexes;
//     exclusive_cond, exclusive_resume, halt_cond and cpu->cond rt.Conds.
//     Each step the model takes on them is the rt primitive, with the
//     step's other accesses done as local computation right after it
//     (under control only one goroutine runs).
//   - tlb.c.lock: every critical section on it is one model step
//     (softmmu.go), so it is never held between steps. Here each section
//     is one anchor primitive (Env.Yield) followed by the section, which
//     takes a plain sync.Mutex in real mode (under control nothing runs
//     concurrently with it).
//   - The shared words that steps with another anchor touch (pending_cpus,
//     running, has_waiter, exit_request, the TLB entries, the dirty
//     bitmap, D's contents, memory_dispatch, the current map, wi.done) are
//     plain sync/atomic words, read and written after the step's anchor.
//     The PTEs, only ever accessed by one-access steps, are rt.Word8s.
//
// rt has no "done" state for a goroutine parked forever (the model's vCPU
// asleep on halt_cond with nothing left to do, whose step says Done): a
// run whose goroutines all wait is a deadlock. A vCPU whose guest has
// halted, whose work list is empty and to which every work item it will
// ever get has been queued, releases cpu->lock in the model's wait step,
// as the wait does, and exits instead of waiting: nothing could wake it.
// A vCPU that sleeps while an item is still to come waits on halt_cond,
// and the kick of whoever queues it wakes it; one that is never kicked
// (no-kick) is the deadlock the model reports.

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// Impl is the real implementation of every cputlb variant: each is a code
// change (which flush function, which async_run_on_cpu, whether the TB is
// ended, whether queue_work_on_cpu kicks, and the later fixes of the dirty
// tracking and of tcg_commit).
var Impl = &rt.Impl{
	Variants: variantNames(),
	New:      newImpl,
}

func variantNames() []string {
	out := make([]string, len(variants))
	for i, v := range variants {
		out[i] = v.Name
	}
	return out
}

func newImpl(variant string, p model.Params) (rt.Body, error) {
	mm, err := newMachine(variant, p)
	if err != nil {
		return nil, err
	}
	m := mm.(*machine)
	if m.rcu {
		return nil, fmt.Errorf("rcu=1 is explored on the model only: the real implementation has no call_rcu thread or read sections yet (use rcu=0)")
	}
	return func(e *rt.Env) func() *model.Violation {
		r := newRun(e, m)
		for c := 0; c < m.n; c++ {
			c := c
			e.Go(cpuName(c), func() { r.vcpu(c) })
		}
		if m.rounds > 0 {
			e.Go("migration", r.migration)
		}
		if m.commits > 0 {
			e.Go("main-loop", r.mainLoop)
		}
		if m.iommu {
			e.Go("iommu", r.iommu)
		}
		return r.finalCheck
	}, nil
}

// rcpu is the shared part of one vCPU: what other threads read or write.
type rcpu struct {
	running   atomic.Uint32
	hasWaiter atomic.Uint32 // written only under qemu_cpu_list_lock
	exitReq   atomic.Uint32
	tlbD      atomic.Uint32 // the TLB entry of D (written under tlbMu)
	// The TLB entries of X_s (bit s) and of M (0 none, 1+g filled under
	// dispatch generation g): written under tlbMu by the vCPU and, with
	// iommu, by the IOMMU thread's flush; read lock-free by the vCPU.
	tlbX, tlbM atomic.Uint32
	dispatch   atomic.Uint32 // cpu_ases[0].memory_dispatch (its generation)
	done       atomic.Uint32 // the run_on_cpu item's wi.done (under lock)

	// tlbMu is tlb.c.lock in real mode.
	tlbMu sync.Mutex

	// cpu->lock protects the work list and the work-once observers;
	// halt_cond and cond wait with it.
	lock     *rt.Mutex
	haltCond *rt.Cond
	cond     *rt.Cond
	queue    []item

	posted, ran, freed int // work-once observers
}

// run is one execution: the shared objects of the machine.
type run struct {
	e        *rt.Env
	m        *machine
	ctl      bool
	pte      [maxSources]*rt.Word8
	pending  atomic.Uint32 // pending_cpus, written only under qemu_cpu_list_lock
	listLock *rt.Mutex
	bql      *rt.Mutex
	exclCond *rt.Cond // exclusive_cond
	resume   *rt.Cond // exclusive_resume
	cpu      []*rcpu

	dirty   atomic.Uint32 // D's bit in the migration dirty bitmap
	ram     atomic.Uint32 // D's contents
	curMap  atomic.Uint32 // address_space_memory's current map (generation)
	syncing atomic.Bool   // observer: the migration thread holds a sync of D it has not sent
	sent    atomic.Uint32 // observer: what the migration stream carries for D
	// resumed is the observer of no-stale-translation: bit s, source s
	// has executed the guest instruction after its invalidate.
	resumed atomic.Uint32
}

func newRun(e *rt.Env, m *machine) *run {
	r := &run{e: e, m: m, ctl: e.IsControlled()}
	for s := 0; s < m.sources; s++ {
		r.pte[s] = e.Word8("pte(" + pageNames[s] + ")")
		r.pte[s].Store("init: pte -> P", 1)
	}
	r.listLock = e.Mutex(listLock)
	r.bql = e.Mutex("bql")
	r.exclCond = e.Cond("exclusive_cond", r.listLock)
	r.resume = e.Cond("exclusive_resume", r.listLock)
	r.cpu = make([]*rcpu, m.n)
	for c := range r.cpu {
		rc := &rcpu{lock: e.Mutex(cpuLockName(c))}
		rc.haltCond = e.Cond(haltCondNames[c], rc.lock)
		rc.cond = e.Cond(cpuCondNames[c], rc.lock)
		r.cpu[c] = rc
	}
	if m.rounds > 0 {
		r.cpu[m.envCPU].tlbD.Store(uint32(tlbWritable))
		r.dirty.Store(1)
		r.ram.Store(1)
	}
	return r
}

// tlbLock and tlbUnlock bracket a critical section on vCPU c's tlb.c.lock,
// which is one step: a real lock in real mode, nothing under control (one
// goroutine runs, and the section has no scheduling point).
func (r *run) tlbLock(c int) {
	if !r.ctl {
		r.cpu[c].tlbMu.Lock()
	}
}

func (r *run) tlbUnlock(c int) {
	if !r.ctl {
		r.cpu[c].tlbMu.Unlock()
	}
}

// expected is the number of work items vCPU c gets in a complete run.
func (r *run) expected(c int) int { return int(r.m.itemsFor(c)) }

// vc is a vCPU thread's own state: where it is in its guest program, the
// TLB entries only it writes, and the work item it runs.
type vc struct {
	r      *run
	t      int
	name   string
	guest  uint8
	halted bool
	cur    item
	open   bool // real mode: an access's call is recorded, its return not yet
}

// x, setX, mEntry and setM read and write the vCPU's TLB entries of X_s
// and M (rcpu.tlbX, rcpu.tlbM).
func (v *vc) x() uint8      { return uint8(v.r.cpu[v.t].tlbX.Load()) }
func (v *vc) setX(b uint8)  { v.r.cpu[v.t].tlbX.Store(uint32(b)) }
func (v *vc) mEntry() uint8 { return uint8(v.r.cpu[v.t].tlbM.Load()) }
func (v *vc) setM(e uint8)  { v.r.cpu[v.t].tlbM.Store(uint32(e)) }

// vcpu is qemu_tcg_cpu_thread_fn: it returns when the vCPU would sleep on
// halt_cond for good (see the file comment).
func (r *run) vcpu(t int) {
	v := &vc{r: r, t: t, name: cpuName(t)}
	v.setX(uint8(1)<<uint(r.m.sources) - 1)
	if r.m.transactions() > 0 && t == r.m.envCPU {
		v.setM(1)
	}
	for {
		v.execStart()
		v.exec()
		v.execEnd()
		if !v.waitIOEvent() {
			return
		}
		v.processWork()
	}
}

// ---- cpu_exec_start (exec.go) ----

func (v *vc) execStart() {
	r, rc, name := v.r, v.r.cpu[v.t], v.name
	r.e.Yield("cpu_exec_start(" + name + "): atomic_set(running, true)")
	rc.running.Store(1)

	r.e.Yield("cpu_exec_start(" + name + "): smp_mb; pending_cpus == ")
	if p := r.pending.Load(); p != 0 {
		r.e.Notef("%d, slow path", p)
	} else {
		r.e.Note("0, enter cpu_exec")
		return
	}

	r.listLock.Lock("cpu_exec_start(" + name + "): qemu_mutex_lock(qemu_cpu_list_lock)")
	// One step for the test under the lock (the model's pcStartWaiter):
	// has_waiter and pending_cpus are written only under the lock, which
	// this thread holds since the previous step.
	if rc.hasWaiter.Load() != 0 {
		r.e.Yield("cpu_exec_start(" + name + "): has_waiter: counted in pending_cpus, run until kicked")
	} else {
		prefix := "cpu_exec_start(" + name + "): not counted: atomic_set(running, false); "
		if p := r.pending.Load(); p != 0 {
			// running = false before the wait: it is read only under the
			// lock (start_exclusive's scan), which this thread holds.
			rc.running.Store(0)
			v.exclusiveIdle(fmt.Sprintf("%sexclusive_idle: pending_cpus == %d, qemu_cond_wait(exclusive_resume)", prefix, p))
		} else {
			r.e.Yield(prefix + "exclusive_idle: pending_cpus == 0; atomic_set(running, true)")
			rc.running.Store(0)
			rc.running.Store(1)
		}
	}
	r.listLock.Unlock("cpu_exec_start(" + name + "): qemu_mutex_unlock(qemu_cpu_list_lock), enter cpu_exec")
}

// exclusiveIdle is cpu_exec_start's exclusive_idle once pending_cpus was
// found set: wait on exclusive_resume (the step labelled wait) until
// pending_cpus is 0, then running = true. Each wake-up is the model's
// re-acquire step, completed with what the re-test found.
func (v *vc) exclusiveIdle(wait string) {
	r, rc := v.r, v.r.cpu[v.t]
	woken := "cpu_exec_start(" + v.name + "): woken, re-acquires qemu_cpu_list_lock; "
	for {
		r.resume.WaitAs(wait, woken)
		p := r.pending.Load()
		if p == 0 {
			rc.running.Store(1)
			r.e.Note("exclusive_idle: pending_cpus == 0; atomic_set(running, true)")
			return
		}
		r.e.Notef("exclusive_idle: pending_cpus == %d", p)
		wait = "cpu_exec_start(" + v.name + "): exclusive_idle: qemu_cond_wait(exclusive_resume) again"
	}
}

// ---- cpu_exec and the guest programs (guest.go, softmmu.go) ----

// exec is cpu_exec: the exit request is tested before each TB.
func (v *vc) exec() {
	r, rc, name := v.r, v.r.cpu[v.t], v.name
	for {
		if v.halted {
			r.e.Yield("cpu_exec(" + name + "): cpu->halted, return EXCP_HALTED")
			return
		}
		r.e.Yield("cpu_exec(" + name + "): exit_request ")
		switch {
		case rc.exitReq.Load() != 0:
			r.e.Note("set, leave cpu_exec")
			return
		case v.programDone():
			v.halted = true
			r.e.Note("clear; the guest waits for an interrupt, cpu->halted = 1, EXCP_HLT")
			return
		}
		r.e.Note("clear, run the next TB")
		if r.m.isSource(v.t) {
			if v.sourceTB() {
				return
			}
			continue
		}
		switch o := r.m.program[v.t][v.guest]; o {
		case opLoadX0, opLoadX1:
			v.load(int(o - opLoadX0))
		case opMMIO:
			v.mmio()
		case opBARThenM:
			v.barThenM()
		case opStoreD:
			v.store()
		}
		v.guest++
	}
}

func (v *vc) programDone() bool {
	if v.r.m.isSource(v.t) {
		return v.guest == gSrcDone
	}
	return int(v.guest) == len(v.r.m.program[v.t])
}

// load is one guest load from page X_p: a TLB hit, or tlb_fill (a page
// walk that finds the PTE set and installs the entry, the use being a
// later step, or that faults).
func (v *vc) load(p int) {
	r, name := v.r, v.name
	bit := uint8(1) << uint(p)
	for {
		if r.m.splitHit(v.t) {
			// The comparator's step reads the entry after its scheduling
			// point: the IOMMU thread may flush it before.
			r.e.Yield("cpu_exec(" + name + "): guest load from page " + pageNames[p] + ": the inline TLB lookup reads the comparator: ")
			if v.x()&bit != 0 {
				r.e.Note("it matches " + pageNames[p] + "->P")
				v.loadAddend(p)
				return
			}
			r.e.Note("it misses")
		} else if v.x()&bit != 0 {
			// Read the observer before the translation: an access that
			// starts after the source resumed must not use the old entry
			// (in real mode the two reads are not one instant).
			resumed := r.resumed.Load()&uint32(bit) != 0
			v.callRealMode(p)
			r.e.Yield("cpu_exec(" + name + "): guest load from page " + pageNames[p] + " hits the softmmu TLB entry " + pageNames[p] + "->P")
			v.callControlled(p)
			r.e.Return(v.t, mapped)
			if resumed || r.resumed.Load()&uint32(bit) != 0 {
				r.e.Fail(NoStaleTranslation, fmt.Sprintf("%s translates page %s with the TLB entry %s->P cached before cpu%d cleared the PTE, "+
					"after cpu%d executed the instruction following %s: %s's flush item has not run",
					name, pageNames[p], pageNames[p], p, p, r.m.flushName(), name))
			}
			return
		}
		v.callRealMode(p)
		if r.pte[p].Load("tlb_fill("+name+"): page walk finds pte("+pageNames[p]+")") != 0 {
			r.e.Note(" -> P")
			r.e.Yield(fmt.Sprintf("tlb_set_page(%s): qemu_spin_lock(%s); install %s->P; qemu_spin_unlock", name, tlbLockNames[v.t], pageNames[p]))
			r.tlbLock(v.t)
			v.setX(v.x() | bit)
			r.tlbUnlock(v.t)
			continue
		}
		r.e.Note(" clear: guest page fault")
		v.callControlled(p)
		r.e.Return(v.t, fault)
		return
	}
}

// A guest access is one step, and the model records its call and return
// in that step; under control the code does the same. In real mode there
// are no steps, and the call must be recorded before the access and the
// return after it for the history to mean real time. A page walk that
// fills the TLB is not an access of its own (the use is a later step), so
// in real mode the call recorded before the walk stays open for the use.
func (v *vc) callRealMode(p int) {
	if !v.r.ctl && !v.open {
		v.r.e.Call(v.t, access{p})
		v.open = true
	}
}

func (v *vc) callControlled(p int) {
	if v.r.ctl {
		v.r.e.Call(v.t, access{p})
	}
	v.open = false
}

// mmio is one guest MMIO read of page M (softmmu.go stepMMIO).
func (v *vc) mmio() {
	r, name, m := v.r, v.name, v.r.m
	for stale := false; ; {
		if v.mEntry() == 0 || stale {
			v.fillM()
			stale = false
			continue
		}
		if !m.cfg.mapGen {
			break
		}
		filled := uint32(v.mEntry() - 1)
		r.e.Yield(fmt.Sprintf("io_readx(%s): TLB hit on M; io_prepare: full->map_gen %d ", name, filled))
		if g := r.curMap.Load(); g != filled {
			r.e.Notef("!= qatomic_rcu_read(&as->current_map)->gen %d: the entry is stale, fill it again", g)
			stale = true
			continue
		}
		r.e.Note("== qatomic_rcu_read(&as->current_map)->gen; section = full->section")
		break
	}
	filled := uint32(v.mEntry() - 1)
	switch {
	case m.cfg.mapGen:
	case m.cfg.sectionInEntry:
		r.e.Yield(fmt.Sprintf("io_readx(%s): TLB hit on M; io_prepare: section = full->section (kept at the fill, generation %d)", name, filled))
	default:
		if g := v.readDispatch("io_readx(" + name + "): TLB hit on M; iotlb_to_section: "); filled != g {
			r.e.Fail(DispatchCoherent, fmt.Sprintf("io_readx(%s): the TLB entry of M was filled from %s generation %d, and iotlb_to_section "+
				"resolves its section index in generation %d: a section of another memory map (%s)", name, m.dispatchNoun(), filled, g, m.incoherentCause(name)))
		}
	}
	r.bql.Lock("io_readx(" + name + "): mr->global_locking: qemu_mutex_lock_iothread; memory_region_dispatch_read")
	r.bql.Unlock("io_readx(" + name + "): qemu_mutex_unlock_iothread")
}

// readDispatch is the step that reads the dispatch (dispatch), labelled
// prefix + what it reads + the generation it found.
func (v *vc) readDispatch(prefix string) uint32 {
	v.r.e.Yield(prefix + v.r.m.dispatchRead() + " is generation ")
	g := v.dispatch()
	v.r.e.Notef("%d", g)
	return g
}

// dispatch reads what an MMIO fill and iotlb_to_section read (machine's
// dispatchWord): the vCPU's cached dispatch, or the current map.
func (v *vc) dispatch() uint32 {
	if v.r.m.cfg.uncached {
		return v.r.curMap.Load()
	}
	return v.r.cpu[v.t].dispatch.Load()
}

// store is one guest store to page D (softmmu.go stepStore).
func (v *vc) store() {
	r, rc, name, m := v.r, v.r.cpu[v.t], v.name, v.r.m
	for {
		r.e.Yield("store_helper(" + name + "): tlb_addr_write(entry) ")
		switch uint8(rc.tlbD.Load()) {
		case tlbWritable:
			r.e.Note("is D: TLB hit, no flags, fast path")
			v.storeRAM()
			return
		case tlbNotDirty:
			r.e.Note("is D|TLB_NOTDIRTY: notdirty_write")
			v.notdirtyWrite()
			v.storeRAM()
			return
		}
		r.e.Note("misses D: tlb_fill")
		clean := false
		if !m.cfg.dirtyLocked {
			r.e.Yield("tlb_fill(" + name + "): tlb_set_page_with_attrs: cpu_physical_memory_is_clean(D): ")
			clean = r.dirty.Load() == 0
			if clean {
				r.e.Note("clean, write_address |= TLB_NOTDIRTY")
			} else {
				r.e.Note("dirty, write_address = D")
			}
			r.e.Yield(fmt.Sprintf("tlb_fill(%s): tlb_set_page_with_attrs: qemu_spin_lock(%s); install %s; qemu_spin_unlock", name, tlbLockNames[v.t], tlbDNames[entryFor(clean)]))
			r.tlbLock(v.t)
		} else {
			r.e.Yield(fmt.Sprintf("tlb_fill(%s): tlb_set_page_with_attrs: qemu_spin_lock(%s); cpu_physical_memory_is_clean(D): ", name, tlbLockNames[v.t]))
			r.tlbLock(v.t)
			clean = r.dirty.Load() == 0
			r.e.Notef("%s; install %s; qemu_spin_unlock", cleanText(clean), tlbDNames[entryFor(clean)])
		}
		rc.tlbD.Store(uint32(entryFor(clean)))
		r.tlbUnlock(v.t)
	}
}

func entryFor(clean bool) uint8 {
	if clean {
		return tlbNotDirty
	}
	return tlbWritable
}

// notdirtyWrite is notdirty_write: set the dirty bits, and, if the page
// is no longer clean, drop TLB_NOTDIRTY from the entry under tlb.c.lock.
func (v *vc) notdirtyWrite() {
	r, rc, name, m := v.r, v.r.cpu[v.t], v.name, v.r.m
	r.e.Yield("notdirty_write(" + name + "): cpu_physical_memory_set_dirty_range(D, DIRTY_CLIENTS_NOCODE)")
	r.dirty.Or(1)
	r.e.Yield("notdirty_write(" + name + "): ")
	if r.dirty.Load() == 0 {
		r.e.Note("cpu_physical_memory_is_clean(D): clean, TLB_NOTDIRTY stays")
		return
	}
	r.e.Note("!cpu_physical_memory_is_clean(D)")
	if m.cfg.dirtyLocked {
		r.e.Yield(fmt.Sprintf("notdirty_write(%s): tlb_try_set_dirty: qemu_spin_lock(%s); ", name, tlbLockNames[v.t]))
		r.tlbLock(v.t)
		if r.dirty.Load() == 0 {
			r.e.Note("cpu_physical_memory_is_clean(D): clean again, TLB_NOTDIRTY stays; qemu_spin_unlock")
		} else {
			rc.tlbD.CompareAndSwap(uint32(tlbNotDirty), uint32(tlbWritable))
			r.e.Note("D not clean; addr_write == D|TLB_NOTDIRTY: addr_write = D; qemu_spin_unlock")
		}
		r.tlbUnlock(v.t)
		return
	}
	r.e.Yield(fmt.Sprintf("notdirty_write(%s): tlb_set_dirty: qemu_spin_lock(%s); addr_write == D|TLB_NOTDIRTY: addr_write = D; qemu_spin_unlock", name, tlbLockNames[v.t]))
	r.tlbLock(v.t)
	rc.tlbD.CompareAndSwap(uint32(tlbNotDirty), uint32(tlbWritable))
	r.tlbUnlock(v.t)
}

// storeRAM is the store itself, and dirty-tracking's check right after it
// (the only step that can make the invariant fail).
func (v *vc) storeRAM() {
	r := v.r
	val := uint32(v.guest) + 1
	r.e.Yield(fmt.Sprintf("store_helper(%s): store_memop: guest store to D (contents %d)", v.name, val))
	r.ram.Store(val)
	// The bit first, then the observer the migration thread raises before
	// it clears the bit, then what it sent: in real mode the three reads
	// are not one instant.
	if r.dirty.Load() == 0 && !r.syncing.Load() && r.sent.Load() != val {
		r.e.Fail(DirtyTracking, dirtyMessage(uint64(val), uint8(r.sent.Load())))
	}
}

// sourceTB runs source t's TB up to its end; it reports whether cpu_exec
// is left (cpu_loop_exit), else the TB has ended with the guest
// instruction after the invalidate and cpu_exec goes on.
func (v *vc) sourceTB() bool {
	r, m, t := v.r, v.r.m, v.t
	fn := m.flushName()
	if v.guest == gNext {
		v.nextInstruction("")
		return false
	}
	// The clear is one step, whose call and return the model records in
	// that step; under the Go scheduler the call must come before the
	// store for the history to mean real time (a target's page walk may
	// find the PTE clear before this thread records anything after it).
	if !r.ctl {
		r.e.Call(t, clearPTE{t})
	}
	r.pte[t].Store(fmt.Sprintf("cpu_exec(%s): guest clears pte(%s) (*pte = 0; ptesync), then executes the broadcast invalidate", v.name, pageNames[t]), 0)
	if r.ctl {
		r.e.Call(t, clearPTE{t})
	}
	r.e.Return(t, done)
	r.e.Call(t, invalidate{t})

	// flush_all_helper: one flush job per other vCPU.
	for c := m.nextOther(t, 0); c < m.n; c = m.nextOther(t, c+1) {
		r.queueRemote(t, c)
	}

	if m.cfg.synced {
		rc := r.cpu[t]
		rc.lock.Lock(fmt.Sprintf("%s: async_safe_run_on_cpu(%s, %s, %s): qemu_mutex_lock(%s), append to %s", fn, v.name, flushFn, pageNames[t], cpuLockNames[t], workLists[t]))
		r.appendWork(t, pageItem(itemSafe, t))
		r.kick(t, fmt.Sprintf("%s: async_safe_run_on_cpu(%s): %s", fn, v.name, kickLabel(t)))
		rc.lock.Unlock(fmt.Sprintf("%s: async_safe_run_on_cpu(%s): qemu_mutex_unlock(%s)", fn, v.name, cpuLockNames[t]))
	} else {
		// tlb_flush_page_by_mmuidx_async_0: the source's own TLB at once.
		r.e.Yield(fmt.Sprintf("%s: tlb_flush_page_by_mmuidx_async_0(%s): qemu_spin_lock(%s); flush page %s at once; qemu_spin_unlock", fn, v.name, tlbLockNames[t], pageNames[t]))
		r.tlbLock(t)
		v.setX(v.x() &^ (1 << uint(t)))
		r.tlbUnlock(t)
	}

	if m.cfg.endTB {
		r.e.Yield("cpu_loop_exit(" + v.name + "): the helper ends the TB, leave cpu_exec")
		v.guest = gNext
		return true
	}
	v.nextInstruction("the TB goes on: ")
	return false
}

// nextInstruction is source t's guest instruction after the invalidate
// (*memP = 1): from here on no vCPU may use the old translation.
func (v *vc) nextInstruction(how string) {
	r := v.r
	r.e.Yield("cpu_exec(" + v.name + "): " + how + "guest executes the instruction after the invalidate (*memP = 1): the flush must be complete")
	r.e.Return(v.t, done)
	r.resumed.Or(1 << uint(v.t))
	v.guest = gSrcDone
}

// queueRemote is flush_all_helper's queue_work_on_cpu of source src on
// vCPU c, three steps as in the model (work.go): lock c's cpu->lock and
// append the item; qemu_cpu_kick (queue_work_on_cpu_locked kicks under the
// lock, so a vCPU between its idle test and its wait, which holds the
// lock, cannot miss it); unlock. Without the kick (no-kick) it is two.
func (r *run) queueRemote(src, c int) {
	m, rc := r.m, r.cpu[c]
	it := pageItem(itemRemoteBQL, src)
	if m.cfg.noBQL {
		it = pageItem(itemRemoteNoBQL, src)
	}
	call := m.queueCall(src, c, false)
	rc.lock.Lock(fmt.Sprintf("%s: qemu_mutex_lock(%s), append to %s", m.queueCall(src, c, true), cpuLockName(c), workList(c)))
	r.appendWork(c, it)
	if !m.cfg.kickQueue {
		rc.lock.Unlock(fmt.Sprintf("%s: qemu_mutex_unlock(%s) without a kick", call, cpuLockName(c)))
		return
	}
	r.kick(c, call+": "+kickLabel(c))
	rc.lock.Unlock(fmt.Sprintf("%s: qemu_mutex_unlock(%s)", call, cpuLockName(c)))
}

// appendWork appends a work item to c's list, with c's cpu->lock held.
func (r *run) appendWork(c int, it item) {
	rc := r.cpu[c]
	if len(rc.queue) == queueCap {
		r.e.Fail(WorkOnce, fmt.Sprintf("model error: %s's work list is full", cpuName(c)))
		return
	}
	rc.queue = append(rc.queue, it)
	rc.posted++
}

// kick is qemu_cpu_kick under MTTCG, one step: qemu_cond_broadcast of
// halt_cond, which is the step's primitive, then cpu_exit
// (exit_request = 1).
func (r *run) kick(c int, label string) {
	rc := r.cpu[c]
	rc.haltCond.Broadcast(label)
	rc.exitReq.Store(1)
}

// ---- cpu_exec_end (exec.go) ----

func (v *vc) execEnd() {
	r, rc, name := v.r, v.r.cpu[v.t], v.name
	r.e.Yield("cpu_exec_end(" + name + "): atomic_set(running, false)")
	rc.running.Store(0)

	r.e.Yield("cpu_exec_end(" + name + "): smp_mb; pending_cpus == ")
	if p := r.pending.Load(); p != 0 {
		r.e.Notef("%d, slow path", p)
	} else {
		r.e.Note("0")
		return
	}

	r.listLock.Lock("cpu_exec_end(" + name + "): qemu_mutex_lock(qemu_cpu_list_lock)")
	// The test, the clear and the decrement: one step, as has_waiter and
	// pending_cpus are written only under the lock.
	r.e.Yield("cpu_exec_end(" + name + "): ")
	if rc.hasWaiter.Load() == 0 {
		r.e.Note("no has_waiter: not counted, pending_cpus untouched")
	} else {
		rc.hasWaiter.Store(0)
		p := r.pending.Load() - 1
		r.pending.Store(p)
		r.e.Notef("has_waiter = false; atomic_set(pending_cpus, %d)", p)
		if p == 1 {
			if w := r.exclCond.Signal("cpu_exec_end(" + name + "): qemu_cond_signal(exclusive_cond)"); w >= 0 {
				r.e.Note(" wakes " + r.threadName(w))
			} else {
				r.e.Note(", nobody waits")
			}
		}
	}
	r.listLock.Unlock("cpu_exec_end(" + name + "): qemu_mutex_unlock(qemu_cpu_list_lock)")
}

func (r *run) threadName(t int) string { return r.m.threads[t] }

// ---- the bottom of mttcg's loop (work.go) ----

// waitIOEvent is the bottom of mttcg's loop: take cpu->lock and clear
// exit_request, then qemu_tcg_wait_io_event: while cpu_thread_is_idle,
// wait on halt_cond; then pop the first work item (v.cur, itemNone if the
// list is empty) and drop the lock. It reports false when the vCPU would
// sleep for good (see the file comment).
func (v *vc) waitIOEvent() bool {
	r, rc, name := v.r, v.r.cpu[v.t], v.name
	rc.lock.Lock("qemu_tcg_cpu_thread_fn(" + name + "): qemu_mutex_lock(" + cpuLockName(v.t) + "); atomic_mb_set(exit_request, 0)")
	rc.exitReq.Store(0)
	for {
		// cpu->lock is held since the previous step, and queuers need
		// it: the test decides the next step, and nothing can change
		// the work list before it.
		if !(v.halted && len(rc.queue) == 0) {
			// Not idle: the test and the pop are one step with the unlock.
			prefix := "qemu_tcg_wait_io_event(" + name + "): not idle; process_queued_cpu_work: "
			if len(rc.queue) == 0 {
				v.cur = itemNone
				rc.lock.Unlock(prefix + "work list empty; qemu_mutex_unlock(" + cpuLockName(v.t) + ")")
				return true
			}
			rc.lock.Unlock(prefix + v.popNext())
			return true
		}
		wait := "qemu_tcg_wait_io_event(" + name + "): cpu_thread_is_idle (halted, work list empty), qemu_cond_wait(halt_cond)"
		if rc.posted == r.expected(v.t) {
			// Everything this vCPU will ever get has been queued: the
			// model's vCPU sleeps here for good (its step says Done).
			// The wait's release of the lock, then exit.
			rc.lock.Unlock(wait)
			return false
		}
		rc.haltCond.WaitAs(wait, "qemu_tcg_wait_io_event("+name+"): woken, re-acquires "+cpuLockName(v.t))
	}
}

// popNext is process_queued_cpu_work's pop, under cpu->lock: it takes
// the first item into v.cur and returns the rest of the step's label.
func (v *vc) popNext() string {
	rc := v.r.cpu[v.t]
	v.cur = rc.queue[0]
	rc.queue = rc.queue[1:]
	return "pop " + funcName(v.cur) + itemMode(v.cur) + "; qemu_mutex_unlock(" + cpuLockName(v.t) + ")"
}

// processWork runs the popped items until the work list is empty.
func (v *vc) processWork() {
	r, rc, name := v.r, v.r.cpu[v.t], v.name
	for v.cur != itemNone {
		switch {
		case v.cur.kind() == itemSafe:
			v.safeWork()
		case v.cur.bql():
			r.bql.Lock("process_queued_cpu_work(" + name + "): wi->bql: qemu_mutex_lock_iothread; " + v.funcLabel())
			v.runFunc()
			r.bql.Unlock("process_queued_cpu_work(" + name + "): qemu_mutex_unlock_iothread")
		default:
			r.e.Yield(v.funcLabel())
			v.runFunc()
		}
		lock := "process_queued_cpu_work(" + name + "): qemu_mutex_lock(" + cpuLockName(v.t) + "); "
		if v.cur.kind() == itemRunOnCPU {
			rc.lock.Lock(lock + "atomic_mb_set(&wi->done, true)")
			rc.done.Store(1)
		} else {
			rc.lock.Lock(lock + "g_free(wi)")
		}
		rc.freed++
		if rc.freed > rc.ran {
			r.e.Fail(WorkOnce, fmt.Sprintf("%s frees a work item whose function did not run (freed %d, ran %d)", name, rc.freed, rc.ran))
		}
		if len(rc.queue) > 0 {
			rc.lock.Unlock("process_queued_cpu_work(" + name + "): " + v.popNext())
			continue
		}
		v.cur = itemNone
		rc.cond.Broadcast("process_queued_cpu_work(" + name + "): work list drained; qemu_cond_broadcast(" + cpuCondNames[v.t] + ")")
		rc.lock.Unlock("process_queued_cpu_work(" + name + "): qemu_mutex_unlock(" + cpuLockName(v.t) + ")")
	}
}

// funcLabel is the label of the step that runs the current item's
// function, up to what the step reads (completed by runFunc).
func (v *vc) funcLabel() string {
	name, it := v.name, v.cur
	switch it.kind() {
	case itemRemoteBQL, itemRemoteNoBQL, itemSafe:
		return fmt.Sprintf("%s(%s): tlb_flush_page_by_mmuidx_async_0: qemu_spin_lock(%s); flush page %s; qemu_spin_unlock", flushFn, name, tlbLockNames[v.t], pageNames[it.src()])
	case itemRunOnCPU:
		return "do_nothing(" + name + ")"
	case itemCommitBQL, itemCommitNoBQL:
		return fmt.Sprintf("tlb_flush_by_mmuidx_async_work(%s): qemu_spin_lock(%s); flush every entry; qemu_spin_unlock", name, tlbLockNames[v.t])
	}
	if v.r.m.cfg.uncached {
		return fmt.Sprintf("tcg_commit_cpu(%s): tlb_flush: tlb_flush_by_mmuidx_async_work: qemu_spin_lock(%s); flush every entry; qemu_spin_unlock", name, tlbLockNames[v.t])
	}
	return fmt.Sprintf("tcg_commit_cpu(%s): tlb_flush: tlb_flush_by_mmuidx_async_work: qemu_spin_lock(%s); flush every entry; qemu_spin_unlock; "+
		"cpuas->memory_dispatch = address_space_to_dispatch(cpuas->as), generation ", name, tlbLockNames[v.t])
}

// runFunc is the current item's function, after its step's anchor.
func (v *vc) runFunc() {
	r, rc := v.r, v.r.cpu[v.t]
	r.lockCPU(v.t)
	rc.ran++
	ran, posted := rc.ran, rc.posted
	r.unlockCPU(v.t)
	if ran > posted {
		r.e.Fail(WorkOnce, fmt.Sprintf("%s runs a work item %d times, but %d were queued", v.name, ran, posted))
	}
	switch v.cur.kind() {
	case itemRemoteBQL, itemRemoteNoBQL, itemSafe:
		r.tlbLock(v.t)
		v.setX(v.x() &^ (1 << uint(v.cur.src())))
		r.tlbUnlock(v.t)
	case itemCommitBQL, itemCommitNoBQL:
		v.flushAll()
	case itemCommitCPU:
		if r.m.cfg.uncached {
			v.flushAll()
			return
		}
		g := r.curMap.Load()
		rc.dispatch.Store(g)
		v.flushAll()
		r.e.Notef("%d", g)
	}
}

// flushAll drops every entry of the vCPU's TLB under tlb.c.lock.
func (v *vc) flushAll() {
	r, rc := v.r, v.r.cpu[v.t]
	r.tlbLock(v.t)
	v.setX(0)
	v.setM(0)
	rc.tlbD.Store(uint32(tlbNone))
	r.tlbUnlock(v.t)
}

// lockCPU and unlockCPU protect the work-once observers that a step reads
// outside cpu->lock's steps: a real lock in real mode, nothing under
// control.
func (r *run) lockCPU(c int) {
	if !r.ctl {
		r.cpu[c].lock.Lock("qemu_mutex_lock(cpu->lock)")
	}
}

func (r *run) unlockCPU(c int) {
	if !r.ctl {
		r.cpu[c].lock.Unlock("qemu_mutex_unlock(cpu->lock)")
	}
}

// ---- safe work: start_exclusive, the flush, end_exclusive (exclusive.go) ----

func (v *vc) safeWork() {
	r, name, m := v.r, v.name, v.r.m
	prefix := "start_exclusive(" + name + "): "
	woken := prefix + "woken, re-acquires qemu_cpu_list_lock; "
	r.listLock.Lock(prefix + "qemu_mutex_lock(qemu_cpu_list_lock)")
	// exclusive_idle and pending_cpus = 1: one step (pending_cpus is
	// written only under the lock this thread holds).
	if p := r.pending.Load(); p != 0 {
		wait := fmt.Sprintf("%sexclusive_idle: pending_cpus == %d, qemu_cond_wait(exclusive_resume)", prefix, p)
		for {
			r.resume.WaitAs(wait, woken)
			if p = r.pending.Load(); p == 0 {
				break
			}
			r.e.Notef("exclusive_idle: pending_cpus == %d", p)
			wait = prefix + "exclusive_idle: qemu_cond_wait(exclusive_resume) again"
		}
		r.e.Note("exclusive_idle: pending_cpus == 0; atomic_set(pending_cpus, 1)")
	} else {
		r.e.Yield(prefix + "exclusive_idle: pending_cpus == 0; atomic_set(pending_cpus, 1)")
	}
	r.pending.Store(1)

	// CPU_FOREACH: the caller's own running is false and is skipped.
	count := uint32(0)
	for o := m.nextOther(v.t, 0); o < m.n; o = m.nextOther(v.t, o+1) {
		r.e.Yield(fmt.Sprintf("%ssmp_mb; atomic_read(%s->running) == ", prefix, cpuName(o)))
		if r.cpu[o].running.Load() == 0 {
			r.e.Note("false")
			continue
		}
		r.cpu[o].hasWaiter.Store(1)
		count++
		r.e.Notef("true: has_waiter = true, running_cpus = %d", count)
		r.kick(o, fmt.Sprintf("%sqemu_cpu_kick(%s)", prefix, cpuName(o)))
	}
	p := count + 1
	r.e.Yield(fmt.Sprintf("%satomic_set(pending_cpus, %d)", prefix, p))
	r.pending.Store(p)
	if p > 1 {
		wait := prefix + "pending_cpus > 1, qemu_cond_wait(exclusive_cond)"
		for {
			r.exclCond.WaitAs(wait, woken+"pending_cpus == ")
			q := r.pending.Load()
			r.e.Notef("%d", q)
			if q <= 1 {
				break
			}
			r.e.Note(" > 1")
			wait = prefix + "pending_cpus > 1, qemu_cond_wait(exclusive_cond) again"
		}
	}
	r.listLock.Unlock(prefix + "qemu_mutex_unlock(qemu_cpu_list_lock): exclusive section begins")

	r.e.Yield(v.funcLabel())
	v.runFunc()

	r.listLock.Lock("end_exclusive(" + name + "): qemu_mutex_lock(qemu_cpu_list_lock)")
	// The store and the broadcast: one step, as the waiters re-test
	// pending_cpus only after re-acquiring the lock.
	r.resume.Broadcast("end_exclusive(" + name + "): atomic_set(pending_cpus, 0); qemu_cond_broadcast(exclusive_resume)")
	r.pending.Store(0)
	r.listLock.Unlock("end_exclusive(" + name + "): qemu_mutex_unlock(qemu_cpu_list_lock)")
}

// ---- the migration thread (dirty.go) ----

func (r *run) migration() {
	m := r.m
	for round := 0; round < int(m.rounds); round++ {
		r.bql.Lock("migration_bitmap_sync_precopy: qemu_mutex_lock_iothread; cpu_physical_memory_sync_dirty_bitmap: ")
		// The observer is raised before the xchg and lowered after it
		// when nothing was dirty: under the Go scheduler a store's check
		// must not see the bit cleared with the sync not yet recorded.
		// (Under control the three are one step, as in the model.)
		r.syncing.Store(true)
		dirty := r.dirty.Swap(0) != 0
		if !dirty {
			r.syncing.Store(false)
		}
		switch {
		case !dirty:
			r.e.Note("D's word is 0, nothing to sync")
		case m.cfg.dirtyReset:
			r.e.Note("atomic_xchg(&dirty_memory[MIGRATION][D], 0) was dirty; num_dirty: cpu_physical_memory_dirty_bits_cleared -> tlb_reset_dirty_range_all")
		default:
			r.e.Note("atomic_xchg(&dirty_memory[MIGRATION][D], 0) was dirty (64-page fast path: no tlb_reset_dirty)")
		}
		if dirty && m.cfg.dirtyReset {
			for c := 0; c < m.n; c++ {
				r.e.Yield(fmt.Sprintf("tlb_reset_dirty(%s): qemu_spin_lock(%s); tlb_reset_dirty_range_locked: ", cpuName(c), tlbLockNames[c]))
				r.tlbLock(c)
				if r.cpu[c].tlbD.CompareAndSwap(uint32(tlbWritable), uint32(tlbNotDirty)) {
					r.e.Note("atomic_set(&addr_write, D|TLB_NOTDIRTY); qemu_spin_unlock")
				} else {
					r.e.Note("no writable entry of D; qemu_spin_unlock")
				}
				r.tlbUnlock(c)
			}
		}
		for c := 0; c < m.n; c++ {
			r.runOnCPU(c)
		}
		r.bql.Unlock("migration_bitmap_sync_precopy: qemu_mutex_unlock_iothread")
		if dirty {
			r.e.Yield("ram_save_iterate: ram_save_page: D's bit was set in rb->bmap, send its contents (")
			v := r.ram.Load()
			r.sent.Store(v)
			r.syncing.Store(false)
			r.e.Notef("%d)", v)
		}
	}
}

// runOnCPU is tcg_log_global_after_sync's run_on_cpu(cpu, do_nothing) in
// the per-CPU-lock branch.
func (r *run) runOnCPU(c int) {
	rc := r.cpu[c]
	call := "tcg_log_global_after_sync: run_on_cpu(" + cpuName(c) + ")"
	r.bql.Unlock("tcg_log_global_after_sync: run_on_cpu(" + cpuName(c) + ", do_nothing): has_bql: qemu_mutex_unlock_iothread")
	rc.lock.Lock(call + ": cpu_mutex_lock(" + cpuName(c) + "); queue_work_on_cpu_locked: append to " + workList(c) + ", wi->done = false")
	r.appendWork(c, itemRunOnCPU)
	rc.done.Store(0)
	r.kick(c, call+": "+kickLabel(c))
	wait := call + ": !atomic_mb_read(&wi.done): qemu_cond_wait(" + cpuCondNames[c] + ")"
	for {
		rc.cond.WaitAs(wait, call+": woken, re-acquires "+cpuLockName(c)+"; ")
		if rc.done.Load() != 0 {
			r.e.Note("wi.done")
			break
		}
		r.e.Note("!wi.done")
		wait = call + ": !atomic_mb_read(&wi.done): qemu_cond_wait(" + cpuCondNames[c] + ") again"
	}
	rc.lock.Unlock(call + ": cpu_mutex_unlock(" + cpuName(c) + ")")
	r.bql.Lock(call + ": qemu_mutex_lock_iothread")
}

// loadAddend is the second step of a TLB hit on X_p read in two steps
// (iommu.go): the addend, after the comparator matched; the IOMMU
// thread may have flushed the entry in between.
func (v *vc) loadAddend(p int) {
	r, name := v.r, v.name
	bit := uint8(1) << uint(p)
	resumed := r.resumed.Load()&uint32(bit) != 0
	v.callRealMode(p)
	r.e.Yield("cpu_exec(" + name + "): guest load from page " + pageNames[p] + ": the inline TLB lookup reads the addend: ")
	if v.x()&bit == 0 {
		r.e.Note("the entry was flushed")
		r.e.Fail(TLBOwnerOnly, fmt.Sprintf("%s's load from page %s matched the comparator of %s->P, then read the addend of an entry that another thread flushed in between "+
			"(tcg_iommu_unmap_notify's tlb_flush runs on the notifying thread since 30933c4fb4f3): the host address is not P's", name, pageNames[p], pageNames[p]))
		return
	}
	r.e.Note(pageNames[p] + "->P's; the load uses it")
	v.callControlled(p)
	r.e.Return(v.t, mapped)
	if resumed || r.resumed.Load()&uint32(bit) != 0 {
		r.e.Fail(NoStaleTranslation, fmt.Sprintf("%s translates page %s with the TLB entry %s->P cached before cpu%d cleared the PTE, "+
			"after cpu%d executed the instruction following %s: %s's flush item has not run",
			name, pageNames[p], pageNames[p], p, p, r.m.flushName(), name))
	}
}

// ---- the IOMMU thread (iommu.go) ----

func (r *run) iommu() {
	m, c := r.m, r.m.envCPU
	rc, name := r.cpu[c], cpuName(c)
	r.bql.Lock(fmt.Sprintf("iommu: bql_lock; the IOMMU unmaps a translation %s caches; memory_region_notify_iommu: tcg_iommu_unmap_notify(%s's notifier)", name, name))
	if m.cfg.notifyDirect {
		r.e.Yield(fmt.Sprintf("tcg_iommu_unmap_notify: tlb_flush(%s) on the iommu thread: tlb_flush_by_mmuidx_async_work(%s): qemu_spin_lock(%s); flush every entry; qemu_spin_unlock",
			name, name, tlbLockNames[c]))
		r.tlbLock(c)
		rc.tlbX.Store(0)
		rc.tlbM.Store(0)
		rc.tlbD.Store(uint32(tlbNone))
		r.tlbUnlock(c)
	} else {
		call := "tcg_iommu_unmap_notify: tlb_flush(" + name + "): async_run_on_cpu(" + name + ", tlb_flush_by_mmuidx_async_work)"
		rc.lock.Lock(fmt.Sprintf("%s: qemu_mutex_lock(%s), append to %s", call, cpuLockName(c), workList(c)))
		r.appendWork(c, itemCommitBQL)
		r.kick(c, call+": "+kickLabel(c))
		rc.lock.Unlock(fmt.Sprintf("%s: qemu_mutex_unlock(%s)", call, cpuLockName(c)))
	}
	r.bql.Unlock("iommu: bql_unlock")
}

// ---- the main loop (commit.go) ----

func (r *run) mainLoop() {
	g := r.curMap.Load() + 1
	r.bql.Lock(fmt.Sprintf("memory_region_transaction_commit: qemu_mutex_lock_iothread; address_space_set_flatview: as->current_map = the new map (dispatch generation %d)", g))
	r.curMap.Store(g)
	r.tcgCommitAll(g, nil)
	r.bql.Unlock("memory_region_transaction_commit: qemu_mutex_unlock_iothread")
}

// tcgCommitAll is every vCPU's tcg_commit of the map of generation g, by
// the main loop (self nil) or by vCPU self, which holds the BQL
// (commit.go tcgCommit).
func (r *run) tcgCommitAll(g uint32, self *vc) {
	m := r.m
	for c := 0; c < m.n; c++ {
		rc := r.cpu[c]
		if !m.cfg.commitDeferred {
			r.e.Yield(fmt.Sprintf("tcg_commit(%s): atomic_rcu_set(&cpuas->memory_dispatch, address_space_to_dispatch(as)) (generation %d)", cpuName(c), g))
			rc.dispatch.Store(g)
			if self != nil && self.t == c {
				r.e.Yield(fmt.Sprintf("tcg_commit(%s): tlb_flush(%s) on its own thread: tlb_flush_by_mmuidx_async_work at once: qemu_spin_lock(%s); flush every entry; qemu_spin_unlock",
					cpuName(c), cpuName(c), tlbLockNames[c]))
				self.flushAll()
				continue
			}
		}
		call := m.commitCall(c)
		rc.lock.Lock(fmt.Sprintf("%s: qemu_mutex_lock(%s), append to %s", call, cpuLockName(c), workList(c)))
		r.appendWork(c, m.commitItem())
		r.kick(c, call+": "+kickLabel(c))
		rc.lock.Unlock(fmt.Sprintf("%s: qemu_mutex_unlock(%s)", call, cpuLockName(c)))
	}
}

// barThenM is the instruction of vcpu-commit (vcpucommit.go): a store to
// a device's BAR that commits a transaction on this vCPU's thread, then a
// load from M with what mmu_lookup found before the store.
func (v *vc) barThenM() {
	r, m, name := v.r, v.r.m, v.name
	if v.mEntry() == 0 {
		v.fillM()
	}
	found := uint32(v.mEntry() - 1)
	r.e.Yield(fmt.Sprintf("cpu_exec(%s): a store to the device's BAR and a load from M in one instruction: mmu_lookup: both pages hit; l.page[1].full is M's entry (generation %d)", name, found))
	g := r.curMap.Load() + 1
	r.bql.Lock(fmt.Sprintf("do_st_mmio_leN(%s): BQL_LOCK_GUARD; memory_region_dispatch_write: the device remaps its BAR: memory_region_transaction_commit: "+
		"address_space_set_flatview: as->current_map = the new map (dispatch generation %d)", name, g))
	r.curMap.Store(g)
	r.tcgCommitAll(g, v)
	r.bql.Unlock(fmt.Sprintf("do_st_mmio_leN(%s): memory_region_transaction_commit done; the BQL released", name))
	switch {
	case m.cfg.mapGen:
		r.e.Yield(fmt.Sprintf("do_ld_mmio_beN(%s): io_prepare: l.page[1].full->map_gen %d ", name, found))
		if cur := r.curMap.Load(); cur != found {
			r.e.Notef("!= qatomic_rcu_read(&as->current_map)->gen %d: the entry is stale, fill it again", cur)
			v.fillM()
		} else {
			r.e.Note("== qatomic_rcu_read(&as->current_map)->gen; section = full->section")
		}
	case m.cfg.sectionInEntry:
		r.e.Yield(fmt.Sprintf("do_ld_mmio_beN(%s): io_prepare: section = l.page[1].full->section (found by mmu_lookup before the store, generation %d)", name, found))
	default:
		if cur := v.readDispatch("io_readx(" + name + "): iotlb_to_section(l.page[1].full->xlat_section): "); cur != found {
			r.e.Fail(DispatchCoherent, fmt.Sprintf("io_readx(%s): mmu_lookup found M's entry, filled from %s generation %d, before the instruction's store to the BAR committed "+
				"a transaction on %s's own thread, and iotlb_to_section resolves its section index in generation %d: a section of another memory map (%s)",
				name, m.dispatchNoun(), found, name, cur, m.selfCommitCause(name)))
		}
	}
	r.bql.Lock(fmt.Sprintf("do_ld_mmio_beN(%s): BQL_LOCK_GUARD; memory_region_dispatch_read", name))
	r.bql.Unlock(fmt.Sprintf("do_ld_mmio_beN(%s): the BQL released; the instruction is done", name))
}

// fillM is tlb_fill's resolution and install of M (softmmu.go fillM and
// ioInstal).
func (v *vc) fillM() {
	r, name := v.r, v.name
	g := uint8(v.readDispatch("tlb_fill(" + name + "): tlb_set_page_with_attrs: address_space_translate_for_iotlb: "))
	r.e.Yield(fmt.Sprintf("tlb_set_page(%s): qemu_spin_lock(%s); install M (section of generation %d); qemu_spin_unlock", name, tlbLockNames[v.t], g))
	r.tlbLock(v.t)
	v.setM(g + 1)
	r.tlbUnlock(v.t)
}

// finalCheck is work-once at the end, when every thread is done: each work
// item ran exactly once and was freed once.
func (r *run) finalCheck() *model.Violation {
	for c, rc := range r.cpu {
		want := r.expected(c)
		if rc.posted != want || rc.ran != want || rc.freed != want {
			return model.Violationf(WorkOnce, "every thread is done, but %s's work items: queued %d, run %d, freed %d (want %d each)",
				cpuName(c), rc.posted, rc.ran, rc.freed, want)
		}
	}
	return nil
}
