package cputlb

import (
	"github.com/protocheck/protocheck/model"
)

// The guest's accesses through the softmmu TLB (accel/tcg/cputlb.c of the
// v5.0 era, load_helper, store_helper, notdirty_write, tlb_fill ->
// tlb_set_page_with_attrs, io_readx), one step per shared access and per
// operation on tlb.c.lock.
//
// tlb.c.lock (a QemuSpin) protects every write of a vCPU's TLB entries:
// the owner's fills, flushes and tlb_set_dirty, and the one writer from
// another thread, tlb_reset_dirty (dirty.go). The owner reads its entries
// without it (tlb_hit on atomic_read of the comparator). Every critical
// section on it is one step: qemu_spin_lock, the body, qemu_spin_unlock.
// That is Lipton's reduction, valid for each section of the real code: the
// lock is a right mover, the unlock a left mover, and every body touches
// only data the lock protects plus at most one access that another thread
// makes without the lock (tlb_reset_dirty's atomic_set of the comparator,
// which the owner reads lock-free; the fix's read of the dirty bitmap,
// which the migration thread clears lock-free), so each section is
// equivalent to an atomic one. No state then has the lock held, and the
// model does not keep it: what it guarantees is exactly that atomicity,
// and what the historical code gets wrong (is_clean read before the lock)
// is a step outside it. The accesses before a section (the page walk, the
// dirty check of the old code, the dispatch read of a fill) and the use of
// the entry after it stay steps of their own: a section cannot absorb a
// non-mover that comes before its lock or after its unlock.

// Sub-steps of a load from X_p.
const (
	ldWalk   uint8 = iota // TLB hit -> use; miss -> tlb_fill's page walk
	ldInstal              // tlb_set_page: under tlb.c.lock, install X_p->P; then the access uses the entry
	ldAddend              // with iommu, on the first target: the comparator matched; read the addend and use it
	ldMiss                // with iommu, on the first target: the comparator missed; tlb_fill's page walk
)

// stepLoad is one guest load from page X_p by vCPU t: a TLB hit uses the
// cached translation; a miss walks the page table (tlb_fill) and either
// installs the entry under tlb.c.lock (the use is a later step) or raises
// a page fault. It reports whether the access is over.
func (m *machine) stepLoad(s *state, t, p int, x *model.Exec) bool {
	v := &s.cpu[t]
	name := cpuNames[t]
	bit := uint8(1) << uint(p)
	switch v.sub {
	case ldAddend:
		// The second load of the split lookup (iommu.go).
		x.Touch(tlbNames[t], false)
		if v.tlbX&bit == 0 {
			if x.Labelling() {
				x.Labelf("cpu_exec(%s): guest load from page %s: the inline TLB lookup reads the addend: the entry was flushed", name, pageNames[p])
			}
			x.Fail(TLBOwnerOnly, "%s's load from page %s matched the comparator of %s->P, then read the addend of an entry that another thread flushed in between "+
				"(tcg_iommu_unmap_notify's tlb_flush runs on the notifying thread since 30933c4fb4f3): the host address is not P's", name, pageNames[p], pageNames[p])
			return true
		}
		if x.Recording() {
			x.Call(t, access{p})
			x.Return(t, mapped)
		}
		if x.Labelling() {
			x.Labelf("cpu_exec(%s): guest load from page %s: the inline TLB lookup reads the addend: %s->P's; the load uses it", name, pageNames[p], pageNames[p])
		}
		m.staleCheck(s, t, p, x)
		return true
	case ldWalk:
		if m.splitHit(t) {
			// The first load of the split lookup (iommu.go), a step of its
			// own whether it hits or misses: another thread may flush the
			// entry before it.
			x.Touch(tlbNames[t], false)
			if v.tlbX&bit != 0 {
				if x.Labelling() {
					x.Labelf("cpu_exec(%s): guest load from page %s: the inline TLB lookup reads the comparator: it matches %s->P", name, pageNames[p], pageNames[p])
				}
				v.sub = ldAddend
				return false
			}
			if x.Labelling() {
				x.Labelf("cpu_exec(%s): guest load from page %s: the inline TLB lookup reads the comparator: it misses", name, pageNames[p])
			}
			v.sub = ldMiss
			return false
		}
		fallthrough
	case ldMiss:
		if v.sub == ldWalk && v.tlbX&bit != 0 {
			x.Touch(tlbNames[t], false)
			if x.Recording() {
				x.Call(t, access{p})
				x.Return(t, mapped)
			}
			if x.Labelling() {
				x.Labelf("cpu_exec(%s): guest load from page %s hits the softmmu TLB entry %s->P", name, pageNames[p], pageNames[p])
			}
			m.staleCheck(s, t, p, x)
			return true
		}
		if x.Load(s.mem, m.aPTE[p]) != 0 {
			if x.Labelling() {
				x.Labelf("tlb_fill(%s): page walk finds pte(%s) -> P", name, pageNames[p])
			}
			v.sub = ldInstal
			return false
		}
		if x.Recording() {
			x.Call(t, access{p})
			x.Return(t, fault)
		}
		if x.Labelling() {
			x.Labelf("tlb_fill(%s): page walk finds pte(%s) clear: guest page fault", name, pageNames[p])
		}
		return true
	case ldInstal:
		m.tlbLocked(x)
		x.Touch(tlbNames[t], true)
		v.tlbX |= bit
		if x.Labelling() {
			x.Labelf("tlb_set_page(%s): qemu_spin_lock(%s); install %s->P; qemu_spin_unlock", name, tlbLockNames[t], pageNames[p])
		}
		v.sub = ldWalk
	}
	return false
}

