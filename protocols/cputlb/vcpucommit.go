package cputlb

import "github.com/protocheck/protocheck/model"

// A commit from a vCPU's own MMIO write (vcpu-commit=1): the guest
// programs a device's BAR, and the device remaps its region from inside
// the write, so memory_region_transaction_commit runs on the vCPU's
// thread, with the BQL that do_st_mmio_leN (io_writex in v5.0) took for
// the device. The instruction is one whose two accesses span two pages,
// the store to the BAR register and then a load from M: mmu_lookup
// resolved both pages' TLB entries before the first access, and the
// second uses what it found (accel/tcg/cputlb.c, do_st8_mmu/do_ld_mmu
// with MMULookupLocals: l.page[1].full). This is the "(2) ongoing i/o for
// the current cpu thread, with data cached by mmu_lookup()" of
// 0d58c660689f's comment in tcg_commit, and the mid-instruction case of
// the qemu-devel thread "Record AS in full tlb" (December 2025).
//
// What each era does with it:
//   - v5.0 to 8.1: tcg_commit on the writer stores its new
//     memory_dispatch and flushes its TLB at once (tlb_flush on its own
//     thread), and cpu_reloading_memory_map splits its read section; the
//     second access resolves the index mmu_lookup found in the new map.
//   - 8.2 to 10.0: tcg_commit queues tcg_commit_cpu on the writer too;
//     its cached dispatch is the old one until it leaves cpu_exec.
//   - 10.1 (dispatch-uncached): iotlb_to_section reads the current map,
//     which the writer itself just switched.
//   - master: io_prepare uses l.page[1].full->section, the old map's
//     section, inside the read section in which the old map was current.

// Sub-steps of the instruction (vcpu.sub, op opBARThenM).
const (
	bmLookup    uint8 = iota // mmu_lookup: the BAR's page and M; M's entry kept (its generation in reg)
	bmFill                   // mmu_lookup: M misses: tlb_fill's dispatch read
	bmInstall                // mmu_lookup: tlb_set_page of M under tlb.c.lock
	bmStore                  // do_st_mmio_leN: BQL; the device's write commits: the map switch
	bmCallRCU                // with rcu: flatview_unref(old map): call_rcu
	bmCommit                 // tcg_commit of every vCPU, from this thread (v.idx, v.count)
	bmUnlock                 // the BQL released after the store
	bmUseM                   // the second access: the section of M's entry as mmu_lookup found it
	bmRefill                 // map-gen fix: M's entry is stale, tlb_fill again
	bmReinstall              // ... tlb_set_page under tlb.c.lock
	bmLockM                  // the load's device access: BQL
	bmUnlockM                // BQL released: the instruction is done
)

