package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	clipq "github.com/protocheck/protocheck/internal/clip"
	"github.com/protocheck/protocheck/traces"
)

// checkSpillDir checks, before any work, that a search can keep its
// levels in dir (--spill-dir): a level file that cannot be written would
// stop the search at its first level with the verdict bounded, and a
// buggy variant would seem clean within that bound.
func checkSpillDir(dir string) error {
	bad := func(err error) error {
		return usagef("--spill-dir %s: cannot hold the search's level files: %v (name a writable directory, or \"none\" to keep them in memory)", clip(dir), clipq.PathError(err))
	}
	if fi, err := os.Stat(dir); err != nil {
		return bad(err)
	} else if !fi.IsDir() {
		return bad(errors.New("it is not a directory"))
	}
	if err := tryCreateIn(dir); err != nil {
		return bad(err)
	}
	return nil
}

// tryCreateIn creates a temporary file in dir and removes it: whether a
// file can be written there, tried without leaving anything behind.
func tryCreateIn(dir string) error {
	f, err := os.CreateTemp(dir, ".protocheck-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// checkWritable checks, before any work, that the file named by an output
// flag can be written: an exploration of an hour must not end in "no such
// directory". It creates and changes nothing a user could see: an
// existing file is opened for writing without truncation, a new one is
// tried as a temporary file in its directory, which is then removed.
func checkWritable(flag, path string) error {
	if path == "" {
		return nil
	}
	bad := func(err error) error {
		return usagef("--%s %s: cannot be written: %v", flag, clip(path), clipq.PathError(err))
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return bad(errors.New("it is a directory"))
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return bad(err)
		}
		return f.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		return bad(err)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return bad(err)
	} else if !fi.IsDir() {
		return bad(fmt.Errorf("%s is not a directory", clip(dir)))
	}
	if err := tryCreateIn(dir); err != nil {
		return bad(err)
	}
	return nil
}

// outputError is a failure to write an output file after the result was
// printed: exit 2, with the result on stdout all the same.
func outputError(flag, path string, err error) error {
	return fmt.Errorf("--%s %s: %w (the result above is complete; only this file is missing)", flag, clip(path), clipq.PathError(err))
}

// writeHTML writes the HTML view of a replayed trace.
func writeHTML(path string, r *traces.Replayed) error {
	var buf bytes.Buffer
	if err := traces.RenderHTML(&buf, r); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
