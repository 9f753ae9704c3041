package explorer

import (
	"fmt"
	"math"
	"slices"
)

// visited is the set of states an exhaustive search has stored, mapping
// each to its index (0, 1, 2, ... in insertion order). It is an
// open-addressing hash table with linear probing over one of two stores:
//
//   - exact: every key is copied once into an arena of large byte chunks
//     and located by a packed uint64 per state; a slot holds the key's
//     hash tag (32 bits) and its index, so a lookup compares bytes only on
//     a tag match. Nothing is allocated per state: the arena, the location
//     array and the table grow geometrically.
//   - fingerprint: only the key's 64-bit hash is kept (with the index in a
//     parallel array); two states with the same fingerprint are taken to
//     be the same state, which may hide states with a tiny probability
//     reported in Stats.
//
// The table holds no pointers, so the garbage collector never scans it.
type visited struct {
	fp    bool
	slots []uint64 // exact: tag<<32 | index+1; fingerprint: the fingerprint (never 0), placed by its low bits
	vals  []int32  // fingerprint: index per slot
	mask  uint64
	n     int
	// exact store
	chunks [][]byte
	locs   []uint64 // per index: chunk<<40 | offset<<18 | length
}

const (
	chunkBits = 22 // 4 MiB arena chunks
	chunkSize = 1 << chunkBits
	maxKeyLen = 1<<18 - 1
)

func newVisited(fingerprint bool) *visited {
	v := &visited{fp: fingerprint}
	v.alloc(1 << 10)
	return v
}

func (v *visited) alloc(size int) {
	v.slots = make([]uint64, size)
	if v.fp {
		v.vals = make([]int32, size)
	}
	v.mask = uint64(size - 1)
}

// key returns the stored key of index i (exact mode).
func (v *visited) key(i int32) []byte {
	l := v.locs[i]
	c, off, n := l>>40, (l>>18)&(chunkSize-1), l&maxKeyLen
	return v.chunks[c][off : off+n]
}

// find looks key (with hash h) up. It returns the index and true when the
// key is stored, and otherwise the slot where insert must put it.
func (v *visited) find(key []byte, h uint64) (slot uint64, idx int32, ok bool) {
	if v.fp {
		f := fingerprint(h)
		for i := f & v.mask; ; i = (i + 1) & v.mask {
			switch v.slots[i] {
			case 0:
				return i, 0, false
			case f:
				return i, v.vals[i], true
			}
		}
	}
	tag := h >> 32
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

// insert stores key under index idx at the slot find returned.
func (v *visited) insert(slot uint64, key []byte, h uint64, idx int32) {
	if v.fp {
		v.slots[slot] = fingerprint(h)
		v.vals[slot] = idx
	} else {
		if int(idx) != len(v.locs) {
			panic(fmt.Sprintf("explorer: visited index %d out of order (%d stored)", idx, len(v.locs)))
		}
		v.locs = append(v.locs, v.store(key))
		v.slots[slot] = h>>32<<32 | uint64(uint32(idx)+1)
	}
	v.n++
	if uint64(v.n)*4 > (v.mask+1)*3 {
		v.grow()
	}
}

// store copies key into the arena and returns its location.
func (v *visited) store(key []byte) uint64 {
	if len(key) > maxKeyLen {
		panic(fmt.Sprintf("explorer: state key of %d bytes is longer than the %d the visited set supports", len(key), maxKeyLen))
	}
	last := len(v.chunks) - 1
	if last < 0 || len(v.chunks[last])+len(key) > chunkSize {
		size := chunkSize
		if last < 0 {
			size = 1 << 16 // small machines stay small
		}
		v.chunks = append(v.chunks, make([]byte, 0, size))
		last++
	} else if len(v.chunks[last])+len(key) > cap(v.chunks[last]) {
		// Only the first chunk starts small; grow it up to a full chunk.
		c := make([]byte, len(v.chunks[last]), min(chunkSize, 4*cap(v.chunks[last])))
		copy(c, v.chunks[last])
		v.chunks[last] = c
	}
	c := v.chunks[last]
	off := len(c)
	v.chunks[last] = append(c, key...)
	return uint64(last)<<40 | uint64(off)<<18 | uint64(len(key))
}

func (v *visited) grow() {
	old, oldVals := v.slots, v.vals
	v.alloc(2 * len(old))
	for i, s := range old {
		if s == 0 {
			continue
		}
		var h uint64
		if v.fp {
			h = s
		} else {
			h = hashKey(v.key(int32(uint32(s) - 1)))
		}
		j := h & v.mask
		for v.slots[j] != 0 {
			j = (j + 1) & v.mask
		}
		v.slots[j] = s
		if v.fp {
			v.vals[j] = oldVals[i]
		}
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
	b := int64(cap(v.slots))*8 + int64(cap(v.vals))*4 + int64(cap(v.locs))*8
	for _, c := range v.chunks {
		b += int64(cap(c))
	}
	return b
}

// fingerprints returns the stored fingerprints (fingerprint mode).
func (v *visited) fingerprints() []uint64 {
	out := make([]uint64, 0, v.n)
	for _, s := range v.slots {
		if s != 0 {
			out = append(out, s)
		}
	}
	return out
}

// fingerprintStats fills the collision estimates of a fingerprint run.
func fingerprintStats(s *Stats, v *visited) {
	n := float64(v.n)
	m := float64(s.Transitions + 1)
	s.FingerprintCollision = n * math.Max(m-n, 0) / math.Exp2(64)
	fps := v.fingerprints()
	slices.Sort(fps)
	var gap uint64 = math.MaxUint64
	for i := 1; i < len(fps); i++ {
		gap = min(gap, fps[i]-fps[i-1])
	}
	if len(fps) > 1 {
		s.FingerprintCollisionObserved = 1 / float64(gap)
	}
}
