//go:build unix

package cli_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/protocheck/protocheck/cli"
)

// A FIFO given as a trace is refused at once (exit 2, naming it), by every
// command that reads a trace: opening it would block until a writer came,
// and neither Ctrl-C nor SIGTERM would end the wait.
func TestTraceThatIsAFIFOIsRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "t.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, args := range [][]string{{"replay", fifo}, {"replay", "--impl", fifo}, {"minimize", fifo}} {
		type result struct {
			code           int
			stdout, stderr string
		}
		done := make(chan result, 1)
		go func() {
			code, out, stderr := check(t, args...)
			done <- result{code, out, stderr}
		}()
		select {
		case r := <-done:
			if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "a named pipe (FIFO), not a trace file") {
				t.Errorf("check %q: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("check %q still blocked after 20s", args)
		}
	}
}
