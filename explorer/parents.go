package explorer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
)

// parents is bfs's record of how each state was first reached: the index
// of its parent and the choice that led from it (packChoice, without the
// named bit), from which a counterexample's schedule is rebuilt. Only a
// schedule reads it, a few dozen states at the end of a search, so when
// the search spills its levels to disk (Options.SpillDir) the record goes
// to a file too, six bytes a state appended in order and read back at
// random by the few lookups a schedule makes: a fingerprint search then
// holds nothing per state but its table slot (and, with progress
// properties, what the progress check needs). Otherwise it is two columns
// in memory.
//
// I/O errors writing the file are remembered and reported by at, which
// needs what was written: a search that cannot rebuild its schedule has
// no counterexample to give.
type parents struct {
	n      int
	parent column[int32]
	via    column[uint16]
	f      *os.File
	w      *bufio.Writer
	dirty  bool // written since the last flush
	err    error
	rec    [6]byte
}

// newParents returns an empty record, kept in a file in dir when dir is
// not "".
func newParents(dir string) (*parents, error) {
	p := &parents{}
	if dir == "" {
		return p, nil
	}
	f, err := os.CreateTemp(dir, "protocheck-parents-*")
	if err != nil {
		return nil, err
	}
	p.f, p.w = f, bufio.NewWriterSize(f, 1<<16)
	return p, nil
}

func (p *parents) len() int { return p.n }

func (p *parents) append(parent int32, via uint16) {
	p.n++
	if p.f == nil {
		p.parent.append(parent)
		p.via.append(via)
		return
	}
	binary.LittleEndian.PutUint32(p.rec[:4], uint32(parent))
	binary.LittleEndian.PutUint16(p.rec[4:], via)
	if _, err := p.w.Write(p.rec[:]); err != nil && p.err == nil {
		p.err = err
	}
	p.dirty = true
}

// flush writes what is buffered, so that at may be called from several
// goroutines at once (as the progress checks of several properties do).
func (p *parents) flush() {
	if !p.dirty {
		return
	}
	if p.err == nil {
		p.err = p.w.Flush()
	}
	p.dirty = false
}

// at returns state i's parent and the choice that reached it. A record
// that cannot be read back panics: the schedule it belongs to would be
// wrong.
func (p *parents) at(i int32) (int32, uint16) {
	if p.f == nil {
		return p.parent.at(int(i)), p.via.at(int(i))
	}
	p.flush()
	err := p.err
	var rec [6]byte
	if err == nil {
		_, err = p.f.ReadAt(rec[:], 6*int64(i))
	}
	if err != nil {
		panic(fmt.Sprintf("explorer: reading state %d's parent back from %s: %v", i, p.f.Name(), err))
	}
	return int32(binary.LittleEndian.Uint32(rec[:4])), binary.LittleEndian.Uint16(rec[4:])
}

// bytes is the memory the record holds.
func (p *parents) bytes() int64 {
	if p.f != nil {
		return int64(p.w.Size())
	}
	return p.parent.bytes(4) + p.via.bytes(2)
}

// close removes the file; closing twice is harmless.
func (p *parents) close() {
	if p.f != nil {
		p.f.Close()
		os.Remove(p.f.Name())
		p.f = nil
	}
}
