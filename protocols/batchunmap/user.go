package batchunmap

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

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
	in := memIn{Op: opRead, VA: uint8(va)}
	if write {
		in = memIn{Op: opWrite, VA: uint8(va), Val: uint8(u + 1)}
	}
	x.Call(client, in)
	s.acc[u]++
	who := fmt.Sprintf("user%d on CPU%d", u, cpu)
	what := "read"
	if write {
		what = "write"
	}
	x.Touch(fmt.Sprintf("tlb[cpu%d]", cpu), true)
	e := s.tlb[cpu][va]
	pa := c.pteAddr(va)
	switch {
	case e != 0 && (!write || e&bWrite != 0 && e&bDirty != 0):
		x.Labelf("%s: %s va%d: TLB hit (%s)", who, what, va, describePTE(e))
		x.Return(client, s.access(x, u, cpu, va, write, e))

	case e != 0 && e&bWrite != 0:
		// A clean writable entry: the CPU must write the dirty bit through
		// to the PTE (the guarantee try_to_unmap_one's comment relies on),
		// and faults if the PTE is gone.
		pte := uint8(x.Load(s.mem, pa))
		if pte&bPresent != 0 && pte&bWrite != 0 {
			x.CAS(s.mem, pa, uint64(pte), uint64(pte|bDirty))
			s.tlb[cpu][va] = e | bDirty
			x.Labelf("%s: write va%d: TLB hit (rw), walk sets pte[%d] dirty", who, va, va)
			x.Return(client, s.access(x, u, cpu, va, true, e|bDirty))
			return
		}
		s.tlb[cpu][va] = 0
		x.Labelf("%s: write va%d: TLB hit (rw, clean) but pte[%d] %s: page fault", who, va, va, describePTE(pte))
		x.Return(client, fault(pte))

	case e != 0:
		pte := uint8(x.Load(s.mem, pa))
		s.tlb[cpu][va] = 0
		x.Labelf("%s: write va%d: TLB hit (ro), pte[%d] %s: page fault", who, va, va, describePTE(pte))
		x.Return(client, fault(pte))

	default:
		pte := uint8(x.Load(s.mem, pa))
		if pte&bPresent == 0 || write && pte&bWrite == 0 {
			x.Labelf("%s: %s va%d: TLB miss, pte[%d] %s: page fault", who, what, va, va, describePTE(pte))
			x.Return(client, fault(pte))
			return
		}
		if write && pte&bDirty == 0 {
			x.CAS(s.mem, pa, uint64(pte), uint64(pte|bDirty))
			pte |= bDirty
		}
		s.tlb[cpu][va] = pte
		x.Labelf("%s: %s va%d: TLB miss, walk pte[%d] (%s), fill", who, what, va, va, describePTE(pte))
		x.Return(client, s.access(x, u, cpu, va, write, pte))
	}
}

// fault is the outcome of a page fault: SIGSEGV on a read-only PTE, or a
// swap-in, which is not modelled and leaves the result unknown.
func fault(pte uint8) memOut {
	if pte&bPresent != 0 {
		return memOut{Res: resSEGV}
	}
	return memOut{Res: resSwap}
}

// access performs a read or write of page va through TLB entry e of cpu
// and checks the properties an access can break.
func (s *state) access(x *model.Exec, u, cpu, va int, write bool, e uint8) memOut {
	who := fmt.Sprintf("user%d on CPU%d", u, cpu)
	what := "reads"
	if write {
		what = "writes"
	}
	x.Touch(fmt.Sprintf("page%d", va), write)
	switch st := s.page[va]; {
	case st == pgFreed || st == pgReused:
		owner := "which reclaim freed"
		if st == pgReused {
			owner = "which reclaim freed and the allocator handed to a new owner"
		}
		x.Fail(NoUseAfterFree, "%s %s va%d through a stale TLB entry (%s) to page %d, %s: %s",
			who, what, va, describePTE(e), va, owner, s.cause())
	case write && st == pgWriteback:
		x.Fail(NoLostWrite, "%s writes page %d through a writable dirty TLB entry after pageout snapshotted it for swap: the write is lost when the page is swapped back in; %s",
			who, va, s.cause())
	case write && s.returned&(1<<uint(va)) != 0:
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
	x.Touch("free lists", true)
	x.Touch(fmt.Sprintf("page%d", p), true)
	s.page[p] = pgReused
	s.val[p] = reusedVal
	x.Labelf("get_page_from_freelist: page %d handed to a new owner, who writes %d", p, reusedVal)
}
