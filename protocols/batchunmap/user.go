package batchunmap

import "github.com/protocheck/protocheck/model"

// reusedVal is what a page's new owner writes; no user thread writes it.
const reusedVal = 9

// stepUser runs one access of user thread u on its CPU: alternative alt
// picks va userAddrs[u][alt/2] and a read (even) or a write (odd) of the
// value u+1. A TLB miss walks the page table and fills the entry in the
// same step as the access it serves: a fill never observed by an access
// is harmless, and the window between a fill and a later use through the
// entry is exercised by the thread's next access, which hits.
func (s *state) stepUser(x *model.Exec, u, alt int) {
	c := s.c
	cpu := c.cpuOf(u)
	va := c.userAddrs[u][alt/2]
	write := alt%2 == 1
	client := c.tUser0 + u
	if x.Recording() {
		in := memIn{Op: opRead, VA: uint8(va)}
		if write {
			in = memIn{Op: opWrite, VA: uint8(va), Val: uint8(u + 1)}
		}
		x.Call(client, in)
	}
	s.acc[u]++
	x.Touch(c.tlbName[cpu], true)
	e := s.entry(cpu, va)
	pa := c.pteAddr(va)
	var out memOut
	switch {
	case e != 0 && (!write || e&bWrite != 0 && e&bDirty != 0):
		if x.Labelling() {
			x.Labelf("%s: %s va%d: TLB hit (%s)", c.userName[u], accessName(write), va, describePTE(e))
		}
		out = s.access(x, u, va, write, e)

	case e != 0 && e&bWrite != 0:
		// A clean writable entry: the CPU must write the dirty bit through
		// to the PTE (the guarantee try_to_unmap_one's comment relies on),
		// and faults if the PTE is gone.
		pte := uint8(x.Load(s.mem, pa))
		if pte&bPresent != 0 && pte&bWrite != 0 {
			x.CAS(s.mem, pa, uint64(pte), uint64(pte|bDirty))
			s.setEntry(cpu, va, e|bDirty)
			if x.Labelling() {
				x.Labelf("%s: write va%d: TLB hit (rw), walk sets pte[%d] dirty", c.userName[u], va, va)
			}
			out = s.access(x, u, va, true, e|bDirty)
			break
		}
		s.setEntry(cpu, va, 0)
		if x.Labelling() {
			x.Labelf("%s: write va%d: TLB hit (rw, clean) but pte[%d] %s: page fault", c.userName[u], va, va, describePTE(pte))
		}
		out = fault(pte)

	case e != 0:
		pte := uint8(x.Load(s.mem, pa))
		s.setEntry(cpu, va, 0)
		if x.Labelling() {
			x.Labelf("%s: write va%d: TLB hit (ro), pte[%d] %s: page fault", c.userName[u], va, va, describePTE(pte))
		}
		out = fault(pte)

	default:
		pte := uint8(x.Load(s.mem, pa))
		if pte&bPresent == 0 || write && pte&bWrite == 0 {
			if x.Labelling() {
				x.Labelf("%s: %s va%d: TLB miss, pte[%d] %s: page fault", c.userName[u], accessName(write), va, va, describePTE(pte))
			}
			out = fault(pte)
			break
		}
		if write && pte&bDirty == 0 {
			x.CAS(s.mem, pa, uint64(pte), uint64(pte|bDirty))
			pte |= bDirty
		}
		s.setEntry(cpu, va, pte)
		if x.Labelling() {
			x.Labelf("%s: %s va%d: TLB miss, walk pte[%d] (%s), fill", c.userName[u], accessName(write), va, va, describePTE(pte))
		}
		out = s.access(x, u, va, write, pte)
	}
	if x.Recording() {
		x.Return(client, out)
	}
}

func accessName(write bool) string {
	if write {
		return "write"
	}
	return "read"
}

// fault is the outcome of a page fault: SIGSEGV on a read-only PTE, or a
// swap-in, which is not modelled and leaves the result unknown.
func fault(pte uint8) memOut {
	if pte&bPresent != 0 {
		return memOut{Res: resSEGV}
	}
	return memOut{Res: resSwap}
}

// access performs user u's read or write of page va through TLB entry e
// of its CPU and checks the properties an access can break.
func (s *state) access(x *model.Exec, u, va int, write bool, e uint8) memOut {
	who := s.c.userName[u]
	x.Touch(s.c.pageName[va], write)
	switch st := s.page[va]; {
	case st == pgFreed || st == pgReused:
		what := "reads"
		if write {
			what = "writes"
		}
		owner := "which reclaim freed"
		if st == pgReused {
			owner = "which reclaim freed and the allocator handed to a new owner"
		}
		x.Fail(NoUseAfterFree, "%s %s va%d through a stale TLB entry (%s) to page %d, %s: %s",
			who, what, va, describePTE(e), va, owner, s.cause())
	case write && st == pgWriteback:
		x.Fail(NoLostWrite, "%s writes page %d through a writable dirty TLB entry after pageout snapshotted it for swap: the write is lost when the page is swapped back in; %s",
			who, va, s.cause())
	case write && s.s.returned&(1<<uint(va)) != 0:
		x.Fail(SyscallPostcondition, "%s writes va%d through a stale writable TLB entry after mprotect(va%d, PROT_READ) returned: %s",
			who, va, va, s.cause())
	}
	if write {
		s.val[va] = uint8(u + 1)
		return memOut{Res: resOK}
	}
	return memOut{Res: resOK, Val: s.val[va]}
}

// stepAlloc hands the lowest freed page to a new owner, who overwrites it:
// a stale read of it would now return someone else's data.
func (s *state) stepAlloc(x *model.Exec) {
	p := s.freedPage()
	if p < 0 {
		// Nothing to hand out: the allocator waits for reclaim to free a
		// page, or, once reclaim is over, has nothing left to do.
		if s.r.pc == rDone {
			x.Done()
			return
		}
		x.Block()
		if x.Labelling() {
			x.Label("a page freed by reclaim")
		}
		return
	}
	x.Touch("free lists", true)
	x.Touch(s.c.pageName[p], true)
	s.page[p] = pgReused
	s.val[p] = reusedVal
	if x.Labelling() {
		x.Labelf("get_page_from_freelist: page %d handed to a new owner, who writes %d", p, reusedVal)
	}
}
