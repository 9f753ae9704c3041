package explorer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// A spillFile keeps one bfs level's encoded states in a temporary file:
// written once in order, then read once in order, then removed. The pages
// it uses belong to the system's file cache, not to the process, so a wide
// level costs the search no memory of its own.
//
// I/O errors are remembered, not returned by add and next: the search
// checks rewind's error at the end of the level and the reader's at its
// end, which keeps the hot path free of error plumbing.
type spillFile struct {
	f   *os.File
	w   *bufio.Writer
	r   *bufio.Reader
	buf []byte
	// n holds a length's varint: a local array passed to Write would
	// escape, one allocation per state.
	n   [binary.MaxVarintLen64]byte
	err error
}

func newSpill(dir string) (*spillFile, error) {
	f, err := os.CreateTemp(dir, "protocheck-level-*")
	if err != nil {
		return nil, err
	}
	return &spillFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (s *spillFile) add(b []byte) {
	if s.err != nil {
		return
	}
	if _, err := s.w.Write(s.n[:binary.PutUvarint(s.n[:], uint64(len(b)))]); err != nil {
		s.err = err
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
	}
}

// rewind ends writing and starts reading from the first state.
func (s *spillFile) rewind() error {
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if s.err == nil {
		_, s.err = s.f.Seek(0, io.SeekStart)
	}
	s.r = bufio.NewReaderSize(s.f, 1<<20)
	if s.err != nil {
		return fmt.Errorf("%s: %w", s.f.Name(), s.err)
	}
	return nil
}

// next returns the next state's encoding, valid until the following call.
// A read error (which the writer's success makes unlikely) panics: the
// level's states cannot be expanded, and a bfs that skipped them would
// report an ok it did not earn.
func (s *spillFile) next() []byte {
	n, err := binary.ReadUvarint(s.r)
	if err == nil {
		if cap(s.buf) < int(n) {
			s.buf = make([]byte, n)
		}
		s.buf = s.buf[:n]
		_, err = io.ReadFull(s.r, s.buf)
	}
	if err != nil {
		panic(fmt.Sprintf("explorer: reading the frontier back from %s: %v", s.f.Name(), err))
	}
	return s.buf
}

func (s *spillFile) close() {
	s.f.Close()
	os.Remove(s.f.Name())
}
