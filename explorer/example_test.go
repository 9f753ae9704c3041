package explorer_test

import (
	"fmt"
	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// Two threads increment a shared word: a load and a store, or one fetch-add.
type counterState struct {
	Mem model.Mem
	PC  [2]uint8  // 0: load (or fetch-add), 1: store, 2: done
	Reg [2]uint64 // the value each thread loaded
}

func counter(atomic bool) model.Machine {
	return model.MustNew(model.Def[counterState]{
		Threads: []string{"A", "B"},
		Init:    func(s *counterState) { s.Mem = model.NewMem("count") },
		Step: func(s *counterState, t int, x *model.Exec) {
			switch {
			case s.PC[t] == 2:
				x.Done()
			case atomic:
				x.FetchAdd(s.Mem, 0, 1)
				x.Label("counter_inc: fetch-add")
				s.PC[t] = 2
			case s.PC[t] == 0:
				s.Reg[t] = x.Load(s.Mem, 0)
				x.Labelf("counter_inc: load %d", s.Reg[t])
				s.PC[t] = 1
			default:
				x.Store(s.Mem, 0, s.Reg[t]+1)
				x.Labelf("counter_inc: store %d", s.Reg[t]+1)
				s.PC[t] = 2
			}
		},
		Invariants: []model.InvariantOf[counterState]{{Name: "no-lost-update", Check: func(s *counterState) string {
			if s.PC == [2]uint8{2, 2} && s.Mem.Peek(0) != 2 {
				return fmt.Sprintf("both increments done but count=%d", s.Mem.Peek(0))
			}
			return ""
		}}},
	})
}

// A user's own model, checked exhaustively from go test.
func Example() {
	for _, atomic := range []bool{false, true} {
		r, _ := explorer.Explore(counter(atomic), explorer.Options{})
		fmt.Printf("%s\n  %v %q\n", r, r.Schedule, r.Labels)
	}
	// Output:
	// violation: 11 states, 12 transitions, depth 4; no-lost-update: both increments done but count=1
	//   [0 1 0 1] ["counter_inc: load 0" "counter_inc: load 0" "counter_inc: store 1" "counter_inc: store 1"]
	// ok: 4 states, 4 transitions, depth 2
	//   [] []
}
