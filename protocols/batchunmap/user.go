package batchunmap

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// offCPU is a user task's CPU while it is scheduled out.
const offCPU = 0xff

// stepUser runs one step of user task u. On its CPU it draws an access
// (alternative a < 2*len(addrs): va userAddrs[u][a/2], a read if a is even,
// a write of u+1 if odd) or, for user0 while migrations are left, being
// scheduled out (alternative 2*len(addrs)): its CPU switches to another
// process, or (x86 from v4.20, the last alternative) runs a kernel thread
// in lazy TLB mode. Off CPU, it draws the CPU that schedules it in (among
// those running another process, its old one included, and a lazy one,
// which keeps its mm loaded), which switches to its mm. Only user0
// migrates, so the CPUs it can draw change only by its own steps (and by
// a flush IPI that makes a lazy CPU switch to init_mm); the other tasks
// stay on their CPUs.
//
// A TLB miss walks the page table and fills the entry in the same step as
// the access it serves: a fill never observed by an access is harmless,
// and the window between a fill and a later use through the entry is
// exercised by the task's next access, which hits.
func (s *state) stepUser(x *model.Exec, u int) {
	c := s.c
	if s.task[u] == offCPU {
		s.scheduleIn(x, u)
		return
	}
	if int(s.acc[u]) >= c.accesses {
		x.Done()
		return
	}
	n := 2 * len(c.userAddrs[u])
	alts := n
	if u == 0 && int(s.migrated) < c.migrations {
		alts++
		if c.x86Lazy() {
			alts++
		}
	}
	alt := x.Choose(alts)
	if alt >= n {
		s.scheduleOut(x, u, alt > n)
		return
	}
	s.access(x, u, c.userAddrs[u][alt/2], alt%2 == 1)
}

// scheduleOut is schedule() on user task u's CPU switching to another
// process, switch_mm(mm → another process's mm), or, if kthread, to a
// kernel thread: enter_lazy_tlb.
func (s *state) scheduleOut(x *model.Exec, u int, kthread bool) {
	c := s.c
	cpu := int(s.task[u])
	mm := u % c.mms
	s.migrated++
	s.task[u] = offCPU
	if kthread {
		s.enterLazy(x, cpu, mm)
		if x.Labelling() {
			x.Label(c.describeLazy(u, cpu, mm))
		}
		return
	}
	s.switchOut(x, cpu, mm)
	if x.Labelling() {
		x.Labelf("schedule: %s leaves %s, which switches to another process: switch_mm(%s → other): %s", c.userName[u], c.cpuName[cpu], c.mmLabel(mm), c.describeSwitchOut(cpu))
	}
}

func (c *config) describeLazy(u, cpu, mm int) string {
	return fmt.Sprintf("schedule: %s leaves %s, which runs a kernel thread: enter_lazy_tlb: is_lazy, %s stays loaded and in mm_cpumask", c.userName[u], c.cpuName[cpu], c.mmLabel(mm))
}

// scheduleIn is schedule() on a CPU running another process switching to
// user task u, switch_mm(another process's mm → mm), or on a CPU keeping
// u's mm lazily, switch_mm(mm → mm).
func (s *state) scheduleIn(x *model.Exec, u int) {
	c := s.c
	mm := u % c.mms
	// The CPUs no user task runs on: each runs another process or keeps
	// u's mm lazily. Which of the two is read in the step, after the
	// choice, since a flush IPI may move a lazy CPU to init_mm meanwhile.
	var free [maxCPUs]int
	n := 0
	for i := 0; i < c.userCPUs; i++ {
		cpu := c.userCPU0 + i
		busy := false
		for v := 0; v < c.users; v++ {
			busy = busy || int(s.task[v]) == cpu
		}
		if !busy {
			free[n] = cpu
			n++
		}
	}
	cpu := free[x.Choose(n)]
	s.task[u] = uint8(cpu)
	if s.isLazy(cpu) {
		sw := s.switchBack(x, cpu, mm)
		if x.Labelling() {
			x.Labelf("schedule: %s runs on %s: switch_mm(%s → %s), %s", c.userName[u], c.cpuName[cpu], c.mmLabel(mm), c.mmLabel(mm), c.describeSwitchIn(cpu, sw))
		}
		return
	}
	sw := s.switchIn(x, cpu, mm)
	if x.Labelling() {
		x.Labelf("schedule: %s runs on %s: switch_mm(other → %s): %s", c.userName[u], c.cpuName[cpu], c.mmLabel(mm), c.describeSwitchIn(cpu, sw))
	}
}

