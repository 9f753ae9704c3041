package explorer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// locks: each thread takes two mutexes, in an order given per thread, then
// releases them. Opposite orders deadlock. Metric 0 counts acquisitions
// that had to wait for nothing (the mutex was free): every acquisition.
// Metric 1 counts steps taken while the other thread holds a lock.
func locks(order [2][2]int) model.Machine {
	return model.MustNew(model.Def[locksState]{
		Threads: []string{"T0", "T1"},
		Init:    func(*locksState) {},
		Step: func(s *locksState, t int, x *model.Exec) {
			pc := s.PC[t]
			if pc == 4 {
				x.Done()
				return
			}
			contended := s.Mu[0].HeldBy(1-t) || s.Mu[1].HeldBy(1-t)
			if pc < 2 {
				m := order[t][pc]
				x.Label("mutex " + lockNames[m]) // what it waits for while m is held
				if !x.Lock(&s.Mu[m], lockNames[m]) {
					return
				}
				x.Count(0, 1)
				x.Labelf("lock %s", lockNames[m])
			} else {
				m := order[t][3-pc]
				x.Unlock(&s.Mu[m], lockNames[m])
				x.Labelf("unlock %s", lockNames[m])
			}
			if contended {
				x.Count(1, 1)
			}
			s.PC[t]++
		},
		Metrics: []string{"acquisitions", "contended-steps"},
		Vars: func(s *locksState) []model.Var {
			return []model.Var{{Name: "A", Value: s.Mu[0].String()}, {Name: "B", Value: s.Mu[1].String()}}
		},
	})
}

type locksState struct {
	Mu [2]model.Mutex
	PC [2]uint8 // 0,1: lock order[t][pc]; 2,3: unlock in reverse; 4 done
}

var lockNames = [2]string{"A", "B"}

