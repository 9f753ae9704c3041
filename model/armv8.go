package model

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ARMv8 memory, after the Promising-ARM model of Pulte, Pichon-Pharabod,
// Kang, Lee and Hur ("Promising-ARM/RISC-V: a simpler and faster
// operational concurrency model", PLDI 2019), which is proved equivalent
// to the ARMv8 axiomatic model of its time, extended where the current
// axiomatic model of herdtools7's aarch64.cat orders more finely (pick
// dependencies, no-return atomics, the read after a read-modify-write).
//
// Memory is a list of messages (writes), the timestamp of a message its
// position in the list (1, 2, ...; 0 is the initial value of every word):
// the order of the list, per word, is the coherence order, so the value of
// a word at the end of an execution is that of its last message. Each
// thread keeps views: timestamps below which what it does next must not
// be placed. A read of word a by a thread may read any message of a not
// older than the newest one its views already order before it; a write is
// placed after everything its views order before it. Each view is a Dep,
// a pair of timestamps: the first bounds reads and writes (address and
// data dependencies, barriers, acquire), the second writes only (control
// dependencies and herd's pick dependencies through a conditional
// select, which order later writes and nothing else).
//
// A thread may also promise a write ahead of its program (WithARMv8's
// promise steps): the message enters memory at once, other threads may
// read it, and the thread must later fulfil it with a write of the same
// word and value placed exactly there. A promise is only made when the
// thread, running alone from that state, can fulfil it (certification);
// this is how loads are reordered after later stores (load buffering).

// A Dep is the dependency a value carries under ARMv8: the view of the
// reads it was computed from. Registers of a litmus test and values a
// protocol passes from a load to a later access carry one, so that an
// address, data or control dependency orders the later access after the
// load, as the architecture does. Under sequential consistency and TSO a
// Dep is always zero and ignored. The zero Dep is no dependency.
type Dep struct {
	r, w uint32 // r bounds every later access, w only writes; w >= r
}

// Join is the dependency on both d and e (a value computed from both).
func (d Dep) Join(e Dep) Dep {
	return Dep{max(d.r, e.r), max(d.w, e.w)}
}

// Ctrl is d weakened to a control dependency: it orders later writes
// only (the condition of a branch, the flags a conditional select reads).
func (d Dep) Ctrl() Dep { return Dep{0, d.w} }

// IsZero reports whether d is no dependency.
func (d Dep) IsZero() bool { return d == Dep{} }

func (d Dep) String() string {
	if d.r == d.w {
		return strconv.FormatUint(uint64(d.r), 10)
	}
	return strconv.FormatUint(uint64(d.r), 10) + "/" + strconv.FormatUint(uint64(d.w), 10)
}

func at(t uint32) Dep { return Dep{t, t} }

// An Order is the ordering annotation of an access.
type Order uint8

// The orderings, with their ARMv8 instructions and Linux primitives.
const (
	// Plain: LDR, STR; READ_ONCE, WRITE_ONCE, a relaxed atomic.
	Plain Order = iota
	// Acquire: LDAR (ordered after an earlier STLR); smp_load_acquire,
	// and the read of an acquire read-modify-write (SWPA, CASA, LDADDA).
	Acquire
	// AcquirePC: LDAPR, a weaker acquire not ordered after an earlier
	// release (RCpc).
	AcquirePC
	// Release: STLR; smp_store_release, and the write of a release
	// read-modify-write (SWPL, CASL).
	Release
	// AcqRel: a read-modify-write both acquire and release (SWPAL, CASAL);
	// everything after it is ordered after its write too.
	AcqRel
)

var orderNames = [...]string{"plain", "acquire", "acquire-pc", "release", "acq-rel"}

func (o Order) String() string { return orderNames[o] }

func (o Order) acquire() bool { return o == Acquire || o == AcquirePC || o == AcqRel }
func (o Order) release() bool { return o == Release || o == AcqRel }

