// Package cli is protocheck's command line as a library: the whole `check`
// command (list, explain, explore, verify, replay, minimize, compare,
// stress, bench) over a registry of protocols that the caller supplies.
// cmd/check runs it on protocheck's own protocols; an engineer who models
// a protocol of their own gets the same command for it from a main of a
// few lines:
//
//	func main() {
//		reg := &cli.Registry{Protocols: []*model.Protocol{mylock.Protocol}}
//		os.Exit(cli.Main(reg, os.Args[1:], os.Stdout, os.Stderr))
//	}
//
// Exit codes follow gofmt's convention: 0 no violation, 1 a violation was
// found (or a verification did not match its expectation), 2 a usage or
// input error (unknown protocol, variant or parameter, a bad value, a
// missing, malformed, divergent or non-regular trace file, an output file
// that cannot be written, a stdout that cannot be written, a closed pipe
// included, a flag that would do nothing). 3 says that no violation was
// found but nothing is proved: an exhaustive search (bfs, dfs, paths, the
// controlled scheduler's dfs) stopped short of the whole space, cut by a
// limit (--max-states, --time-limit, --max-memory, --max-steps, a dfs
// preemption bound, --runs or --duration, a frontier that could not be
// spilled: the verdict "bounded", and stdout says what was not explored),
// or it explored every state but left a property unchecked (the verdict
// "partial": progress under dfs, paths or --symmetry; stdout lists each
// under "not checked"). Properties left out on request (--without,
// --no-progress) do not count. Only 0 from an exhaustive strategy is a
// proof; a sampling strategy's clean run (random, random-threads, pct,
// stress under the Go scheduler) exits 0 with its verdict "bounded" and
// the number of walks or runs. A command stopped by SIGINT or SIGTERM
// prints what it found so far, with the verdict "interrupted", and exits
// 128 plus the signal's number (130 for an interrupt); a second signal
// kills the process. Where several apply (compare's two variants,
// verify's rows), 1 wins over 130, which wins over 3.
//
// stdout carries the result only, the same bytes for the same inputs:
// wall-clock times appear there only with --timing; progress, times,
// errors and the hints after a mistake go to stderr.
//
// Usage:
//
//	check list [--json]
//	check explain PROTOCOL/VARIANT
//	check explore [flags] PROTOCOL/VARIANT [key=value ...]
//	check verify [flags] [PROTOCOL ...]
//	check replay [--json] [--html FILE.html] [--full] FILE
//	check replay --impl FILE
//	check minimize [--out FILE] FILE
//	check compare [flags] PROTOCOL VARIANT_A VARIANT_B [key=value ...]
//	check stress [flags] PROTOCOL/VARIANT [key=value ...]
//	check bench [--json] [--config NAME,...] [PROTOCOL[/VARIANT] ...] [key=value ...]
//	check litmus [--model sc|tso|armv8] [--max-states N] FILE ...
//
// Flags may come before or after the positional arguments.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/protocheck/protocheck/explorer/rt"
	clipq "github.com/protocheck/protocheck/internal/clip"
	"github.com/protocheck/protocheck/model"
)

// Exit codes.
const (
	ExitOK        = 0
	ExitViolation = 1
	ExitUsage     = 2
	// ExitIncomplete is the exit code of an exhaustive search that found
	// no violation but did not finish: cut short by a limit (the verdict
	// bounded) or with a property left unchecked (partial). It is not a
	// proof, and a CI job must not read it as one.
	ExitIncomplete = 3
	// ExitInterrupted is the exit code of a command stopped by SIGINT
	// (or by closing Run's stop channel): 128 plus the signal's number, as
	// shells report it. SIGTERM gives 143.
	ExitInterrupted = 130
)

// A Registry is what the command knows: the protocols it can explore, in
// the order `list` shows them, and, for `stress` and `replay --impl`, the
// real implementations of some of them.
type Registry struct {
	// Name is the command's name in usage and error messages ("check"
	// when empty).
	Name string
	// Protocols lists the protocols. Names must be unique, non-empty and
	// free of '/' (PROTOCOL/VARIANT names a variant).
	Protocols []*model.Protocol
	// Impls maps a protocol's name to its real concurrent implementation
	// (optional; a protocol without one cannot be stressed).
	Impls map[string]*rt.Impl
}

