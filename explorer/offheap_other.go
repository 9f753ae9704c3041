//go:build !(linux || darwin || freebsd)

package explorer

import "sync/atomic"

// mapped counts the bytes held outside the Go heap: none here.
var mapped atomic.Int64

// allocWords returns n zeroed words (from the Go heap on this system).
func allocWords(n int) ([]uint64, bool) { return written[uint64](n), false }

// freeWords leaves heap words to the collector.
func freeWords([]uint64, bool) {}