// A Barrier is a memory barrier.
type Barrier uint8

// The barriers.
const (
	// BarrierFull: DMB ISH (DMB SY); smp_mb. Under TSO, MFENCE.
	BarrierFull Barrier = iota
	// BarrierLoad: DMB ISHLD; smp_rmb. Orders earlier reads before
	// everything later. A compiler barrier under SC and TSO.
	BarrierLoad
	// BarrierStore: DMB ISHST; smp_wmb. Orders earlier writes before later
	// writes. A compiler barrier under SC and TSO.
	BarrierStore
	// BarrierISB: ISB. Orders what an earlier control dependency or
	// address reaches before later reads. Nothing under SC and TSO.
	BarrierISB
)

var barrierNames = [...]string{"dmb ish", "dmb ishld", "dmb ishst", "isb"}

func (b Barrier) String() string { return barrierNames[b] }

// An RMWOp is the operation of an atomic read-modify-write.
type RMWOp uint8

// The read-modify-write operations.
const (
	RMWSwap RMWOp = iota // SWP; xchg
	RMWAdd               // LDADD; atomic_fetch_add
	RMWOr                // LDSET; atomic_fetch_or
	RMWCAS               // CAS; cmpxchg
)

// An RMW describes an atomic read-modify-write for Exec.Atomic.
type RMW struct {
	Op RMWOp
	// Arg is the value stored (swap, the new value of a CAS) or the
	// operand (add, or).
	Arg uint64
	// Expect is the value a CAS compares with.
	Expect uint64
	// Order: Acquire orders everything later after the read, Release the
	// write after everything earlier, AcqRel both and everything later
	// after the write.
	Order Order
	// NoRet: the value read goes nowhere (herd's no-return forms, such
	// as STADD, LDADD with the zero register, CAS with WZR as Rs): the
	// read is not acquire and DMB LD does not order it.
	NoRet bool
	// Await: a CAS that spins until it succeeds (spin_lock): the step
	// blocks while no value it could read equals Expect.
	Await bool
	// Addr, ArgDep, ExpectDep are the dependencies of the address and of
	// the two operands.
	Addr, ArgDep, ExpectDep Dep
}

// armMem is the state of an ARMv8 memory.
type armMem struct {
	init  []uint64 // the initial value of each word (timestamp 0)
	msgs  []armMsg // message t is msgs[t-1]
	th    []armThread
	stuck bool // a thread cannot fulfil its promises: no execution goes on
	// started: a thread of the machine has stepped (WithARMv8PromiseFirst
	// makes promises only before).
	started bool
}

type armMsg struct {
	addr Addr
	val  uint64
	tid  int
}

type armThread struct {
	coh, fwd, fwdRMW    []Dep    // per word: coherence view; forwarding view of the thread's last write, and of its read when it was a read-modify-write
	fwdT                []uint32 // per word: timestamp of the thread's last write (0: none)
	vrOld, vrRet, vwOld Dep      // joins of every read, of every read but no-return ones, of every write
	vrNew, vwNew        Dep      // what later reads, later writes are ordered after
	vCAP, vRel          Dep      // control dependencies and addresses so far; the last release write
	prom                []uint32 // outstanding promises, ascending
	// rest: what the thread will still do with memory (WithARMv8NoPromises,
	// for compaction): restAny, or restNone after ExitMem, or restLock+a
	// after ReleaseWordAndPark(a): nothing but AcquireWord(a).
	rest uint32
}

const (
	restAny  = 0
	restNone = 1
	restLock = 2
)

func (a *armMem) clone() *armMem {
	c := &armMem{init: a.init, msgs: slices.Clone(a.msgs), th: make([]armThread, len(a.th)), stuck: a.stuck, started: a.started}
	for i := range a.th {
		c.th[i].copyFrom(&a.th[i])
	}
	return c
}

