package batchunmap

import (
	"github.com/protocheck/protocheck/model"
)

// machine is one instance of the protocol: the reclaimers (kswapd on CPU0,
// a second on CPU2), a syscall thread of mm0 on CPU1 running its program
// of mprotect, madvise and munmap calls, and user tasks that read and
// write through their CPUs' TLBs and migrate between CPUs.
type machine struct {
	c     *config
	props model.Properties
}

func newModel(c *config) *machine {
	m := &machine{c: c}
	m.props = model.Properties{
		Invariants: m.invariants(),
		Assertions: []string{NoUseAfterFree, NoLostWrite, SyscallPostcondition, FlushBeforeFree, CounterSound},
		Progress:   []model.Progress{{Name: SyscallReturns, Pending: syscallInFlight}},
		Metrics:    metricNames,
		Spec:       memorySpec(),
	}
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
	for u := 0; u < c.users; u++ {
		s.task[u] = uint8(c.userCPU0 + u)
	}
	for i := 0; i < c.userCPUs; i++ {
		s.loaded[i] = c.initLoaded[i]
	}
	if c.arch == archX86 {
		// A CPU has an ASID, up to date, for the mm it runs.
		for i := 0; i < c.userCPUs; i++ {
			if mm := int(c.initLoaded[i]); mm < c.mms {
				s.ctx[i*c.mms+mm] = 1
			}
		}
	}
	for k := range s.r {
		s.r[k].page = uint8(k)
		s.r[k].list = c.ownPages[k] &^ (1 << uint(k))
		s.r[k].pc = c.firstPC()
		s.r[k].ptlAt = uint8(c.ptlOf(k))
	}
	for i := range s.sc {
		s.sc[i].pc = c.callStart()
		if len(c.sysKind[i]) == 0 {
			s.sc[i].pc = sDone
		}
	}
	return s
}

// syscallInFlight is the progress property's obligation: the syscall
// thread has calls of its program left to make or finish. Each call
// waits only for a page-table lock and for flush rounds whose handlers
// run on other CPUs (flush_tlb_batched_pending's cmpxchg may fail, which
// leaves a later extra flush, never a retry), so under weak fairness
// every call returns, and the thread reaches the end of its program.
func syscallInFlight(st model.State) bool {
	for _, sc := range st.(*state).sc {
		if sc.pc != sDone {
			return true
		}
	}
	return false
}

// Step runs thread t's next step. The reclaimers and the syscall thread
// wait only for a page-table lock; a user task draws which va it accesses
// and how, or where it migrates.
func (m *machine) Step(st model.State, t int, x *model.Exec) {
	s, c := st.(*state), m.c
	switch {
	case t < c.reclaimers:
		s.stepReclaim(x, t)
	case t < c.tUser0:
		s.stepSyscall(x, t-c.tSys[0])
	default:
		s.stepUser(x, t-c.tUser0)
	}
}