// stepBARThenM is the instruction on vCPU t. It reports whether it is
// done.
func (m *machine) stepBARThenM(s *state, t int, x *model.Exec) bool {
	v := &s.cpu[t]
	name := cpuNames[t]
	switch v.sub {
	case bmLookup:
		if v.tlbM == 0 {
			v.sub = bmFill
			return m.stepBARThenM(s, t, x)
		}
		// Reading its own entries: only the owner writes M's.
		x.Touch(tlbNames[t], false)
		v.reg = v.tlbM - 1
		if x.Labelling() {
			x.Labelf("cpu_exec(%s): a store to the device's BAR and a load from M in one instruction: mmu_lookup: both pages hit; l.page[1].full is M's entry (generation %d)", name, v.reg)
		}
		v.sub = bmStore
	case bmFill, bmRefill:
		m.fillM(s, t, x)
		v.sub++ // bmInstall, bmReinstall
	case bmInstall, bmReinstall:
		m.installM(s, t, x)
		if v.sub == bmInstall {
			v.sub = bmStore
		} else {
			v.sub = bmLockM
		}
	case bmStore:
		// The BQL and the switch of the map, the one access in it that
		// another thread makes without the BQL: Lipton, as the main
		// loop's cmLock.
		if bqlBusy(s, x) {
			return false
		}
		x.Lock(&s.bql, "bql")
		x.Count(mBQL, 1)
		g := x.Load(s.mem, m.aMap) + 1
		x.Store(s.mem, m.aMap, g)
		if x.Labelling() {
			x.Labelf("do_st_mmio_leN(%s): BQL_LOCK_GUARD; memory_region_dispatch_write: the device remaps its BAR: memory_region_transaction_commit: "+
				"address_space_set_flatview: as->current_map = the new map (dispatch generation %d)", name, g)
		}
		v.idx, v.count = 0, m.firstCommitStep()
		v.sub = bmCommit
		if m.rcu {
			v.sub = bmCallRCU
		}
	case bmCallRCU:
		callRCU(s, x)
		v.sub = bmCommit
	case bmCommit:
		if m.tcgCommit(s, x, t, &v.idx, &v.count) {
			v.idx, v.count = 0, 0
			v.sub = bmUnlock
		}
	case bmUnlock:
		x.Unlock(&s.bql, "bql")
		if x.Labelling() {
			x.Labelf("do_st_mmio_leN(%s): memory_region_transaction_commit done; the BQL released", name)
		}
		v.sub = bmUseM
	case bmUseM:
		m.useM(s, t, x)
	case bmLockM:
		if lockDevice(s, x, "do_ld_mmio_beN", name, "BQL_LOCK_GUARD; memory_region_dispatch_read") {
			v.sub = bmUnlockM
		}
	case bmUnlockM:
		unlockDevice(s, x, "do_ld_mmio_beN", name, "the BQL released; the instruction is done")
		return true
	}
	return false
}

// useM is the instruction's second access, with M's entry as mmu_lookup
// found it before the store (generation v.reg).
func (m *machine) useM(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuNames[t]
	found := uint64(v.reg)
	switch {
	case m.cfg.mapGen:
		g := x.Load(s.mem, m.aMap)
		if g != found {
			if x.Labelling() {
				x.Labelf("do_ld_mmio_beN(%s): io_prepare: l.page[1].full->map_gen %d != qatomic_rcu_read(&as->current_map)->gen %d: the entry is stale, fill it again", name, found, g)
			}
			v.sub = bmRefill
			return
		}
		if x.Labelling() {
			x.Labelf("do_ld_mmio_beN(%s): io_prepare: l.page[1].full->map_gen %d == qatomic_rcu_read(&as->current_map)->gen; section = full->section", name, found)
		}
		m.dispatchLive(s, t, found, x, readSection)
	case m.cfg.sectionInEntry:
		x.Touch(tlbNames[t], false)
		if x.Labelling() {
			x.Labelf("do_ld_mmio_beN(%s): io_prepare: section = l.page[1].full->section (found by mmu_lookup before the store, generation %d)", name, found)
		}
		m.dispatchLive(s, t, found, x, readSection)
	default:
		g := x.Load(s.mem, m.dispatchWord(t))
		if x.Labelling() {
			x.Labelf("io_readx(%s): iotlb_to_section(l.page[1].full->xlat_section): %s is generation %d", name, m.dispatchRead(), g)
		}
		m.dispatchLive(s, t, g, x, readIotlb)
		if g != found {
			x.Fail(DispatchCoherent, "io_readx(%s): mmu_lookup found M's entry, filled from %s generation %d, before the instruction's store to the BAR committed "+
				"a transaction on %s's own thread, and iotlb_to_section resolves its section index in generation %d: a section of another memory map (%s)",
				name, m.dispatchNoun(), found, name, g, m.selfCommitCause(name))
		}
	}
	v.sub = bmLockM
}

// selfCommitCause explains a dispatch-coherent violation of the
// instruction's second access.
func (m *machine) selfCommitCause(name string) string {
	if m.cfg.uncached {
		return name + " switched the map itself, and iotlb_to_section reads the current one (2865bf1c5795)"
	}
	return "tcg_commit on " + name + "'s own thread stored its new memory_dispatch and flushed its TLB at once, but the instruction goes on " +
		"with what mmu_lookup found: the race (2) of 0d58c660689f's comment"
}
