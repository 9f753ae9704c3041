package explorer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"unsafe"
)

// succs is the state graph the progress check reads (liveness.go): for
// every state, its successors in the order the search found them and the
// choice that took each edge. It is kept compressed, because it is most
// of what a search with progress properties holds, and the check reads it
// only after the search:
//
//   - a state's choices, in order, are one of few lists (the same threads
//     enabled with the same alternatives recur across millions of states):
//     each distinct list is stored once and a state names it by a varint
//     id, which also gives its number of successors;
//   - the successors are varint deltas, the first from the state's own
//     index, each next from the previous successor: bfs gives a state's
//     new successors consecutive indices, and the states it finds again
//     are mostly near them.
//
// pvflush/fixed with 4 vCPUs (1.25 M states, 4.6 edges a state) takes
// about 12 bytes a state this way (1 for the id, 11 for the targets),
// against 6 bytes an edge (28 a state) as columns of targets and choices.
// A state's list is found through a 4-byte offset into the segment of
// colSize states that holds it (where the columns needed a 4-byte start
// per state too).
//
// With Options.SpillDir each finished segment is written to a temporary
// file instead of kept, and load reads them back once the search is over:
// by then the visited set, most of the search's memory, has been
// released, so the graph and the search's table are never in memory
// together.
type succs struct {
	lists [][]uint16        // interned choice lists, by id
	ids   map[string]uint32 // a list's bytes -> its id
	// recent: by a hash of a list, 1 + the id of the last list with that
	// hash to be interned (0: none).
	recent [1 << internBits]uint32
	segs   [][]byte       // per segment: its states' lists back to back
	off    column[uint32] // per state: the start of its list in its segment
	cur    []byte         // the segment being written
	// The state being merged: its successors and choices.
	tos []int32
	chs []uint16
	// roots[k]: the states of property k's pending subgraph that an edge
	// inside it enters from a state of no lower index, recorded as the
	// edges are merged (cycleRoots computes the same from the graph, a
	// pass over every edge after the search).
	roots [8]bitset
	// Spilled segments (Options.SpillDir).
	f      *os.File
	w      *bufio.Writer
	segLen []int
	err    error
}

const internBits = 10

func newSuccs(dir string) (*succs, error) {
	s := &succs{ids: map[string]uint32{}}
	if dir == "" {
		return s, nil
	}
	f, err := os.CreateTemp(dir, "protocheck-graph-*")
	if err != nil {
		return nil, err
	}
	s.f, s.w = f, bufio.NewWriterSize(f, 1<<16)
	return s, nil
}

// add records an edge of the state being merged.
func (s *succs) add(to int32, ch uint16) {
	s.tos = append(s.tos, to)
	s.chs = append(s.chs, ch)
}

// back records an edge to w from a state of no lower index, both pending
// for the properties in bits.
func (s *succs) back(w int32, bits uint8) {
	for k := 0; bits != 0; k, bits = k+1, bits>>1 {
		if bits&1 == 0 {
			continue
		}
		for int(w>>6) >= len(s.roots[k]) {
			s.roots[k] = append(s.roots[k], 0)
		}
		s.roots[k].add(w)
	}
}

// rootsOf returns property k's roots (see succs.roots) over n states, and
// whether there is any.
func (s *succs) rootsOf(k int, n int32) (bitset, bool) {
	r := newBitset(n)
	copy(r, s.roots[k])
	return r, len(s.roots[k]) > 0
}

// end ends the list of state v, the next state in index order.
func (s *succs) end(v int32) {
	if v&colMask == 0 && v > 0 {
		s.endSegment()
	}
	s.off.append(uint32(len(s.cur)))
	s.cur = binary.AppendUvarint(s.cur, uint64(s.intern(s.chs)))
	prev := v
	for _, w := range s.tos {
		s.cur = binary.AppendVarint(s.cur, int64(w-prev))
		prev = w
	}
	s.tos, s.chs = s.tos[:0], s.chs[:0]
}

