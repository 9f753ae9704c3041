package model

// Protocols loop: a vCPU enters and leaves cpu_exec for ever, a reclaimer
// defers flushes again and again. Under ARMv8 every write is a new message,
// so a machine that loops has a message list without end and, taken as it
// is, no finite state space. Two things make it finite again, and
// WithARMv8NoPromises does both.
//
// Compaction. A message of word w that no thread can read any more is
// dropped, and the timestamps are renumbered. Thread t's reads of w are
// bounded below, for ever, by the newest message of w at or below
// max(coh[w], vrNew): both views only grow. A message of w older than
// that floor for every thread is dead. Every view is then mapped to the
// number of live messages at or below it: a monotone map that keeps each
// comparison between a view and a live timestamp, and between two views,
// which are the only comparisons the rules make once the dead are gone
// (the newest message of w below a bound is never dead, and a
// read-modify-write's read never is). Two states that differ only in
// what nobody can read become the same state.
//
// No promises. Certification runs one thread alone until its promises
// are fulfilled; a thread that loops writes without end while the others
// stand still, and nothing dies, so certification itself would not end.
// WithARMv8NoPromises makes no promise, so a thread's writes enter memory
// in its program order, each after the thread's earlier reads. It keeps
// the reorderings that come from reading: a load that passes an earlier
// store (store buffering), loads that read out of order, a reader that
// sees an old value. It loses those that need a write to be seen before
// an earlier access of its thread: load buffering (LB), and two plain
// stores seen out of order by a reader that orders its own reads (MP
// with an acquire or a barrier on the reading side only). So a dropped
// smp_mb() between a store and a load is found, and a dropped smp_wmb()
// or a release weakened to a plain store is not: the model writes in
// order anyway. The small tests of model's armv8_test.go show the
// difference.

// WithARMv8NoPromises runs m under the ARMv8 model as WithARMv8 does,
// without promises (so with a thread's writes in program order: see
// above), and with the message list compacted after every step.
// The result has m's threads and no more.
//
// m must keep no Dep across steps: compaction renumbers the views inside
// Mem, not the Deps a machine keeps in its own state. LoadDep, StoreDep,
// Atomic, Barrier and Branch within one step are fine, and so is Fence.
//
// m's progress properties are left out: the model lets a thread read the
// same old message for ever, which the hardware does not (a write becomes
// visible to every thread in finite time), so a lasso the explorer found
// could rest on an unfair read; the result reports them as not checked.
// Invariants are checked at every state: without promises every state is
// one a real execution reaches.
func WithARMv8NoPromises(m Machine, mem func(State) *Mem) Machine {
	a := &armMachine{m: m, mem: mem, inner: m.Threads(), noPromises: true}
	a.names = a.inner
	a.props = m.Properties()
	a.props.Progress = nil
	return a
}

