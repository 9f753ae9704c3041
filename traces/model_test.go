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
		return &counter{racy: variant == "racy", threads: p["threads"], incs: p["incs"]}, nil
	},
}

type counter struct {
	racy    bool
	threads int
	incs    int
}

type counterState struct {
	mem  model.Mem
	pc   []uint8  // steps taken by each thread
	reg  []uint64 // the value each thread loaded (racy)
	done uint64   // observer: increments completed
}

const count model.Addr = 0

func (s *counterState) Clone() model.State {
	return &counterState{mem: s.mem.Clone(), pc: append([]uint8(nil), s.pc...), reg: append([]uint64(nil), s.reg...), done: s.done}
}

func (s *counterState) AppendKey(b []byte) []byte {
	b = s.mem.AppendKey(b)
	for i := range s.pc {
		b = fmt.Appendf(b, "%d:%d,", s.pc[i], s.reg[i])
	}
	return fmt.Appendf(b, "%d", s.done)
}

func (s *counterState) Vars() []model.Var {
	vs := append(s.mem.Vars(), model.Var{Name: "done", Value: fmt.Sprint(s.done)})
	for i := range s.pc {
		vs = append(vs, model.Var{Name: fmt.Sprintf("pc[%d]", i), Value: fmt.Sprint(s.pc[i])})
		vs = append(vs, model.Var{Name: fmt.Sprintf("reg[%d]", i), Value: fmt.Sprint(s.reg[i])})
	}
	return vs
}

func (c *counter) steps() uint8 {
	if c.racy {
		return uint8(2 * c.incs)
	}
	return uint8(c.incs)
}

func (c *counter) Threads() []string {
	names := make([]string, c.threads)
	for i := range names {
		names[i] = fmt.Sprintf("cpu%d", i)
	}
	return names
}

func (c *counter) Init() model.State {
	return &counterState{mem: model.NewMem("count"), pc: make([]uint8, c.threads), reg: make([]uint64, c.threads)}
}

func (c *counter) Enabled(s model.State, buf []model.Choice) []model.Choice {
	for t, pc := range s.(*counterState).pc {
		if pc < c.steps() {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}

func (c *counter) Step(s model.State, ch model.Choice, x *model.Exec) model.State {
	n := s.Clone().(*counterState)
	t := ch.Thread
	switch {
	case !c.racy:
		prev := x.FetchAdd(n.mem, count, 1)
		x.Labelf("counter_inc: fetch-add -> %d", prev+1)
		x.Count(0, 1)
		n.done++
	case n.pc[t]%2 == 0:
		n.reg[t] = x.Load(n.mem, count)
		x.Labelf("counter_inc: load %d", n.reg[t])
	default:
		x.Store(n.mem, count, n.reg[t]+1)
		x.Labelf("counter_inc: store %d", n.reg[t]+1)
		x.Count(0, 1)
		n.done++
	}
	n.pc[t]++
	return n
}

func (c *counter) Status(s model.State, t int) model.Status {
	return model.Status{Done: s.(*counterState).pc[t] >= c.steps()}
}

func (c *counter) Invariants() []model.Invariant {
	return []model.Invariant{{Name: "no-lost-update", Check: func(s model.State) string {
		cs := s.(*counterState)
		if v := cs.mem.Peek(count); v != cs.done {
			return fmt.Sprintf("%d increments done but count=%d", cs.done, v)
		}
		return ""
	}}}
}

func (c *counter) Metrics() []string { return []string{"stores"} }
func (c *counter) Spec() *model.Spec { return nil }