// staleCheck is no-stale-translation at vCPU t's use of its entry of X_p.
func (m *machine) staleCheck(s *state, t, p int, x *model.Exec) {
	if s.resumed&(uint8(1)<<uint(p)) != 0 {
		name := cpuNames[t]
		x.Fail(NoStaleTranslation, "%s translates page %s with the TLB entry %s->P cached before cpu%d cleared the PTE, "+
			"after cpu%d executed the instruction following %s: %s's flush item has not run (%s)",
			name, pageNames[p], pageNames[p], p, p, m.flushName(), name, m.staleCause(s, t, p))
	}
}

// Sub-steps of an MMIO read of M.
const (
	ioLookup uint8 = iota // TLB hit -> io_readx's iotlb_to_section; miss -> tlb_fill
	ioInstal              // tlb_set_page: under tlb.c.lock, install M (generation in reg)
	ioLock                // io_readx: qemu_mutex_lock_iothread; memory_region_dispatch_read
	ioUnBQL               // io_readx: qemu_mutex_unlock_iothread
	ioRefill              // map-gen fix: the entry is stale, tlb_fill again
)

// dispatchWord is the word an MMIO fill and iotlb_to_section read for vCPU
// t: the vCPU's cached cpu_ases[0].memory_dispatch, or, since
// 2865bf1c5795 removed it, the address space's current map.
func (m *machine) dispatchWord(t int) model.Addr {
	if m.cfg.uncached {
		return m.aMap
	}
	return m.aDispatch[t]
}

// dispatchRead names the read of dispatchWord in a label.
func (m *machine) dispatchRead() string {
	if m.cfg.uncached {
		return "address_space_to_dispatch(cpu_ases[0].as): qatomic_rcu_read(&as->current_map)"
	}
	return "atomic_rcu_read(&cpu_ases[0].memory_dispatch)"
}

// dispatchNoun names what dispatchWord holds, in a message.
func (m *machine) dispatchNoun() string {
	if m.cfg.uncached {
		return "dispatch"
	}
	return "memory_dispatch"
}

// incoherentCause says, in a dispatch-coherent violation, why the map
// changed under the entry.
func (m *machine) incoherentCause(name string) string {
	if m.cfg.uncached {
		return "the main loop has switched the map, and " + name + "'s TLB is flushed only by tcg_commit_cpu, which tcg_commit queues " +
			"to run when " + name + " leaves cpu_exec; 2865bf1c5795 removed the cached dispatch that kept the old map until then"
	}
	return "tcg_commit stored the new dispatch before " + name + "'s tlb_flush ran; gitlab #1826, fixed by 0d58c660689f"
}

// fillM is tlb_fill's resolution of M on vCPU t: the dispatch read, its
// generation kept in v.reg for the install under tlb.c.lock, the next
// step (installM).
func (m *machine) fillM(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuNames[t]
	g := x.Load(s.mem, m.dispatchWord(t))
	if x.Labelling() {
		x.Labelf("tlb_fill(%s): tlb_set_page_with_attrs: address_space_translate_for_iotlb: %s is generation %d", name, m.dispatchRead(), g)
	}
	m.dispatchLive(s, t, g, x, readFillM)
	v.reg = uint8(g)
}

