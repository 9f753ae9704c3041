package model

import (
	"fmt"
	"strconv"
)

// An Addr is the index of a shared word in a Mem.
type Addr int

// Mem is the shared memory of a model: the words that threads communicate
// through (flags, counters, page-table entries). Keep it inside the state
// and access it only through the Exec methods, which record the footprint
// and are the one place where a weaker memory model will be implemented.
// Execution is sequentially consistent.
type Mem struct {
	words []uint64
	names []string
}

// NewMem returns a memory with one zeroed word per name.
func NewMem(names ...string) Mem {
	return Mem{words: make([]uint64, len(names)), names: names}
}

// Clone returns an independent copy (the names are shared, being
// immutable).
func (m Mem) Clone() Mem {
	return Mem{words: append([]uint64(nil), m.words...), names: m.names}
}

// Len is the number of words.
func (m Mem) Len() int { return len(m.words) }

// Name is the name of word a.
func (m Mem) Name(a Addr) string { return m.names[a] }

// Peek reads a word without recording an access: for invariants, observers
// and rendering, never for the protocol's own reads.
func (m Mem) Peek(a Addr) uint64 { return m.words[a] }

// Init sets a word before exploration starts (initial state only).
func (m Mem) Init(a Addr, v uint64) { m.words[a] = v }

// AppendKey appends the words' canonical encoding.
func (m Mem) AppendKey(b []byte) []byte {
	for _, w := range m.words {
		b = strconv.AppendUint(b, w, 16)
		b = append(b, ',')
	}
	return b
}

// Vars lists the words as variables.
func (m Mem) Vars() []Var {
	out := make([]Var, len(m.words))
	for i, w := range m.words {
		out[i] = Var{Name: m.names[i], Value: strconv.FormatUint(w, 10)}
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
)

var opNames = [...]string{"load", "store", "cas", "xchg", "fetch-or", "fetch-add", "fence", "touch"}

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

// Load reads word a.
func (x *Exec) Load(m Mem, a Addr) uint64 {
	x.access(m, OpLoad, a, true, false)
	return m.words[a]
}

// Store writes v to word a.
func (x *Exec) Store(m Mem, a Addr, v uint64) {
	x.access(m, OpStore, a, false, true)
	m.words[a] = v
}

// CAS is a compare-and-swap with the semantics of Linux's cmpxchg: if word
// a holds old it becomes new; either way the previous value is returned.
func (x *Exec) CAS(m Mem, a Addr, old, new uint64) (prev uint64) {
	x.access(m, OpCAS, a, true, true)
	prev = m.words[a]
	if prev == old {
		m.words[a] = new
	}
	return prev
}

// Xchg atomically stores v in word a and returns the previous value.
func (x *Exec) Xchg(m Mem, a Addr, v uint64) (prev uint64) {
	x.access(m, OpXchg, a, true, true)
	prev = m.words[a]
	m.words[a] = v
	return prev
}

// FetchOr atomically ors v into word a and returns the previous value.
func (x *Exec) FetchOr(m Mem, a Addr, v uint64) (prev uint64) {
	x.access(m, OpFetchOr, a, true, true)
	prev = m.words[a]
	m.words[a] = prev | v
	return prev
}

// FetchAdd atomically adds v to word a and returns the previous value.
func (x *Exec) FetchAdd(m Mem, a Addr, v uint64) (prev uint64) {
	x.access(m, OpFetchAdd, a, true, true)
	prev = m.words[a]
	m.words[a] = prev + v
	return prev
}

// Fence is a full memory barrier (smp_mb). Under sequential consistency it
// only appears in the footprint.
func (x *Exec) Fence() {
	x.footprint = append(x.footprint, Access{Op: OpFence, Addr: -1})
}
