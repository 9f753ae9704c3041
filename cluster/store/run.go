package store

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// A RunReader streams the fingerprints of a run that fall in [lo, hi], in
// increasing order. A run may cover more than that range (a partition
// that was split keeps its parent's run until it is rewritten).
type RunReader struct {
	path   string
	rc     io.ReadCloser
	br     *bufio.Reader
	lo, hi uint64
	// Cur is the current fingerprint, valid while OK.
	Cur uint64
	OK  bool
}

// OpenRun opens a run for reading; an empty path is an empty run.
func OpenRun(ctx context.Context, path string, lo, hi uint64) (*RunReader, error) {
	r := &RunReader{path: path, lo: lo, hi: hi}
	if path == "" {
		return r, nil
	}
	fs, err := open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	if r.rc, err = fs.OpenRead(ctx, path); err != nil {
		return nil, err
	}
	r.br = bufio.NewReaderSize(r.rc, 1<<16)
	return r, r.Next()
}

// Next advances to the following fingerprint in range.
func (r *RunReader) Next() error {
	if r.br == nil {
		r.OK = false
		return nil
	}
	var b [8]byte
	for {
		_, err := io.ReadFull(r.br, b[:])
		if errors.Is(err, io.EOF) {
			r.OK = false
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", r.path, err)
		}
		fp := binary.BigEndian.Uint64(b[:])
		if r.OK && fp <= r.Cur {
			return fmt.Errorf("%s: fingerprints out of order (%016x after %016x)", r.path, fp, r.Cur)
		}
		if fp < r.lo {
			continue
		}
		if fp > r.hi {
			r.OK = false
			return nil
		}
		r.Cur, r.OK = fp, true
		return nil
	}
}

// CopyUpTo writes to w every fingerprint of r up to fp, advancing past
// them, and reports whether fp itself was among them: the step of merging
// a sorted run of visited fingerprints with sorted candidates.
func (r *RunReader) CopyUpTo(w *RunWriter, fp uint64) (seen bool, err error) {
	for r.OK && r.Cur <= fp {
		seen = seen || r.Cur == fp
		if err := w.Write(r.Cur); err != nil {
			return seen, err
		}
		if err := r.Next(); err != nil {
			return seen, err
		}
	}
	return seen, nil
}

// CopyRest writes to w every fingerprint r has left.
func (r *RunReader) CopyRest(w *RunWriter) error {
	_, err := r.CopyUpTo(w, math.MaxUint64)
	return err
}

// Close releases the file; closing twice is harmless.
func (r *RunReader) Close() {
	if r.rc != nil {
		r.rc.Close()
		r.rc = nil
	}
}

// A RunMerge merges fingerprints, added in increasing order, into one
// partition's visited run: it streams the old run and writes the merged
// one under a new name, so that a failed attempt leaves the old intact.
type RunMerge struct {
	old *RunReader
	run *RunWriter
	// ID is the random part of the merged run's name, for the files
	// written beside it; Path is its path.
	ID, Path string
}

// MergeRun opens partition part (of 2^bits) of the run at prev ("" is an
// empty run) and creates the merged run prefix + "pNNNNN-ID.fps".
func MergeRun(ctx context.Context, prev, prefix string, part, bits int) (*RunMerge, error) {
	lo, hi := PartRange(part, bits)
	old, err := OpenRun(ctx, prev, lo, hi)
	if err != nil {
		return nil, err
	}
	id, err := RandomName()
	if err != nil {
		old.Close()
		return nil, err
	}
	path := fmt.Sprintf("%sp%05d-%s.fps", prefix, part, id)
	run, err := CreateRun(ctx, path)
	if err != nil {
		old.Close()
		return nil, err
	}
	return &RunMerge{old: old, run: run, ID: id, Path: path}, nil
}

// Add merges fp, which must be above every fingerprint added before,
// and reports whether it is new (not in the old run).
func (m *RunMerge) Add(fp uint64) (isNew bool, err error) {
	seen, err := m.old.CopyUpTo(m.run, fp)
	if err != nil || seen {
		return false, err
	}
	return true, m.run.Write(fp)
}

// Finish writes what is left of the old run, closes both runs and
// returns the merged run's statistics.
func (m *RunMerge) Finish() (RunStats, error) {
	defer m.old.Close()
	if err := m.old.CopyRest(m.run); err != nil {
		return RunStats{}, err
	}
	if err := m.run.Close(); err != nil {
		return RunStats{}, err
	}
	return m.run.Stats(), nil
}

// Close releases the old run, for a merge given up before Finish.
func (m *RunMerge) Close() { m.old.Close() }

// RunStats describe a run: how many fingerprints, the smallest and the
// largest, and the smallest difference between two consecutive ones
// (math.MaxUint64 with fewer than two), from which the probability that a
// collision hid a state is estimated.
type RunStats struct {
	Count       int64
	First, Last uint64
	Gap         uint64
}

// A RunWriter writes a run; fingerprints must come in increasing order.
type RunWriter struct {
	path  string
	w     io.WriteCloser
	bw    *bufio.Writer
	stats RunStats
}

// CreateRun opens path for writing a run.
func CreateRun(ctx context.Context, path string) (*RunWriter, error) {
	w, bw, err := openWrite(ctx, path)
	if err != nil {
		return nil, err
	}
	return &RunWriter{path: path, w: w, bw: bw, stats: RunStats{Gap: math.MaxUint64}}, nil
}

// Write appends fp, which must be larger than the previous one.
func (r *RunWriter) Write(fp uint64) error {
	s := &r.stats
	if s.Count > 0 {
		if fp <= s.Last {
			return fmt.Errorf("%s: fingerprint %016x written after %016x", r.path, fp, s.Last)
		}
		s.Gap = min(s.Gap, fp-s.Last)
	} else {
		s.First = fp
	}
	s.Last = fp
	s.Count++
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], fp)
	_, err := r.bw.Write(b[:])
	return err
}

// Stats describe what was written.
func (r *RunWriter) Stats() RunStats { return r.stats }

// Close flushes and commits the run.
func (r *RunWriter) Close() error {
	if err := r.bw.Flush(); err != nil {
		r.w.Close()
		return fmt.Errorf("%s: %w", r.path, err)
	}
	if err := r.w.Close(); err != nil {
		return fmt.Errorf("%s: %w", r.path, err)
	}
	return nil
}

// PartOf is the partition of a fingerprint among 1<<bits: its top bits,
// so that partitions are contiguous fingerprint ranges, and partition p
// at bits splits into 2p and 2p+1 at bits+1.
func PartOf(fp uint64, bits int) int {
	if bits == 0 {
		return 0
	}
	return int(fp >> (64 - bits))
}

// PartRange is the fingerprint range [lo, hi] of partition p among
// 1<<bits.
func PartRange(p, bits int) (lo, hi uint64) {
	if bits == 0 {
		return 0, ^uint64(0)
	}
	lo = uint64(p) << (64 - bits)
	return lo, lo + (uint64(1)<<(64-bits) - 1)
}