// installM is tlb_set_page of M on vCPU t, one critical section on
// tlb.c.lock, with the generation fillM read (v.reg).
func (m *machine) installM(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	m.tlbLocked(x)
	x.Touch(tlbNames[t], true)
	v.tlbM = v.reg + 1
	if x.Labelling() {
		x.Labelf("tlb_set_page(%s): qemu_spin_lock(%s); install M (section of generation %d); qemu_spin_unlock", cpuNames[t], tlbLockNames[t], v.reg)
	}
}

// stepMMIO is one guest MMIO read of page M by vCPU t. The entry of M
// holds, in its iotlb, a section index into the dispatch it was filled
// from (tlb_set_page_with_attrs -> address_space_translate_for_iotlb,
// which reads cpu->cpu_ases[0].memory_dispatch); io_readx resolves the
// index with iotlb_to_section, which reads memory_dispatch again, without
// the BQL, before it takes the BQL for the device's dispatch. The model
// keeps the generation of the dispatch, and dispatch-coherent fails when
// the two differ.
func (m *machine) stepMMIO(s *state, t int, x *model.Exec) bool {
	v := &s.cpu[t]
	name := cpuNames[t]
	switch v.sub {
	case ioLookup:
		// The comparator of M is written only by its owner (fills and
		// flushes; tlb_reset_dirty leaves MMIO entries alone): its
		// lock-free read folds into the step that follows it.
		if v.tlbM == 0 {
			m.fillM(s, t, x)
			v.sub = ioInstal
			return false
		}
		filled := uint64(v.tlbM - 1)
		if m.cfg.mapGen {
			// The fix's check: the entry keeps the generation of the map
			// it was filled from, and the access compares it with the
			// current map's (read in this read section, so live) before
			// it touches full->section.
			g := x.Load(s.mem, m.aMap)
			if g != filled {
				if x.Labelling() {
					x.Labelf("io_readx(%s): TLB hit on M; io_prepare: full->map_gen %d != qatomic_rcu_read(&as->current_map)->gen %d: the entry is stale, fill it again", name, filled, g)
				}
				v.sub = ioRefill
				return false
			}
			if x.Labelling() {
				x.Labelf("io_readx(%s): TLB hit on M; io_prepare: full->map_gen %d == qatomic_rcu_read(&as->current_map)->gen; section = full->section", name, filled)
			}
			m.dispatchLive(s, t, filled, x, readSection)
			v.sub = ioLock
			return false
		}
		if m.cfg.sectionInEntry {
			// The section was resolved at the fill and kept in the full
			// entry: the access reads the entry, which only its owner
			// writes, and no dispatch.
			x.Touch(tlbNames[t], false)
			if x.Labelling() {
				x.Labelf("io_readx(%s): TLB hit on M; io_prepare: section = full->section (kept at the fill, generation %d)", name, filled)
			}
			m.dispatchLive(s, t, filled, x, readSection)
			v.sub = ioLock
			return false
		}
		g := x.Load(s.mem, m.dispatchWord(t))
		if x.Labelling() {
			x.Labelf("io_readx(%s): TLB hit on M; iotlb_to_section: %s is generation %d", name, m.dispatchRead(), g)
		}
		m.dispatchLive(s, t, g, x, readIotlb)
		if filled != g {
			x.Fail(DispatchCoherent, "io_readx(%s): the TLB entry of M was filled from %s generation %d, and iotlb_to_section "+
				"resolves its section index in generation %d: a section of another memory map (%s)", name, m.dispatchNoun(), filled, g, m.incoherentCause(name))
		}
		v.sub = ioLock
	case ioRefill:
		m.fillM(s, t, x)
		v.sub = ioInstal
	case ioInstal:
		m.installM(s, t, x)
		v.reg = 0
		v.sub = ioLookup
	case ioLock:
		if lockDevice(s, x, "io_readx", name, "mr->global_locking: qemu_mutex_lock_iothread; memory_region_dispatch_read") {
			v.sub = ioUnBQL
		}
	case ioUnBQL:
		unlockDevice(s, x, "io_readx", name, "qemu_mutex_unlock_iothread")
		return true
	}
	return false
}

