package exclusive

import (
	"testing"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/internal/race"
	"github.com/protocheck/protocheck/model"
)

// TestImplConformanceStepAtomic is TestImplConformance at sizes where
// guests execute an atomic instruction in cpu_exec_step_atomic
// (step-atomic): every implemented variant under random and PCT
// schedules, each run replayed on the model (same labels, same
// violation at the same step), the correct variants without one.
func TestImplConformanceStepAtomic(t *testing.T) {
	sizes := []struct {
		params model.Params
		runs   int
	}{
		{model.Params{"tbs": 1, "step-atomic": 1}, 15},
		{model.Params{"vcpus": 2, "tbs": 1, "safe-work": 2, "step-atomic": 2, "run-on-cpu": 2}, 10},
	}
	if testing.Short() || race.Enabled {
		sizes = sizes[:1]
		sizes[0].runs = 8
	}
	for _, variant := range Impl.Variants {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			expectOK := false
			for _, v := range Protocol.Variants {
				if v.Name == variant {
					expectOK = v.Expect == model.ExpectOK
				}
			}
			for _, size := range sizes {
				tg := implTarget(t, variant, size.params)
				for _, s := range []rt.Strategy{rt.Random(1), rt.PCT(1, 3)} {
					for i := 0; i < size.runs; i++ {
						run, err := tg.Controlled(s, implMaxSteps)
						if err != nil {
							t.Fatal(err)
						}
						if run.BoundHit || run.Leaked > 0 {
							t.Fatalf("%v %s run %d: %s\n%s", tg.Params, s, i, run.Outcome(), run)
						}
						if err := tg.CheckRun(run); err != nil {
							t.Fatalf("%v %s run %d: model and code disagree: %v\n%s", tg.Params, s, i, err, run)
						}
						if run.Violation != nil && expectOK {
							t.Fatalf("%v %s run %d: %s\n%s", tg.Params, s, i, run.Violation, run)
						}
					}
				}
			}
		})
	}
}
