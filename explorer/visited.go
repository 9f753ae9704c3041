package explorer

import (
	"fmt"
	"math"
	"runtime/debug"
	"slices"
)

// visited is the set of states an exhaustive search has stored, mapping
// each to its index (0, 1, 2, ... in insertion order). It is an
// open-addressing hash table with linear probing over one of two stores:
//
//   - exact: every key is copied once into an arena of byte chunks and
//     located by a packed uint64 per state (a column); a slot holds the low
//     32 bits of the key's hash and the state's index, so that a lookup
//     compares bytes only on a hash match and growing the table re-homes
//     slots without touching a key;
//   - fingerprint: a slot holds the key's 64-bit hash and nothing else (8
//     bytes a slot); two states with the same fingerprint are taken to be
//     the same state, which may hide states with a tiny probability
//     reported in Stats. Indices are kept beside the slots only when the
//     search needs them (keepIdx: the state graph, dfs's sleep sets).
//
// Nothing is allocated per state and nothing holds a pointer the garbage
// collector must scan. Arena chunks never move once allocated, so workers
// may read the keys of earlier states (keyView) while the merging
// goroutine inserts more.
type visited struct {
	fp      bool
	keepIdx bool
	slots   []uint64
	vals    []int32 // fingerprint with keepIdx: index per slot
	mask    uint64
	n       int
	sink    uint64 // keeps touch's loads from being optimized away
	// exact store
	chunks [][]byte
	locs   column[uint64] // per index: chunk<<40 | offset<<18 | length
}

const (
	chunkBits = 22 // arena chunks grow to 4 MiB
	chunkSize = 1 << chunkBits
	maxKeyLen = 1<<18 - 1
)

func newVisited(fingerprint, keepIdx bool) *visited {
	v := &visited{fp: fingerprint, keepIdx: keepIdx}
	v.alloc(1 << 10)
	return v
}

func (v *visited) alloc(size int) {
	v.slots = make([]uint64, size)
	if v.fp && v.keepIdx {
		v.vals = make([]int32, size)
	}
	v.mask = uint64(size - 1)
}

// key returns the stored key of index i (exact mode).
func (v *visited) key(i int32) []byte { return keyAt(v.chunks, v.locs.at(int(i))) }

func keyAt(chunks [][]byte, l uint64) []byte {
	c, off, n := l>>40, (l>>18)&(chunkSize-1), l&maxKeyLen
	return chunks[c][off : off+n]
}

// A keyView reads the keys stored before it was taken (exact mode), from
// any goroutine.
type keyView struct {
	chunks [][]byte
	locs   column[uint64]
}

func (v *visited) view() keyView {
	return keyView{chunks: slices.Clip(v.chunks), locs: v.locs.view()}
}

func (k keyView) key(i int) []byte { return keyAt(k.chunks, k.locs.at(i)) }

// find looks key (with hash h) up. It returns the index and true when the
// key is stored (the index is -1 in fingerprint mode without keepIdx),
// and otherwise the slot where insert must put it.
func (v *visited) find(key []byte, h uint64) (slot uint64, idx int32, ok bool) {
	if v.fp {
		f := fingerprint(h)
		for i := f & v.mask; ; i = (i + 1) & v.mask {
			switch v.slots[i] {
			case 0:
				return i, 0, false
			case f:
				if v.keepIdx {
					return i, v.vals[i], true
				}
				return i, -1, true
			}
		}
	}
	tag := uint64(uint32(h))
	for i := h & v.mask; ; i = (i + 1) & v.mask {
		s := v.slots[i]
		if s == 0 {
			return i, 0, false
		}
		if s>>32 == tag {
			j := int32(uint32(s) - 1)
			if string(v.key(j)) == string(key) {
				return i, j, true
			}
		}
	}
}

// touch reads the home slot of every successor before any is looked up:
// the loads are independent, so the processor overlaps their cache misses
// instead of waiting for each in turn inside find (Go has no prefetch
// instruction; an early load is the portable equivalent).
func (v *visited) touch(succs []succRec) {
	var sink uint64
	for i := range succs {
		sink += v.slots[succs[i].h&v.mask]
	}
	v.sink = sink
}

