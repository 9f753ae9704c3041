package explorer_test

import (
	"os"
	"reflect"
	"testing"

	"github.com/protocheck/protocheck/explorer"
)

// Levels spilled to files give the same search as levels in memory, on
// one worker and two, and leave no file behind.
func TestSpilledLevelsGiveTheSameSearch(t *testing.T) {
	m := steps(3, 6)
	mem, err := explorer.Explore(m, explorer.Options{Fingerprint: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, w := range []int{1, 2} {
		o := explorer.Options{Fingerprint: true, SpillDir: dir}
		if w > 1 {
			o.Workers = w
		}
		r, err := explorer.Explore(m, o)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := comparableResult(mem), comparableResult(r); !reflect.DeepEqual(a, b) {
			t.Errorf("workers=%d: spilled %+v, in memory %+v", w, b, a)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("workers=%d: %d level files left behind", w, len(left))
		}
	}
	if mem.Stats.States != 7*7*7 {
		t.Errorf("%d states, want %d", mem.Stats.States, 7*7*7)
	}
	if _, err := explorer.Explore(m, explorer.Options{Fingerprint: true, SpillDir: "/nonexistent/dir"}); err != nil {
		t.Fatal(err)
	} else if r, _ := explorer.Explore(m, explorer.Options{Fingerprint: true, SpillDir: "/nonexistent/dir"}); r.Verdict != explorer.Bounded {
		t.Errorf("a spill directory that cannot be written: %s, want bounded with the reason", r)
	}
}

func comparableResult(r *explorer.Result) explorer.Result {
	c := *r
	c.Stats.Elapsed, c.Stats.StatesPerSec = 0, 0
	c.Stats.PeakMemory, c.Stats.BytesPerState = 0, 0
	// Spilled, the parents and the progress check's graph are on disk
	// during the search: the structures hold less memory.
	c.Stats.StoreBytesPerState = 0
	return c
}
