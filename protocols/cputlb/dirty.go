package cputlb

import (
	"github.com/protocheck/protocheck/model"
)

// The migration thread: the one thread that writes another vCPU's TLB
// (tlb_reset_dirty, under that vCPU's tlb.c.lock), and one of the threads
// that queue work on vCPUs and wait for it (run_on_cpu). One round of
// precopy migration as the model has it:
//
//	ram_save_pending -> migration_bitmap_sync_precopy, with the BQL:
//	  migration_bitmap_sync -> ramblock_sync_dirty_bitmap ->
//	    cpu_physical_memory_sync_dirty_bitmap:
//	      64-page words: if (src[idx][offset]) bits = atomic_xchg(&src[idx][offset], 0)
//	      since 03bfc2188f: if (num_dirty) cpu_physical_memory_dirty_bits_cleared
//	        -> tlb_reset_dirty_range_all -> CPU_FOREACH tlb_reset_dirty(cpu)
//	  memory_global_after_dirty_log_sync -> tcg_log_global_after_sync,
//	    per vCPU: run_on_cpu(cpu, do_nothing) (9458a9a1df1a: wait for the
//	    end of the TB that may be storing through a writable entry)
//	ram_save_iterate -> ram_save_page: D's contents go out, without the BQL
//
// The same code runs in the main loop for the VGA refresh
// (memory_region_snapshot_and_clear_dirty, which resets the TLBs
// unconditionally); the model's thread stands for both. The fast path's
// read of the word before the xchg folds into the xchg: only this thread
// clears the bit, so a non-zero word stays non-zero until the xchg.
//
// In the per-CPU-lock branch run_on_cpu drops the BQL, queues the item
// under the target's cpu->lock, kicks it, and waits on cpu->cond with
// cpu->lock until the worker has set wi->done; then it unlocks and takes
// the BQL again (do_run_on_cpu, cota/qemu cpus-common.c at 09addeed).

// Steps of the migration thread (envThread.pc).
const (
	migLock   uint8 = iota // qemu_mutex_lock_iothread; cpu_physical_memory_sync_dirty_bitmap: atomic_xchg
	migReset               // tlb_reset_dirty(idx), one critical section on its tlb.c.lock
	migROC                 // tcg_log_global_after_sync: run_on_cpu(idx, do_nothing) (sub: roc*)
	migUnlock              // qemu_mutex_unlock_iothread
	migSend                // ram_save_page: send D
	migDone
)

var migPCNames = [...]string{"bql_lock+sync", "tlb_reset_dirty", "run_on_cpu", "bql_unlock", "send", "done"}

// Steps of run_on_cpu (envThread.sub, at migROC).
const (
	rocUnBQL  uint8 = iota // do_run_on_cpu: has_bql: qemu_mutex_unlock_iothread
	rocLock                // cpu_mutex_lock(cpu); queue_work_on_cpu_locked: append, wi->done = false
	rocKick                // queue_work_on_cpu_locked: qemu_cpu_kick(cpu)
	rocWait                // while (!atomic_mb_read(&wi.done)) qemu_cond_wait(&cpu->cond, &cpu->lock)
	rocWoken               // woken: re-acquire cpu->lock, re-test wi.done
	rocRewait              // qemu_cond_wait again
	rocUnlock              // cpu_mutex_unlock(cpu)
	rocBQL                 // qemu_mutex_lock_iothread
)

// rocWaitNames is what run_on_cpu waits for, per vCPU (a blocked step's
// label, made once).
var rocWaitNames = perCPUNames("->cond (run_on_cpu: wi.done)")