func TestDeadlockNamesEveryBlockedThread(t *testing.T) {
	r, err := explorer.Explore(locks([2][2]int{{0, 1}, {1, 0}}), explorer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != explorer.Violation || r.Violation.Property != model.Deadlock {
		t.Fatalf("want deadlock, got %s", r)
	}
	if len(r.Schedule) != 2 {
		t.Errorf("shortest deadlock is 2 steps, got %d: %v", len(r.Schedule), r.Labels)
	}
	for _, want := range []string{"T0 waits for mutex B", "T1 waits for mutex A"} {
		if !strings.Contains(r.Violation.Message, want) {
			t.Errorf("message %q lacks %q", r.Violation.Message, want)
		}
	}
}

// bfs computes metrics (when asked to, Options.Metrics) by dynamic
// programming over the merged state graph; paths enumerates every
// execution. They must agree exactly.
func TestBFSMetricsEqualPathEnumeration(t *testing.T) {
	m := locks([2][2]int{{0, 1}, {0, 1}})
	b, err := explorer.Explore(m, explorer.Options{Strategy: explorer.BFS, Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := explorer.Explore(m, explorer.Options{Strategy: explorer.Paths})
	if err != nil {
		t.Fatal(err)
	}
	if b.Verdict != explorer.OK || p.Verdict != explorer.OK {
		t.Fatalf("want ok, got bfs %s, paths %s", b, p)
	}
	if b.Stats.States != 16 {
		t.Errorf("bfs: %d states, want 16", b.Stats.States)
	}
	if p.Stats.Executions != 2 {
		t.Errorf("paths: %d executions, want 2 (one per thread to take A first)", p.Stats.Executions)
	}
	for k := range b.Metrics {
		bm, pm := b.Metrics[k], p.Metrics[k]
		if bm.Executions != pm.Executions || bm.Min != pm.Min || bm.Max != pm.Max || fmt.Sprintf("%.6f", bm.Mean) != fmt.Sprintf("%.6f", pm.Mean) {
			t.Errorf("metric %s: bfs %+v, paths %+v", bm.Name, bm, pm)
		}
	}
	if got := b.Metrics[0]; got.Min != 4 || got.Max != 4 {
		t.Errorf("acquisitions per execution: %+v, want exactly 4", got)
	}
	// Without Options.Metrics bfs keeps no graph and totals the counters
	// over transitions only.
	plain, err := explorer.Explore(m, explorer.Options{Strategy: explorer.BFS})
	if err != nil {
		t.Fatal(err)
	}
	for k, pm := range plain.Metrics {
		if pm.Executions != 0 || pm.Transitions != b.Metrics[k].Transitions {
			t.Errorf("metric %s without Options.Metrics: %+v, want only the transition total %d", pm.Name, pm, b.Metrics[k].Transitions)
		}
	}
}

func TestRandomIsReproducible(t *testing.T) {
	m := counterRace(3)
	var first []model.Choice
	for i := 0; i < 2; i++ {
		r, err := explorer.Explore(m, explorer.Options{Strategy: explorer.Random, Seed: 7, Runs: 100})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != explorer.Violation {
			t.Fatalf("random did not find the lost update: %s", r)
		}
		if i == 0 {
			first = r.Schedule
		} else if fmt.Sprint(first) != fmt.Sprint(r.Schedule) {
			t.Fatalf("same seed, different schedules: %v vs %v", first, r.Schedule)
		}
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []explorer.Options{{Strategy: "dfs2"}, {Runs: -1}, {MaxSteps: -3}} {
		if _, err := explorer.Explore(counterRace(2), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

func TestExecuteRejectsADisabledChoice(t *testing.T) {
	_, err := explorer.Execute(locks([2][2]int{{0, 1}, {1, 0}}), []model.Choice{{Thread: 0}, {Thread: 1}, {Thread: 0}})
	var d *explorer.DivergenceError
	if err == nil || !asDivergence(err, &d) || d.Step != 2 {
		t.Fatalf("want divergence at step index 2, got %v", err)
	}
}

func asDivergence(err error, d **explorer.DivergenceError) bool {
	de, ok := err.(*explorer.DivergenceError)
	*d = de
	return ok
}

// counterRace is n threads doing a racy load/store increment, with the
// counter as a linearizable register: each store is a write of the value
// it computed and each load a read, so the lost update is also visible to
// porcupine as... nothing (each op is atomic). The invariant finds it.
func counterRace(n int) model.Machine {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprint("T", i)
	}
	return model.MustNew(model.Def[raceState]{
		Threads: names,
		Init: func(s *raceState) {
			s.Mem = model.NewMem("count")
			s.PC = make([]uint8, n)
			s.Reg = make([]uint64, n)
		},
		Step: func(s *raceState, t int, x *model.Exec) {
			switch s.PC[t] {
			case 0:
				s.Reg[t] = x.Load(s.Mem, 0)
				x.Labelf("load %d", s.Reg[t])
			case 1:
				x.Store(s.Mem, 0, s.Reg[t]+1)
				x.Labelf("store %d", s.Reg[t]+1)
			default:
				x.Done()
				return
			}
			s.PC[t]++
		},
		Invariants: []model.InvariantOf[raceState]{{Name: "no-lost-update", Check: func(s *raceState) string {
			for _, pc := range s.PC {
				if pc != 2 {
					return ""
				}
			}
			if got := s.Mem.Peek(0); got != uint64(n) {
				return fmt.Sprintf("count=%d after %d increments", got, n)
			}
			return ""
		}}},
		Vars: func(s *raceState) []model.Var { return s.Mem.Vars() },
	})
}

type raceState struct {
	Mem model.Mem
	PC  []uint8
	Reg []uint64
}

// A register whose reads may return a stale value: porcupine must reject
// the history of the stale path, and paths must find it.
var staleReg = model.MustNew(model.Def[staleState]{
	Threads: []string{"writer", "reader"},
	Init:    func(*staleState) {},
	Step: func(s *staleState, t int, x *model.Exec) {
		if s.PC[t] == 1 {
			x.Done()
			return
		}
		if t == 0 {
			x.Call(0, 1)
			x.Return(0, nil)
			x.Label("write 1")
		} else {
			x.Call(1, nil)
			x.Return(1, 0) // always reads the old value: stale after the write
			x.Label("read 0")
		}
		s.PC[t] = 1
	},
	Spec: &model.Spec{Name: "register", Model: porcupine.Model{
		Init: func() interface{} { return 0 },
		Step: func(state, input, output interface{}) (bool, interface{}) {
			if input == nil { // read
				if _, pending := output.(model.Pending); pending {
					return true, state
				}
				return output == state, state
			}
			return true, input
		},
	}},
	Vars: func(*staleState) []model.Var { return nil },
})

type staleState struct{ PC [2]uint8 }

func TestLinearizabilityOnWholePaths(t *testing.T) {
	r, err := explorer.Explore(staleReg, explorer.Options{Strategy: explorer.Paths})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != explorer.Violation || r.Violation.Property != model.Linearizability {
		t.Fatalf("want a linearizability violation, got %s", r)
	}
	want := []model.Choice{{Thread: 0}, {Thread: 1}}
	if fmt.Sprint(r.Schedule) != fmt.Sprint(want) {
		t.Errorf("schedule %v, want %v (write, then stale read)", r.Schedule, want)
	}
	// bfs merges paths and so does not check histories: it says ok, which
	// is why verify also runs random walks for linearizability.
	b, _ := explorer.Explore(staleReg, explorer.Options{Strategy: explorer.BFS})
	if b.Verdict != explorer.OK {
		t.Errorf("bfs: %s", b)
	}
}
