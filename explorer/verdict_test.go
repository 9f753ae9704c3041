package explorer_test

import (
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// politeState is two threads that each raise their flag, back off when
// they see the other's raised, and retry: a livelock, which a fair
// scheduler can keep going forever (each thread steps in every round).
type politeState struct {
	Flag    [2]uint8
	PC      [2]uint8 // 0 raise, 1 look, 2 lower, 3 in
	Entered uint8
}

func polite() model.Machine {
	return model.MustNew(model.Def[politeState]{
		Threads: []string{"T0", "T1"},
		Init:    func(*politeState) {},
		Step: func(s *politeState, t int, x *model.Exec) {
			switch s.PC[t] {
			case 0:
				s.Flag[t], s.PC[t] = 1, 1
				x.Labelf("T%d: flag[%d] = 1", t, t)
			case 1:
				if s.Flag[1-t] == 1 {
					s.PC[t] = 2
					x.Labelf("T%d: flag[%d] is 1: back off", t, 1-t)
					return
				}
				s.PC[t], s.Entered = 3, 1
				x.Labelf("T%d: flag[%d] is 0: enter", t, 1-t)
			case 2:
				s.Flag[t], s.PC[t] = 0, 0
				x.Labelf("T%d: flag[%d] = 0, retry", t, t)
			default:
				x.Done()
			}
		},
		Progress: []model.ProgressOf[politeState]{{Name: "someone-enters", Pending: func(s *politeState) bool { return s.Entered == 0 }}},
	})
}

// A livelocked model explored with dfs is not OK by the obvious check: dfs
// checks no progress property, so its verdict is partial, Result.OK is
// false, and the result's one line names the property it did not check.
// bfs, which checks it, finds the livelock. Every strategy and option that
// leaves the property unchecked, or stops at a limit, is not OK either;
// only skipping progress on request (NoProgress) leaves ok ok.
func TestALivelockIsNeverOK(t *testing.T) {
	m := polite()
	r, err := explorer.Explore(m, explorer.Options{Strategy: explorer.DFS})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict == explorer.OK || r.OK() || r.Verdict != explorer.Partial {
		t.Errorf("dfs on a livelock: verdict %s, OK() %v; want partial and not OK", r.Verdict, r.OK())
	}
	if s := r.String(); !strings.Contains(s, "not checked: someone-enters: progress is checked by bfs only") {
		t.Errorf("String() = %q: it does not name the property left unchecked", s)
	}
	b, err := explorer.Explore(m, explorer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Verdict != explorer.Violation || b.Violation.Property != "someone-enters" || b.Cycle == 0 || b.Fairness != explorer.FairnessWeak {
		t.Errorf("bfs on a livelock: %s (cycle %d, fairness %q), want the livelock as a fair lasso", b, b.Cycle, b.Fairness)
	}
	for _, c := range []struct {
		opts explorer.Options
		want explorer.Verdict
	}{
		{explorer.Options{Strategy: explorer.Paths, MaxSteps: 30}, explorer.Bounded},
		{explorer.Options{Strategy: explorer.Random, Runs: 20, MaxSteps: 30}, explorer.Bounded},
		{explorer.Options{Strategy: explorer.PCT, Runs: 20, MaxSteps: 30}, explorer.Bounded},
		{explorer.Options{MaxStates: 3}, explorer.Bounded},
		{explorer.Options{Strategy: explorer.DFS, MaxStates: 3}, explorer.Bounded},
	} {
		r, err := explorer.Explore(m, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != c.want || r.OK() || len(r.Unchecked) == 0 {
			t.Errorf("%+v: %s, OK() %v; want %s, not OK, with someone-enters unchecked", c.opts, r, r.OK(), c.want)
		}
	}
	r, err = explorer.Explore(m, explorer.Options{NoProgress: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || len(r.Skipped) != 1 || len(r.Unchecked) != 0 || r.Fairness != "" || !strings.Contains(r.String(), "skipped: someone-enters") {
		t.Errorf("NoProgress: %s, OK() %v, skipped %q, fairness %q; want ok with someone-enters skipped on request", r, r.OK(), r.Skipped, r.Fairness)
	}
	var nilResult *explorer.Result
	if nilResult.OK() {
		t.Error("a nil Result is OK")
	}
}

// A search without progress properties whose paths end is OK by every
// exhaustive strategy, and OK() says so: the new verdict takes nothing
// from a proof.
func TestACleanCompleteSearchIsOK(t *testing.T) {
	for _, o := range []explorer.Options{{}, {Strategy: explorer.DFS}, {Strategy: explorer.Paths}} {
		r, err := explorer.Explore(steps(2, 3), o)
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() || r.Verdict != explorer.OK || r.Fairness != "" {
			t.Errorf("%s: %s, OK() %v", o.Strategy, r, r.OK())
		}
	}
	if !explorer.Exhaustive(explorer.BFS) || !explorer.Exhaustive(explorer.DFS) || !explorer.Exhaustive(explorer.Paths) ||
		explorer.Exhaustive(explorer.Random) || explorer.Exhaustive(explorer.RandomThreads) || explorer.Exhaustive(explorer.PCT) {
		t.Error("Exhaustive is wrong about a strategy")
	}
}

// metricsGrid is two threads that each count to k, every step counting
// in one of n metrics: (k+1)^2 states, acyclic, one terminal state, and a
// per-execution summary that needs 24*n bytes a state, far more than the
// search does.
func metricsGrid(k, n int) model.Machine {
	names := make([]string, n)
	for i := range names {
		names[i] = "m" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	return model.MustNew(model.Def[struct{ PC [2]uint16 }]{
		Threads: []string{"T0", "T1"},
		Init:    func(*struct{ PC [2]uint16 }) {},
		Step: func(s *struct{ PC [2]uint16 }, t int, x *model.Exec) {
			if int(s.PC[t]) == k {
				x.Done()
				return
			}
			s.PC[t]++
			x.Count(int(s.PC[t])%n, 1)
			x.Labelf("T%d: %d", t, s.PC[t])
		},
		Metrics: names,
	})
}

// memoryInUse is what the explorer's Meter counts: what the Go runtime
// holds and has not returned to the system.
func memoryInUse() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()) - int64(s[1].Value.Uint64())
}

// Options.MaxMemory holds after the search too: with Metrics, the summary
// over every execution is allocated once the search is done, and one
// that would take the process past the limit is not computed. The
// result says so (partial, the metrics listed as not checked, their
// totals kept), and the process never held more than the limit.
func TestMaxMemoryHoldsForTheMetricsSummary(t *testing.T) {
	const k, n = 300, 40 // 90 601 states: a summary of about 87 MiB
	m := metricsGrid(k, n)
	full, err := explorer.Explore(m, explorer.Options{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	if !full.OK() || full.Metrics[1].Executions == 0 {
		t.Fatalf("without a limit: %s, %+v; want ok with a summary per execution", full, full.Metrics[1])
	}
	debug.FreeOSMemory()
	limit := memoryInUse() + 40<<20 // room for the search, not for the summary
	r, err := explorer.Explore(m, explorer.Options{Metrics: true, MaxMemory: limit})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != explorer.Partial || r.OK() || len(r.Unchecked) != 1 || !strings.HasPrefix(r.Unchecked[0], explorer.MetricsUnchecked+": not computed: max-memory=") {
		t.Errorf("with a limit the summary would pass: %s; want partial, the per-execution metrics not computed", r)
	}
	if r.Stats.States != full.Stats.States || r.Metrics[1].Executions != 0 || r.Metrics[1].Transitions != full.Metrics[1].Transitions {
		t.Errorf("metric %+v (%d states), want the totals over the transitions of all %d states and no summary", r.Metrics[1], r.Stats.States, full.Stats.States)
	}
	t.Logf("limit %d MiB, peak %d MiB; %s", limit>>20, r.Stats.PeakMemory>>20, r.Unchecked[0])
	if r.Stats.PeakMemory > limit {
		t.Errorf("peak memory %d MiB, over the limit of %d MiB", r.Stats.PeakMemory>>20, limit>>20)
	}
}
