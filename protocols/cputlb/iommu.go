package cputlb

import "github.com/protocheck/protocheck/model"

// The IOMMU notifier (iommu=1). A vCPU whose TLB caches a translation
// through an IOMMU region registers a TCGIOMMUNotifier
// (tcg_register_iommu_notifier, system/physmem.c); when the IOMMU unmaps,
// whoever changed it (a vCPU writing the IOMMU's registers, a device
// thread, the main loop: a thread with the BQL) calls
// memory_region_notify_iommu, whose tcg_iommu_unmap_notify calls
// tlb_flush(notifier->cpu). Until 30933c4fb4f3
// (<20240523230747.45703-6-npiggin@gmail.com>), tlb_flush_by_mmuidx
// queued the flush with async_run_on_cpu when called for another vCPU;
// since, it runs tlb_flush_by_mmuidx_async_work on the calling thread
// (assert_cpu_is_self checks that only under DEBUG_TLB): another thread
// writes the vCPU's TLB, which only the owner's fast path reads without
// tlb.c.lock, comparator first and addend after (the TCG-generated
// inline lookup).
//
// The model has the first target's TLB entry of X0 stand for the cached
// IOMMU translation. With iommu=1 that target's loads read the comparator
// and the addend in two steps, and the IOMMU thread, with the BQL,
// flushes its TLB: on its own thread (cfg.notifyDirect) or by queueing
// tlb_flush_by_mmuidx_async_work on the vCPU.

// Steps of the IOMMU thread (state.iommu.pc).
const (
	imNotify      uint8 = iota // BQL; the unmap; memory_region_notify_iommu -> tcg_iommu_unmap_notify
	imFlush                    // direct: tlb_flush_by_mmuidx_async_work on this thread
	imQueue                    // queued: async_run_on_cpu: cpu->lock, append
	imKick                     // ... qemu_cpu_kick
	imQueueUnlock              // ... unlock
	imUnlock                   // the BQL released
	imDone
)

var iommuPCNames = [...]string{"notify", "tlb_flush", "queue", "kick", "unlock cpu->lock", "bql_unlock", "done"}

// stepIOMMU is the IOMMU thread's unmap and the notifier's flush of the
// first target's TLB.
func (m *machine) stepIOMMU(s *state, x *model.Exec) {
	e := &s.iommu
	c := m.envCPU
	name := cpuNames[c]
	call := "tcg_iommu_unmap_notify: tlb_flush(" + name + "): async_run_on_cpu(" + name + ", tlb_flush_by_mmuidx_async_work)"
	switch e.pc {
	case imNotify:
		// The BQL, and the IOMMU's own state, which only BQL holders
		// touch: Lipton.
		if bqlBusy(s, x) {
			return
		}
		x.Lock(&s.bql, "bql")
		x.Count(mBQL, 1)
		x.Touch("iommu", true)
		if x.Labelling() {
			x.Labelf("iommu: bql_lock; the IOMMU unmaps a translation %s caches; memory_region_notify_iommu: tcg_iommu_unmap_notify(%s's notifier)", name, name)
		}
		e.pc = imQueue
		if m.cfg.notifyDirect {
			e.pc = imFlush
		}
	case imFlush:
		m.flushAll(s, c, x)
		if x.Labelling() {
			x.Labelf("tcg_iommu_unmap_notify: tlb_flush(%s) on the iommu thread: tlb_flush_by_mmuidx_async_work(%s): qemu_spin_lock(%s); flush every entry; qemu_spin_unlock",
				name, name, tlbLockNames[c])
		}
		e.pc = imUnlock
	case imQueue:
		if cpuLockBusy(s, c, x) {
			return
		}
		m.queueLock(s, c, itemCommitBQL, x)
		if x.Labelling() {
			x.Labelf("%s: qemu_mutex_lock(%s), append to %s", call, cpuLockNames[c], workLists[c])
		}
		e.pc = imKick
	case imKick:
		m.kick(s, c, x)
		if x.Labelling() {
			x.Label(call + ": " + kickLabel(c))
		}
		e.pc = imQueueUnlock
	case imQueueUnlock:
		x.Unlock(&s.cpuLock[c], cpuLockNames[c])
		if x.Labelling() {
			x.Labelf("%s: qemu_mutex_unlock(%s)", call, cpuLockNames[c])
		}
		e.pc = imUnlock
	case imUnlock:
		x.Unlock(&s.bql, "bql")
		if x.Labelling() {
			x.Label("iommu: bql_unlock")
		}
		e.pc = imDone
	case imDone:
		x.Done()
	}
}

// splitHit reports whether vCPU t's TLB hits read the comparator and the
// addend in two steps: with iommu, on the vCPU whose TLB another thread
// may flush.
func (m *machine) splitHit(t int) bool { return m.iommu && t == m.envCPU }
