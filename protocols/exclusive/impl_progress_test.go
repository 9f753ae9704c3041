package exclusive

import (
	"testing"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/internal/race"
)

// At the default size the guests never halt (tbs=0), so no run ends by
// itself: the code ends each run once every work item and exclusive
// section has completed and every vCPU has gone on (impl_progress.go).
// upstream's runs end clean under the Go scheduler and under control,
// where each run replays on the model; no-kick's start_exclusive never
// returns, which a cut run shows as a lasso on the model.
func TestImplEndlessGuests(t *testing.T) {
	runs := 20
	if race.Enabled {
		runs = 5
	}
	tg := implTarget(t, "upstream", nil)
	for seed := int64(0); seed < int64(runs); seed++ {
		if v, _, err := tg.Real(seed); err != nil || v != nil {
			t.Fatalf("real run %d: %v %v", seed, v, err)
		}
	}
	s := rt.Random(1)
	for i := 0; i < runs; i++ {
		run, err := tg.Controlled(s, implMaxSteps)
		if err != nil {
			t.Fatal(err)
		}
		if !run.Ended || run.Failed() {
			t.Fatalf("controlled run %d: %s", i, run.Outcome())
		}
		if err := tg.CheckRun(run); err != nil {
			t.Fatalf("controlled run %d does not replay on the model: %v", i, err)
		}
	}

	bug := implTarget(t, "no-kick", nil)
	s = rt.Random(1)
	for i := 0; i < 5; i++ {
		run, err := bug.Controlled(s, implMaxSteps)
		if err != nil {
			t.Fatal(err)
		}
		if run.Ended || run.Violation != nil {
			continue
		}
		l, err := bug.FindLasso(run)
		if err != nil {
			t.Fatal(err)
		}
		if l != nil {
			if l.Violation.Property != PropStartExclusiveProceeds || l.Cycle == 0 {
				t.Fatalf("no-kick: %v, cycle %d", l.Violation, l.Cycle)
			}
			return
		}
	}
	t.Errorf("no-kick: 5 controlled runs show no lasso of %s", PropStartExclusiveProceeds)
}
