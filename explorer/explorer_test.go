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
type locks struct{ order [2][2]int }

type locksState struct {
	mu [2]model.Mutex
	pc [2]uint8 // 0,1: lock order[t][pc]; 2,3: unlock in reverse; 4 done
}

func (s *locksState) Clone() model.State { c := *s; return &c }
func (s *locksState) AppendKey(b []byte) []byte {
	return append(b, byte(s.mu[0].Holder()+1), byte(s.mu[1].Holder()+1), s.pc[0], s.pc[1])
}
func (s *locksState) Vars() []model.Var {
	return []model.Var{{Name: "A", Value: s.mu[0].String()}, {Name: "B", Value: s.mu[1].String()}}
}

var lockNames = [2]string{"A", "B"}

func (l locks) Threads() []string             { return []string{"T0", "T1"} }
func (l locks) Init() model.State             { return &locksState{} }
func (l locks) Metrics() []string             { return []string{"acquisitions", "contended-steps"} }
func (l locks) Spec() *model.Spec             { return nil }
func (l locks) Invariants() []model.Invariant { return nil }
func (l locks) next(s *locksState, t int) (lock bool, m int) {
	pc := s.pc[t]
	if pc < 2 {
		return true, l.order[t][pc]
	}
	return false, l.order[t][3-pc]
}
func (l locks) Status(s model.State, t int) model.Status {
	ls := s.(*locksState)
	if ls.pc[t] == 4 {
		return model.Status{Done: true}
	}
	_, m := l.next(ls, t)
	return model.Status{WaitsFor: "mutex " + lockNames[m]}
}
func (l locks) Enabled(s model.State, buf []model.Choice) []model.Choice {
	ls := s.(*locksState)
	for t := 0; t < 2; t++ {
		if ls.pc[t] == 4 {
			continue
		}
		if lock, m := l.next(ls, t); lock && !ls.mu[m].Free() {
			continue
		}
		buf = append(buf, model.Choice{Thread: t})
	}
	return buf
}
func (l locks) Step(s model.State, c model.Choice, x *model.Exec) model.State {
	n := s.Clone().(*locksState)
	t := c.Thread
	if !n.mu[0].HeldBy(1-t) && !n.mu[1].HeldBy(1-t) {
	} else {
		x.Count(1, 1)
	}
	lock, m := l.next(n, t)
	if lock {
		x.Lock(&n.mu[m], lockNames[m])
		x.Count(0, 1)
		x.Labelf("lock %s", lockNames[m])
	} else {
		x.Unlock(&n.mu[m], lockNames[m])
		x.Labelf("unlock %s", lockNames[m])
	}
	n.pc[t]++
	return n
}

func TestDeadlockNamesEveryBlockedThread(t *testing.T) {
	r, err := explorer.Explore(locks{order: [2][2]int{{0, 1}, {1, 0}}}, explorer.Options{})
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

// bfs computes metrics by dynamic programming over the merged state graph;
// paths enumerates every execution. They must agree exactly.
func TestBFSMetricsEqualPathEnumeration(t *testing.T) {
	m := locks{order: [2][2]int{{0, 1}, {0, 1}}}
	b, err := explorer.Explore(m, explorer.Options{Strategy: explorer.BFS})
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
	_, err := explorer.Execute(locks{order: [2][2]int{{0, 1}, {1, 0}}}, []model.Choice{{Thread: 0}, {Thread: 1}, {Thread: 0}})
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
func counterRace(n int) model.Machine { return race{n: n} }

type race struct{ n int }
type raceState struct {
	mem model.Mem
	pc  []uint8
	reg []uint64
}

func (s *raceState) Clone() model.State {
	return &raceState{mem: s.mem.Clone(), pc: append([]uint8(nil), s.pc...), reg: append([]uint64(nil), s.reg...)}
}
func (s *raceState) AppendKey(b []byte) []byte {
	b = s.mem.AppendKey(b)
	for i := range s.pc {
		b = append(b, s.pc[i], byte(s.reg[i]))
	}
	return b
}
func (s *raceState) Vars() []model.Var { return s.mem.Vars() }
func (r race) Threads() []string {
	out := make([]string, r.n)
	for i := range out {
		out[i] = fmt.Sprint("T", i)
	}
	return out
}
func (r race) Init() model.State {
	return &raceState{mem: model.NewMem("count"), pc: make([]uint8, r.n), reg: make([]uint64, r.n)}
}
func (r race) Metrics() []string { return nil }
func (r race) Spec() *model.Spec { return nil }
func (r race) Status(s model.State, t int) model.Status {
	return model.Status{Done: s.(*raceState).pc[t] == 2}
}
func (r race) Enabled(s model.State, buf []model.Choice) []model.Choice {
	for t, pc := range s.(*raceState).pc {
		if pc < 2 {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}
func (r race) Step(s model.State, c model.Choice, x *model.Exec) model.State {
	n := s.Clone().(*raceState)
	t := c.Thread
	if n.pc[t] == 0 {
		n.reg[t] = x.Load(n.mem, 0)
		x.Labelf("load %d", n.reg[t])
	} else {
		x.Store(n.mem, 0, n.reg[t]+1)
		x.Labelf("store %d", n.reg[t]+1)
	}
	n.pc[t]++
	return n
}
func (r race) Invariants() []model.Invariant {
	return []model.Invariant{{Name: "no-lost-update", Check: func(s model.State) string {
		rs := s.(*raceState)
		for _, pc := range rs.pc {
			if pc != 2 {
				return ""
			}
		}
		if got := rs.mem.Peek(0); got != uint64(r.n) {
			return fmt.Sprintf("count=%d after %d increments", got, r.n)
		}
		return ""
	}}}
}

// A register whose reads may return a stale value: porcupine must reject
// the history of the stale path, and paths must find it.
type staleReg struct{}
type staleState struct{ pc [2]uint8 }

func (s *staleState) Clone() model.State        { c := *s; return &c }
func (s *staleState) AppendKey(b []byte) []byte { return append(b, s.pc[0], s.pc[1]) }
func (s *staleState) Vars() []model.Var         { return nil }
func (staleReg) Threads() []string              { return []string{"writer", "reader"} }
func (staleReg) Init() model.State              { return &staleState{} }
func (staleReg) Metrics() []string              { return nil }
func (staleReg) Invariants() []model.Invariant  { return nil }
func (staleReg) Status(s model.State, t int) model.Status {
	return model.Status{Done: s.(*staleState).pc[t] == 1}
}
func (staleReg) Enabled(s model.State, buf []model.Choice) []model.Choice {
	for t, pc := range s.(*staleState).pc {
		if pc == 0 {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}
func (staleReg) Step(s model.State, c model.Choice, x *model.Exec) model.State {
	n := s.Clone().(*staleState)
	if c.Thread == 0 {
		x.Call(0, 1)
		x.Return(0, nil)
		x.Label("write 1")
	} else {
		x.Call(1, nil)
		x.Return(1, 0) // always reads the old value: stale after the write
		x.Label("read 0")
	}
	n.pc[c.Thread] = 1
	return n
}
func (staleReg) Spec() *model.Spec {
	return &model.Spec{Name: "register", Model: porcupine.Model{
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
	}}
}

func TestLinearizabilityOnWholePaths(t *testing.T) {
	r, err := explorer.Explore(staleReg{}, explorer.Options{Strategy: explorer.Paths})
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
	b, _ := explorer.Explore(staleReg{}, explorer.Options{Strategy: explorer.BFS})
	if b.Verdict != explorer.OK {
		t.Errorf("bfs: %s", b)
	}
}
