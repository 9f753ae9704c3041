package cli

import (
	"flag"
	"io"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// The explore command's flags and report, for commands that explore in
// another way (a pipeline on a cluster) and must take the same flags and
// print the same result, byte for byte where the result is the same.

// ExploreFlags are explore's exploration flags (--strategy, --seed,
// --runs, --max-steps, ...).
type ExploreFlags struct{ f exploreFlags }

// Register defines the flags on fs.
func (e *ExploreFlags) Register(fs *flag.FlagSet) { e.f.register(fs) }

// Check rejects, after fs was parsed, the flags the chosen strategy would
// ignore and values that cannot mean what they say, as explore does.
func (e *ExploreFlags) Check(fs *flag.FlagSet) error { return e.f.check(fs) }

// Options returns the explorer options the flags ask for; progress goes
// to stderr unless --progress none.
func (e *ExploreFlags) Options(stderr io.Writer) (explorer.Options, error) {
	return e.f.options(stderr)
}

// ParseArgs parses flags that may come before or after the positional
// arguments, as every command does, and returns the positional ones.
func ParseArgs(fs *flag.FlagSet, args []string) ([]string, error) { return parse(fs, args) }

// ParseParams turns "key=value" arguments into parameters, as explore
// does.
func ParseParams(args []string) (model.Params, error) { return parseParams(args) }

// CheckWritable checks, before any work, that the file an output flag
// names can be written.
func CheckWritable(flag, path string) error { return checkWritable(flag, path) }

// WriteHTML writes the HTML view of a replayed counterexample.
func WriteHTML(path string, r *traces.Replayed) error { return writeHTML(path, r) }

// Usagef is a usage error (exit 2), as the commands report them.
func Usagef(format string, args ...any) error { return usagef(format, args...) }

// After a clean bfs, explore checks linearizability on the histories of
// LinWalks random walks (seed 1) of at most LinWalkSteps steps each,
// since bfs merges paths.
const (
	LinWalks     = linWalks
	LinWalkSteps = linWalkSteps
)

// A Report is an exploration's outcome as explore prints it.
type Report struct{ o *outcome }

// NewReport is the report of r, an exploration of variant of p at params
// (all of them resolved). t is its counterexample (nil without a
// violation), which is replayed strictly here; minimized says that t was
// minimized from r.Schedule. linWalks is the number of random walks whose
// histories were checked for linearizability after a clean bfs (0: none),
// linInterrupted that they were interrupted.
func NewReport(p *model.Protocol, variant string, params model.Params, r *explorer.Result, t *traces.Trace, minimized bool, linWalks int64, linInterrupted bool) (*Report, error) {
	o := &outcome{protocol: p, variant: variant, params: params, result: r, trace: t, minimized: minimized, linWalks: linWalks, linInterrupted: linInterrupted}
	if t != nil {
		rep, err := traces.Replay(p, t)
		if err != nil {
			return nil, err
		}
		o.replay = rep
	}
	return &Report{o}, nil
}

// Print writes the text report to w and the wall-clock time and memory,
// which depend on the machine, to times; full shows every step of the
// counterexample.
func (r *Report) Print(w, times io.Writer, full bool) error { return r.o.print(w, times, full) }

// WriteJSON writes the --json document; the time only with timing.
func (r *Report) WriteJSON(w io.Writer, timing bool) error {
	return writeJSON(w, r.o.document(timing))
}

// Replayed is the counterexample replayed (nil without one).
func (r *Report) Replayed() *traces.Replayed { return r.o.replay }

// ExitCode is explore's exit status for the outcome.
func (r *Report) ExitCode() int { return r.o.exitCode() }