func (th *armThread) copyFrom(s *armThread) {
	coh, fwd, fwdRMW, fwdT, prom := th.coh, th.fwd, th.fwdRMW, th.fwdT, th.prom
	*th = *s
	th.coh = append(coh[:0], s.coh...)
	th.fwd = append(fwd[:0], s.fwd...)
	th.fwdRMW = append(fwdRMW[:0], s.fwdRMW...)
	th.fwdT = append(fwdT[:0], s.fwdT...)
	th.prom = append(prom[:0], s.prom...)
}

// EnableARMv8 switches m to the ARMv8 model with one thread state per
// named thread (thread t of the machine is threads[t]). Call it while
// building the initial state, after the words' initial values are set
// (Init) or before: Init sets a word's initial message either way.
// Use WithARMv8 to run a machine under it: its promise steps are what
// lets a load be reordered after a later store.
func (m *Mem) EnableARMv8(threads ...string) {
	a := &armMem{init: slices.Clone(m.words), th: make([]armThread, len(threads))}
	for i := range a.th {
		n := len(m.words)
		a.th[i] = armThread{coh: make([]Dep, n), fwd: make([]Dep, n), fwdRMW: make([]Dep, n), fwdT: make([]uint32, n)}
	}
	m.arm = a
	m.threads = threads
}

// ARMv8 reports whether m follows the ARMv8 model.
func (m Mem) ARMv8() bool { return m.arm != nil }

// Promises is the number of writes thread t has promised and not yet
// fulfilled (0 unless ARMv8).
func (m Mem) Promises(t int) int {
	if m.arm == nil || t < 0 || t >= len(m.arm.th) {
		return 0
	}
	return len(m.arm.th[t].prom)
}

// Stuck reports whether, under ARMv8, a thread of the state cannot fulfil
// its promises: the state ends no execution and its successors are none.
func (m Mem) Stuck() bool { return m.arm != nil && m.arm.stuck }

func (a *armMem) appendKey(b []byte) []byte {
	b = appendUvarint(b, uint64(len(a.msgs)))
	for _, e := range a.msgs {
		b = appendUvarint(b, uint64(e.addr))
		b = appendUvarint(b, e.val)
		b = appendUvarint(b, uint64(e.tid))
	}
	var flags byte
	if a.stuck {
		flags |= 1
	}
	if a.started {
		flags |= 2
	}
	b = append(b, flags)
	dep := func(b []byte, d Dep) []byte {
		return appendUvarint(appendUvarint(b, uint64(d.r)), uint64(d.w))
	}
	for i := range a.th {
		th := &a.th[i]
		for _, d := range [...]Dep{th.vrOld, th.vrRet, th.vwOld, th.vrNew, th.vwNew, th.vCAP, th.vRel} {
			b = dep(b, d)
		}
		for w := range th.coh {
			b = dep(b, th.coh[w])
			b = appendUvarint(b, uint64(th.fwdT[w]))
			b = dep(b, th.fwd[w])
			b = dep(b, th.fwdRMW[w])
		}
		b = appendUvarint(b, uint64(th.rest))
		b = appendUvarint(b, uint64(len(th.prom)))
		for _, p := range th.prom {
			b = appendUvarint(b, uint64(p))
		}
	}
	return b
}

type armDecoder struct {
	b   []byte
	err error
}