// check validates the registry: a mistake in it is the caller's program's,
// reported before any command runs.
func (r *Registry) check() error {
	if r == nil || len(r.Protocols) == 0 {
		return errors.New("the registry has no protocols")
	}
	seen := map[string]bool{}
	for i, p := range r.Protocols {
		switch {
		case p == nil:
			return fmt.Errorf("the registry's protocol %d is nil", i)
		case p.Name == "" || strings.ContainsAny(p.Name, "/ \t\n"):
			return fmt.Errorf("the registry's protocol %d has the name %q: a name must be non-empty, without '/' or spaces", i, p.Name)
		case seen[p.Name]:
			return fmt.Errorf("the registry names protocol %q twice", p.Name)
		case p.New == nil:
			return fmt.Errorf("protocol %s has no New function", p.Name)
		case len(p.Variants) == 0:
			return fmt.Errorf("protocol %s has no variants", p.Name)
		}
		seen[p.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(r.Impls)) {
		if !seen[name] {
			return fmt.Errorf("the registry has an implementation for %q, which is not one of its protocols", name)
		}
	}
	return nil
}

func (r *Registry) name() string {
	if r.Name == "" {
		return "check"
	}
	return r.Name
}

// Lookup returns the named protocol, or an error listing the known ones.
func (r *Registry) Lookup(name string) (*model.Protocol, error) {
	for _, p := range r.Protocols {
		if p.Name == name {
			return p, nil
		}
	}
	names := make([]string, len(r.Protocols))
	for i, p := range r.Protocols {
		names[i] = p.Name
	}
	return nil, fmt.Errorf("unknown protocol %q (protocols: %s)", clip(name), strings.Join(names, ", "))
}

// Parse splits "PROTOCOL/VARIANT" and looks both up.
func (r *Registry) Parse(spec string) (*model.Protocol, model.Variant, error) {
	name, variant, ok := strings.Cut(spec, "/")
	if !ok || name == "" || variant == "" {
		return nil, model.Variant{}, fmt.Errorf("expected PROTOCOL/VARIANT, got %q", clip(spec))
	}
	p, err := r.Lookup(name)
	if err != nil {
		return nil, model.Variant{}, err
	}
	v, err := p.Variant(variant)
	if err != nil {
		return nil, model.Variant{}, err
	}
	return p, v, nil
}

// Impl returns the real implementation of the named protocol, or nil.
func (r *Registry) Impl(name string) *rt.Impl { return r.Impls[name] }

// Main runs the command line args (without the program name) over reg,
// printing the result on stdout and errors on stderr, and returns the exit
// code. SIGINT and SIGTERM stop a long command at its next check (a bfs
// chunk, a walk, a run of the real code), which then prints what it found
// so far; a second signal terminates the process at once.
func Main(reg *Registry, args []string, stdout, stderr io.Writer) int {
	// A closed pipe (check explore ... | head) is a write error, reported
	// with exit 2 like any other, instead of a SIGPIPE that kills the
	// process with 141 before it can say anything.
	signal.Ignore(syscall.SIGPIPE)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	stop := make(chan struct{})
	done := make(chan struct{})
	var got os.Signal
	var mu sync.Mutex
	go func() {
		select {
		case s := <-sigs:
			// From now on the default action applies again: a second
			// Ctrl-C kills the process, whatever the command is doing.
			signal.Stop(sigs)
			mu.Lock()
			got = s
			mu.Unlock()
			close(stop)
		case <-done:
		}
	}()
	code := Run(reg, args, stdout, stderr, stop)
	close(done)
	signal.Stop(sigs)
	mu.Lock()
	defer mu.Unlock()
	if code == ExitInterrupted {
		if s, ok := got.(syscall.Signal); ok {
			code = 128 + int(s)
		}
	}
	return code
}

// Run is Main without signal handling, for tests and for programs that
// handle signals themselves: closing stop (which may be nil) interrupts
// the command as a signal would, and it then returns ExitInterrupted.
func Run(reg *Registry, args []string, stdout, stderr io.Writer, stop <-chan struct{}) int {
	if err := reg.check(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", reg.name(), err)
		return ExitUsage
	}
	c := &command{reg: reg, stdout: stdout, stderr: stderr, stop: stop}
	return c.run(args)
}

// command is one invocation: the registry, where the output goes and the
// channel that interrupts it.
type command struct {
	reg            *Registry
	stdout, stderr io.Writer
	stop           <-chan struct{}
}

// StdoutWriter is a command's stdout, keeping the first write error: a
// result that could not be written is an error (exit 2) for every
// command, whether or not it checks its own writes. The cluster command
// wraps its stdout in one too.
type StdoutWriter struct {
	w   io.Writer
	err error
}

// NewStdoutWriter wraps w.
func NewStdoutWriter(w io.Writer) *StdoutWriter { return &StdoutWriter{w: w} }

// Err is the first write error, or nil.
func (o *StdoutWriter) Err() error { return o.err }

func (o *StdoutWriter) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.err = err
	}
	return n, err
}

// interrupted reports whether the command has been asked to stop.
func (c *command) interrupted() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

const usageText = `usage: %[1]s COMMAND [flags] [arguments]

commands:
  list [--json]                                   protocols, variants, parameters, properties, metrics, claims
  explain PROTOCOL/VARIANT                        what a variant is, its source and expected verdict
  explore [flags] PROTOCOL/VARIANT [key=value...] explore one variant (bfs by default)
  verify [flags] [PROTOCOL ...]                   explore every variant and compare with its expectation
  replay [--json] [--html F] [--full] FILE        replay a trace file and render it (text, or an HTML page)
  replay --impl FILE                              drive the real implementation through a trace
  minimize [--out FILE] FILE                      minimize a trace file
  compare [flags] PROTOCOL A B [key=value...]     the same exploration for two variants, metrics side by side
  stress [flags] PROTOCOL/VARIANT [key=value...]  run the real implementation (Go scheduler, or --controlled)
  bench [--json] [--config N,...] [PROTOCOL[/VARIANT] ...]
                                                  states/s and bytes/state of every explorer configuration
  litmus [--model sc|tso|armv8] FILE ...          a litmus test's outcomes (C or AArch64 format), its condition

run "%[1]s COMMAND -h" for a command's flags.
exit status: 0 no violation (a proof, from an exhaustive strategy; a clean
sampling run says how many walks or runs), 1 violation found, 2 usage or
input error, 3 no violation but not a proof: an exhaustive search cut short
by a limit (bounded: stdout says what was not explored) or that left a
property unchecked (partial: stdout names it), 130 interrupted (143
terminated).
`