func (m *machine) stepMigration(s *state, x *model.Exec) {
	e := &s.mig
	switch e.pc {
	case migLock:
		// The BQL and the sync: Lipton (the lock is a right mover; the
		// xchg is the step's one access others make without the BQL).
		if bqlBusy(s, x) {
			return
		}
		x.Lock(&s.bql, "bql")
		x.Count(mBQL, 1)
		prev := x.Xchg(s.mem, m.aDirty, 0)
		e.dirty = prev != 0
		e.idx, e.sub = 0, 0
		e.pc = migROC
		if e.dirty && m.cfg.dirtyReset {
			e.pc = migReset
		}
		if x.Labelling() {
			const lock = "migration_bitmap_sync_precopy: qemu_mutex_lock_iothread; cpu_physical_memory_sync_dirty_bitmap: "
			switch {
			case !e.dirty:
				x.Label(lock + "D's word is 0, nothing to sync")
			case m.cfg.dirtyReset:
				x.Label(lock + "atomic_xchg(&dirty_memory[MIGRATION][D], 0) was dirty; " +
					"num_dirty: cpu_physical_memory_dirty_bits_cleared -> tlb_reset_dirty_range_all")
			default:
				x.Label(lock + "atomic_xchg(&dirty_memory[MIGRATION][D], 0) was dirty (64-page fast path: no tlb_reset_dirty)")
			}
		}
	case migReset:
		// tlb_reset_dirty: one critical section on the vCPU's tlb.c.lock
		// (softmmu.go), whose one access another thread makes without the
		// lock is the atomic_set of the comparator.
		c := int(e.idx)
		m.tlbLocked(x)
		x.Touch(tlbNames[c], true)
		reset := s.cpu[c].tlbD == tlbWritable
		if reset {
			s.cpu[c].tlbD = tlbNotDirty
		}
		if x.Labelling() {
			if reset {
				x.Labelf("tlb_reset_dirty(%s): qemu_spin_lock(%s); tlb_reset_dirty_range_locked: atomic_set(&addr_write, D|TLB_NOTDIRTY); qemu_spin_unlock", cpuNames[c], tlbLockNames[c])
			} else {
				x.Labelf("tlb_reset_dirty(%s): qemu_spin_lock(%s); tlb_reset_dirty_range_locked: no writable entry of D; qemu_spin_unlock", cpuNames[c], tlbLockNames[c])
			}
		}
		e.idx++
		if int(e.idx) == m.n {
			e.idx = 0
			e.pc = migROC
		}
	case migROC:
		m.stepRunOnCPU(s, x)
	case migUnlock:
		x.Unlock(&s.bql, "bql")
		if x.Labelling() {
			x.Label("migration_bitmap_sync_precopy: qemu_mutex_unlock_iothread")
		}
		if e.dirty {
			e.pc = migSend
			return
		}
		m.endRound(e)
	case migSend:
		v := x.Load(s.mem, m.aRAM)
		s.sent = uint8(v)
		e.dirty = false
		if x.Labelling() {
			x.Labelf("ram_save_iterate: ram_save_page: D's bit was set in rb->bmap, send its contents (%d)", v)
		}
		m.endRound(e)
	case migDone:
		x.Done()
	}
}

func (m *machine) endRound(e *envThread) {
	e.round++
	e.pc = migLock
	if e.round == m.rounds {
		e.pc = migDone
	}
}

