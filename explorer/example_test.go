package explorer_test

import (
	"fmt"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// counterState is the state of the counter model: plain data, from which
// model.Def derives its encoding and its variables.
type counterState struct {
	Mem model.Mem
	PC  [2]uint8  // 0: load (or fetch-add), 1: store, 2: done
	Reg [2]uint64 // the value each thread loaded
}

const word model.Addr = 0

// counter models two threads incrementing a shared counter, either with a
// plain load and store (racy) or with one atomic fetch-add. Each step says
// what it does through x: its shared accesses, its label, or that the
// thread is done.
func counter(atomic bool) model.Machine {
	return model.MustNew(model.Def[counterState]{
		Threads: []string{"A", "B"},
		Init:    func(s *counterState) { s.Mem = model.NewMem("count") },
		Step: func(s *counterState, t int, x *model.Exec) {
			switch {
			case s.PC[t] == 2:
				x.Done()
			case atomic:
				x.FetchAdd(s.Mem, word, 1)
				x.Label("counter_inc: fetch-add")
				s.PC[t] = 2
			case s.PC[t] == 0:
				s.Reg[t] = x.Load(s.Mem, word)
				// Labels are computed only when someone reads them.
				if x.Labelling() {
					x.Labelf("counter_inc: load %d", s.Reg[t])
				}
				s.PC[t] = 1
			default:
				x.Store(s.Mem, word, s.Reg[t]+1)
				if x.Labelling() {
					x.Labelf("counter_inc: store %d", s.Reg[t]+1)
				}
				s.PC[t] = 2
			}
		},
		Invariants: []model.InvariantOf[counterState]{{Name: "no-lost-update", Check: func(s *counterState) string {
			if s.PC == [2]uint8{2, 2} && s.Mem.Peek(word) != 2 {
				return fmt.Sprintf("both increments done but count=%d", s.Mem.Peek(word))
			}
			return ""
		}}},
	})
}

// A user's own model, checked exhaustively from go test.
func Example() {
	for _, atomic := range []bool{false, true} {
		m := counter(atomic)
		r, err := explorer.Explore(m, explorer.Options{Strategy: explorer.BFS})
		if err != nil {
			panic(err)
		}
		fmt.Printf("atomic=%v: %s\n", atomic, r)
		for i, c := range r.Schedule {
			fmt.Printf("  %d. %s %s\n", i+1, m.Threads()[c.Thread], r.Labels[i])
		}
	}
	// Output:
	// atomic=false: violation: 11 states, 12 transitions, depth 4; no-lost-update: both increments done but count=1
	//   1. A counter_inc: load 0
	//   2. B counter_inc: load 0
	//   3. A counter_inc: store 1
	//   4. B counter_inc: store 1
	// atomic=true: ok: 4 states, 4 transitions, depth 2
}
