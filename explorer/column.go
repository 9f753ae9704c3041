package explorer

// A column is a growable array of per-state values kept in fixed-size
// chunks: appending never copies what is stored (no doubling, so no
// transient second copy inflating the peak memory), and a chunk, once
// allocated, never moves, so that workers may read elements appended
// before they started while the merging goroutine appends more (through a
// snapshot of the chunk directory, see view).
type column[T any] struct {
	chunks [][]T
	n      int
}

const (
	colBits = 14 // 16384 elements per chunk
	colSize = 1 << colBits
	colMask = colSize - 1
)

func (c *column[T]) len() int { return c.n }

func (c *column[T]) append(v T) {
	if c.n&colMask == 0 {
		c.chunks = append(c.chunks, make([]T, colSize))
	}
	c.chunks[c.n>>colBits][c.n&colMask] = v
	c.n++
}

func (c *column[T]) at(i int) T { return c.chunks[i>>colBits][i&colMask] }

func (c *column[T]) set(i int, v T) { c.chunks[i>>colBits][i&colMask] = v }

// view returns a read-only snapshot of the elements stored so far, safe to
// read from other goroutines while c keeps growing.
func (c *column[T]) view() column[T] {
	return column[T]{chunks: c.chunks[:len(c.chunks):len(c.chunks)], n: c.n}
}

// bytes is the memory the column holds, given the size of T.
func (c *column[T]) bytes(size int) int64 {
	return int64(len(c.chunks))*colSize*int64(size) + int64(cap(c.chunks))*24
}

// written returns a slice of n zero values whose memory has been written
// once, for a large array the caller reads before it writes (a lookup
// table, a counter per state). A fresh allocation comes from the system
// untouched, and a page first read is mapped to the shared zero page: the
// first write to it then faults a second time and replaces the mapping,
// which flushes the page from the TLB of every processor the search runs
// on. Clearing writes each page first, and costs less than those faults.
func written[T any](n int) []T {
	s := make([]T, n)
	clear(s)
	return s
}
