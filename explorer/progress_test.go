package explorer_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/protocheck/protocheck/explorer"
)

// A fake clock that advances a second on every reading makes every
// progress check "a second later", so progress must appear; without a
// clock it never does. No test depends on the machine's speed.
func TestProgressIsPacedByTheClock(t *testing.T) {
	var now time.Time
	tick := func() time.Time { now = now.Add(time.Second); return now }
	for _, asJSON := range []bool{false, true} {
		var buf bytes.Buffer
		r, err := explorer.Explore(counterRace(6), explorer.Options{Clock: tick, Progress: &buf, ProgressJSON: asJSON})
		if err != nil {
			t.Fatal(err)
		}
		if r.Stats.Elapsed <= 0 {
			t.Errorf("elapsed %v with a clock", r.Stats.Elapsed)
		}
		out := buf.String()
		want := "progress: "
		if asJSON {
			want = `{"states":`
		}
		if !strings.HasPrefix(out, want) {
			t.Errorf("json=%v: progress %q, want lines starting %q", asJSON, out, want)
		}
	}
	var buf bytes.Buffer
	if _, err := explorer.Explore(counterRace(6), explorer.Options{Progress: &buf}); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("progress without a clock: %q", buf.String())
	}
}
