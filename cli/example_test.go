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
	// x
}