// compact drops the messages no thread can read and renumbers the views
// (see above). It does nothing while a promise is outstanding. next(t),
// when not 0, is the lock word (plus one) thread t takes with LockWord
// before any other access in its next step; compact asks it only of the
// threads whose views alone keep some message alive, since finding it out
// costs a step.
func (a *armMem) compact(next func(t int) uint32) {
	if len(a.msgs) == 0 {
		return
	}
	for i := range a.th {
		if len(a.th[i].prom) > 0 {
			return
		}
	}
	words := len(a.init)
	// floors[t][w]: the oldest message of w thread t can still read
	// (^0: none, the thread reads nothing any more); floor[w] their
	// minimum.
	// One allocation for the step's scratch: a floor per thread and word,
	// the minimum, the newest message of each word.
	buf := make([]uint32, (len(a.th)+2)*words)
	floors := make([][]uint32, len(a.th))
	floor, newest := buf[:words], buf[words:2*words]
	for ts := range a.msgs {
		newest[a.msgs[ts].addr] = uint32(ts + 1)
	}
	for i := range a.th {
		floors[i] = buf[(i+2)*words : (i+3)*words]
		lock := uint32(0)
		if r := a.th[i].rest; r >= restLock {
			lock = r - restLock + 1
		}
		a.floors(i, lock, floors[i])
	}
	minimum := func() {
		for w := range floor {
			floor[w] = ^uint32(0)
			for i := range floors {
				floor[w] = min(floor[w], floors[i][w])
			}
		}
	}
	minimum()
	// Ask the threads whose floor is the minimum of a word that has
	// newer messages, until none is left to ask: raising one thread's
	// floor can make another's the minimum.
	asked := make([]bool, len(a.th))
	for next != nil {
		raised := false
		for i := range a.th {
			if asked[i] || a.th[i].rest != restAny {
				continue
			}
			holds := false // thread i's floor keeps an older message of some word
			for w := range floor {
				if floors[i][w] == floor[w] && floor[w] < newest[w] {
					holds = true
					break
				}
			}
			if !holds {
				continue
			}
			asked[i] = true
			if lock := next(i); lock != 0 {
				a.floors(i, lock, floors[i])
				raised = true
			}
		}
		if !raised {
			break
		}
		minimum()
	}
	// rank[ts]: the live messages at or below ts, the new timestamp.
	rank := make([]uint32, len(a.msgs)+1)
	kept := a.msgs[:0] // in place: a message moves only down
	for ts := uint32(1); int(ts) <= len(a.msgs); ts++ {
		e := a.msgs[ts-1]
		if ts >= floor[e.addr] {
			kept = append(kept, e)
		}
		rank[ts] = uint32(len(kept))
	}
	if len(kept) == len(a.msgs) {
		return
	}
	live := func(ts uint32) bool { return ts == 0 || rank[ts] != rank[ts-1] }
	re := func(d Dep) Dep { return Dep{rank[d.r], rank[d.w]} }
	for i := range a.th {
		th := &a.th[i]
		for _, p := range [...]*Dep{&th.vrOld, &th.vrRet, &th.vwOld, &th.vrNew, &th.vwNew, &th.vCAP, &th.vRel} {
			*p = re(*p)
		}
		for w := range th.coh {
			th.coh[w] = re(th.coh[w])
			if !live(th.fwdT[w]) {
				// The thread can no longer read its own last write of w:
				// what forwarding from it would give does not matter.
				th.fwdT[w], th.fwd[w], th.fwdRMW[w] = 0, Dep{}, Dep{}
				continue
			}
			th.fwdT[w] = rank[th.fwdT[w]]
			th.fwd[w] = re(th.fwd[w])
			th.fwdRMW[w] = re(th.fwdRMW[w])
		}
	}
	a.msgs = kept
}

// floors sets out[w] to the oldest message of w (0: the initial value)
// thread t can still read, or ^0 for every word if it reads nothing any
// more; lock, when not 0, is the lock word (plus one) whose newest
// message the thread's next access reads.
func (a *armMem) floors(t int, lock uint32, out []uint32) {
	th := &a.th[t]
	if th.rest == restNone {
		for w := range out {
			out[w] = ^uint32(0)
		}
		return
	}
	// low bounds every read the thread will make, whatever word.
	low := th.vrNew.r
	if lock != 0 {
		// Its next access is AcquireWord's read-modify-write of a lock
		// word, which reads the newest message of that word: one at
		// least as new as the newest now.
		l := Addr(lock - 1)
		for ts := len(a.msgs); ts >= 1; ts-- {
			if a.msgs[ts-1].addr == l {
				low = max(low, uint32(ts))
				break
			}
		}
	}
	clear(out)
	hi := low
	for _, c := range th.coh {
		hi = max(hi, c.r)
	}
	for ts := uint32(1); ts <= hi && int(ts) <= len(a.msgs); ts++ {
		w := a.msgs[ts-1].addr
		if ts <= max(th.coh[w].r, low) {
			out[w] = ts
		}
	}
}

// LockWord takes mu, whose lock word in m is a, as Lock does, and under
// ARMv8 makes AcquireWord(a) in the same step. Under SC and TSO it is
// Lock. A protocol run by WithARMv8NoPromises should take its locks with
// it: a thread whose next step takes (or waits to take) a lock with
// LockWord will next read the newest message of a, and compaction uses
// that to drop what the thread's older views could still read.
func (x *Exec) LockWord(m Mem, a Addr, mu *Mutex, name string) bool {
	if m.arm != nil && len(x.footprint) == 0 && x.offered == 0 && x.acquireFirst == 0 {
		x.acquireFirst = uint32(a) + 1
	}
	if !x.Lock(mu, name) {
		return false
	}
	x.AcquireWord(m, a)
	return true
}

