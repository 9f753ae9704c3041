//go:build linux || darwin || freebsd

package explorer

import (
	"sync/atomic"
	"syscall"
	"unsafe"
)

// mapped counts the bytes the explorer holds outside the Go heap, for the
// memory figures and limits (the runtime's accounting does not see them).
var mapped atomic.Int64

// allocWords returns n zeroed words outside the Go heap: anonymous pages
// from the system, which freeWords returns at once. The visited table is
// kept there because it is replaced by one twice its size as it grows:
// in the heap the old table would linger, garbage, until the collector's
// next cycle, and the largest searches would peak at half again the
// memory they need. Falls back to the heap if the system refuses.
//
// The pages are mapped when the words are allocated (populate, on Linux),
// not on first touch: a table shard is read before it is written (a
// probe, touch's early loads), which costs two faults and a TLB flush of
// every processor per page (see written, which does the same for heap
// arrays). Every page of a table or arena chunk is written soon after,
// so mapping them at once costs no more than faulting them in.
func allocWords(n int) (w []uint64, offHeap bool) {
	if n < 1<<13 { // small tables stay in the heap: a page each would waste more
		return written[uint64](n), false
	}
	b, err := syscall.Mmap(-1, 0, n*8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|populate)
	if err != nil {
		return written[uint64](n), false
	}
	mapped.Add(int64(n) * 8)
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n), true
}

// freeWords returns words that allocWords took off the heap to the
// system; w must not be used afterwards. Heap words are left to the
// collector.
func freeWords(w []uint64, offHeap bool) {
	if len(w) == 0 || !offHeap {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
	if syscall.Munmap(b) == nil {
		mapped.Add(-int64(len(w)) * 8)
	}
}
