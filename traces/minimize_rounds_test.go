package traces

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// philosophers: n philosophers, each takes left fork then right, eats,
// releases, for rounds rounds: deadlock.
var philoProtocol = &model.Protocol{
	Name:     "philo",
	Variants: []model.Variant{{Name: "v", Expect: "deadlock"}},
	Params:   []model.Param{{Name: "n", Default: 3, Min: 2, Max: 4}, {Name: "rounds", Default: 2, Min: 1, Max: 3}},
	New: func(_ string, p model.Params) (model.Machine, error) {
		n, rounds := p["n"], p["rounds"]
		type st struct {
			F  [4]model.Mutex
			PC [4]uint8
			R  [4]uint8
		}
		names := []string{"P0", "P1", "P2", "P3"}[:n]
		return model.MustNew(model.Def[st]{
			Threads: names,
			Init:    func(*st) {},
			Step: func(s *st, t int, x *model.Exec) {
				l, r := t, (t+1)%n
				switch s.PC[t] {
				case 0:
					if int(s.R[t]) == rounds {
						x.Done()
						return
					}
					if !x.Lock(&s.F[l], "fork") {
						return
					}
					x.Label("take left")
				case 1:
					if !x.Lock(&s.F[r], "fork") {
						return
					}
					x.Label("take right")
				case 2:
					x.Touch("plate", true)
					x.Label("eat")
				case 3:
					x.Unlock(&s.F[l], "fork")
					x.Label("put left")
				case 4:
					x.Unlock(&s.F[r], "fork")
					x.Label("put right")
					s.PC[t], s.R[t] = 0, s.R[t]+1
					return
				}
				s.PC[t]++
			},
		}), nil
	},
}

// A dfs counterexample of the philosophers' deadlock carries whole rounds
// of eating that only got in the way. Delta debugging over contiguous
// chunks and fewer switches leave 7 steps (a philosopher's full round,
// then the deadlock); dropping a round of one thread's steps, wherever
// they are, reaches the 2-step deadlock, as short as bfs's.
func TestMinimizeDropsWholeRounds(t *testing.T) {
	for _, p := range []model.Params{{"n": 3, "rounds": 2}, {"n": 4, "rounds": 3}} {
		m, params, err := philoProtocol.Instantiate("v", p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := explorer.Explore(m, explorer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := explorer.Explore(m, explorer.Options{Strategy: explorer.DFS})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := Record(philoProtocol, "v", params, d.Schedule)
		if err != nil {
			t.Fatal(err)
		}
		small, err := Minimize(philoProtocol, tr)
		if err != nil {
			t.Fatal(err)
		}
		if len(small.Schedule) > len(b.Schedule) || small.Violation.Property != model.Deadlock {
			t.Errorf("%v: dfs's %d steps minimized to %d (%v, %v), bfs finds %d", p, len(d.Schedule), len(small.Schedule), small.Schedule, small.Params, len(b.Schedule))
		}
	}
}