// UnlockWord releases mu, whose lock word in m is a: ReleaseWord(a), then
// Unlock.
func (x *Exec) UnlockWord(m Mem, a Addr, mu *Mutex, name string) {
	x.ReleaseWord(m, a)
	x.Unlock(mu, name)
}

// AcquireWord is the memory side of taking a lock whose lock word is a, in
// the step that takes the lock's Mutex: under ARMv8 a compare-and-swap of
// a from 0 to the thread's number with acquire order, as arm64's
// pthread_mutex_lock (glibc's CASA or LDAXR/STXR) and queued spin_lock
// (an acquire atomic) take a lock, so that the critical section is
// ordered after the previous holder's ReleaseWord and sees what it wrote.
// Under SC and TSO it does nothing: the Mutex is the lock, and a drain
// is the caller's.
func (x *Exec) AcquireWord(m Mem, a Addr) {
	if m.arm == nil {
		return
	}
	x.Atomic(m, a, RMW{Op: RMWCAS, Expect: 0, Arg: uint64(x.thread + 1), Order: Acquire, Await: true})
}

// ReleaseWordAndPark is ReleaseWord for the release of a condition wait
// (pthread_cond_wait): the thread sleeps, and the next access it makes is
// AcquireWord(a) once woken. Saying so lets compaction drop the messages
// only its old views could still read: the read-modify-write it will make
// reads the newest message of a. Any other access before that fails the
// step with the property "memory".
func (x *Exec) ReleaseWordAndPark(m Mem, a Addr) {
	if m.arm == nil {
		return
	}
	x.ReleaseWord(m, a)
	if t := x.armThread(m); t >= 0 {
		m.arm.th[t].rest = restLock + uint32(a)
	}
}

// ExitMem says that the stepping thread makes no more memory access: it
// is finishing. Under ARMv8 its views no longer keep messages alive for
// compaction; an access after it fails the step with the property
// "memory". Nothing under SC and TSO.
func (x *Exec) ExitMem(m Mem) {
	if m.arm == nil {
		return
	}
	if t := x.armThread(m); t >= 0 {
		m.arm.th[t].rest = restNone
	}
}

// ReleaseWord is the memory side of releasing that lock, in the step that
// releases its Mutex (an unlock, or a condition wait): under ARMv8 a store
// of 0 to a with release order (STLR; glibc's unlock is a release
// exchange, which orders no more for what came before it). Under SC and
// TSO it does nothing.
func (x *Exec) ReleaseWord(m Mem, a Addr) {
	if m.arm == nil {
		return
	}
	x.StoreDep(m, a, 0, Release, Dep{}, Dep{})
}

// Omitted names the progress properties of the wrapped machine that
// WithARMv8NoPromises does not check, and why (nothing under WithARMv8).
func (a *armMachine) Omitted() (names []string, why string) {
	if !a.noPromises {
		return nil, ""
	}
	for _, p := range a.m.Properties().Progress {
		names = append(names, p.Name)
	}
	return names, "progress is not checked under ARMv8 without promises: the model lets a thread read an old value for ever, which the hardware does not"
}

// OmittedBy returns what a wrapper around m (WithARMv8NoPromises, through
// Without and the other wrappers) leaves unchecked of m's properties, and
// why, for a result to say so.
func OmittedBy(m Machine) (names []string, why string) {
	for m != nil {
		if o, ok := m.(interface{ Omitted() ([]string, string) }); ok {
			if names, why := o.Omitted(); len(names) > 0 {
				return names, why
			}
		}
		switch u := m.(type) {
		case interface{ Unwrap() Machine }:
			m = u.Unwrap()
		case interface{ unwrap() *without }:
			m = u.unwrap().m
		default:
			return nil, ""
		}
	}
	return nil, ""
}
