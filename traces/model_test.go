package traces

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// counterProtocol is the test model: `threads` threads each increment a
// shared counter `incs` times, with one atomic fetch-add (variant atomic,
// correct) or with a plain load and a separate store (variant racy, which
// loses updates). Two parameters let Minimize shrink both the number of
// threads and the amount of work.
var counterProtocol = &model.Protocol{
	Name:        "counter",
	Description: "threads increment a shared counter",
	Source:      "traces tests",
	Variants: []model.Variant{
		{Name: "atomic", Expect: model.ExpectOK, Description: "fetch-add"},
		{Name: "racy", Expect: "no-lost-update", Description: "load, then store"},
	},
	Params: []model.Param{
		{Name: "threads", Default: 3, Min: 1, Max: 4, Description: "incrementing threads"},
		{Name: "incs", Default: 2, Min: 1, Max: 3, Description: "increments per thread"},
	},
	New: func(variant string, p model.Params) (model.Machine, error) {
		return newCounter(variant == "racy", p["threads"], p["incs"]), nil
	},
}

// counterState is the state of the counter model.
type counterState struct {
	Mem  model.Mem
	PC   []uint8  // steps taken by each thread
	Reg  []uint64 // the value each thread loaded (racy)
	Done uint64   // observer: increments completed
}

const count model.Addr = 0

func newCounter(racy bool, threads, incs int) model.Machine {
	steps := uint8(incs)
	if racy {
		steps = uint8(2 * incs)
	}
	names := make([]string, threads)
	for i := range names {
		names[i] = fmt.Sprintf("cpu%d", i)
	}
	return model.MustNew(model.Def[counterState]{
		Threads: names,
		Init: func(s *counterState) {
			s.Mem = model.NewMem("count")
			s.PC = make([]uint8, threads)
			s.Reg = make([]uint64, threads)
		},
		Step: func(s *counterState, t int, x *model.Exec) {
			switch {
			case s.PC[t] >= steps:
				x.Done()
				return
			case !racy:
				prev := x.FetchAdd(s.Mem, count, 1)
				x.Labelf("counter_inc: fetch-add -> %d", prev+1)
				x.Count(0, 1)
				s.Done++
			case s.PC[t]%2 == 0:
				s.Reg[t] = x.Load(s.Mem, count)
				x.Labelf("counter_inc: load %d", s.Reg[t])
			default:
				x.Store(s.Mem, count, s.Reg[t]+1)
				x.Labelf("counter_inc: store %d", s.Reg[t]+1)
				x.Count(0, 1)
				s.Done++
			}
			s.PC[t]++
		},
		Invariants: []model.InvariantOf[counterState]{{Name: "no-lost-update", Check: func(s *counterState) string {
			if v := s.Mem.Peek(count); v != s.Done {
				return fmt.Sprintf("%d increments done but count=%d", s.Done, v)
			}
			return ""
		}}},
		Metrics: []string{"stores"},
		Vars: func(s *counterState) []model.Var {
			vs := append(s.Mem.Vars(), model.Var{Name: "done", Value: fmt.Sprint(s.Done)})
			for i := range s.PC {
				vs = append(vs, model.Var{Name: fmt.Sprintf("pc[%d]", i), Value: fmt.Sprint(s.PC[i])})
				vs = append(vs, model.Var{Name: fmt.Sprintf("reg[%d]", i), Value: fmt.Sprint(s.Reg[i])})
			}
			return vs
		},
	})
}