// intern returns the id of the choice list chs. A list is looked up first
// in a small table by a hash of its choices, which holds nearly every
// state's list: the map is the slow path of a step of the serial merge.
func (s *succs) intern(chs []uint16) uint32 {
	h := uint32(len(chs))
	for _, c := range chs {
		h = (h ^ uint32(c)) * 0x9e3779b1
	}
	h >>= 32 - internBits
	if id := s.recent[h]; id > 0 && slices.Equal(s.lists[id-1], chs) {
		return id - 1
	}
	key := unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(chs))), 2*len(chs))
	if id, ok := s.ids[key]; ok {
		s.recent[h] = id + 1
		return id
	}
	id := uint32(len(s.lists))
	s.recent[h] = id + 1
	s.lists = append(s.lists, slices.Clone(chs))
	s.ids[string([]byte(key))] = id
	return id
}

// endSegment stores the segment written so far, or spills it.
func (s *succs) endSegment() {
	if s.f != nil {
		if s.err == nil {
			_, s.err = s.w.Write(s.cur)
		}
		s.segLen = append(s.segLen, len(s.cur))
		s.segs = append(s.segs, nil)
	} else {
		s.segs = append(s.segs, slices.Clone(s.cur))
	}
	s.cur = s.cur[:0]
}

// load ends the graph of a complete search of n states and reads back
// what was spilled. The graph is then ready for the progress check.
func (s *succs) load(n int) error {
	if s.off.len() != n {
		panic(fmt.Sprintf("explorer: a graph of %d states for a search of %d", s.off.len(), n))
	}
	s.endSegment()
	s.cur = nil
	if s.f == nil {
		return nil
	}
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if s.err == nil {
		_, s.err = s.f.Seek(0, io.SeekStart)
	}
	r := bufio.NewReaderSize(s.f, 1<<20)
	for i, n := range s.segLen {
		if s.err != nil {
			break
		}
		s.segs[i] = make([]byte, n)
		_, s.err = io.ReadFull(r, s.segs[i])
	}
	s.close()
	if s.err != nil {
		return fmt.Errorf("reading the state graph back: %w", s.err)
	}
	return nil
}

// spilled is the number of bytes load reads back.
func (s *succs) spilled() int64 {
	n := int64(0)
	for _, l := range s.segLen {
		n += int64(l)
	}
	if s.f != nil {
		n += int64(len(s.cur))
	}
	return n
}

// close removes the file; closing twice is harmless.
func (s *succs) close() {
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
		s.f = nil
	}
}

// bytes is the memory the graph holds.
func (s *succs) bytes() int64 {
	b := s.off.bytes(4) + int64(cap(s.cur))
	for _, g := range s.segs {
		b += int64(cap(g))
	}
	for _, l := range s.lists {
		b += int64(cap(l)) * 2
	}
	return b
}

// A succIter reads one state's successors in order.
type succIter struct {
	p   []byte
	chs []uint16
	i   int
	w   int32
}

func (s *succs) of(v int32) succIter {
	p := s.segs[v>>colBits][s.off.at(int(v)):]
	id, k := binary.Uvarint(p)
	return succIter{p: p[k:], chs: s.lists[id], w: v}
}

// next returns the next successor and the choice that reaches it, ok
// false after the last.
func (it *succIter) next() (w int32, ch uint16, ok bool) {
	if it.i == len(it.chs) {
		return 0, 0, false
	}
	d, k := binary.Varint(it.p)
	it.p = it.p[k:]
	it.w += int32(d)
	ch = it.chs[it.i]
	it.i++
	return it.w, ch, true
}

// degree is the number of successors of v.
func (s *succs) degree(v int32) int {
	id, _ := binary.Uvarint(s.segs[v>>colBits][s.off.at(int(v)):])
	return len(s.lists[id])
}

// choices are the choices of v's edges, in order.
func (s *succs) choices(v int32) []uint16 {
	id, _ := binary.Uvarint(s.segs[v>>colBits][s.off.at(int(v)):])
	return s.lists[id]
}

// edges yields v's successors in order with the choice of each edge.
func (s *succs) edges(v int32) iter.Seq2[int32, uint16] {
	return func(yield func(int32, uint16) bool) {
		it := s.of(v)
		for {
			w, ch, ok := it.next()
			if !ok || !yield(w, ch) {
				return
			}
		}
	}
}
