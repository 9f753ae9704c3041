// Command check is protocheck's command line over its own protocols: it
// lists the protocols and their variants, explores a variant exhaustively
// or at random, verifies every variant against its expected verdict,
// replays and minimizes counterexample traces, compares variants by their
// metrics, and runs the real implementations. The command itself is the
// cli package (see its documentation for the commands, flags and exit
// codes); this main hands it protocheck's registry.
package main

import (
	"os"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/protocols"
)

func main() { os.Exit(cli.Main(protocols.Registry(), os.Args[1:], os.Stdout, os.Stderr)) }
