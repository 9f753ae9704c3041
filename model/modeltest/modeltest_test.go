package modeltest_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer/schedtest"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
	"pgregory.net/rapid"
)

// queueState is a Def state with a slice whose length varies, a mutex, a
// condition variable and a memory: a consumer waits for items that two
// producers push.
type queueState struct {
	Mem   model.Mem
	Mu    model.Mutex
	Cv    model.Cond
	Items []uint8
	PC    [3]uint8
}

func queue() model.Machine {
	return model.MustNew(model.Def[queueState]{
		Threads: []string{"producer0", "producer1", "consumer"},
		Init:    func(s *queueState) { s.Mem = model.NewMem("pushed") },
		Step: func(s *queueState, t int, x *model.Exec) {
			pc := &s.PC[t]
			if t < 2 {
				switch *pc {
				case 0:
					if !x.Lock(&s.Mu, "mu") {
						return
					}
					x.Label("lock")
				case 1:
					s.Items = append(s.Items, uint8(t+1))
					x.FetchAdd(s.Mem, 0, 1)
					x.Label("push")
				case 2:
					x.Signal(&s.Cv, "cv")
					x.Label("signal")
				case 3:
					x.Unlock(&s.Mu, "mu")
					x.Label("unlock")
				default:
					x.Done()
					return
				}
				*pc++
				return
			}
			switch *pc {
			case 0:
				if !x.Lock(&s.Mu, "mu") {
					return
				}
				x.Label("lock")
			case 1:
				if len(s.Items) > 0 {
					s.Items = s.Items[1:]
					x.Label("pop")
					*pc = 3
					return
				}
				x.Wait(&s.Cv, "cv", &s.Mu, "mu")
				x.Label("wait")
			case 2:
				if !x.Woken(&s.Cv, "cv") {
					return
				}
				x.Label("woken")
				*pc = 0
				return
			case 3:
				x.Unlock(&s.Mu, "mu")
				x.Label("unlock")
			default:
				x.Done()
				return
			}
			*pc++
		},
	})
}

func TestRoundTripOnDefMachines(t *testing.T) {
	modeltest.RoundTrip(t, queue(), 40)
	tso := model.WithTSO(queue(), func(s model.State) *model.Mem { return &model.StateOf[queueState](s).Mem })
	modeltest.RoundTrip(t, tso, 40)
}

func TestSuccessors(t *testing.T) {
	m := queue()
	s := m.Init()
	succs, done, blocked := modeltest.Successors(m, s)
	var got []string
	for _, n := range succs {
		got = append(got, fmt.Sprintf("%s %s", n.Choice, n.Label))
	}
	if want := []string{"0 lock", "1 lock", "2 lock"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("successors %q, want %q", got, want)
	}
	if fmt.Sprint(done, blocked) != "[false false false] [false false false]" {
		t.Fatalf("done %v blocked %v", done, blocked)
	}
	// The consumer locks and waits; both producers push and signal one
	// waiter: one alternative, and the consumer is blocked meanwhile.
	for _, th := range []int{2, 2, 0, 0} {
		succs, _, _ = modeltest.Successors(m, s)
		for _, n := range succs {
			if n.Choice.Thread == th {
				s = n.State
				break
			}
		}
	}
	succs, _, blocked = modeltest.Successors(m, s)
	got = got[:0]
	for _, n := range succs {
		got = append(got, fmt.Sprintf("%s %s", n.Choice, n.Label))
	}
	if want := []string{"0 signal"}; !reflect.DeepEqual(got, want) || !blocked[1] || !blocked[2] {
		t.Fatalf("successors %q, blocked %v; want %q with the others blocked", got, blocked, want)
	}
}

// hand is a hand-written machine whose State can be broken in the ways
// RoundTrip must catch. One thread counts to 3; Seen is a field its step
// reads.
type hand struct {
	omitSeen bool // AppendKey leaves Seen out
	lax      bool // Decode accepts a truncated encoding
	panicky  bool // Decode indexes past a truncated encoding
	merge    bool // Decode ORs into the old state instead of overwriting it
}