func (c *command) usage() string { return fmt.Sprintf(usageText, c.reg.name()) }

// usageError marks an error that is the user's input: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// run dispatches to the command named by args[0].
func (c *command) run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, c.usage())
		return ExitUsage
	}
	cmds := map[string]func([]string) (int, error){
		"list":     c.list,
		"explain":  c.explain,
		"explore":  c.explore,
		"verify":   c.verify,
		"replay":   c.replay,
		"minimize": c.minimize,
		"compare":  c.compare,
		"stress":   c.stress,
		"bench":    c.bench,
		"litmus":   c.litmus,
	}
	name := args[0]
	help := name == "-h" || name == "--help" || name == "help"
	cmd, ok := cmds[name]
	if !ok && !help {
		fmt.Fprintf(c.stderr, "%s: unknown command %q\n\n%s", c.reg.name(), clip(name), c.usage())
		return ExitUsage
	}
	out := NewStdoutWriter(c.stdout)
	c.stdout = out
	code, err := ExitOK, error(nil)
	if help {
		fmt.Fprint(c.stdout, c.usage())
	} else {
		code, err = cmd(args[1:])
	}
	if errors.Is(err, flag.ErrHelp) {
		code, err = ExitOK, nil
	}
	if err == nil && out.err != nil {
		// The result did not reach stdout (a full disk, a closed pipe):
		// a command that printed it without checking every write must
		// not exit as if the user had it.
		err = fmt.Errorf("the result could not be written to stdout: %w", out.err)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "%s %s: %s\n", c.reg.name(), name, clipq.To(err.Error(), maxMessage))
		var fe flagError
		if errors.As(err, &fe) {
			fmt.Fprintf(c.stderr, "run \"%s %s -h\" for its flags\n", c.reg.name(), name)
		}
		return ExitUsage
	}
	return code
}

// flagError is an error of the flag package: an unknown flag or a value it
// cannot parse.
type flagError struct{ error }

// newFlags returns a flag set for command name whose -h prints synopsis
// and the flags' defaults on stdout (help asked for is the result); the
// flag package's own output is discarded, and errors are reported once,
// on stderr, by run.
func (c *command) newFlags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(c.stdout, "usage: %s %s\n", c.reg.name(), synopsis)
		fs.SetOutput(c.stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parse parses flags that may come before or after positional arguments
// and returns the positional ones. Errors are usage errors.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseOnce(fs, args); err != nil {
			return nil, err
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

// parseOnce is fs.Parse, printing the help (on stdout) only when it was
// asked for: the flag package calls Usage after any error.
func parseOnce(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	case err != nil:
		return usageError{flagError{errors.New(clip(err.Error()))}}
	}
	return nil
}

// flagsSet returns the names of the flags set on the command line.
func flagsSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// unused is a usage error for the first of names given on the command
// line: they do nothing in this combination (why), and a flag that is
// silently ignored runs something else than the user asked for.
func unused(set map[string]bool, why string, names ...string) error {
	for _, n := range names {
		if set[n] {
			return usagef("--%s does nothing %s", n, why)
		}
	}
	return nil
}

// parseParams turns "key=value" arguments into params. Values must be
// integers; range checks are the protocol's (model.Protocol.Resolve).
func parseParams(args []string) (model.Params, error) {
	p := model.Params{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, usagef("expected key=value, got %q", clip(a))
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, usagef("parameter %s: %q is not an integer", clip(k), clip(v))
		}
		if _, dup := p[k]; dup {
			return nil, usagef("parameter %s given twice", clip(k))
		}
		p[k] = n
	}
	return p, nil
}

// parseTarget reads the positional arguments PROTOCOL/VARIANT [key=value
// ...] of explore and stress.
func (c *command) parseTarget(cmd string, pos []string) (*model.Protocol, model.Variant, model.Params, error) {
	if len(pos) == 0 {
		return nil, model.Variant{}, nil, usagef("%s needs PROTOCOL/VARIANT", cmd)
	}
	p, v, err := c.reg.Parse(pos[0])
	if err != nil {
		return nil, model.Variant{}, nil, usageError{err}
	}
	given, err := parseParams(pos[1:])
	if err != nil {
		return nil, model.Variant{}, nil, err
	}
	return p, v, given, nil
}

// maxMessage bounds a whole error message, whatever it quotes.
const maxMessage = 2000

// clip shortens s to about clip.Quoted bytes, saying how much it left
// out (a message quotes at most that much of the user's input).
func clip(s string) string { return clipq.String(s) }
