// Package benchmodel is a synthetic machine for measuring the explorer's
// own costs (stepping, encoding, hashing, the visited set) apart from any
// protocol's: a few threads, each a small loop over shared words with a
// lock, so that its state graph has the shape of the protocols' (many
// interleavings of short steps, a few bytes of state).
package benchmodel

import "github.com/protocheck/protocheck/model"

// State is the state struct.
type State struct {
	Mem  model.Mem
	Mu   model.Mutex
	PC   [6]uint8
	Left [6]uint8
}

// New returns the machine with n threads, each taking rounds turns.
func New(n, rounds int) model.Machine {
	names := []string{"T0", "T1", "T2", "T3", "T4", "T5"}[:n]
	return model.MustNew(model.Def[State]{
		Threads: names,
		Init: func(s *State) {
			s.Mem = model.NewMem("a", "b", "c")
			for t := 0; t < n; t++ {
				s.Left[t] = uint8(rounds)
			}
		},
		Step: func(s *State, t int, x *model.Exec) {
			switch s.PC[t] {
			case 0:
				if s.Left[t] == 0 {
					x.Done()
					return
				}
				v := x.Load(s.Mem, model.Addr(t%3))
				x.Store(s.Mem, model.Addr(t%3), (v+1)%3)
				s.PC[t] = 1
			case 1:
				if !x.Lock(&s.Mu, "mu") {
					return
				}
				s.PC[t] = 2
			case 2:
				x.FetchAdd(s.Mem, model.Addr((t+1)%3), 1)
				if s.Mem.Peek(model.Addr((t+1)%3)) > 2 {
					x.Store(s.Mem, model.Addr((t+1)%3), 0)
				}
				s.PC[t] = 3
			default:
				x.Unlock(&s.Mu, "mu")
				s.Left[t]--
				s.PC[t] = 0
			}
			if x.Labelling() {
				x.Labelf("T%d step", t)
			}
		},
		Invariants: []model.InvariantOf[State]{{Name: "bounded", Check: func(s *State) string {
			if s.Mem.Peek(0) > 3 {
				return "a > 3"
			}
			return ""
		}}},
	})
}
