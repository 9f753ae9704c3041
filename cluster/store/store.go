// Package store reads and writes the files of a distributed exploration
// through Beam's filesystem abstraction, so that the same code takes a
// local directory (Prism, or a mount every worker shares) and object
// storage (gs://, s3://) on a cluster.
//
// Two file kinds: record files, a sequence of length-prefixed byte
// records (the frontier of a level, the candidates one task hands to
// another), and fingerprint runs, sorted 8-byte big-endian fingerprints
// (a partition of the visited set), which are read as a stream and never
// held in memory.
package store

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
)

// MaxRecord bounds a record's length when reading: a corrupt length
// prefix must be an error, not an allocation of gigabytes.
const MaxRecord = 64 << 20

// Join appends a file name to a directory or an object-storage prefix.
func Join(dir, name string) string { return strings.TrimSuffix(dir, "/") + "/" + name }

// RandomName returns 24 random hex digits: the files a task writes are
// named per attempt, so that a retried task never overwrites a file the
// committed attempt listed.
func RandomName() (string, error) {
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(id[:]), nil
}

func open(ctx context.Context, path string) (filesystem.Interface, error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return fs, nil
}

// ReadFile returns a whole (small) file.
func ReadFile(ctx context.Context, path string) ([]byte, error) {
	fs, err := open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	return filesystem.Read(ctx, fs, path)
}

// ReadJSON reads the JSON document at path into v.
func ReadJSON(ctx context.Context, path string, v any) error {
	b, err := ReadFile(ctx, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// WriteFile writes a whole (small) file.
func WriteFile(ctx context.Context, path string, data []byte) error {
	fs, err := open(ctx, path)
	if err != nil {
		return err
	}
	defer fs.Close()
	return filesystem.Write(ctx, fs, path, data)
}

// Remove deletes files; a file system that cannot delete (none of Beam's
// own) leaves them. A file already gone is not an error.
func Remove(ctx context.Context, paths ...string) error {
	var errs []error
	for _, p := range paths {
		fs, err := open(ctx, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if r, ok := fs.(filesystem.Remover); ok {
			if err := r.Remove(ctx, p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		fs.Close()
	}
	return errors.Join(errs...)
}

// RemoveGlob deletes the files matching a glob (in one directory).
func RemoveGlob(ctx context.Context, glob string) error {
	fs, err := open(ctx, glob)
	if err != nil {
		return err
	}
	names, err := fs.List(ctx, glob)
	fs.Close()
	if err != nil {
		return err
	}
	return Remove(ctx, names...)
}

// A Writer writes records to one file.
type Writer struct {
	path string
	w    io.WriteCloser
	bw   *bufio.Writer
	n    int64
	size int64
}

// Create opens path for writing records, replacing any file there.
func Create(ctx context.Context, path string) (*Writer, error) {
	w, bw, err := openWrite(ctx, path)
	if err != nil {
		return nil, err
	}
	return &Writer{path: path, w: w, bw: bw}, nil
}

// openWrite opens path for writing, replacing any file there, buffered.
func openWrite(ctx context.Context, path string) (io.WriteCloser, *bufio.Writer, error) {
	fs, err := open(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	defer fs.Close()
	w, err := fs.OpenWrite(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	return w, bufio.NewWriterSize(w, 1<<16), nil
}

// Write appends one record.
func (w *Writer) Write(rec []byte) error {
	var hdr [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(hdr[:], uint64(len(rec)))
	if _, err := w.bw.Write(hdr[:k]); err != nil {
		return err
	}
	if _, err := w.bw.Write(rec); err != nil {
		return err
	}
	w.n++
	w.size += int64(k + len(rec))
	return nil
}

// Path is the file's name.
func (w *Writer) Path() string { return w.path }

// Count is the number of records written.
func (w *Writer) Count() int64 { return w.n }

// Size is the number of bytes written.
func (w *Writer) Size() int64 { return w.size }

// Close flushes and commits the file.
func (w *Writer) Close() error {
	if err := w.bw.Flush(); err != nil {
		w.w.Close()
		return fmt.Errorf("%s: %w", w.path, err)
	}
	if err := w.w.Close(); err != nil {
		return fmt.Errorf("%s: %w", w.path, err)
	}
	return nil
}

// ReadRecords calls fn with every record of a file written by a Writer,
// in order. The slice passed to fn is fresh for each record: fn may keep
// it.
func ReadRecords(ctx context.Context, path string, fn func([]byte) error) error {
	fs, err := open(ctx, path)
	if err != nil {
		return err
	}
	defer fs.Close()
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		return err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 1<<16)
	for {
		n, err := binary.ReadUvarint(br)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if n > MaxRecord {
			return fmt.Errorf("%s: a record of %d bytes (corrupt file?)", path, n)
		}
		rec := make([]byte, n)
		if _, err := io.ReadFull(br, rec); err != nil {
			return fmt.Errorf("%s: truncated record: %w", path, err)
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}