func (d *armDecoder) uv(what string, limit uint64) uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) > 0 && d.b[0] < 0x80 && uint64(d.b[0]) <= limit {
		v := uint64(d.b[0])
		d.b = d.b[1:]
		return v
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > limit {
		d.err = fmt.Errorf("memory: ARMv8 %s: bad encoding", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *armDecoder) dep(limit uint64) Dep {
	r := uint32(d.uv("view", limit))
	w := uint32(d.uv("view", limit))
	if d.err == nil && w < r {
		d.err = fmt.Errorf("memory: ARMv8 view %d/%d: not canonical", r, w)
	}
	return Dep{r, w}
}

func (a *armMem) decodeFrom(b []byte, words int) ([]byte, error) {
	d := &armDecoder{b: b}
	n := d.uv("message count", uint64(len(b)))
	a.msgs = a.msgs[:0]
	for i := uint64(0); i < n && d.err == nil; i++ {
		addr := d.uv("message address", uint64(words-1))
		val := d.uv("message value", ^uint64(0))
		tid := d.uv("message thread", uint64(len(a.th)-1))
		a.msgs = append(a.msgs, armMsg{Addr(addr), val, int(tid)})
	}
	flags := d.uv("flags", 3)
	a.stuck, a.started = flags&1 != 0, flags&2 != 0
	lim := uint64(len(a.msgs))
	for i := range a.th {
		th := &a.th[i]
		for _, p := range [...]*Dep{&th.vrOld, &th.vrRet, &th.vwOld, &th.vrNew, &th.vwNew, &th.vCAP, &th.vRel} {
			*p = d.dep(lim)
		}
		for w := range th.coh {
			th.coh[w] = d.dep(lim)
			th.fwdT[w] = uint32(d.uv("forward", lim))
			th.fwd[w] = d.dep(lim)
			th.fwdRMW[w] = d.dep(lim)
		}
		th.rest = uint32(d.uv("rest", uint64(restLock+words-1)))
		k := d.uv("promises", lim)
		th.prom = th.prom[:0]
		for j := uint64(0); j < k; j++ {
			th.prom = append(th.prom, uint32(d.uv("promise", lim)))
		}
	}
	return d.b, d.err
}

// vars renders the messages ("x=1@P0 y=2@P1", oldest first) and each
// thread's outstanding promises.
func (a *armMem) vars(m Mem) []Var {
	var s strings.Builder
	for i, e := range a.msgs {
		if i > 0 {
			s.WriteByte(' ')
		}
		fmt.Fprintf(&s, "%s=%d@%s", m.names[e.addr], e.val, m.threadName(e.tid))
	}
	out := []Var{{Name: "messages", Value: "[" + s.String() + "]"}}
	for t := range a.th {
		var p []string
		for _, ts := range a.th[t].prom {
			e := a.msgs[ts-1]
			p = append(p, fmt.Sprintf("%s=%d@%d", m.names[e.addr], e.val, ts))
		}
		out = append(out, Var{Name: "promises[" + m.threadName(t) + "]", Value: "{" + strings.Join(p, "; ") + "}"})
	}
	if a.stuck {
		out = append(out, Var{Name: "stuck", Value: "true"})
	}
	return out
}

// value is the value of message ts of word a.
func (a *armMem) value(w Addr, ts uint32) uint64 {
	if ts == 0 {
		return a.init[w]
	}
	return a.msgs[ts-1].val
}

func (th *armThread) promised(ts uint32) bool {
	_, ok := slices.BinarySearch(th.prom, ts)
	return ok
}

// readable lists the timestamps of the messages of word w thread t may
// read with the read bound bound: the newest message of w at or below
// max(bound, coherence), and every newer one, but the thread's own
// outstanding promises.
func (a *armMem) readable(t int, w Addr, bound uint32) []uint32 {
	th := &a.th[t]
	bound = max(bound, th.coh[w].r)
	var base uint32
	for ts := uint32(1); ts <= bound && int(ts) <= len(a.msgs); ts++ {
		if a.msgs[ts-1].addr == w {
			base = ts
		}
	}
	var out []uint32
	if !th.promised(base) {
		out = append(out, base)
	}
	for ts := bound + 1; int(ts) <= len(a.msgs); ts++ {
		if a.msgs[ts-1].addr == w && !th.promised(ts) {
			out = append(out, ts)
		}
	}
	return out
}

// readView is the view a read of message ts of word w gets (forwarding
// from the thread's own last write to w gives that write's dependencies
// instead of its timestamp).
func (a *armMem) readView(t int, w Addr, ts uint32, acquire bool) Dep {
	th := &a.th[t]
	if ts != 0 && th.fwdT[w] == ts {
		v := th.fwd[w]
		if acquire {
			v = v.Join(th.fwdRMW[w])
		}
		return v
	}
	return at(ts)
}

// readDone records a read of word w with post view post.
func (a *armMem) readDone(t int, w Addr, post, addr Dep, o Order, noRet bool) {
	th := &a.th[t]
	th.coh[w] = th.coh[w].Join(post)
	th.vrOld = th.vrOld.Join(post)
	if !noRet {
		th.vrRet = th.vrRet.Join(post)
	}
	th.vCAP = th.vCAP.Join(addr)
	if o.acquire() && !noRet {
		th.vrNew = th.vrNew.Join(post)
		th.vwNew = th.vwNew.Join(post)
	}
}

// writeSlots lists where thread t may place a write of v to w after pre:
// each outstanding promise of (w, v) above pre and the coherence view (and
// with no message of w between it and after, when after >= 0: the read of
// a read-modify-write), then 0 for a new message at the end of memory
// (when after < 0 or the read was of the newest message of w).
func (a *armMem) writeSlots(t int, w Addr, v uint64, pre Dep, after int64) []uint32 {
	th := &a.th[t]
	var out []uint32
	for _, p := range th.prom {
		e := a.msgs[p-1]
		if e.addr != w || e.val != v || p <= pre.w || p <= th.coh[w].w {
			continue
		}
		if after >= 0 && (int64(p) <= after || a.between(w, uint32(after), p)) {
			continue
		}
		out = append(out, p)
	}
	if after < 0 || !a.between(w, uint32(after), uint32(len(a.msgs))+1) {
		out = append(out, 0)
	}
	return out
}

// between reports whether a message of w lies strictly between lo and hi.
func (a *armMem) between(w Addr, lo, hi uint32) bool {
	for ts := lo + 1; ts < hi && int(ts) <= len(a.msgs); ts++ {
		if a.msgs[ts-1].addr == w {
			return true
		}
	}
	return false
}

// place writes v to w at slot (a promise, or 0: a new message) and
// returns the timestamp; fresh reports a new message.
func (m Mem) armPlace(t int, w Addr, v uint64, slot uint32) (ts uint32, fresh bool) {
	a := m.arm
	th := &a.th[t]
	if slot != 0 {
		i, _ := slices.BinarySearch(th.prom, slot)
		th.prom = slices.Delete(th.prom, i, i+1)
		return slot, false
	}
	a.msgs = append(a.msgs, armMsg{w, v, t})
	m.words[w] = v
	return uint32(len(a.msgs)), true
}

// writeDone records a write of w at ts.
func (a *armMem) writeDone(t int, w Addr, ts uint32, addr, fwd, fwdRMW Dep, o Order) {
	th := &a.th[t]
	th.coh[w] = th.coh[w].Join(at(ts))
	th.vwOld = th.vwOld.Join(at(ts))
	th.vCAP = th.vCAP.Join(addr)
	if o.release() {
		th.vRel = th.vRel.Join(at(ts))
	}
	th.fwdT[w] = ts
	th.fwd[w] = fwd
	th.fwdRMW[w] = fwdRMW
}

// armThread returns the stepping thread's index under ARMv8, or -1 after
// reporting a modelling error.
func (x *Exec) armThread(m Mem) int {
	if x.thread < 0 || x.thread >= len(m.arm.th) {
		x.Fail("memory", "thread %d accesses memory under ARMv8 but has no thread state (%d)", x.thread, len(m.arm.th))
		return -1
	}
	return x.thread
}

// armAccess is armThread for an access of word a: it also holds the
// thread to what it said it would still do (ExitMem, ReleaseWordAndPark).
// acquire: the access is AcquireWord's, which may end a parking on a
// (Atomic ends it once the lock is taken).
func (x *Exec) armAccess(m Mem, a Addr, acquire bool) int {
	t := x.armThread(m)
	if t < 0 {
		return t
	}
	th := &m.arm.th[t]
	switch {
	case th.rest == restAny:
	case th.rest == restNone:
		x.Fail("memory", "%s accesses %s after it said it makes no more accesses (ExitMem)", m.threadName(t), m.names[a])
	case th.rest-restLock == uint32(a) && acquire:
	default:
		x.Fail("memory", "%s accesses %s while parked on %s: only re-taking that lock may come next (ReleaseWordAndPark)", m.threadName(t), m.names[a], m.names[th.rest-restLock])
	}
	return t
}

// pick draws one of n alternatives when there is more than one.
func (x *Exec) pick(n int) int {
	if n <= 1 {
		return 0
	}
	return x.Choose(n)
}

// LoadDep reads word a with ordering o, its address depending on addr,
// and returns the value and the dependency a value computed from it
// carries. Under SC and TSO it is Load (o and the dependencies do not
// matter) and the Dep is zero. Under ARMv8 the step draws the message it
// reads when more than one is allowed.
func (x *Exec) LoadDep(m Mem, a Addr, o Order, addr Dep) (uint64, Dep) {
	if m.arm == nil {
		return x.Load(m, a), Dep{}
	}
	x.access(m, OpLoad, a, true, false)
	t := x.armAccess(m, a, false)
	if t < 0 {
		return m.words[a], Dep{}
	}
	am := m.arm
	th := &am.th[t]
	pre := addr.Join(th.vrNew)
	if o == Acquire {
		pre = pre.Join(th.vRel)
	}
	cands := am.readable(t, a, pre.r)
	if len(cands) == 0 {
		x.Fail("memory", "no message of %s is readable", m.names[a])
		return 0, Dep{}
	}
	ts := cands[x.pick(len(cands))]
	post := pre.Join(am.readView(t, a, ts, o.acquire()))
	am.readDone(t, a, post, addr, o, false)
	return am.value(a, ts), post
}

// StoreDep writes v to word a with ordering o, its address depending on
// addr and its value on data. Under SC and TSO it is Store. Under ARMv8
// the step draws where the write goes when it can fulfil a promise.
func (x *Exec) StoreDep(m Mem, a Addr, v uint64, o Order, addr, data Dep) {
	if m.arm == nil {
		x.Store(m, a, v)
		return
	}
	x.access(m, OpStore, a, false, true)
	t := x.armAccess(m, a, false)
	if t < 0 {
		return
	}
	am := m.arm
	th := &am.th[t]
	pre := addr.Join(data).Join(th.vwNew).Join(th.vCAP)
	if o.release() {
		pre = pre.Join(th.vrOld).Join(th.vwOld)
	}
	slots := am.writeSlots(t, a, v, pre, -1)
	ts, fresh := m.armPlace(t, a, v, slots[x.pick(len(slots))])
	if fresh {
		x.fresh = append(x.fresh, freshWrite{a, v})
	}
	am.writeDone(t, a, ts, addr, addr.Join(data), Dep{}, o)
}

// Atomic is an atomic read-modify-write of word a; it returns the value
// read, the dependency of that value, and whether it wrote (a CAS that
// failed did not). Under SC it acts at once; under TSO it drains the
// thread's store buffer first, as a locked instruction does. A CAS with
// Await blocks the step until it can succeed.
//
// Under ARMv8 the read and the write are placed as Promising-ARM places
// them, with nothing of the word between them; the step draws the
// message read and the write's place, and, for a successful CAS, which
// of herd's two dependency shapes its returned value has: from the
// expected value (and, as a control dependency, the read), or from the
// read. A read-modify-write whose read is acquire and whose write is
// release (AcqRel) orders everything later after its write.
func (x *Exec) Atomic(m Mem, a Addr, r RMW) (old uint64, d Dep, wrote bool) {
	if m.arm == nil {
		if r.Op == RMWCAS && r.Await && m.PeekThread(x.thread, a) != r.Expect {
			x.Block()
			return 0, Dep{}, false
		}
		switch r.Op {
		case RMWSwap:
			return x.Xchg(m, a, r.Arg), Dep{}, true
		case RMWAdd:
			return x.FetchAdd(m, a, r.Arg), Dep{}, true
		case RMWOr:
			return x.FetchOr(m, a, r.Arg), Dep{}, true
		}
		old = x.CAS(m, a, r.Expect, r.Arg)
		return old, Dep{}, old == r.Expect
	}
	t := x.armAccess(m, a, r.Order.acquire() && r.Op == RMWCAS && r.Await)
	if t < 0 {
		return 0, Dep{}, false
	}
	am := m.arm
	th := &am.th[t]
	ro := r.Order
	if r.NoRet {
		ro = Plain
	}
	pre := r.Addr.Join(th.vrNew)
	if ro == Acquire || ro == AcqRel {
		pre = pre.Join(th.vRel)
	}
	// Every (message read, place of the write, shape) the step may take.
	type alt struct {
		ts, slot uint32
		write    bool
		shape    int // successful CAS: 0 from the read, 1 from Expect
	}
	var alts []alt
	for _, ts := range am.readable(t, a, pre.r) {
		v := am.value(a, ts)
		nv, write := rmwResult(r, v)
		// A spinning CAS's value is the one it expected: the shape of its
		// dependency does not matter.
		if !write {
			if !r.Await {
				alts = append(alts, alt{ts: ts})
			}
			continue
		}
		post := pre.Join(am.readView(t, a, ts, ro.acquire()))
		wpre := r.Addr.Join(r.ArgDep).Join(r.ExpectDep.Ctrl()).Join(post).Join(th.vwNew).Join(th.vCAP)
		if r.Order.release() {
			wpre = wpre.Join(th.vrOld).Join(th.vwOld)
		}
		for _, slot := range am.writeSlots(t, a, nv, wpre, int64(ts)) {
			alts = append(alts, alt{ts: ts, slot: slot, write: true})
			if r.Op == RMWCAS && !r.NoRet && !r.Await {
				alts = append(alts, alt{ts: ts, slot: slot, write: true, shape: 1})
			}
		}
	}
	if len(alts) == 0 {
		if r.Await {
			x.Block()
			return 0, Dep{}, false
		}
		x.Fail("memory", "no message of %s is readable by a read-modify-write", m.names[a])
		return 0, Dep{}, false
	}
	if len(alts) > MaxAlternatives {
		x.Fail("memory", "a read-modify-write of %s has %d alternatives, more than %d", m.names[a], len(alts), MaxAlternatives)
		return 0, Dep{}, false
	}
	c := alts[x.pick(len(alts))]
	op := [...]Op{RMWSwap: OpXchg, RMWAdd: OpFetchAdd, RMWOr: OpFetchOr, RMWCAS: OpCAS}[r.Op]
	x.access(m, op, a, true, c.write)
	old = am.value(a, c.ts)
	post := pre.Join(am.readView(t, a, c.ts, ro.acquire()))
	am.readDone(t, a, post, r.Addr, ro, r.NoRet)
	d = post
	if !c.write {
		return old, d, false
	}
	if c.shape == 1 {
		d = r.ExpectDep.Join(r.ExpectDep.Join(post).Ctrl())
	}
	nv, _ := rmwResult(r, old)
	ts, fresh := m.armPlace(t, a, nv, c.slot)
	if fresh {
		x.fresh = append(x.fresh, freshWrite{a, nv})
	}
	data := r.Addr.Join(r.ArgDep)
	switch r.Op {
	case RMWAdd, RMWOr: // the value written is computed from the value read
		data = data.Join(post)
	case RMWCAS: // the write happens only if the comparison succeeds
		data = data.Join(r.ExpectDep.Join(post).Ctrl())
	}
	am.writeDone(t, a, ts, r.Addr, data, post, r.Order)
	if th.rest == restLock+uint32(a) {
		th.rest = restAny
	}
	if r.Order == AcqRel && !r.NoRet {
		th.vrNew = th.vrNew.Join(at(ts))
		th.vwNew = th.vwNew.Join(at(ts))
	}
	return old, d, true
}

// rmwResult is the value r writes when it reads v, and whether it writes.
func rmwResult(r RMW, v uint64) (uint64, bool) {
	switch r.Op {
	case RMWSwap:
		return r.Arg, true
	case RMWAdd:
		return v + r.Arg, true
	case RMWOr:
		return v | r.Arg, true
	}
	return r.Arg, v == r.Expect
}

// Barrier is a memory barrier of kind b. Under SC it is a fence in the
// footprint (BarrierFull) or nothing; under TSO BarrierFull drains the
// thread's store buffer (MFENCE) and the others are compiler barriers;
// under ARMv8 it orders as DMB ISH, DMB ISHLD, DMB ISHST or ISB do.
func (x *Exec) Barrier(m Mem, b Barrier) {
	if m.arm == nil {
		if b == BarrierFull {
			x.Fence(m)
		}
		return
	}
	x.footprint = append(x.footprint, Access{Op: OpFence, Addr: -1})
	t := x.armThread(m)
	if t < 0 {
		return
	}
	m.arm.barrier(t, b)
}

func (a *armMem) barrier(t int, b Barrier) {
	th := &a.th[t]
	switch b {
	case BarrierFull:
		v := th.vrOld.Join(th.vwOld)
		th.vrNew, th.vwNew = th.vrNew.Join(v), th.vwNew.Join(v)
	case BarrierLoad:
		th.vrNew, th.vwNew = th.vrNew.Join(th.vrRet), th.vwNew.Join(th.vrRet)
	case BarrierStore:
		th.vwNew = th.vwNew.Join(th.vwOld)
	case BarrierISB:
		th.vrNew = th.vrNew.Join(at(th.vCAP.w))
	}
}

// Branch says that the stepping thread's control flow depends on a value
// with dependency d: later writes are ordered after it (and, after an
// ISB, later reads). Nothing under SC and TSO.
func (x *Exec) Branch(m Mem, d Dep) {
	if m.arm == nil {
		return
	}
	if t := x.armThread(m); t >= 0 {
		th := &m.arm.th[t]
		th.vCAP = th.vCAP.Join(d)
	}
}

// armAccess performs the SC-vocabulary operations under ARMv8: plain
// accesses without dependencies, read-modify-writes that are both acquire
// and release with a full barrier after them (the mapping of Linux's
// value-returning atomics), and Fence as DMB ISH.
func (x *Exec) armLoad(m Mem, a Addr) uint64 {
	v, _ := x.LoadDep(m, a, Plain, Dep{})
	return v
}

func (x *Exec) armRMW(m Mem, a Addr, r RMW) uint64 {
	r.Order = AcqRel
	old, _, _ := x.Atomic(m, a, r)
	x.Barrier(m, BarrierFull)
	return old
}

type freshWrite struct {
	addr Addr
	val  uint64
}

// AppendKey appends d's canonical encoding (two uvarints), for states
// that keep dependencies beside their values.
func (d Dep) AppendKey(b []byte) []byte {
	return appendUvarint(appendUvarint(b, uint64(d.r)), uint64(d.w))
}

// DecodeDep reads a Dep encoded by AppendKey from the start of b and
// returns it and the rest of b.
func DecodeDep(b []byte) (Dep, []byte, error) {
	d := &armDecoder{b: b}
	v := d.dep(1<<32 - 1)
	return v, d.b, d.err
}
