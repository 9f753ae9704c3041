package rt

import "sync/atomic"

// Shared words are the flags, counters and bytes the threads communicate
// through (st->preempted, cpu->exclusive_pending, a PTE). Every operation
// is atomic and sequentially consistent (Go's sync/atomic), and, under
// Controlled, one step: the scheduling point comes before the operation,
// so the value a Load returns is the one in memory when the step is taken.
// The operations mirror the model's memory layer (model.Exec Load, Store,
// CAS, Xchg, FetchOr, FetchAdd). A word may be initialised with Store in
// the body of Controlled, before any goroutine runs; that is not a step.
//
// Storage is the same atomic in both modes: under Controlled only one
// goroutine runs at a time, so the atomics cost nothing in contention and
// keep the race detector quiet even for code that also reads the word
// outside rt.

// A Word64 is a shared 64-bit word. Create it with Env.Word64.
type Word64 struct {
	c    *ctl
	name string
	v    atomic.Uint64
}

// Word64 returns a new zeroed word.
func (e *Env) Word64(name string) *Word64 { return &Word64{c: e.c, name: name} }

// Name is the name given to Env.Word64.
func (w *Word64) Name() string { return w.name }

// Load reads the word.
func (w *Word64) Load(label string) uint64 {
	if w.c != nil {
		w.c.word(label)
	}
	return w.v.Load()
}

// Store writes v.
func (w *Word64) Store(label string, v uint64) {
	if w.c != nil {
		w.c.word(label)
	}
	w.v.Store(v)
}

// CAS is Linux's cmpxchg: if the word holds old it becomes new; either way
// the previous value is returned.
func (w *Word64) CAS(label string, old, new uint64) (prev uint64) {
	if w.c != nil {
		w.c.word(label)
	}
	for {
		cur := w.v.Load()
		if cur != old {
			return cur
		}
		if w.v.CompareAndSwap(old, new) {
			return old
		}
	}
}

// Swap stores v and returns the previous value (xchg).
func (w *Word64) Swap(label string, v uint64) (prev uint64) {
	if w.c != nil {
		w.c.word(label)
	}
	return w.v.Swap(v)
}

// Or ors v into the word and returns the previous value (fetch-or).
func (w *Word64) Or(label string, v uint64) (prev uint64) {
	if w.c != nil {
		w.c.word(label)
	}
	return w.v.Or(v)
}

// Add adds v (modulo 2^64; add ^uint64(0) to subtract one) and returns the
// previous value (fetch-add).
func (w *Word64) Add(label string, v uint64) (prev uint64) {
	if w.c != nil {
		w.c.word(label)
	}
	return w.v.Add(v) - v
}

// A Word32 is a shared 32-bit word. Create it with Env.Word32.
type Word32 struct {
	c    *ctl
	name string
	v    atomic.Uint32
}

// Word32 returns a new zeroed word.
func (e *Env) Word32(name string) *Word32 { return &Word32{c: e.c, name: name} }

// Name is the name given to Env.Word32.
func (w *Word32) Name() string { return w.name }

// Load reads the word.
func (w *Word32) Load(label string) uint32 {
	if w.c != nil {
		w.c.word(label)
	}
	return w.v.Load()
}

// Store writes v.
func (w *Word32) Store(label string, v uint32) {
	if w.c != nil {
		w.c.word(label)
	}
	w.v.Store(v)
}

// CAS is cmpxchg; see Word64.CAS.
func (w *Word32) CAS(label string, old, new uint32) (prev uint32) {
	if w.c != nil {
		w.c.word(label)
	}
	for {
		cur := w.v.Load()
		if cur != old {
			return cur
		}
		if w.v.CompareAndSwap(old, new) {
			return old
		}
	}
}

// Swap stores v and returns the previous value.
func (w *Word32) Swap(label string, v uint32) (prev uint32) {
	if w.c != nil {
		w.c.word(label)
	}
	return w.v.Swap(v)
}

// Or ors v into the word and returns the previous value.
func (w *Word32) Or(label string, v uint32) (prev uint32) {
	if w.c != nil {
		w.c.word(label)
	}
	return w.v.Or(v)
}

// Add adds v modulo 2^32 and returns the previous value.
func (w *Word32) Add(label string, v uint32) (prev uint32) {
	if w.c != nil {
		w.c.word(label)
	}
	return w.v.Add(v) - v
}

// A Word8 is a shared byte (st->preempted, a flag byte). Go has no 8-bit
// atomics, so it lives in a 32-bit atomic that only ever holds values
// below 256; Add wraps modulo 256 like a byte. Create it with Env.Word8.
type Word8 struct {
	c    *ctl
	name string
	v    atomic.Uint32
}

// Word8 returns a new zeroed byte.
func (e *Env) Word8(name string) *Word8 { return &Word8{c: e.c, name: name} }

// Name is the name given to Env.Word8.
func (w *Word8) Name() string { return w.name }

// Load reads the byte.
func (w *Word8) Load(label string) uint8 {
	if w.c != nil {
		w.c.word(label)
	}
	return uint8(w.v.Load())
}

// Store writes v.
func (w *Word8) Store(label string, v uint8) {
	if w.c != nil {
		w.c.word(label)
	}
	w.v.Store(uint32(v))
}

// CAS is cmpxchg on a byte; see Word64.CAS.
func (w *Word8) CAS(label string, old, new uint8) (prev uint8) {
	if w.c != nil {
		w.c.word(label)
	}
	for {
		cur := w.v.Load()
		if cur != uint32(old) {
			return uint8(cur)
		}
		if w.v.CompareAndSwap(uint32(old), uint32(new)) {
			return old
		}
	}
}

// Swap stores v and returns the previous value.
func (w *Word8) Swap(label string, v uint8) (prev uint8) {
	if w.c != nil {
		w.c.word(label)
	}
	return uint8(w.v.Swap(uint32(v)))
}

// Or ors v into the byte and returns the previous value.
func (w *Word8) Or(label string, v uint8) (prev uint8) {
	if w.c != nil {
		w.c.word(label)
	}
	return uint8(w.v.Or(uint32(v)))
}

// Add adds v modulo 256 and returns the previous value.
func (w *Word8) Add(label string, v uint8) (prev uint8) {
	if w.c != nil {
		w.c.word(label)
	}
	for {
		cur := w.v.Load()
		if w.v.CompareAndSwap(cur, uint32(uint8(cur)+v)) {
			return uint8(cur)
		}
	}
}
