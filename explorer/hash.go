package explorer

import (
	"encoding/binary"
	"math/bits"
)

// hashKey is a fixed, seedless 64-bit hash of a state key, in the style
// of wyhash (multiply-fold of 128-bit products): it reads 16 bytes per
// round and passes SMHasher-style avalanche well enough for open
// addressing and for 64-bit fingerprints. It is fixed (not maphash) so
// that table layouts and, with fingerprints, the very rare collisions are
// the same on every run.
func hashKey(b []byte) uint64 {
	const (
		p0 = 0xa0761d6478bd642f
		p1 = 0xe7037ed1a0b428db
		p2 = 0x8ebc6af09c88c6e3
		p3 = 0x589965cc75374cc3
	)
	n := len(b)
	h := uint64(n) ^ p0
	for len(b) > 16 {
		h = mum(binary.LittleEndian.Uint64(b)^p1, binary.LittleEndian.Uint64(b[8:])^h)
		b = b[16:]
	}
	var a, c uint64
	switch k := len(b); {
	case k > 8:
		a = binary.LittleEndian.Uint64(b)
		c = binary.LittleEndian.Uint64(b[k-8:])
	case k >= 4:
		a = uint64(binary.LittleEndian.Uint32(b))
		c = uint64(binary.LittleEndian.Uint32(b[k-4:]))
	case k > 0:
		a = uint64(b[0])<<16 | uint64(b[k>>1])<<8 | uint64(b[k-1])
	}
	return mum(p2^uint64(len(b)), mum(a^p3, c^h))
}

func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}
