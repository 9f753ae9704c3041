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

// A Word is a shared word of 8, 32 or 64 bits (Word8, Word32, Word64).
// Every width is kept in one 64-bit atomic holding a value below 2^width,
// so the operations are written once: each is a compare-and-swap loop (or
// a single atomic where the result cannot leave the width) and wraps
// modulo 2^width like the hardware word it stands for.
type Word[T uint8 | uint32 | uint64] struct {
	c    *ctl
	name string
	v    atomic.Uint64
}

// Word8 is a shared byte (st->preempted, a flag byte).
type Word8 = Word[uint8]

// Word32 is a shared 32-bit word.
type Word32 = Word[uint32]

// Word64 is a shared 64-bit word.
type Word64 = Word[uint64]

// Word8 returns a new zeroed byte.
func (e *Env) Word8(name string) *Word8 { return &Word8{c: e.c, name: name} }

// Word32 returns a new zeroed 32-bit word.
func (e *Env) Word32(name string) *Word32 { return &Word32{c: e.c, name: name} }

// Word64 returns a new zeroed 64-bit word.
func (e *Env) Word64(name string) *Word64 { return &Word64{c: e.c, name: name} }

// Name is the name given when the word was created.
func (w *Word[T]) Name() string { return w.name }

// point is the word operation's scheduling point under Controlled.
func (w *Word[T]) point(label string) {
	if w.c != nil {
		w.c.word(label)
	}
}

// Load reads the word.
func (w *Word[T]) Load(label string) T {
	w.point(label)
	return T(w.v.Load())
}

// Store writes v.
func (w *Word[T]) Store(label string, v T) {
	w.point(label)
	w.v.Store(uint64(v))
}

// CAS is Linux's cmpxchg: if the word holds old it becomes new; either way
// the previous value is returned.
func (w *Word[T]) CAS(label string, old, new T) (prev T) {
	w.point(label)
	for {
		// Retry until the previous value returned is one the word really
		// held at the moment of the comparison (a failed swap followed by
		// a load could otherwise see old and report a swap that did not
		// happen).
		cur := w.v.Load()
		if T(cur) != old {
			return T(cur)
		}
		if w.v.CompareAndSwap(cur, uint64(new)) {
			return old
		}
	}
}

// Swap stores v and returns the previous value (xchg).
func (w *Word[T]) Swap(label string, v T) (prev T) {
	w.point(label)
	return T(w.v.Swap(uint64(v)))
}

// Or ors v into the word and returns the previous value (fetch-or).
func (w *Word[T]) Or(label string, v T) (prev T) {
	w.point(label)
	return T(w.v.Or(uint64(v)))
}

// Add adds v modulo 2^width (add the all-ones value to subtract one) and
// returns the previous value (fetch-add).
func (w *Word[T]) Add(label string, v T) (prev T) {
	w.point(label)
	for {
		cur := w.v.Load()
		if w.v.CompareAndSwap(cur, uint64(T(cur)+v)) {
			return T(cur)
		}
	}
}
