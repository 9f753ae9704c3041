package explorer_test

import (
	"fmt"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// counter models two threads incrementing a shared counter, either with a
// plain load and store (racy) or with one atomic fetch-add.
type counter struct{ atomic bool }

type counterState struct {
	mem model.Mem
	pc  [2]uint8  // 0: load (or fetch-add), 1: store, 2: done
	reg [2]uint64 // the value each thread loaded
}

const word model.Addr = 0

func (s *counterState) Clone() model.State {
	c := *s
	c.mem = s.mem.Clone()
	return &c
}
func (s *counterState) AppendKey(b []byte) []byte {
	return append(s.mem.AppendKey(b), s.pc[0], s.pc[1], byte(s.reg[0]), byte(s.reg[1]))
}
func (s *counterState) Vars() []model.Var {
	return append(s.mem.Vars(), model.Var{Name: "pc", Value: fmt.Sprint(s.pc)})
}

func (c counter) Threads() []string { return []string{"A", "B"} }
func (c counter) Init() model.State { return &counterState{mem: model.NewMem("count")} }
func (c counter) Metrics() []string { return nil }
func (c counter) Spec() *model.Spec { return nil }
func (c counter) Status(s model.State, t int) model.Status {
	return model.Status{Done: s.(*counterState).pc[t] == 2}
}
func (c counter) Enabled(s model.State, buf []model.Choice) []model.Choice {
	for t, pc := range s.(*counterState).pc {
		if pc < 2 {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}
func (c counter) Step(s model.State, ch model.Choice, x *model.Exec) model.State {
	n := s.Clone().(*counterState)
	t := ch.Thread
	switch {
	case c.atomic:
		x.FetchAdd(n.mem, word, 1)
		x.Label("counter_inc: fetch-add")
		n.pc[t] = 2
	case n.pc[t] == 0:
		n.reg[t] = x.Load(n.mem, word)
		x.Labelf("counter_inc: load %d", n.reg[t])
		n.pc[t] = 1
	default:
		x.Store(n.mem, word, n.reg[t]+1)
		x.Labelf("counter_inc: store %d", n.reg[t]+1)
		n.pc[t] = 2
	}
	return n
}
func (c counter) Invariants() []model.Invariant {
	return []model.Invariant{{Name: "no-lost-update", Check: func(s model.State) string {
		cs := s.(*counterState)
		if cs.pc == [2]uint8{2, 2} && cs.mem.Peek(word) != 2 {
			return fmt.Sprintf("both increments done but count=%d", cs.mem.Peek(word))
		}
		return ""
	}}}
}

// A user's own model, checked exhaustively from go test.
func Example() {
	for _, atomic := range []bool{false, true} {
		r, err := explorer.Explore(counter{atomic: atomic}, explorer.Options{Strategy: explorer.BFS})
		if err != nil {
			panic(err)
		}
		fmt.Printf("atomic=%v: %s\n", atomic, r)
		for i, c := range r.Schedule {
			fmt.Printf("  %d. %s %s\n", i+1, counter{}.Threads()[c.Thread], r.Labels[i])
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
