package explorer

import (
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// visited is the set of states an exhaustive search has stored, mapping
// each to its index (0, 1, 2, ... in insertion order). It is a hash table
// with linear probing, split by the top bits of the hash into shards that
// grow one at a time (so that growing never needs the old and the new
// copy of the whole table at once), over one of two stores:
//
//   - exact: every key is copied once into an arena of byte chunks and
//     located by a packed uint64 per state (a column); a slot holds the low
//     32 bits of the key's hash and the state's index, so that a lookup
//     compares bytes only on a hash match and growing a shard re-homes
//     slots without touching a key;
//   - fingerprint: a slot holds the key's 64-bit hash and nothing else (8
//     bytes a slot); two states with the same fingerprint are taken to be
//     the same state, which may hide states with a tiny probability
//     reported in Stats. Indices are kept beside the slots only when the
//     search needs them (keepIdx: the state graph, dfs's sleep sets).
//
// Nothing is allocated per state and nothing holds a pointer the garbage
// collector must scan; large shards live outside the Go heap (allocWords)
// and are returned to the system as soon as they are replaced, and all of
// them by release. Arena chunks never move once allocated, so workers may
// read the keys of earlier states (keyView) while the worker that merges
// inserts more.
type visited struct {
	fp      bool
	keepIdx bool
	shards  [nShards]shard
	n       int
	sink    uint64 // keeps touch's loads from being optimized away
	// exact store
	chunks   [][]byte       // full length from the start: a chunk's header is never rewritten
	chunkOff []bool         // per chunk: outside the Go heap (allocWords)
	fill     int            // bytes used in the last chunk
	locs     column[uint64] // per index: chunk<<40 | offset<<18 | length
}

// A shard is one part of the table: the keys whose hash has its index in
// the top shardBits bits.
type shard struct {
	slots   []uint64 // exact: tag<<32 | index+1; fingerprint: the fingerprint (never 0), placed by its low bits
	vals    []int32  // fingerprint with keepIdx: index per slot
	mask    uint64
	n       int
	offHeap bool
}

const (
	shardBits = 6
	nShards   = 1 << shardBits

	chunkBits = 22 // arena chunks grow to 4 MiB
	chunkSize = 1 << chunkBits
	maxKeyLen = 1<<18 - 1
)

func newVisited(fingerprint, keepIdx bool) *visited {
	v := &visited{fp: fingerprint, keepIdx: keepIdx}
	for i := range v.shards {
		v.alloc(&v.shards[i], 16)
	}
	return v
}

func (v *visited) alloc(s *shard, size int) {
	s.slots, s.offHeap = allocWords(size)
	if v.fp && v.keepIdx {
		s.vals = make([]int32, size)
	}
	s.mask = uint64(size - 1)
}

// release returns the table's memory to the system; the set is unusable
// afterwards.
func (v *visited) release() {
	for i := range v.shards {
		s := &v.shards[i]
		freeWords(s.slots, s.offHeap)
		s.slots, s.vals = nil, nil
	}
	for i, c := range v.chunks {
		freeWords(unsafe.Slice((*uint64)(unsafe.Pointer(&c[0])), len(c)/8), v.chunkOff[i])
	}
	v.chunks, v.chunkOff = nil, nil
}

func shardOf(h uint64) int { return int(h >> (64 - shardBits)) }

// A pos is where find looked a key up: the shard and the slot.
type pos struct {
	shard int
	slot  uint64
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
// and otherwise the position where insert must put it.
func (v *visited) find(key []byte, h uint64) (p pos, idx int32, ok bool) {
	p.shard = shardOf(h)
	s := &v.shards[p.shard]
	if v.fp {
		f := fingerprint(h)
		for i := f & s.mask; ; i = (i + 1) & s.mask {
			switch s.slots[i] {
			case 0:
				p.slot = i
				return p, 0, false
			case f:
				p.slot = i
				if v.keepIdx {
					return p, s.vals[i], true
				}
				return p, -1, true
			}
		}
	}
	tag := uint64(uint32(h))
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		x := s.slots[i]
		if x == 0 {
			p.slot = i
			return p, 0, false
		}
		if x>>32 == tag {
			j := int32(uint32(x) - 1)
			if string(v.key(j)) == string(key) {
				p.slot = i
				return p, j, true
			}
		}
	}
}

// touch reads the home slot of every successor of a chunk before any is
// looked up: the loads are independent, so the processor overlaps their
// cache misses (tens at a time) instead of waiting for each in turn inside
// find; Go has no prefetch instruction, and an early load is the portable
// equivalent. A chunk's slots fit in the second-level cache, so find then
// mostly hits it. (Loading each likely match's key the same way, in a
// second and third pass, measured slower: most lookups of a chunk find
// their state, and the passes cost more than the misses they hide.) touch
// only reads: it decides nothing, and a slot moved by a shard growing in
// the meantime only costs a miss.
func (v *visited) touch(succs []succRec) {
	var sink uint64
	if v.fp && v.keepIdx {
		// A fingerprint found is followed by a read of its index, in
		// an array of its own: begin that miss too.
		for i := range succs {
			h := succs[i].h
			s := &v.shards[shardOf(h)]
			sink += s.slots[h&s.mask] + uint64(s.vals[h&s.mask])
		}
		v.sink = sink
		return
	}
	for i := range succs {
		h := succs[i].h
		s := &v.shards[shardOf(h)]
		sink += s.slots[h&s.mask]
	}
	v.sink = sink
}

// insert stores key under index idx at the position find returned.
func (v *visited) insert(p pos, key []byte, h uint64, idx int32) {
	s := &v.shards[p.shard]
	if v.fp {
		s.slots[p.slot] = fingerprint(h)
		if v.keepIdx {
			s.vals[p.slot] = idx
		}
	} else {
		if int(idx) != v.locs.len() {
			panic(fmt.Sprintf("explorer: visited index %d out of order (%d stored)", idx, v.locs.len()))
		}
		v.locs.append(v.store(key))
		s.slots[p.slot] = uint64(uint32(h))<<32 | uint64(uint32(idx)+1)
	}
	v.n++
	if s.n++; uint64(s.n)*4 > (s.mask+1)*3 {
		v.grow(s)
	}
}

// store copies key into the arena and returns its location. Chunks are
// allocated at their final size and never move; they grow from 64 KiB to
// chunkSize so that a small machine stays small. Like the table, they
// live outside the Go heap, and release frees them at once.
func (v *visited) store(key []byte) uint64 {
	if len(key) > maxKeyLen {
		panic(fmt.Sprintf("explorer: state key of %d bytes is longer than the %d the visited set supports", len(key), maxKeyLen))
	}
	last := len(v.chunks) - 1
	if last < 0 || v.fill+len(key) > len(v.chunks[last]) {
		size := chunkSize
		if last < 6 {
			size = 1 << (16 + last + 1) // 64 KiB, 128 KiB, ... up to 4 MiB
		}
		// A key longer than the chunk the policy gives (up to maxKeyLen,
		// past 64 KiB) gets one its size, rounded up to a word.
		size = max(size, (len(key)+7)&^7)
		w, off := allocWords(size / 8)
		v.chunks = append(v.chunks, unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), size))
		v.chunkOff = append(v.chunkOff, off)
		last++
		v.fill = 0
	}
	// Only bytes past every stored key are written, and no slice header
	// that a keyView holds: workers read earlier keys while this runs.
	off := v.fill
	v.fill += copy(v.chunks[last][off:], key)
	return uint64(last)<<40 | uint64(off)<<18 | uint64(len(key))
}