// lockDevice is the step of vCPU name's MMIO access to M (in function fn)
// that takes the BQL and reads the device, labelled fn(name): action; it
// reports whether the step ran (not blocked on the BQL).
func lockDevice(s *state, x *model.Exec, fn, name, action string) bool {
	if bqlBusy(s, x) {
		return false
	}
	x.Lock(&s.bql, "bql")
	x.Count(mBQL, 1)
	x.Touch("device M", true)
	if x.Labelling() {
		x.Labelf("%s(%s): %s", fn, name, action)
	}
	return true
}

// unlockDevice is the step that releases the BQL after M's device access.
func unlockDevice(s *state, x *model.Exec, fn, name, action string) {
	x.Unlock(&s.bql, "bql")
	if x.Labelling() {
		x.Labelf("%s(%s): %s", fn, name, action)
	}
}

// Sub-steps of a store to D.
const (
	stCmp         uint8 = iota // store_helper: tlb_addr_write(entry), atomic_read of the comparator
	stSetDirty                 // notdirty_write: cpu_physical_memory_set_dirty_range
	stIsClean                  // notdirty_write: if (!cpu_physical_memory_is_clean(ram_addr))
	stTLBSetDirty              // tlb_set_dirty (or the fix's tlb_try_set_dirty), under tlb.c.lock
	stFillCheck                // tlb_set_page_with_attrs: cpu_physical_memory_is_clean, before the lock
	stFillLock                 // tlb_set_page_with_attrs: under tlb.c.lock, install D
	stStore                    // store_memop: the store to host RAM
)

