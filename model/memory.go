package model

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
)

// An Addr is the index of a shared word in a Mem.
type Addr int

// Mem is the shared memory of a model: the words that threads communicate
// through (flags, counters, page-table entries). Keep it inside the state
// and access it only through the Exec methods, which record the footprint
// and are the one place where the memory model is implemented.
//
// Execution is sequentially consistent unless EnableTSO switches on x86-TSO
// for the state being built: each thread then has a FIFO store buffer.
// Under TSO
//
//   - Store by thread t appends (word, value) to t's buffer; memory is
//     unchanged until the entry commits;
//   - Load by t returns t's newest buffered value for the word if there is
//     one (store forwarding), else memory;
//   - CAS, Xchg, FetchOr, FetchAdd (locked read-modify-writes) and Fence
//     first drain t's buffer (every entry commits, oldest first) and then
//     act on memory, as x86's locked instructions and MFENCE do;
//   - committing t's oldest entry on its own is a separate step, which
//     WithTSO offers the explorer as a thread of its own.
//
// So stores are never reordered with each other (message passing holds)
// and a load may pass an older store of its own thread to another word
// (store buffering, the one relaxation of TSO). The buffers are part of the
// state: Clone copies them, AppendKey and Vars include them. With TSO off
// nothing of them appears, so keys and variables are byte-identical to a
// memory built before TSO existed.
//
// Peek reads memory, not a buffer: invariants see what other threads could
// read; PeekThread gives a thread's own view.
//
// Partial-order reduction stays sound without treating fences specially:
// a fence or locked RMW records each store it drains as an OpCommit write
// in its step's footprint, and a plain store is recorded as a write of its
// word when it enters the buffer.
//
// The first use settled pvflush's B2(a) (protocols/pvflush, parameters
// memory and pte-clear): with a PTE clear that is a plain store and no
// barrier before the flush reads steal_time, the uncompared cmpxchg of
// ignore-cmpxchg drops a running vCPU holding a stale translation (a
// 23-step counterexample at vcpus=2 flushes=2), while the compared cmpxchg
// of fixed stays correct; with Linux's locked ptep_get_and_clear, TSO
// changes no pvflush verdict. The litmus tests (tso_test.go here and in
// explorer) pin the outcome sets: store buffering reaches r0=r1=0 only
// under TSO and without a fence or locked store; message passing never
// sees the second store without the first.
type Mem struct {
	words []uint64
	names []string
	// sb[t] is thread t's store buffer, oldest first; nil under SC.
	sb      [][]sbEntry
	threads []string // thread names, for Vars and labels (TSO, ARMv8)
	// arm is the ARMv8 state (armv8.go); nil unless EnableARMv8.
	arm *armMem
}

type sbEntry struct {
	addr Addr
	val  uint64
}

// NewMem returns a memory with one zeroed word per name.
func NewMem(names ...string) Mem {
	return Mem{words: make([]uint64, len(names)), names: names}
}

// EnableTSO switches m to x86-TSO with one store buffer per named thread
// (thread t of the machine is threads[t]). Call it while building the
// initial state, before any access; the names appear in Vars
// ("sb[vCPU0]") and in the labels of WithTSO's commit steps.
func (m *Mem) EnableTSO(threads ...string) {
	m.sb = make([][]sbEntry, len(threads))
	m.threads = threads
}

// TSO reports whether m has store buffers.
func (m Mem) TSO() bool { return m.sb != nil }

// Clone returns an independent copy (the names are shared, being
// immutable).
func (m Mem) Clone() Mem {
	c := Mem{words: append([]uint64(nil), m.words...), names: m.names, threads: m.threads}
	if m.arm != nil {
		c.arm = m.arm.clone()
	}
	if m.sb != nil {
		c.sb = make([][]sbEntry, len(m.sb))
		for t, b := range m.sb {
			if len(b) > 0 {
				c.sb[t] = append([]sbEntry(nil), b...)
			}
		}
	}
	return c
}