// stepRunOnCPU is tcg_log_global_after_sync's run_on_cpu(cpu, do_nothing)
// on vCPU e.idx, and the move to the next vCPU.
func (m *machine) stepRunOnCPU(s *state, x *model.Exec) {
	e := &s.mig
	c := int(e.idx)
	const call = "tcg_log_global_after_sync: run_on_cpu("
	switch e.sub {
	case rocUnBQL:
		x.Unlock(&s.bql, "bql")
		if x.Labelling() {
			x.Labelf("%s%s, do_nothing): has_bql: qemu_mutex_unlock_iothread", call, cpuNames[c])
		}
		e.sub = rocLock
	case rocLock:
		if cpuLockBusy(s, c, x) {
			return
		}
		m.queueLock(s, c, itemRunOnCPU, x)
		x.Store(s.mem, m.aDone[c], 0)
		if x.Labelling() {
			x.Labelf("%s%s): cpu_mutex_lock(%s); queue_work_on_cpu_locked: append to %s, wi->done = false", call, cpuNames[c], cpuNames[c], workLists[c])
		}
		e.sub = rocKick
	case rocKick:
		m.kick(s, c, x)
		if x.Labelling() {
			x.Labelf("%s%s): %s", call, cpuNames[c], kickLabel(c))
		}
		e.sub = rocWait
	case rocWait, rocRewait:
		// wi.done is written under cpu->lock, which this thread holds:
		// the test is part of the wait step.
		x.Load(s.mem, m.aDone[c])
		x.Wait(&s.cpuCond[c], cpuCondNames[c], &s.cpuLock[c], cpuLockNames[c])
		if x.Labelling() {
			again := ""
			if e.sub == rocRewait {
				again = " again"
			}
			x.Labelf("%s%s): !atomic_mb_read(&wi.done): qemu_cond_wait(%s)%s", call, cpuNames[c], cpuCondNames[c], again)
		}
		e.sub = rocWoken
	case rocWoken:
		if asleep(&s.cpuCond[c], m.mig, x, rocWaitNames[c]) || cpuLockBusy(s, c, x) {
			return
		}
		x.Lock(&s.cpuLock[c], cpuLockNames[c])
		d := x.Load(s.mem, m.aDone[c])
		if x.Labelling() {
			if d != 0 {
				x.Labelf("%s%s): woken, re-acquires %s; wi.done", call, cpuNames[c], cpuLockNames[c])
			} else {
				x.Labelf("%s%s): woken, re-acquires %s; !wi.done", call, cpuNames[c], cpuLockNames[c])
			}
		}
		e.sub = rocRewait
		if d != 0 {
			// The item lives on run_on_cpu's stack: once the loop has
			// seen wi.done nobody reads it again, and the model forgets
			// it (a dead value kept would only split states).
			s.mem.Init(m.aDone[c], 0)
			e.sub = rocUnlock
		}
	case rocUnlock:
		x.Unlock(&s.cpuLock[c], cpuLockNames[c])
		if x.Labelling() {
			x.Labelf("%s%s): cpu_mutex_unlock(%s)", call, cpuNames[c], cpuNames[c])
		}
		e.sub = rocBQL
	case rocBQL:
		if bqlBusy(s, x) {
			return
		}
		x.Lock(&s.bql, "bql")
		x.Count(mBQL, 1)
		if x.Labelling() {
			x.Labelf("%s%s): qemu_mutex_lock_iothread", call, cpuNames[c])
		}
		e.sub = rocUnBQL
		e.idx++
		if int(e.idx) == m.n {
			e.idx = 0
			e.pc = migUnlock
		}
	}
}

// dirtyTracking is the invariant of dirty-tracking: the migration dirty
// bitmap covers every page modified since the migration stream last
// carried it, except while the migration thread holds a sync's result it
// has not sent yet. A store that changes D while D's bit is clear outside
// that window is lost: no later sync sees D dirty, and the destination
// keeps the old contents (the bug of aa8dc044772 fixed by 03bfc2188f, and
// the race of the RFC <20240220041922.373029-2-npiggin@gmail.com>).
func (m *machine) dirtyTracking(st model.State) string {
	s := st.(*state)
	if s.mig.dirty {
		return ""
	}
	ram := s.mem.Peek(m.aRAM)
	if ram == uint64(s.sent) || s.mem.Peek(m.aDirty) != 0 {
		return ""
	}
	return dirtyMessage(ram, s.sent)
}

func dirtyMessage(ram uint64, sent uint8) string {
	return "D holds " + itoa(int(ram)) + " but the migration stream carries " + itoa(int(sent)) +
		", and D's dirty bit is clear: a store went through a writable TLB entry after the sync cleared the bit, and no later sync will send D again (lost update)"
}

func itoa(v int) string {
	if v < 10 {
		return string(rune('0' + v))
	}
	return string(rune('0'+v/10)) + string(rune('0'+v%10))
}