// stepStore is one guest store to page D by vCPU t (store_helper). A hit
// on a writable entry stores at once; a hit on D|TLB_NOTDIRTY goes through
// notdirty_write, which sets the page's dirty bits, and, if the page is no
// longer clean, drops TLB_NOTDIRTY from the entry (tlb_set_dirty) before
// the store; a miss fills the entry (tlb_fill -> tlb_set_page_with_attrs,
// which sets TLB_NOTDIRTY if the page is clean) and reads the comparator
// again. Where cpu_physical_memory_is_clean is read is the difference
// between the historical code (before the lock: the race of Nicholas
// Piggin's RFC, Message-ID <20240220041922.373029-2-npiggin@gmail.com>)
// and the fix (under tlb.c.lock, cfg.dirtyLocked).
func (m *machine) stepStore(s *state, t int, x *model.Exec) bool {
	v := &s.cpu[t]
	name := cpuNames[t]
	switch v.sub {
	case stCmp:
		x.Touch(tlbNames[t], false)
		switch v.tlbD {
		case tlbWritable:
			if x.Labelling() {
				x.Labelf("store_helper(%s): tlb_addr_write(entry) is D: TLB hit, no flags, fast path", name)
			}
			v.sub = stStore
		case tlbNotDirty:
			if x.Labelling() {
				x.Labelf("store_helper(%s): tlb_addr_write(entry) is D|TLB_NOTDIRTY: notdirty_write", name)
			}
			v.sub = stSetDirty
		default:
			if x.Labelling() {
				x.Labelf("store_helper(%s): tlb_addr_write(entry) misses D: tlb_fill", name)
			}
			v.sub = stFillCheck
			if m.cfg.dirtyLocked {
				v.sub = stFillLock
			}
		}
	case stSetDirty:
		x.FetchOr(s.mem, m.aDirty, 1)
		if x.Labelling() {
			x.Labelf("notdirty_write(%s): cpu_physical_memory_set_dirty_range(D, DIRTY_CLIENTS_NOCODE)", name)
		}
		v.sub = stIsClean
	case stIsClean:
		if x.Load(s.mem, m.aDirty) == 0 {
			if x.Labelling() {
				x.Labelf("notdirty_write(%s): cpu_physical_memory_is_clean(D): clean, TLB_NOTDIRTY stays", name)
			}
			v.sub = stStore
			return false
		}
		if x.Labelling() {
			x.Labelf("notdirty_write(%s): !cpu_physical_memory_is_clean(D)", name)
		}
		v.sub = stTLBSetDirty
	case stTLBSetDirty:
		m.tlbLocked(x)
		x.Touch(tlbNames[t], true)
		v.sub = stStore
		if m.cfg.dirtyLocked {
			// tlb_try_set_dirty: is_clean checked again under the lock.
			if x.Load(s.mem, m.aDirty) == 0 {
				if x.Labelling() {
					x.Labelf("notdirty_write(%s): tlb_try_set_dirty: qemu_spin_lock(%s); cpu_physical_memory_is_clean(D): clean again, TLB_NOTDIRTY stays; qemu_spin_unlock", name, tlbLockNames[t])
				}
				return false
			}
			if v.tlbD == tlbNotDirty {
				v.tlbD = tlbWritable
			}
			if x.Labelling() {
				x.Labelf("notdirty_write(%s): tlb_try_set_dirty: qemu_spin_lock(%s); D not clean; addr_write == D|TLB_NOTDIRTY: addr_write = D; qemu_spin_unlock", name, tlbLockNames[t])
			}
			return false
		}
		if v.tlbD == tlbNotDirty {
			v.tlbD = tlbWritable
		}
		if x.Labelling() {
			x.Labelf("notdirty_write(%s): tlb_set_dirty: qemu_spin_lock(%s); addr_write == D|TLB_NOTDIRTY: addr_write = D; qemu_spin_unlock", name, tlbLockNames[t])
		}
	case stFillCheck:
		// The page walk for D reads a PTE nobody writes; it folds here.
		clean := x.Load(s.mem, m.aDirty) == 0
		v.reg = boolByte(clean)
		if x.Labelling() {
			if clean {
				x.Labelf("tlb_fill(%s): tlb_set_page_with_attrs: cpu_physical_memory_is_clean(D): clean, write_address |= TLB_NOTDIRTY", name)
			} else {
				x.Labelf("tlb_fill(%s): tlb_set_page_with_attrs: cpu_physical_memory_is_clean(D): dirty, write_address = D", name)
			}
		}
		v.sub = stFillLock
	case stFillLock:
		m.tlbLocked(x)
		x.Touch(tlbNames[t], true)
		clean := v.reg != 0
		if m.cfg.dirtyLocked {
			clean = x.Load(s.mem, m.aDirty) == 0
		}
		v.tlbD = tlbWritable
		if clean {
			v.tlbD = tlbNotDirty
		}
		if x.Labelling() {
			switch {
			case m.cfg.dirtyLocked:
				x.Labelf("tlb_fill(%s): tlb_set_page_with_attrs: qemu_spin_lock(%s); cpu_physical_memory_is_clean(D): %s; install %s; qemu_spin_unlock", name, tlbLockNames[t], cleanText(clean), tlbDNames[v.tlbD])
			default:
				x.Labelf("tlb_fill(%s): tlb_set_page_with_attrs: qemu_spin_lock(%s); install %s; qemu_spin_unlock", name, tlbLockNames[t], tlbDNames[v.tlbD])
			}
		}
		v.reg = 0
		v.sub = stCmp
	case stStore:
		val := uint64(v.guest) + 1
		x.Store(s.mem, m.aRAM, val)
		if x.Labelling() {
			x.Labelf("store_helper(%s): store_memop: guest store to D (contents %d)", name, val)
		}
		return true
	}
	return false
}

func cleanText(clean bool) string {
	if clean {
		return "clean"
	}
	return "dirty"
}

// tlbLocked counts an acquisition of a tlb.c.lock: the step is a whole
// critical section on it.
func (m *machine) tlbLocked(x *model.Exec) { x.Count(mTLBLock, 1) }

// flushPage is tlb_flush_page_by_mmuidx_async_0 on vCPU t, one step:
// qemu_spin_lock(tlb.c.lock), tlb_flush_page_locked of page X_p in every
// mmu_idx, qemu_spin_unlock.
func (m *machine) flushPage(s *state, t, p int, x *model.Exec) {
	m.tlbLocked(x)
	x.Touch(tlbNames[t], true)
	s.cpu[t].tlbX &^= 1 << uint(p)
}

// flushAll is tlb_flush_by_mmuidx_async_work (ALL_MMUIDX_BITS) on vCPU t,
// one step: every entry of its TLB is dropped (memset -1) under
// tlb.c.lock.
func (m *machine) flushAll(s *state, t int, x *model.Exec) {
	m.tlbLocked(x)
	x.Touch(tlbNames[t], true)
	v := &s.cpu[t]
	v.tlbX, v.tlbD, v.tlbM = 0, tlbNone, 0
}