// CopyFrom sets m to a copy of src, a memory of the same layout, reusing
// m's buffers (for model.Copier states).
func (m *Mem) CopyFrom(src Mem) {
	m.names, m.threads = src.names, src.threads
	m.words = append(m.words[:0], src.words...)
	if src.arm != nil {
		if m.arm == nil || m.arm == src.arm {
			m.arm = src.arm.clone()
		} else {
			a := m.arm
			a.init, a.stuck, a.started = src.arm.init, src.arm.stuck, src.arm.started
			a.msgs = append(a.msgs[:0], src.arm.msgs...)
			if len(a.th) != len(src.arm.th) {
				a.th = make([]armThread, len(src.arm.th))
			}
			for i := range a.th {
				a.th[i].copyFrom(&src.arm.th[i])
			}
		}
	} else {
		m.arm = nil
	}
	if src.sb == nil {
		m.sb = nil
		return
	}
	if len(m.sb) != len(src.sb) {
		m.sb = make([][]sbEntry, len(src.sb))
	}
	for t, b := range src.sb {
		m.sb[t] = append(m.sb[t][:0], b...)
	}
}

// Len is the number of words.
func (m Mem) Len() int { return len(m.words) }

// Name is the name of word a.
func (m Mem) Name(a Addr) string { return m.names[a] }

// Peek reads a word of memory without recording an access: for
// invariants, observers and rendering, never for the protocol's own reads.
// Under TSO it ignores every store buffer (see PeekThread).
func (m Mem) Peek(a Addr) uint64 { return m.words[a] }

// PeekThread reads word a as thread t would (its newest buffered store to
// a, else memory) without recording an access. Under SC it is Peek.
func (m Mem) PeekThread(t int, a Addr) uint64 {
	if v, ok := m.forward(t, a); ok {
		return v
	}
	return m.words[a]
}

// Buffered is the number of stores in thread t's buffer (0 under SC).
func (m Mem) Buffered(t int) int {
	if t < 0 || t >= len(m.sb) {
		return 0
	}
	return len(m.sb[t])
}

// BufferThreads is the number of store buffers (0 under SC).
func (m Mem) BufferThreads() int { return len(m.sb) }

// forward returns thread t's newest buffered value of word a.
func (m Mem) forward(t int, a Addr) (uint64, bool) {
	if t < 0 || t >= len(m.sb) {
		return 0, false
	}
	b := m.sb[t]
	for i := len(b) - 1; i >= 0; i-- {
		if b[i].addr == a {
			return b[i].val, true
		}
	}
	return 0, false
}

// threadName names thread t for Vars and labels.
func (m Mem) threadName(t int) string {
	if t >= 0 && t < len(m.threads) && m.threads[t] != "" {
		return m.threads[t]
	}
	return "thread " + strconv.Itoa(t)
}

// Init sets a word before exploration starts (initial state only).
func (m Mem) Init(a Addr, v uint64) {
	m.words[a] = v
	if m.arm != nil {
		m.arm.init[a] = v
	}
}

// AppendKey appends the canonical encoding of the memory: each word as a
// uvarint, then, under TSO, each buffer's length and entries (address,
// value), as uvarints.
func (m Mem) AppendKey(b []byte) []byte {
	// Most words are small: their one-byte forms are written first, in
	// a loop without a branch, and rewritten as varints only when some
	// word needs more (a varint of a word below 0x80 is that byte).
	words := m.words
	n := len(b)
	b = slices.Grow(b, len(words))[:n+len(words)]
	k := b[n:][:len(words)]
	var or uint64
	for i, w := range words {
		or |= w
		k[i] = byte(w)
	}
	if or >= 0x80 {
		b = b[:n]
		for _, w := range words {
			b = appendUvarint(b, w)
		}
	}
	for _, buf := range m.sb {
		b = binary.AppendUvarint(b, uint64(len(buf)))
		for _, e := range buf {
			b = binary.AppendUvarint(b, uint64(e.addr))
			b = binary.AppendUvarint(b, e.val)
		}
	}
	if m.arm != nil {
		b = m.arm.appendKey(b)
	}
	return b
}

// DecodeFrom reads a memory encoded by AppendKey from the start of b into
// m, which must have the same layout (the words and the TSO setting of the
// memory the encoding came from, as a state's Init builds it), and returns
// the rest of b. It reuses m's buffers.
func (m *Mem) DecodeFrom(b []byte) ([]byte, error) {
	words := m.words
	i := 0
	if len(b) >= len(words) {
		// Most words are small: their one-byte forms are read inline
		// until a word needs more.
		for ; i < len(words) && b[i] < 0x80; i++ {
			words[i] = uint64(b[i])
		}
		b = b[i:]
	}
	for ; i < len(words); i++ {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("memory: word %s: truncated encoding", m.names[i])
		}
		words[i], b = v, b[n:]
	}
	for t := range m.sb {
		k, n := binary.Uvarint(b)
		if n <= 0 || k > uint64(len(b)) {
			return nil, fmt.Errorf("memory: store buffer %d: bad length", t)
		}
		b = b[n:]
		buf := m.sb[t][:0]
		for ; k > 0; k-- {
			a, n := binary.Uvarint(b)
			if n <= 0 || a >= uint64(len(m.words)) {
				return nil, fmt.Errorf("memory: store buffer %d: bad address", t)
			}
			b = b[n:]
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return nil, fmt.Errorf("memory: store buffer %d: truncated value", t)
			}
			b = b[n:]
			buf = append(buf, sbEntry{addr: Addr(a), val: v})
		}
		m.sb[t] = buf
	}
	if m.arm != nil {
		return m.arm.decodeFrom(b, len(m.words))
	}
	return b, nil
}

