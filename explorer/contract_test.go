package explorer_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

// wakeState is the state of the wake-up model: waiters wait on a
// condition variable until a flag is set; a setter sets it and wakes them.
type wakeState struct {
	Mu    model.Mutex
	Cv    model.Cond
	Ready bool
	PC    [4]uint8
	Woke  uint8 // observer: the waiters the setter's wake-up woke (bit t)
}

// wakeup has three waiters and a setter. Waiter t: lock; if the flag is
// set, unlock and finish, else wait (releasing the mutex), and once woken
// re-lock and check again. Setter: lock; set the flag; wake; unlock. The
// one place where the model says how the setter wakes is the wake step:
// a broadcast wakes every waiter; a signal wakes one, and the explorer
// draws which, so a waiter left waiting after the setter is gone (a lost
// wake-up) is a deadlock it must find. forbid >= 0 adds the invariant
// that the wake step never wakes waiter forbid, which is violated iff the
// search reaches a wake-up of that waiter.
func wakeup(broadcast bool, forbid int) model.Machine {
	const setter = 3
	d := model.Def[wakeState]{
		Threads: []string{"waiter0", "waiter1", "waiter2", "setter"},
		Init:    func(*wakeState) {},
		Step: func(s *wakeState, t int, x *model.Exec) {
			pc := &s.PC[t]
			if t == setter {
				switch *pc {
				case 0:
					if !x.Lock(&s.Mu, "mu") {
						return
					}
					x.Label("pthread_mutex_lock(mu)")
				case 1:
					s.Ready = true
					x.Touch("ready", true)
					x.Label("ready = true")
				case 2:
					if broadcast {
						for _, w := range x.Broadcast(&s.Cv, "cv").Waiters() {
							s.Woke |= 1 << w
						}
						x.Label("pthread_cond_broadcast(cv)")
					} else {
						if w := x.Signal(&s.Cv, "cv"); w >= 0 {
							s.Woke |= 1 << w
						}
						x.Label("pthread_cond_signal(cv)")
					}
				case 3:
					x.Unlock(&s.Mu, "mu")
					x.Label("pthread_mutex_unlock(mu)")
				default:
					x.Done()
					return
				}
				*pc++
				return
			}
			switch *pc {
			case 0: // (re-)lock
				if !x.Lock(&s.Mu, "mu") {
					return
				}
				x.Label("pthread_mutex_lock(mu)")
				*pc = 1
			case 1:
				x.Touch("ready", false)
				if s.Ready {
					x.Label("ready: leave")
					*pc = 3
					return
				}
				x.Wait(&s.Cv, "cv", &s.Mu, "mu")
				x.Label("pthread_cond_wait(cv)")
				*pc = 2
			case 2:
				if !x.Woken(&s.Cv, "cv") {
					return
				}
				x.Label("woken")
				*pc = 0
			case 3:
				x.Unlock(&s.Mu, "mu")
				x.Label("pthread_mutex_unlock(mu)")
				*pc = 4
			default:
				x.Done()
			}
		},
	}
	if forbid >= 0 {
		d.Invariants = []model.InvariantOf[wakeState]{{Name: "never-wakes", Check: func(s *wakeState) string {
			if s.Woke&(1<<forbid) != 0 {
				return fmt.Sprintf("the setter woke waiter%d", forbid)
			}
			return ""
		}}}
	}
	return model.MustNew(d)
}

// waitingForTheSetter is a schedule after which all three waiters wait
// and the setter holds the mutex with the flag set, about to wake them.
var waitingForTheSetter = []model.Choice{
	{Thread: 0}, {Thread: 0}, // lock, wait
	{Thread: 1}, {Thread: 1},
	{Thread: 2}, {Thread: 2},
	{Thread: 3}, {Thread: 3}, // lock, ready = true
}

