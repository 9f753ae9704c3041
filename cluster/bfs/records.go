package bfs

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// A state's position is the list of choice ranks (the index of the
// successor in the parent's expansion, in bfs order) along its canonical
// parent chain from the initial state, two bytes big-endian per rank.
// Comparing positions as byte strings of equal length orders a level
// exactly as the local bfs discovers it: level L+1 is discovered parent
// by parent in level L's order and, within a parent, in expansion order,
// and a state keeps the first discovery. So the canonical parent of a
// state, the smallest position among its discoveries, is the one the
// local bfs records, and the position itself is the counterexample's
// schedule, whatever the workers' timing and the partitioning.
const rankBytes = 2

// maxRank bounds the successors of one state that a position can name.
const maxRank = 1<<(8*rankBytes) - 1

func appendRank(path []byte, rank int) ([]byte, error) {
	if rank > maxRank {
		return nil, fmt.Errorf("a state with more than %d successors: the position encoding cannot name them", maxRank+1)
	}
	return binary.BigEndian.AppendUint16(path, uint16(rank)), nil
}

func rankAt(path []byte, i int) int { return int(binary.BigEndian.Uint16(path[i*rankBytes:])) }

// ranks is the number of ranks in a position.
func ranks(path []byte) int { return len(path) / rankBytes }

var le = binary.LittleEndian

// A frontier record is one state of a level: fp u64 | position (level
// ranks) | encoded state.
func appendFrontier(b []byte, fp uint64, path, state []byte) []byte {
	b = le.AppendUint64(b, fp)
	b = append(b, path...)
	return append(b, state...)
}

func decodeFrontier(rec []byte, level int) (fp uint64, path, state []byte, err error) {
	n := 8 + level*rankBytes
	if len(rec) < n {
		return 0, nil, nil, fmt.Errorf("a frontier record of %d bytes at level %d, want at least %d", len(rec), level, n)
	}
	return le.Uint64(rec), rec[8:n], rec[n:], nil
}

// A candidate record is one transition into a state that may be new:
// fp u64 | the state's position through this transition (level+1 ranks)
// | the transition's metric counts (signed varints, one per metric) |
// encoded state.
func appendCandidate(b []byte, fp uint64, path []byte, counts []int64, state []byte) []byte {
	b = le.AppendUint64(b, fp)
	b = append(b, path...)
	for _, c := range counts {
		b = binary.AppendVarint(b, c)
	}
	return append(b, state...)
}

// candidate is a decoded candidate record; its slices alias the record.
type candidate struct {
	fp     uint64
	path   []byte
	counts []int64
	state  []byte
}

func decodeCandidate(rec []byte, pathLen, metrics int, counts []int64) (candidate, error) {
	n := 8 + pathLen*rankBytes
	if len(rec) < n {
		return candidate{}, fmt.Errorf("a candidate record of %d bytes, want at least %d", len(rec), n)
	}
	c := candidate{fp: le.Uint64(rec), path: rec[8:n], counts: counts[:0]}
	rest := rec[n:]
	for k := 0; k < metrics; k++ {
		v, m := binary.Varint(rest)
		if m <= 0 {
			return candidate{}, fmt.Errorf("a candidate record with a bad metric count")
		}
		c.counts = append(c.counts, v)
		rest = rest[m:]
	}
	c.state = rest
	return c, nil
}

// less orders candidates by fingerprint, then position: the first of a
// fingerprint is its canonical discovery.
func less(a, b *candidate) int {
	switch {
	case a.fp < b.fp:
		return -1
	case a.fp > b.fp:
		return 1
	}
	return bytes.Compare(a.path, b.path)
}