type handState struct {
	h       *hand
	N, Seen uint8
}

func (s *handState) AppendKey(b []byte) []byte {
	if s.h.omitSeen {
		return append(b, s.N)
	}
	return append(b, s.N, s.Seen)
}

func (s *handState) Decode(b []byte) error {
	want := 2
	if s.h.omitSeen {
		want = 1
	}
	switch {
	case s.h.panicky:
		s.N, s.Seen = b[0], b[1]
		return nil
	case len(b) != want && s.h.lax:
		return nil
	case len(b) != want:
		return errors.New("bad length")
	case s.h.merge:
		s.N |= b[0]
		s.Seen |= b[1]
		return nil
	}
	s.N = b[0]
	if !s.h.omitSeen {
		s.Seen = b[1]
	}
	return nil
}

func (s *handState) Vars() []model.Var { return []model.Var{{Name: "n", Value: fmt.Sprint(s.N)}} }

func (h *hand) Threads() []string            { return []string{"T"} }
func (h *hand) Init() model.State            { return &handState{h: h} }
func (h *hand) Properties() model.Properties { return model.Properties{} }
func (h *hand) Step(ms model.State, t int, x *model.Exec) {
	s := ms.(*handState)
	if s.N == 3 {
		x.Done()
		return
	}
	x.Labelf("step after %d seen", s.Seen)
	s.N++
	s.Seen++
}

// failure runs RoundTrip on m and returns what rapid reported, "" when it
// passed.
func failure(t *testing.T, m model.Machine) string {
	t.Helper()
	if err := schedtest.Deterministic(t, 1, 20); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{name: t.Name()}
	rapid.Check(rec, func(rt *rapid.T) { modeltest.RoundTripWalk(rt, m, 10) })
	return rec.msgs.String()
}

func TestRoundTripCatchesBrokenStates(t *testing.T) {
	if got := failure(t, &hand{}); got != "" {
		t.Fatalf("a sound hand-written state fails: %s", got)
	}
	for _, c := range []struct {
		name string
		h    *hand
		want string
	}{
		{"encoding misses a field the step reads", &hand{omitSeen: true}, "the encoding misses something the step reads"},
		{"truncated encoding accepted", &hand{lax: true}, "Decode accepts the first 0 of the 2 bytes"},
		{"decode panics", &hand{panicky: true}, "Decode panics on the first 0 of the 2 bytes"},
		{"decode merges", &hand{merge: true}, "decoding into a reused state gives a state encoded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := failure(t, c.h); !strings.Contains(got, c.want) {
				t.Errorf("RoundTrip reports %q, want %q", got, c.want)
			}
		})
	}
}

// recorder is a rapid.TB that keeps what rapid reports instead of
// failing the test.
type recorder struct {
	name string
	msgs strings.Builder
}

func (r *recorder) Helper()                      {}
func (r *recorder) Name() string                 { return r.name }
func (r *recorder) Logf(string, ...any)          {}
func (r *recorder) Log(...any)                   {}
func (r *recorder) Skipf(string, ...any)         {}
func (r *recorder) Skip(...any)                  {}
func (r *recorder) SkipNow()                     {}
func (r *recorder) Errorf(f string, args ...any) { fmt.Fprintf(&r.msgs, f, args...) }
func (r *recorder) Error(args ...any)            { fmt.Fprint(&r.msgs, args...) }
func (r *recorder) Fatalf(f string, args ...any) { fmt.Fprintf(&r.msgs, f, args...) }
func (r *recorder) Fatal(args ...any)            { fmt.Fprint(&r.msgs, args...) }
func (r *recorder) FailNow()                     { r.msgs.WriteString("FailNow") }
func (r *recorder) Fail()                        { r.msgs.WriteString("Fail") }
func (r *recorder) Failed() bool                 { return r.msgs.Len() > 0 }
