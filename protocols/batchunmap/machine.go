package batchunmap

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// machine is one instance of the protocol: a reclaimer (kswapd on CPU0),
// a syscall thread of mm0 on CPU1 calling mprotect, user threads on CPUs
// 2.. reading and writing through their TLBs, and an allocator that reuses
// freed pages.
type machine struct{ c *config }

func (m *machine) Threads() []string { return m.c.names }
func (m *machine) Metrics() []string { return metricNames }
func (m *machine) Spec() *model.Spec { return memorySpec() }

func (m *machine) Init() model.State {
	c := m.c
	names := make([]string, 0, c.pages+2*c.mms)
	for va := 0; va < c.pages; va++ {
		names = append(names, fmt.Sprintf("pte[%d]", va))
	}
	for mm := 0; mm < c.mms; mm++ {
		names = append(names, c.mmName(mm)+"tlb_flush_batched")
	}
	for mm := 0; mm < c.mms; mm++ {
		names = append(names, c.mmName(mm)+"mm_cpumask")
	}
	s := &state{mem: model.NewMem(names...), c: c}
	// Every page starts mapped writable and clean; a user write dirties it.
	for va := 0; va < c.pages; va++ {
		s.mem.Init(c.pteAddr(va), bPresent|bWrite)
	}
	for mm := 0; mm < c.mms; mm++ {
		s.mem.Init(c.maskAddr(mm), uint64(c.initMask[mm]))
	}
	if c.syscalls == 0 {
		s.s.pc = sDone
	}
	return s
}

func (c *config) mmName(mm int) string {
	if c.mms == 1 {
		return ""
	}
	return fmt.Sprintf("mm%d.", mm)
}

func (m *machine) Enabled(st model.State, buf []model.Choice) []model.Choice {
	s, c := st.(*state), m.c
	if s.r.pc != rDone && (s.r.pc != rLock || s.ptl[c.ptlOf(int(s.r.page))].Free()) {
		buf = append(buf, model.Choice{Thread: c.tReclaim})
	}
	if s.s.pc != sDone && (s.s.pc != sLock || s.ptl[c.ptlOf(c.sysAddrs[s.s.op])].Free()) {
		buf = append(buf, model.Choice{Thread: c.tSyscall})
	}
	for u := 0; u < c.users; u++ {
		if int(s.acc[u]) < c.accesses {
			for alt := 0; alt < 2*len(c.userAddrs[u]); alt++ {
				buf = append(buf, model.Choice{Thread: c.tUser0 + u, Alt: alt})
			}
		}
	}
	if c.reuse && s.freedPage() >= 0 {
		buf = append(buf, model.Choice{Thread: c.tAlloc})
	}
	return buf
}

func (s *state) freedPage() int {
	for p := 0; p < s.c.pages; p++ {
		if s.page[p] == pgFreed {
			return p
		}
	}
	return -1
}

func (m *machine) Step(st model.State, ch model.Choice, x *model.Exec) model.State {
	s := st.Clone().(*state)
	c := m.c
	switch t := ch.Thread; {
	case t == c.tReclaim:
		s.stepReclaim(x)
	case t == c.tSyscall:
		s.stepSyscall(x)
	case t == c.tAlloc:
		s.stepAlloc(x)
	default:
		s.stepUser(x, t-c.tUser0, ch.Alt)
	}
	return s
}

func (m *machine) Status(st model.State, t int) model.Status {
	s, c := st.(*state), m.c
	switch {
	case t == c.tReclaim:
		if s.r.pc == rDone {
			return model.Status{Done: true}
		}
		if s.r.pc == rLock {
			l := c.ptlOf(int(s.r.page))
			return model.Status{WaitsFor: fmt.Sprintf("PTL%d (%s) to unmap va%d", l, s.lockHolder(l), s.r.page)}
		}
	case t == c.tSyscall:
		if s.s.pc == sDone {
			return model.Status{Done: true}
		}
		if s.s.pc == sLock {
			l := c.ptlOf(c.sysAddrs[s.s.op])
			return model.Status{WaitsFor: fmt.Sprintf("PTL%d (%s) for mprotect", l, s.lockHolder(l))}
		}
	case t == c.tAlloc:
		// The allocator has nothing left to do once reclaim is over and
		// every freed page has been reused.
		if s.r.pc == rDone && s.freedPage() < 0 {
			return model.Status{Done: true}
		}
		return model.Status{WaitsFor: "a page freed by reclaim"}
	default:
		return model.Status{Done: int(s.acc[t-c.tUser0]) >= c.accesses}
	}
	return model.Status{}
}