// insert stores key under index idx at the slot find returned.
func (v *visited) insert(slot uint64, key []byte, h uint64, idx int32) {
	if v.fp {
		v.slots[slot] = fingerprint(h)
		if v.keepIdx {
			v.vals[slot] = idx
		}
	} else {
		if int(idx) != v.locs.len() {
			panic(fmt.Sprintf("explorer: visited index %d out of order (%d stored)", idx, v.locs.len()))
		}
		v.locs.append(v.store(key))
		v.slots[slot] = uint64(uint32(h))<<32 | uint64(uint32(idx)+1)
	}
	v.n++
	if uint64(v.n)*4 > (v.mask+1)*3 {
		v.grow()
	}
}

// store copies key into the arena and returns its location. Chunks are
// allocated at their final size and never move; they grow from 64 KiB to
// chunkSize so that a small machine stays small.
func (v *visited) store(key []byte) uint64 {
	if len(key) > maxKeyLen {
		panic(fmt.Sprintf("explorer: state key of %d bytes is longer than the %d the visited set supports", len(key), maxKeyLen))
	}
	last := len(v.chunks) - 1
	if last < 0 || len(v.chunks[last])+len(key) > cap(v.chunks[last]) {
		size := chunkSize
		if last < 6 {
			size = 1 << (16 + last + 1) // 64 KiB, 128 KiB, ... up to 4 MiB
		}
		v.chunks = append(v.chunks, make([]byte, 0, size))
		last++
	}
	c := v.chunks[last]
	off := len(c)
	v.chunks[last] = append(c, key...)
	return uint64(last)<<40 | uint64(off)<<18 | uint64(len(key))
}

func (v *visited) grow() {
	old, oldVals := v.slots, v.vals
	defer releaseLarge(int64(len(old)) * 8)
	v.alloc(2 * len(old))
	for i, s := range old {
		if s == 0 {
			continue
		}
		h := s // fingerprint
		if !v.fp {
			h = s >> 32 // the low 32 bits of the key's hash
		}
		j := h & v.mask
		for v.slots[j] != 0 {
			j = (j + 1) & v.mask
		}
		v.slots[j] = s
		if v.vals != nil {
			v.vals[j] = oldVals[i]
		}
	}
}

// releaseLarge returns the memory of a table just replaced to the system
// at once when it is large. The garbage collector would otherwise keep it
// (and let the heap grow to twice the live data) until its next cycle,
// and the largest searches would peak at half again the memory they need;
// a collection here is cheap, since the search's big arrays hold no
// pointers, and it happens once per doubling of the table.
func releaseLarge(bytes int64) {
	if bytes >= 32<<20 {
		debug.FreeOSMemory()
	}
}

// fingerprint maps a hash to a non-zero fingerprint (0 marks an empty
// slot; 0 and 1 share a fingerprint).
func fingerprint(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

// bytes is the memory the set holds.
func (v *visited) bytes() int64 {
	b := int64(cap(v.slots))*8 + int64(cap(v.vals))*4 + v.locs.bytes(8)
	for _, c := range v.chunks {
		b += int64(cap(c))
	}
	return b
}

// fingerprintStats fills the collision estimates of a fingerprint run.
// It sorts the table in place (a copy would double the memory of the
// largest runs at their very end), so the set is unusable afterwards.
func fingerprintStats(s *Stats, v *visited) {
	n := float64(v.n)
	m := float64(s.Transitions + 1)
	s.FingerprintCollision = n * math.Max(m-n, 0) / math.Exp2(64)
	fps := v.slots
	slices.Sort(fps)
	var gap uint64 = math.MaxUint64
	for i := 1; i < len(fps); i++ {
		if fps[i-1] != 0 {
			gap = min(gap, fps[i]-fps[i-1])
		}
	}
	if v.n > 1 {
		s.FingerprintCollisionObserved = 1 / float64(gap)
	}
	v.slots, v.vals = nil, nil
}
