package cli_test

import (
	"fmt"
	"io"
	"os"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/model"
)

// inc is a user's own protocol: two threads each add one to a shared
// count, either in two steps (read, then write back: racy) or in one
// (fetch-and-add).
var inc = &model.Protocol{
	Name:        "inc",
	Description: "two threads increment a shared count",
	Source:      "the example",
	Variants: []model.Variant{
		{Name: "racy", Expect: "lost-update", Description: "count++ as a read and a write"},
		{Name: "atomic", Expect: model.ExpectOK, Description: "count++ as one fetch-and-add"},
	},
	New: func(variant string, _ model.Params) (model.Machine, error) {
		return incMachine{atomic: variant == "atomic"}, nil
	},
}

type incMachine struct{ atomic bool }

// incState: the count, and per thread its next step (0 read, 1 write,
// 2 done) and the value it read.
type incState struct{ count, pc, got [2]byte }

func (s *incState) Clone() model.State { c := *s; return &c }
func (s *incState) AppendKey(b []byte) []byte {
	return append(b, s.count[0], s.pc[0], s.pc[1], s.got[0], s.got[1])
}
func (s *incState) Vars() []model.Var {
	return []model.Var{{Name: "count", Value: fmt.Sprint(s.count[0])}}
}

func (incMachine) Threads() []string { return []string{"T0", "T1"} }
func (incMachine) Init() model.State { return &incState{} }
func (incMachine) Metrics() []string { return nil }
func (incMachine) Spec() *model.Spec { return nil }
func (incMachine) Status(s model.State, t int) model.Status {
	return model.Status{Done: s.(*incState).pc[t] == 2}
}
func (incMachine) Enabled(s model.State, buf []model.Choice) []model.Choice {
	for t := range 2 {
		if s.(*incState).pc[t] < 2 {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}
func (m incMachine) Step(s model.State, c model.Choice, x *model.Exec) model.State {
	n, t := s.Clone().(*incState), c.Thread
	switch {
	case m.atomic:
		n.count[0]++
		n.pc[t] = 2
		x.Labelf("fetch_add(&count, 1) = %d", n.count[0]-1)
	case n.pc[t] == 0:
		n.got[t] = n.count[0]
		n.pc[t] = 1
		x.Labelf("read count = %d", n.got[t])
	default:
		n.count[0] = n.got[t] + 1
		n.pc[t] = 2
		x.Labelf("write count = %d", n.count[0])
	}
	return n
}
func (incMachine) Invariants() []model.Invariant {
	return []model.Invariant{{Name: "lost-update", Check: func(s model.State) string {
		if n := s.(*incState); n.pc == [2]byte{2, 2} && n.count[0] != 2 {
			return fmt.Sprintf("both threads done, count = %d", n.count[0])
		}
		return ""
	}}}
}

// The whole check command over a registry of one's own protocols: a main
// of a few lines would call cli.Main(reg, os.Args[1:], os.Stdout,
// os.Stderr).
func Example() {
	reg := &cli.Registry{Name: "inc-check", Protocols: []*model.Protocol{inc}}
	cli.Main(reg, []string{"list"}, os.Stdout, io.Discard)
	fmt.Println()
	code := cli.Main(reg, []string{"explore", "inc/racy"}, os.Stdout, io.Discard)
	fmt.Println("exit status", code)
	// Output:
	// inc — two threads increment a shared count
	//   variant     expect       description
	//   inc/racy    lost-update  count++ as a read and a write
	//   inc/atomic  ok           count++ as one fetch-and-add
	//
	// inc/racy  strategy bfs
	// verdict: violation of lost-update
	// states: 11  transitions: 12  depth: 4  bytes/state: 6733
	//
	// counterexample: 4 steps (shortest, from bfs)
	// inc/racy, 4 steps
	//         T0              T1
	//     1   read count = 0
	//     2                   read count = 0
	//     3   write count = 1
	//           count: 0 -> 1
	// >>  4                   write count = 1
	//                         VIOLATION lost-update: both threads done, count = 1
	// violation lost-update: both threads done, count = 1
	// exit status 1
}