// Vars lists the words as variables, then, under TSO, one variable per
// store buffer, "sb[vCPU0]" = "{pte[X]=2; pte[X]=0}" (oldest first) or
// "{}".
func (m Mem) Vars() []Var {
	out := make([]Var, len(m.words), len(m.words)+len(m.sb))
	for i, w := range m.words {
		out[i] = Var{Name: m.names[i], Value: strconv.FormatUint(w, 10)}
	}
	for t, buf := range m.sb {
		v := "{"
		for i, e := range buf {
			if i > 0 {
				v += "; "
			}
			v += m.names[e.addr] + "=" + strconv.FormatUint(e.val, 10)
		}
		out = append(out, Var{Name: "sb[" + m.threadName(t) + "]", Value: v + "}"})
	}
	if m.arm != nil {
		out = append(out, m.arm.vars(m)...)
	}
	return out
}

// An Op is the kind of a shared-memory access.
type Op uint8

// The memory operations.
const (
	OpLoad Op = iota
	OpStore
	OpCAS
	OpXchg
	OpFetchOr
	OpFetchAdd
	OpFence
	OpTouch
	// OpCommit is a buffered store reaching memory under TSO: in a
	// commit step of WithTSO, or drained by a fence or a locked
	// read-modify-write (in that step's footprint, before its own
	// access).
	OpCommit
)

var opNames = [...]string{"load", "store", "cas", "xchg", "fetch-or", "fetch-add", "fence", "touch", "commit"}

func (o Op) String() string { return opNames[o] }

// An Access is one entry of a step's footprint: which word (or, for
// Touch, which named object) it read or wrote.
type Access struct {
	Op     Op
	Addr   Addr // -1 for fences and touched objects
	Object string
	Write  bool
	Read   bool
}

func (a Access) String() string {
	switch {
	case a.Op == OpFence:
		return "fence"
	case a.Addr < 0:
		if a.Write {
			return "write " + a.Object
		}
		return "read " + a.Object
	}
	return fmt.Sprintf("%s %s", a.Op, a.Object)
}

func (x *Exec) access(m Mem, op Op, a Addr, read, write bool) {
	x.footprint = append(x.footprint, Access{Op: op, Addr: a, Object: m.names[a], Read: read, Write: write})
}

// buffer returns the stepping thread's store buffer index under TSO, or
// -1 under SC. A thread without a buffer under TSO is a modelling error
// (the assertion "memory"); its accesses then act on memory directly.
func (x *Exec) buffer(m Mem) int {
	if m.sb == nil {
		return -1
	}
	if x.thread < 0 || x.thread >= len(m.sb) {
		x.Fail("memory", "thread %d accesses memory under TSO but has no store buffer (%d buffers)", x.thread, len(m.sb))
		return -1
	}
	return x.thread
}

// drain commits every store in the stepping thread's buffer, oldest first
// (a fence or a locked instruction under TSO), recording each as a commit
// in the footprint.
func (x *Exec) drain(m Mem) {
	t := x.buffer(m)
	if t < 0 {
		return
	}
	for _, e := range m.sb[t] {
		m.words[e.addr] = e.val
		x.access(m, OpCommit, e.addr, false, true)
	}
	m.sb[t] = m.sb[t][:0]
}

// CommitOldest commits the oldest store in thread t's buffer to memory
// and returns it; ok is false when the buffer is empty. It is the step
// WithTSO's store-buffer thread takes; a protocol that schedules commits
// itself can call it too.
func (x *Exec) CommitOldest(m Mem, t int) (a Addr, v uint64, ok bool) {
	if t < 0 || t >= len(m.sb) || len(m.sb[t]) == 0 {
		return 0, 0, false
	}
	b := m.sb[t]
	e := b[0]
	copy(b, b[1:])
	m.sb[t] = b[:len(b)-1]
	m.words[e.addr] = e.val
	x.access(m, OpCommit, e.addr, false, true)
	return e.addr, e.val, true
}