// access is one read or write of va by user task u on its CPU.
func (s *state) access(x *model.Exec, u, va int, write bool) {
	c := s.c
	cpu := int(s.task[u])
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
	who := c.userName[u]
	var out memOut
	switch {
	case e != 0 && (!write || e&bWrite != 0 && e&bDirty != 0):
		if x.Labelling() {
			x.Labelf("%s on %s: %s va%d: TLB hit (%s)", who, c.cpuName[cpu], accessName(write), va, describeEntry(e))
		}
		out = s.use(x, u, cpu, va, write, e)

	case e != 0 && e&bWrite != 0:
		// A clean writable entry: the CPU must write the dirty bit through
		// to the PTE (the guarantee try_to_unmap_one's comment relies on),
		// and faults if the PTE is gone or read-only.
		pte := uint8(x.Load(s.mem, pa))
		if pte&bPresent != 0 && pte&bWrite != 0 {
			x.CAS(s.mem, pa, uint64(pte), uint64(pte|bDirty))
			s.setEntry(cpu, va, e|bDirty)
			if x.Labelling() {
				x.Labelf("%s on %s: write va%d: TLB hit (%s), walk sets pte[%d] dirty", who, c.cpuName[cpu], va, describeEntry(e), va)
			}
			out = s.use(x, u, cpu, va, true, e|bDirty)
			break
		}
		s.setEntry(cpu, va, 0)
		if x.Labelling() {
			x.Labelf("%s on %s: write va%d: TLB hit (%s) but pte[%d] %s: page fault", who, c.cpuName[cpu], va, describeEntry(e), va, describePTE(pte))
		}
		out = fault(pte)

	case e != 0:
		pte := uint8(x.Load(s.mem, pa))
		s.setEntry(cpu, va, 0)
		if x.Labelling() {
			x.Labelf("%s on %s: write va%d: TLB hit (%s), pte[%d] %s: page fault", who, c.cpuName[cpu], va, describeEntry(e), va, describePTE(pte))
		}
		out = fault(pte)

	default:
		pte := uint8(x.Load(s.mem, pa))
		if pte&bPresent == 0 || write && pte&bWrite == 0 {
			if x.Labelling() {
				x.Labelf("%s on %s: %s va%d: TLB miss, pte[%d] %s: page fault", who, c.cpuName[cpu], accessName(write), va, va, describePTE(pte))
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
			x.Labelf("%s on %s: %s va%d: TLB miss, walk pte[%d] (%s), fill", who, c.cpuName[cpu], accessName(write), va, va, describePTE(pte))
		}
		out = s.use(x, u, cpu, va, write, pte)
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
// swap-in (or a new page after a zap), which is not modelled and leaves
// the result unknown.
func fault(pte uint8) memOut {
	if pte&bPresent != 0 {
		return memOut{Res: resSEGV}
	}
	return memOut{Res: resSwap}
}

// use performs user u's read or write of page va through TLB entry e of
// its CPU and checks the properties an access can break.
func (s *state) use(x *model.Exec, u, cpu, va int, write bool, e uint8) memOut {
	c := s.c
	x.Touch(c.pageName[va], write)
	switch st := s.page[va]; {
	case st == pgFreed || st == pgReused:
		x.Fail(NoUseAfterFree, "%s on %s %s va%d through a stale TLB entry (%s) to page %d, %s: %s",
			c.userName[u], c.cpuName[cpu], accessVerb(write), va, describePTE(e), va, freedBy(st), s.cause())
	case write && st == pgWriteback:
		x.Fail(NoLostWrite, "%s on %s writes page %d through a writable dirty TLB entry after pageout snapshotted it for swap: the write is lost when the page is swapped back in; %s",
			c.userName[u], c.cpuName[cpu], va, s.cause())
	case e&bNoAccess != 0:
		x.Fail(SyscallPostcondition, "%s on %s %s va%d through a TLB entry older than the zap of a munmap or MADV_DONTNEED that has returned: %s",
			c.userName[u], c.cpuName[cpu], accessVerb(write), va, s.cause())
	case write && e&bNoWrite != 0:
		x.Fail(SyscallPostcondition, "%s on %s writes va%d through a stale %s TLB entry after %s: %s",
			c.userName[u], c.cpuName[cpu], va, describePTE(e), c.returnedWhat(va, int(s.sc[0].op)), s.cause())
	}
	if write {
		s.val[va] = uint8(u + 1)
		return memOut{Res: resOK}
	}
	return memOut{Res: resOK, Val: s.val[va]}
}

func accessVerb(write bool) string {
	if write {
		return "writes"
	}
	return "reads"
}

func freedBy(st uint8) string {
	if st == pgReused {
		return "which was freed and handed to a new owner"
	}
	return "which was freed"
}

// returnedWhat names the last call on va that forbids writes through
// older entries and has returned, of the first op calls.
func (c *config) returnedWhat(va, op int) string {
	for k := min(op, c.syscalls) - 1; k >= 0; k-- {
		if int(c.sysAddr[0][k]) != va {
			continue
		}
		switch c.sysKind[0][k] {
		case kMprotect:
			return fmt.Sprintf("mprotect(va%d, PROT_READ) returned", va)
		case kMadvFree:
			return fmt.Sprintf("madvise(va%d, MADV_FREE) returned (the write does not dirty the PTE, so the page may be discarded with it)", va)
		}
	}
	return "the call that write-protected it returned"
}
