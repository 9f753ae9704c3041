//go:build unix

package traces

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO given as a trace is refused at once, before it is opened: opening
// it would block until a writer came, and nothing, a signal included,
// would end the wait. A directory is refused the same way.
func TestLoadRefusesNonRegularFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "trace.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, "a named pipe (FIFO), not a trace file"},
		{t.TempDir(), "a directory, not a trace file"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := Load(c.path)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load(%s) = %v, want an error saying %q", c.path, err, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) still blocked after 10s", c.path)
		}
	}
}