// A signal with three waiters is three choices, a broadcast one; the
// explorer learns it from the step alone, and each alternative wakes the
// waiter it names. Changing the broadcast into a signal in the one wake
// step turns a correct model into one with a lost wake-up, which bfs
// finds.
func TestSignalIsOneChoicePerWaiter(t *testing.T) {
	for _, broadcast := range []bool{false, true} {
		m := wakeup(broadcast, -1)
		ex, err := explorer.Execute(m, waitingForTheSetter)
		if err != nil || ex.Violation != nil {
			t.Fatalf("broadcast=%v: %v %v", broadcast, err, ex.Violation)
		}
		s := ex.States[len(ex.States)-1]
		if got := model.StateOf[wakeState](s).Cv.Waiters(); !reflect.DeepEqual(got, []int{0, 1, 2}) {
			t.Fatalf("waiters %v, want all three", got)
		}
		want := []model.Choice{{Thread: 3, Alt: 0}, {Thread: 3, Alt: 1}, {Thread: 3, Alt: 2}}
		if broadcast {
			want = want[:1]
		}
		if got := explorer.Enabled(m, s); !reflect.DeepEqual(got, want) {
			t.Errorf("broadcast=%v: enabled %v, want %v", broadcast, got, want)
		}
		st := explorer.Statuses(m, s)
		if st[3].Alternatives != len(want) || st[0].Enabled || st[0].WaitsFor != "cv (not woken yet)" {
			t.Errorf("broadcast=%v: statuses %+v", broadcast, st)
		}
		for _, c := range want {
			ex, err := explorer.Execute(m, append(append([]model.Choice(nil), waitingForTheSetter...), c))
			if err != nil || ex.Violation != nil {
				t.Fatalf("%v: %v %v", c, err, ex.Violation)
			}
			after := model.StateOf[wakeState](ex.States[len(ex.States)-1])
			var woken []int
			for w := 0; w < 3; w++ {
				if !after.Cv.Waiting(w) {
					woken = append(woken, w)
				}
			}
			if wantWoken := []int{c.Alt}; broadcast {
				if len(woken) != 3 {
					t.Errorf("the broadcast woke %v", woken)
				}
			} else if !reflect.DeepEqual(woken, wantWoken) {
				t.Errorf("alternative %d of the signal woke %v, want %v", c.Alt, woken, wantWoken)
			}
		}
	}

	// A search reaches a wake-up of every waiter, whichever it is.
	for _, broadcast := range []bool{false, true} {
		for w := 0; w < 3; w++ {
			r, err := explorer.Explore(wakeup(broadcast, w), explorer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Violation == nil || r.Violation.Property != "never-wakes" {
				t.Errorf("broadcast=%v: no wake-up of waiter%d reached: %s", broadcast, w, r)
			}
		}
	}

	// With a broadcast nobody is left waiting: the space is explored, as
	// large as a plain enumeration of it says.
	_, _, states := naive(wakeup(true, -1))
	r, err := explorer.Explore(wakeup(true, -1), explorer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != explorer.OK || r.Stats.States != int64(states) {
		t.Errorf("broadcast: %s, want ok with %d states", r, states)
	}
	// With a signal, two waiters can be left waiting: a lost wake-up.
	for _, strategy := range []string{explorer.BFS, explorer.DFS} {
		r, err = explorer.Explore(wakeup(false, -1), explorer.Options{Strategy: strategy})
		if err != nil {
			t.Fatal(err)
		}
		if r.Violation == nil || r.Violation.Property != model.Deadlock || strings.Count(r.Violation.Message, "waits for cv (not woken yet)") != 2 {
			t.Fatalf("signal, %s: %s, want a deadlock with two waiters not woken", strategy, r)
		}
	}
	want := "no thread can step: waiter1 waits for cv (not woken yet); waiter2 waits for cv (not woken yet)"
	if r, _ := explorer.Explore(wakeup(false, -1), explorer.Options{}); r.Violation.Message != want {
		t.Errorf("bfs: %q, want %q", r.Violation.Message, want)
	}
}

// breachState is the state of a machine that breaks the step contract in
// one step of thread T1, chosen by the test.
type breachState struct {
	Mem model.Mem
	N   [2]uint8
}

// breach builds a two-thread machine: T0 takes two plain steps, T1 takes
// two steps of which the one at N[1] == at is bad(s, x) instead of a plain
// one. An invariant fails once both threads are done (N == {2, 2}): a
// violation any search can report, behind which a contract breach hides
// unless it is reported first.
func breach(bad func(s *breachState, x *model.Exec), at uint8, withInvariant bool) model.Machine {
	d := model.Def[breachState]{
		Threads: []string{"T0", "T1"},
		Init:    func(s *breachState) { s.Mem = model.NewMem("w") },
		Step: func(s *breachState, t int, x *model.Exec) {
			if s.N[t] == 2 {
				x.Done()
				return
			}
			if t == 1 && s.N[1] == at {
				bad(s, x)
				return
			}
			x.Store(s.Mem, 0, uint64(t))
			x.Labelf("store w = %d", t)
			s.N[t]++
		},
	}
	if withInvariant {
		d.Invariants = []model.InvariantOf[breachState]{{Name: "not-both-done", Check: func(s *breachState) string {
			if s.N == [2]uint8{2, 2} {
				return "both threads are done"
			}
			return ""
		}}}
	}
	return model.MustNew(d)
}

// The bad steps, each a breach of the contract that the explorer must
// report as the property "model", naming the thread.
var breaches = []struct {
	name string
	bad  func(s *breachState, x *model.Exec)
	// labelledOnly: only a labelled run (Execute, a walk) can see it.
	labelledOnly bool
	want         string
}{
	{"second draw", func(s *breachState, x *model.Exec) {
		x.Choose(2)
		x.Choose(2)
		x.Store(s.Mem, 0, 1)
		x.Label("two draws")
		s.N[1]++
	}, false, "the step draws twice"},
	{"write before block", func(s *breachState, x *model.Exec) {
		x.Store(s.Mem, 0, 7)
		x.Block()
		x.Label("blocks after a store")
	}, false, "the step blocks after it wrote w"},
	{"no-op", func(s *breachState, x *model.Exec) {
		x.Label("does nothing")
	}, false, "changed nothing and accessed nothing"},
	{"no label", func(s *breachState, x *model.Exec) {
		x.Store(s.Mem, 0, 1)
		s.N[1]++
	}, true, "the step sets no label"},
	{"depends on labelling", func(s *breachState, x *model.Exec) {
		x.Store(s.Mem, 0, 1)
		x.Label("store w = 1")
		s.N[1]++
		if x.Labelling() {
			s.N[1]++ // skips a step when someone is watching
		}
	}, true, "with labels off the step gives another successor"},
	{"undeclared assertion", func(s *breachState, x *model.Exec) {
		x.Store(s.Mem, 0, 1)
		x.Label("store w = 1")
		x.Fail("w-is-one", "w was set to 1")
		s.N[1]++
	}, false, `it reports a violation of "w-is-one", which the machine does not declare`},
}

// A declared assertion is the step's violation, not a breach.
func TestDeclaredAssertionIsAViolation(t *testing.T) {
	m := model.MustNew(model.Def[breachState]{
		Threads:    []string{"T0"},
		Init:       func(s *breachState) { s.Mem = model.NewMem("w") },
		Assertions: []string{"w-stays-zero"},
		Step: func(s *breachState, t int, x *model.Exec) {
			if s.N[0] == 1 {
				x.Done()
				return
			}
			x.Store(s.Mem, 0, 1)
			x.Label("store w = 1")
			x.Assert(false, "w-stays-zero", "w was set to 1")
			s.N[0]++
		},
	})
	r := explore(t, m, explorer.Options{})
	if r.Verdict != explorer.Violation || r.Violation.Property != "w-stays-zero" {
		t.Fatalf("%s, want a violation of w-stays-zero", r)
	}
	if got := m.Properties().Names(); strings.Join(got, " ") != "w-stays-zero deadlock" {
		t.Errorf("Names() = %q, want the assertion and deadlock", got)
	}
}

// Execute, which runs labelled, reports every breach at the step where it
// happens.
func TestExecuteReportsBreaches(t *testing.T) {
	sched := []model.Choice{{Thread: 0}, {Thread: 1}}
	for _, b := range breaches {
		t.Run(b.name, func(t *testing.T) {
			ex, err := explorer.Execute(breach(b.bad, 0, false), sched)
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			checkBreach(t, ex.Violation, b.want)
			if ex.ViolationStep != 2 {
				t.Errorf("reported after step %d, want 2", ex.ViolationStep)
			}
		})
	}
}

// Every strategy reports a breach its runs can see, as the result of
// Explore: bfs, dfs and paths run quiet and see the breaches that do not
// need labels; walks run their chosen steps labelled and see all of them.
// When a quiet search finds another violation behind a breach that only a
// labelled run sees, the re-execution of its counterexample reports the
// breach instead.
func TestExploreReportsBreaches(t *testing.T) {
	for _, b := range breaches {
		for _, strategy := range []string{explorer.BFS, explorer.DFS, explorer.Paths, explorer.Random} {
			t.Run(b.name+"/"+strategy, func(t *testing.T) {
				withInvariant := b.labelledOnly && strategy != explorer.Random
				opts := explorer.Options{Strategy: strategy}
				switch strategy {
				case explorer.Random:
					opts.Runs, opts.Seed = 50, 1
				case explorer.Paths:
					opts.Runs = 50
				}
				r := explore(t, breach(b.bad, 0, withInvariant), opts)
				checkBreach(t, r.Violation, b.want)
				if r.Verdict != explorer.Violation || len(r.Labels) != len(r.Schedule) {
					t.Errorf("%s: %d labels for %d steps", r, len(r.Labels), len(r.Schedule))
				}
				if n := len(r.Schedule); n == 0 || r.Schedule[n-1].Thread != 1 {
					t.Errorf("schedule %v does not end with T1's bad step", r.Schedule)
				}
			})
		}
	}
}

// A breach that only a labelled run sees, in the very step where a quiet
// search finds another violation, is still the model's error: Execute
// checks the step contract before the step's assertions and the
// invariants of its successor, and a missing label is part of it.
func TestLabelBreachAtTheViolatingStep(t *testing.T) {
	noLabel := breaches[3]
	if noLabel.name != "no label" {
		t.Fatal("breaches changed order")
	}
	// T1's second step has no label and makes both threads done.
	m := breach(noLabel.bad, 1, true)
	ex, err := explorer.Execute(m, []model.Choice{{Thread: 0}, {Thread: 0}, {Thread: 1}, {Thread: 1}})
	if err != nil {
		t.Fatal(err)
	}
	checkBreach(t, ex.Violation, noLabel.want)
	checkBreach(t, explore(t, m, explorer.Options{}).Violation, noLabel.want)
}

// explore runs explorer.Explore, failing the test on an error or a panic
// (which would otherwise end every other test of the package).
func explore(t *testing.T, m model.Machine, o explorer.Options) (r *explorer.Result) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("Explore panics: %v", p)
		}
	}()
	r, err := explorer.Explore(m, o)
	if err != nil {
		t.Fatalf("Explore: %v", err)
	}
	return r
}