// Load reads word a: under TSO the stepping thread's newest buffered
// store to a, if any, else memory.
func (x *Exec) Load(m Mem, a Addr) uint64 {
	if m.arm != nil {
		return x.armLoad(m, a)
	}
	x.access(m, OpLoad, a, true, false)
	if t := x.buffer(m); t >= 0 {
		if v, ok := m.forward(t, a); ok {
			return v
		}
	}
	return m.words[a]
}

// Store writes v to word a; under TSO it enters the stepping thread's
// store buffer.
func (x *Exec) Store(m Mem, a Addr, v uint64) {
	if m.arm != nil {
		x.StoreDep(m, a, v, Plain, Dep{}, Dep{})
		return
	}
	x.access(m, OpStore, a, false, true)
	if t := x.buffer(m); t >= 0 {
		m.sb[t] = append(m.sb[t], sbEntry{addr: a, val: v})
		return
	}
	m.words[a] = v
}

// CAS is a compare-and-swap with the semantics of Linux's cmpxchg: if word
// a holds old it becomes new; either way the previous value is returned.
// Under TSO it drains the stepping thread's buffer first (lock cmpxchg).
func (x *Exec) CAS(m Mem, a Addr, old, new uint64) (prev uint64) {
	if m.arm != nil {
		return x.armRMW(m, a, RMW{Op: RMWCAS, Expect: old, Arg: new})
	}
	x.drain(m)
	x.access(m, OpCAS, a, true, true)
	prev = m.words[a]
	if prev == old {
		m.words[a] = new
	}
	return prev
}

// Xchg atomically stores v in word a and returns the previous value.
// Under TSO it drains the stepping thread's buffer first.
func (x *Exec) Xchg(m Mem, a Addr, v uint64) (prev uint64) {
	if m.arm != nil {
		return x.armRMW(m, a, RMW{Op: RMWSwap, Arg: v})
	}
	x.drain(m)
	x.access(m, OpXchg, a, true, true)
	prev = m.words[a]
	m.words[a] = v
	return prev
}

// FetchOr atomically ors v into word a and returns the previous value.
// Under TSO it drains the stepping thread's buffer first.
func (x *Exec) FetchOr(m Mem, a Addr, v uint64) (prev uint64) {
	if m.arm != nil {
		return x.armRMW(m, a, RMW{Op: RMWOr, Arg: v})
	}
	x.drain(m)
	x.access(m, OpFetchOr, a, true, true)
	prev = m.words[a]
	m.words[a] = prev | v
	return prev
}

// FetchAdd atomically adds v to word a and returns the previous value.
// Under TSO it drains the stepping thread's buffer first.
func (x *Exec) FetchAdd(m Mem, a Addr, v uint64) (prev uint64) {
	if m.arm != nil {
		return x.armRMW(m, a, RMW{Op: RMWAdd, Arg: v})
	}
	x.drain(m)
	x.access(m, OpFetchAdd, a, true, true)
	prev = m.words[a]
	m.words[a] = prev + v
	return prev
}

// Fence is a full memory barrier (smp_mb, MFENCE). Under sequential
// consistency it only appears in the footprint. Under TSO it drains the
// stepping thread's buffer: at once in the memory passed (x.Fence(s.mem)),
// with the commits in the footprint after the fence; without a memory
// (x.Fence(), as protocols written for SC call it) WithTSO drains the
// thread's buffer at the end of the step instead, which is the same
// unless the step stores again after the fence (the granularity rule
// makes that rare).
func (x *Exec) Fence(mem ...Mem) {
	x.footprint = append(x.footprint, Access{Op: OpFence, Addr: -1})
	if len(mem) == 0 {
		x.fenceLater = true
		return
	}
	for _, m := range mem {
		if m.arm != nil {
			if t := x.armThread(m); t >= 0 {
				m.arm.barrier(t, BarrierFull)
			}
			continue
		}
		x.drain(m)
	}
}

// appendUvarint is binary.AppendUvarint with the one-byte form of small
// values inline, the common case of a model's words and lengths; the
// bytes are the same.
func appendUvarint(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return binary.AppendUvarint(b, v)
}
