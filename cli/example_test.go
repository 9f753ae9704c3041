package cli_test

import (
	"fmt"
	"io"
	"os"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/examples/peterson"
	"github.com/protocheck/protocheck/model"
)

// The whole check command over a registry of one's own protocols: a main
// of a few lines calls cli.Main(reg, os.Args[1:], os.Stdout, os.Stderr).
// Here the registry holds Peterson's lock (package examples/peterson), and
// explore finds the || bug's livelock as a lasso: a cycle of states, after
// a path to it, that a fair scheduler can follow forever.
func Example() {
	reg := &cli.Registry{Name: "my-check", Protocols: []*model.Protocol{peterson.Protocol}}
	cli.Main(reg, []string{"list"}, os.Stdout, io.Discard)
	fmt.Println()
	code := cli.Main(reg, []string{"explore", "peterson/or"}, os.Stdout, io.Discard)
	fmt.Println("exit status", code)
	// Output:
	// peterson — Peterson's lock for two threads, looping forever
	//   safety:   mutual-exclusion, deadlock
	//   progress: P0-enters (under weak fairness)
	//   variant             expect            description
	//   peterson/sc         ok                sequential consistency
	//   peterson/or         P0-enters         waits while flag[other] || turn == other: both can spin forever
	//   peterson/tso        mutual-exclusion  x86-TSO without a fence: a store waits in the buffer past the other's read
	//   peterson/tso-fence  ok                x86-TSO with mfence after the stores
	//
	// peterson/or  strategy bfs
	// verdict: violation of P0-enters
	// states: 20  transitions: 40  depth: 7
	//
	// counterexample: 6 steps (shortest, from bfs)
	// peterson/or, 6 steps
	//         P0              P1
	//     1   flag[0] = 1
	//           flag[0]: 0 -> 1
	//           PC: [0 0] -> [1 0]
	//     2   turn = 1
	//           turn: 0 -> 1
	//           PC: [1 0] -> [2 0]
	//     3                   flag[1] = 1
	//                           flag[1]: 0 -> 1
	//                           PC: [2 0] -> [2 1]
	//     4                   turn = 0
	//                           turn: 1 -> 0
	//                           PC: [2 1] -> [2 2]
	//         -- steps 5 to 6 repeat forever: the state after step 6 is the state after step 4 --
	//  |  5   read flag[1] = 1
	// >>  6                   read flag[0] = 1
	//                         VIOLATION P0-enters: never discharged: steps 5 to 6 repeat forever with it pending throughout (a fair cycle: every thread that could step throughout it steps in it; stepping in the cycle: P0, P1)
	// violation P0-enters: never discharged: steps 5 to 6 repeat forever with it pending throughout (a fair cycle: every thread that could step throughout it steps in it; stepping in the cycle: P0, P1)
	// exit status 1
}