// grow doubles shard s, re-homing its slots, and frees the old slots.
func (v *visited) grow(s *shard) {
	old, oldVals, oldOff := s.slots, s.vals, s.offHeap
	v.alloc(s, 2*len(old))
	for i, x := range old {
		if x == 0 {
			continue
		}
		h := x // fingerprint
		if !v.fp {
			h = x >> 32 // the low 32 bits of the key's hash
		}
		j := h & s.mask
		for s.slots[j] != 0 {
			j = (j + 1) & s.mask
		}
		s.slots[j] = x
		if s.vals != nil {
			s.vals[j] = oldVals[i]
		}
	}
	freeWords(old, oldOff)
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
	b := v.locs.bytes(8)
	for i := range v.shards {
		b += int64(cap(v.shards[i].slots))*8 + int64(cap(v.shards[i].vals))*4
	}
	for _, c := range v.chunks {
		b += int64(cap(c))
	}
	return b
}

// fingerprintStats fills the collision estimates of a fingerprint run.
// It sorts the shards in place (a copy would double the memory of the
// largest runs at their very end), so the set is unusable afterwards.
// The shards split the fingerprints by their top bits, so the shards in
// order, each sorted, are all the fingerprints sorted.
func fingerprintStats(s *Stats, v *visited) {
	n := float64(v.n)
	m := float64(s.Transitions + 1)
	s.FingerprintCollision = n * math.Max(m-n, 0) / math.Exp2(64)
	var gap uint64 = math.MaxUint64
	var prev uint64
	for i := range v.shards {
		fps := v.shards[i].slots
		slices.Sort(fps)
		for _, f := range fps {
			if f == 0 {
				continue
			}
			if prev != 0 {
				gap = min(gap, f-prev)
			}
			prev = f
		}
	}
	if v.n > 1 {
		s.FingerprintCollisionObserved = 1 / float64(gap)
	}
}
