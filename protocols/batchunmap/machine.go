package batchunmap

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// machine is one instance of the protocol: a reclaimer (kswapd on CPU0),
// a syscall thread of mm0 on CPU1 calling mprotect, user threads on CPUs
// 2.. reading and writing through their TLBs, and an allocator that reuses
// freed pages.
type machine struct {
	c     *config
	props model.Properties
}

func newModel(c *config) *machine {
	m := &machine{c: c}
	m.props = model.Properties{Invariants: m.invariants(), Metrics: metricNames, Spec: memorySpec()}
	return m
}

func (m *machine) Threads() []string            { return m.c.names }
func (m *machine) Properties() model.Properties { return m.props }

func (m *machine) Init() model.State {
	c := m.c
	s := newState(c)
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

func (s *state) freedPage() int {
	for p := 0; p < s.c.pages; p++ {
		if s.page[p] == pgFreed {
			return p
		}
	}
	return -1
}

// Step runs thread t's next step. The reclaimer and the syscall thread
// wait only for a page-table lock, the allocator for a freed page; a
// user thread draws which va it accesses and how.
func (m *machine) Step(st model.State, t int, x *model.Exec) {
	s, c := st.(*state), m.c
	switch {
	case t == c.tReclaim:
		s.stepReclaim(x)
	case t == c.tSyscall:
		s.stepSyscall(x)
	case t == c.tAlloc:
		s.stepAlloc(x)
	default:
		u := t - c.tUser0
		if int(s.acc[u]) >= c.accesses {
			x.Done()
			return
		}
		s.stepUser(x, u, x.Choose(2*len(c.userAddrs[u])))
	}
}
