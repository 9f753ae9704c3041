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
	if c.arm {
		// The reclaimers and the syscall threads, the threads before the
		// users, access wm; the users never do.
		s.wm.EnableARMv8(c.names[:c.tUser0]...)
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
		was := s.r[t].pc
		s.stepReclaim(x, t)
		s.exitIfDone(x, was != rDone && s.r[t].pc == rDone)
	case t < c.tUser0:
		i := t - c.tSys[0]
		was := s.sc[i].pc
		s.stepSyscall(x, i)
		s.exitIfDone(x, was != sDone && s.sc[i].pc == sDone)
	default:
		s.stepUser(x, t-c.tUser0)
	}
}

// lockPTL is spin_lock of page-table lock l by the stepping thread: it
// reports false, the step blocked, while another thread holds it. With
// memory=2 the lock has a lock word in wm, taken as arm64's
// queued_spin_lock takes it: atomic_try_cmpxchg_acquire of the locked
// byte (weaken=2: a relaxed cmpxchg), so that the critical section sees
// what the previous holder wrote before its release.
func (s *state) lockPTL(x *model.Exec, l int) bool {
	c := s.c
	name := c.ptlName[l]
	switch {
	case !c.arm:
		if !s.ptl[l].Free() {
			x.Block()
			return false
		}
		return x.Lock(&s.ptl[l], name)
	case c.weaken == weakLock:
		if !x.Lock(&s.ptl[l], name) {
			return false
		}
		// _Q_LOCKED_VAL, with no acquire: later loads may be satisfied
		// from messages older than the previous holder's critical section.
		x.Atomic(s.wm, c.wmLock(l), model.RMW{Op: model.RMWCAS, Expect: 0, Arg: 1, Order: model.Plain, Await: true})
		return true
	}
	return x.LockWord(s.wm, c.wmLock(l), &s.ptl[l], name)
}

// unlockPTL is spin_unlock of page-table lock l. With memory=2 it is
// queued_spin_unlock's smp_store_release of the locked byte (weaken=1: a
// plain store, which lets the critical section's writes reach the next
// holder after it has taken the lock).
func (s *state) unlockPTL(x *model.Exec, l int) {
	c := s.c
	name := c.ptlName[l]
	switch {
	case !c.arm:
		x.Unlock(&s.ptl[l], name)
	case c.weaken == weakUnlock:
		x.Store(s.wm, c.wmLock(l), 0)
		x.Unlock(&s.ptl[l], name)
	default:
		x.UnlockWord(s.wm, c.wmLock(l), &s.ptl[l], name)
	}
}

// exitIfDone ends, with memory=2, a reclaimer's or syscall thread's claim
// on old messages in the step that finishes it (model.Exec.ExitMem).
func (s *state) exitIfDone(x *model.Exec, done bool) {
	if done && s.c.arm {
		x.ExitMem(s.wm)
	}
}

// lockNote and unlockNote tell, in a step's label, that the mutation took
// the lock's ordering away; drainCAS names the drain's cmpxchg.
func (c *config) lockNote() string {
	if c.weaken == weakLock {
		return " (queued_spin_lock: atomic_try_cmpxchg_relaxed, no acquire: mutation)"
	}
	return ""
}

func (c *config) unlockNote() string {
	if c.weaken == weakUnlock {
		return " (queued_spin_unlock: WRITE_ONCE, no release: mutation)"
	}
	return ""
}

func (c *config) drainCAS() string {
	if c.weaken == weakDrainCAS {
		return "atomic_cmpxchg_relaxed (mutation)"
	}
	return "atomic_cmpxchg"
}