func checkBreach(t *testing.T, v *model.Violation, want string) {
	t.Helper()
	if v == nil || v.Property != model.ModelError {
		t.Fatalf("violation %v, want the property %q", v, model.ModelError)
	}
	if !strings.HasPrefix(v.Message, "T1's step breaks the step contract: ") || !strings.Contains(v.Message, want) {
		t.Errorf("message %q, want T1 named and %q", v.Message, want)
	}
}

// The machines of these tests round-trip through their encodings.
func TestTestMachinesRoundTrip(t *testing.T) {
	for name, m := range map[string]model.Machine{
		"wakeup":  wakeup(false, -1),
		"locks":   locks([2][2]int{{0, 1}, {1, 0}}),
		"race":    counterRace(3),
		"sym":     symRace(3, false),
		"sbTSO":   sbTSO(sbLitmus(true)),
		"many":    many,
		"example": counter(false),
	} {
		t.Run(name, func(t *testing.T) { modeltest.RoundTrip(t, m, 30) })
	}
}

// A model's successor set changes with what its steps draw: Successors
// (the steps run directly) and explorer.Enabled agree at every state of
// the wake-up model.
func TestEnabledAgreesWithSuccessors(t *testing.T) {
	m := wakeup(false, -1)
	seen := map[string]bool{}
	var visit func(s model.State)
	visit = func(s model.State) {
		k := string(s.AppendKey(nil))
		if seen[k] {
			return
		}
		seen[k] = true
		succs, done, blocked := modeltest.Successors(m, s)
		var want []model.Choice
		for _, n := range succs {
			want = append(want, n.Choice)
		}
		if got := explorer.Enabled(m, s); !reflect.DeepEqual(got, want) {
			t.Fatalf("enabled %v, successors %v at\n%s", got, want, model.Describe(s))
		}
		for th, st := range explorer.Statuses(m, s) {
			if st.Done != done[th] || (!st.Enabled && !st.Done) != blocked[th] {
				t.Fatalf("thread %d: status %+v, done %v blocked %v", th, st, done[th], blocked[th])
			}
		}
		for _, n := range succs {
			visit(n.State)
		}
	}
	visit(m.Init())
}
