// Command check is protocheck's command line: it lists the protocols and
// their variants, explores a variant exhaustively or at random, verifies
// every variant against its expected verdict, replays and minimizes
// counterexample traces, and compares variants by their metrics.
//
// Exit codes follow gofmt's convention: 0 no violation, 1 a violation was
// found (or a verification did not match its expectation), 2 a usage or
// input error (unknown protocol, variant or parameter, a bad value, a
// missing, malformed or divergent trace file).
//
// Usage:
//
//	check list [--json]
//	check explain PROTOCOL/VARIANT
//	check explore [flags] PROTOCOL/VARIANT [key=value ...]
//	check verify [--json] [PROTOCOL ...]
//	check replay [--json] [--html FILE.html] FILE
//	check minimize [--out FILE] FILE
//	check compare [flags] PROTOCOL VARIANT_A VARIANT_B [key=value ...]
//	check stress [flags] PROTOCOL/VARIANT [key=value ...]
//	check replay --impl FILE
//	check bench [--json] [PROTOCOL[/VARIANT] ...] [key=value ...]
//
// Flags may come before or after the positional arguments.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/protocols"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// Exit codes.
const (
	exitOK        = 0
	exitViolation = 1
	exitUsage     = 2
)

const usage = `usage: check COMMAND [flags] [arguments]

commands:
  list [--json]                                   protocols, variants and parameters
  explain PROTOCOL/VARIANT                        what a variant is, its source and expected verdict
  explore [flags] PROTOCOL/VARIANT [key=value...] explore one variant (bfs by default)
  verify [--json] [PROTOCOL ...]                  explore every variant and compare with its expectation
  replay [--json] [--html F] FILE                 replay a trace file and render it (text, or an HTML page)
  minimize [--out FILE] FILE                      minimize a trace file
  compare [flags] PROTOCOL A B [key=value...]     the same exploration for two variants, metrics side by side
  stress [flags] PROTOCOL/VARIANT [key=value...]  run the real implementation (Go scheduler, or --controlled)
  bench [--json] [PROTOCOL[/VARIANT] ...]         states/s and bytes/state of every explorer configuration

run "check COMMAND -h" for a command's flags.
exit status: 0 no violation, 1 violation found, 2 usage or input error.
`

// usageError marks an error that is the user's input: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// run is the whole command, testable in process.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmds := map[string]func([]string, io.Writer, io.Writer) (int, error){
		"list":     cmdList,
		"explain":  cmdExplain,
		"explore":  cmdExplore,
		"verify":   cmdVerify,
		"replay":   cmdReplay,
		"minimize": cmdMinimize,
		"compare":  cmdCompare,
		"stress":   cmdStress,
		"bench":    cmdBench,
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "help" {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmd, ok := cmds[name]
	if !ok {
		fmt.Fprintf(stderr, "check: unknown command %q\n\n%s", name, usage)
		return exitUsage
	}
	code, err := cmd(args[1:], stdout, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "check %s: %v\n", name, err)
		return exitUsage
	}
	return code
}

// parse parses flags that may come before or after positional arguments
// and returns the positional ones. Errors are usage errors.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// helpFlags makes -h print the flag set's defaults to stdout.
func helpFlags(fs *flag.FlagSet, stdout io.Writer, synopsis string) {
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: check %s\n", synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
}

// parseParams turns "key=value" arguments into params. Values must be
// integers; range checks are the protocol's (model.Protocol.Resolve).
func parseParams(args []string) (model.Params, error) {
	p := model.Params{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, usagef("expected key=value, got %q", a)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, usagef("parameter %s: %q is not an integer", k, v)
		}
		if _, dup := p[k]; dup {
			return nil, usagef("parameter %s given twice", k)
		}
		p[k] = n
	}
	return p, nil
}

// parseTarget reads the positional arguments PROTOCOL/VARIANT [key=value
// ...] of explore and stress.
func parseTarget(cmd string, pos []string) (*model.Protocol, model.Variant, model.Params, error) {
	if len(pos) == 0 {
		return nil, model.Variant{}, nil, usagef("%s needs PROTOCOL/VARIANT", cmd)
	}
	p, v, err := protocols.Parse(pos[0])
	if err != nil {
		return nil, model.Variant{}, nil, usageError{err}
	}
	given, err := parseParams(pos[1:])
	if err != nil {
		return nil, model.Variant{}, nil, err
	}
	return p, v, given, nil
}
