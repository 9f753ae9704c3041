// Package command is the cluster command line: `explore` with the flags,
// the output and the exit codes of `check explore`, run as Apache Beam
// pipelines on the runner chosen with --runner (Prism in process by
// default; Flink, Spark, Dataflow or any portable job server).
//
// Exit codes are check's: 0 no violation, 1 a violation was found, 2 a
// usage or input error (or a pipeline that failed, a job server that
// cannot be reached, a stdout that cannot be written), 3 no violation but
// not a proof: a search cut short by a limit (bounded) or one that left a
// property unchecked (partial: a cluster search never checks progress
// properties, unless --no-progress skips them on purpose), 130
// interrupted.
package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/cluster/beamrun"
	"github.com/protocheck/protocheck/cluster/bfs"
	"github.com/protocheck/protocheck/cluster/store"
	"github.com/protocheck/protocheck/cluster/swarm"
	"github.com/protocheck/protocheck/cluster/target"
	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// Name is the command's name in messages.
const Name = "cluster"

const usageText = `usage: %[1]s explore [flags] PROTOCOL/VARIANT [key=value ...]

explores one variant as Apache Beam pipelines: exhaustive bfs, one pipeline
per level (--strategy bfs, the default), or seeded walks (--strategy random,
random-threads, pct), on Prism in this process (the default) or on a cluster
(--runner flink|spark|dataflow|universal --endpoint HOST:PORT --temp DIR).
The result, output and exit codes are those of "check explore".

run "%[1]s explore -h" for the flags.
exit status: 0 no violation (a proof for bfs; a clean sampling run says how
many walks), 1 violation found, 2 usage or input error, 3 no violation but
not a proof: bfs cut short by a limit (bounded) or with a property left
unchecked (partial: a cluster search checks no progress property; skip
them with --no-progress), 130 interrupted.
`

// Main runs the command line args (without the program name) and returns
// the exit code. SIGINT and SIGTERM stop the search between pipelines
// (the current one is abandoned); it then reports what it found so far
// with the verdict "interrupted".
func Main(args []string, stdout, stderr io.Writer) int {
	// A closed pipe is a write error (exit 2), not a SIGPIPE (141).
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, stdout, stderr)
}

// Run is Main without signal handling: cancelling ctx interrupts.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, usageText, Name)
		return cli.ExitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprintf(stdout, usageText, Name)
		return cli.ExitOK
	case "explore":
	default:
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n"+usageText, Name, args[0], Name)
		return cli.ExitUsage
	}
	out := cli.NewStdoutWriter(stdout)
	code, err := explore(ctx, args[1:], out, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return cli.ExitOK
	}
	if err == nil && out.Err() != nil {
		// The result did not reach stdout (a closed pipe, a full disk).
		err = fmt.Errorf("the result could not be written to stdout: %w", out.Err())
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s explore: %v\n", Name, err)
		return cli.ExitUsage
	}
	return code
}

// flags are explore's flags and the cluster's own.
type flags struct {
	ef                       cli.ExploreFlags
	out, html                string
	json, full, timing       bool
	runner, temp             string
	levelTimeout             time.Duration
	partitions, partitionMiB int
	shards                   int
	fs                       *flag.FlagSet
	// beamFlags are Beam's pipeline options, passed through.
	beamFlags []string
}

// harnessFlags are Beam's flags for a worker process, not for a command.
var harnessFlags = map[string]bool{"worker": true, "id": true, "control_endpoint": true, "logging_endpoint": true, "semi_persist_dir": true, "options": true, "status_endpoint": true, "artifact_endpoint": true, "provision_endpoint": true}

// notOnCluster are check explore's flags that have no meaning for a
// pipeline, with why; giving one is a usage error, as any flag that would
// do nothing is.
var notOnCluster = map[string]string{
	"workers":     "the runner's workers expand states; their number is the runner's parallelism",
	"metrics":     "per-execution metrics need the state graph, which a cluster search does not keep (totals over all transitions are printed)",
	"fairness":    "progress properties need the state graph, which a cluster search does not keep",
	"spill-dir":   "a cluster search keeps every level in files under --temp",
	"max-memory":  "the memory that matters is the workers'; size it with --partition-mib",
	"fingerprint": "a cluster search always stores 64-bit fingerprints (and prints the collision estimates)",
}

// dfsOnly are explore's flags for dfs, which does not run on a cluster.
var dfsOnly = map[string]bool{"no-reduction": true, "preemptions": true}

// clusterUsage is the help of the flags whose meaning on a cluster is not
// exactly explore's.
var clusterUsage = map[string]string{
	"strategy":   "bfs (exhaustive, shortest trace), random or random-threads (seeded walks), or pct (probabilistic concurrency testing, --depth)",
	"max-states": "bfs: stop with verdict bounded after the level at which the distinct states exceed this (default: no bound)",
	"progress":   "progress on stderr, one line per bfs level or batch of walks: text, json (one object per line) or none",
	"time-limit": "stop with verdict bounded after this long, abandoning the pipeline under way (e.g. 10m; 0: no limit)",
	"endpoint":   "the job server, HOST:PORT (with --runner prism, none: a Prism server in this process)",
	"symmetry":   "bfs: identify states up to permutations of interchangeable threads (the model must support it)",
	"runs":       "random, random-threads, pct: number of walks (default 1000)",
	"seed":       "random, random-threads, pct: seed of the first walk",
}

func newFlags(stdout io.Writer) *flags {
	f := &flags{}
	fs := flag.NewFlagSet("explore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.ef.Register(fs)
	fs.StringVar(&f.out, "out", "", "write the counterexample trace to this file")
	fs.BoolVar(&f.json, "json", false, "print one JSON document instead of text")
	fs.StringVar(&f.html, "html", "", "write an HTML view of the counterexample to this file")
	fs.BoolVar(&f.full, "full", false, "show every step and every changed variable of the counterexample (default: a summary that fits on a screen)")
	fs.BoolVar(&f.timing, "timing", false, "show the wall-clock time on stdout (text) or as \"seconds\" (--json); otherwise it goes to stderr and stdout is the same for the same inputs")
	fs.StringVar(&f.runner, "runner", "prism", "where the pipelines run: "+strings.Join(beamrun.Runners, ", ")+" (prism: in this process, or a Prism job server with --endpoint)")
	fs.StringVar(&f.temp, "temp", "", "directory or object-storage prefix (gs://, s3://) for the search's files, which every worker must reach (default: a new temporary directory; required with a remote runner)")
	fs.DurationVar(&f.levelTimeout, "level-timeout", time.Hour, "give up when one pipeline (a bfs level, a batch of walks) takes longer than this: a worker that cannot start or is stuck would otherwise keep the command waiting forever")
	fs.IntVar(&f.partitions, "partitions", 1, "bfs: fingerprint partitions to start with (rounded up to a power of two); more are made as levels grow")
	fs.IntVar(&f.partitionMiB, "partition-mib", 64, "bfs: a partition is split when its candidates in one level would exceed this many MiB: the memory of one merge task")
	fs.IntVar(&f.shards, "shards", 16, "random, random-threads, pct: work items per batch of walks")
	// Beam's own options (--endpoint, --environment_type, --worker_binary,
	// --project, ...) are given to the runner as they are.
	flag.CommandLine.VisitAll(func(g *flag.Flag) {
		if harnessFlags[g.Name] || strings.HasPrefix(g.Name, "test.") || fs.Lookup(g.Name) != nil {
			return
		}
		fs.Var(g.Value, g.Name, g.Usage)
		f.beamFlags = append(f.beamFlags, g.Name)
	})
	sort.Strings(f.beamFlags)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: %s explore [flags] PROTOCOL/VARIANT [key=value ...]\n", Name)
		own := flag.NewFlagSet("explore", flag.ContinueOnError)
		own.SetOutput(stdout)
		fs.VisitAll(func(g *flag.Flag) {
			switch {
			case notOnCluster[g.Name] != "" || dfsOnly[g.Name]:
			case clusterUsage[g.Name] != "":
				own.Var(g.Value, g.Name, clusterUsage[g.Name])
			case !slices.Contains(f.beamFlags, g.Name):
				own.Var(g.Value, g.Name, g.Usage)
			}
		})
		own.PrintDefaults()
		var beam []string
		for _, n := range f.beamFlags {
			if clusterUsage[n] == "" {
				beam = append(beam, n)
			}
		}
		fmt.Fprintf(stdout, "\nBeam's pipeline options, passed to the runner (see Beam's documentation):\n  --%s\n", strings.Join(beam, " --"))
	}
	f.fs = fs
	return f
}

func explore(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags(stdout)
	pos, err := cli.ParseArgs(f.fs, args)
	if err != nil {
		return 0, err
	}
	if err := f.ef.Check(f.fs); err != nil {
		return 0, err
	}
	given := map[string]bool{}
	f.fs.Visit(func(g *flag.Flag) { given[g.Name] = true })
	if err := f.check(given); err != nil {
		return 0, err
	}
	opts, err := f.ef.Options(stderr)
	if err != nil {
		return 0, err
	}
	if opts.Strategy == explorer.DFS || opts.Strategy == explorer.Paths {
		return 0, cli.Usagef("--strategy %s does not run on a cluster: bfs, random, random-threads and pct do", opts.Strategy)
	}
	p, variant, params, err := parseTarget(pos)
	if err != nil {
		return 0, err
	}
	tg, m, err := target.Resolve(p, variant, params)
	if err != nil {
		return 0, cli.Usagef("%v", err)
	}
	if opts.Symmetry {
		if _, ok := m.(model.Symmetric); !ok {
			return 0, cli.Usagef("--symmetry: %s/%s does not implement symmetry reduction", p.Name, variant)
		}
	}
	if err := errors.Join(cli.CheckWritable("out", f.out), cli.CheckWritable("html", f.html)); err != nil {
		return 0, err
	}
	dir, removeDir, err := f.workDir()
	if err != nil {
		return 0, err
	}
	defer removeDir()
	if g := f.fs.Lookup("endpoint"); g != nil {
		if err := beamrun.CheckEndpoint(ctx, f.runner, g.Value.String()); err != nil {
			return 0, err
		}
	}
	runner := &beamrun.Runner{Name: f.runner, Timeout: f.levelTimeout}
	r, err := search(ctx, tg, opts, f, dir, runner)
	if err != nil {
		return 0, err
	}
	rep, err := report(ctx, p, tg, m, opts, r)
	if err != nil {
		return 0, err
	}
	return f.print(rep, stdout, stderr)
}

// check rejects the flags that mean nothing on a cluster or for the
// strategy, and a remote runner without a shared directory.
func (f *flags) check(given map[string]bool) error {
	for _, name := range slices.Sorted(maps.Keys(notOnCluster)) {
		if given[name] {
			return cli.Usagef("--%s does nothing on a cluster: %s", name, notOnCluster[name])
		}
	}
	strategy := f.fs.Lookup("strategy").Value.String()
	for name, applies := range map[string]bool{
		"partitions":    strategy == explorer.BFS,
		"partition-mib": strategy == explorer.BFS,
		"shards":        strategy != explorer.BFS,
	} {
		if given[name] && !applies {
			return cli.Usagef("--%s does nothing with --strategy %s", name, strategy)
		}
	}
	if f.json && given["full"] {
		return cli.Usagef("--full does nothing with --json (the trace is in the document, every step of it)")
	}
	if !slices.Contains(beamrun.Runners, f.runner) {
		return cli.Usagef("unknown runner %q (runners: %s)", f.runner, strings.Join(beamrun.Runners, ", "))
	}
	if f.runner != "prism" && f.temp == "" {
		return cli.Usagef("--runner %s needs --temp: a directory or a gs:// or s3:// prefix that every worker can reach", f.runner)
	}
	switch {
	case f.partitions < 1 || f.partitions > 4096:
		return cli.Usagef("--partitions must be between 1 and 4096, got %d", f.partitions)
	case f.partitionMiB < 1:
		return cli.Usagef("--partition-mib must be at least 1, got %d", f.partitionMiB)
	case f.shards < 1 || f.shards > 1<<16:
		return cli.Usagef("--shards must be between 1 and 65536, got %d", f.shards)
	case f.levelTimeout <= 0:
		return cli.Usagef("--level-timeout must be positive, got %s", f.levelTimeout)
	}
	return nil
}

// parseTarget reads PROTOCOL/VARIANT [key=value ...].
func parseTarget(pos []string) (*model.Protocol, string, model.Params, error) {
	if len(pos) == 0 {
		return nil, "", nil, cli.Usagef("explore needs PROTOCOL/VARIANT")
	}
	reg := &cli.Registry{Name: Name, Protocols: target.Protocols()}
	p, v, err := reg.Parse(pos[0])
	if err != nil {
		return nil, "", nil, cli.Usagef("%v", err)
	}
	params, err := cli.ParseParams(pos[1:])
	if err != nil {
		return nil, "", nil, err
	}
	return p, v.Name, params, nil
}

// workDir is a new directory (or prefix) for this search's files, under
// --temp or the system's temporary directory, and what removes it.
func (f *flags) workDir() (string, func(), error) {
	if f.temp == "" {
		dir, err := os.MkdirTemp("", "protocheck-cluster-")
		if err != nil {
			return "", nil, err
		}
		return dir, func() { os.RemoveAll(dir) }, nil
	}
	id, err := store.RandomName()
	if err != nil {
		return "", nil, err
	}
	dir := store.Join(f.temp, "protocheck-"+id)
	// The searches remove their own files; a local directory is removed
	// too (object storage has no directories).
	return dir, func() {
		if !strings.Contains(dir, "://") {
			os.Remove(dir)
		}
	}, nil
}

// search runs the pipelines.
func search(ctx context.Context, tg target.Target, opts explorer.Options, f *flags, dir string, runner *beamrun.Runner) (*explorer.Result, error) {
	if opts.Strategy == explorer.BFS {
		out, err := bfs.Explore(ctx, bfs.Config{
			Target: tg, Symmetry: opts.Symmetry, NoProgress: opts.NoProgress, MaxSteps: opts.MaxSteps, MaxStates: int64(opts.MaxStates),
			TimeLimit: opts.TimeLimit, Partitions: f.partitions, PartitionBytes: int64(f.partitionMiB) << 20,
			Dir: dir, Run: runner.Run, Clock: opts.Clock, Progress: opts.Progress, ProgressJSON: opts.ProgressJSON,
		})
		if err != nil {
			return nil, err
		}
		return out.Result, nil
	}
	out, err := swarm.Explore(ctx, swarm.Config{
		Target:   tg,
		Sampling: swarm.Sampling{Strategy: opts.Strategy, Seed: opts.Seed, MaxSteps: opts.MaxSteps, Depth: opts.Depth},
		Runs:     opts.Runs, Shards: f.shards, Dir: dir, Run: runner.Run, TimeLimit: opts.TimeLimit,
		Clock: opts.Clock, Progress: opts.Progress, ProgressJSON: opts.ProgressJSON,
	})
	if err != nil {
		return nil, err
	}
	return out.Result, nil
}

// report completes the result as check explore does: after a clean bfs
// the linearizability of random walks' histories (bfs merges paths, so it
// cannot check them), then the counterexample, recorded, minimized unless
// bfs found it (bfs's is shortest by construction), and replayed.
func report(ctx context.Context, p *model.Protocol, tg target.Target, m model.Machine, opts explorer.Options, r *explorer.Result) (*cli.Report, error) {
	var linWalks int64
	linInterrupted := false
	if r.Violation == nil && r.Verdict != explorer.Interrupted && r.Strategy == explorer.BFS && m.Properties().Spec != nil {
		// Run here, in the driver: a few hundred short walks.
		lr, err := explorer.Explore(m, explorer.Options{Strategy: explorer.Random, Seed: 1, Runs: cli.LinWalks, MaxSteps: cli.LinWalkSteps, Stop: ctx.Done()})
		if err != nil {
			return nil, err
		}
		// Every walk's history is checked, ended or cut at
		// cli.LinWalkSteps (a model whose threads never halt has only cut
		// walks), as check explore counts them; Executions counts the
		// ended ones.
		linWalks = cli.LinWalks
		if lr.Verdict == explorer.Interrupted {
			linWalks = lr.Stats.Executions
			r.Verdict, r.Bound, linInterrupted = explorer.Interrupted, "", true
		}
		if lr.Violation != nil {
			r.Verdict, r.Violation, r.Schedule = explorer.Violation, lr.Violation, lr.Schedule
			r.Strategy = explorer.Random
		}
	}
	var t *traces.Trace
	minimized := false
	if r.Violation != nil {
		var err error
		if t, err = traces.Record(p, tg.Variant, tg.Params, r.Schedule); err != nil {
			return nil, fmt.Errorf("recording the counterexample: %w", err)
		}
		if r.Strategy != explorer.BFS {
			if t, err = traces.Minimize(p, t); err != nil {
				return nil, fmt.Errorf("minimizing the counterexample: %w", err)
			}
			minimized = true
		}
	}
	rep, err := cli.NewReport(p, tg.Variant, tg.Params, r, t, minimized, linWalks, linInterrupted)
	if err != nil {
		return nil, fmt.Errorf("the counterexample does not replay: %w", err)
	}
	return rep, nil
}

// print writes the trace file, the result and the HTML view, as check
// explore does, and returns the exit code.
func (f *flags) print(rep *cli.Report, stdout, stderr io.Writer) (int, error) {
	var failed []error
	rp := rep.Replayed()
	if f.out != "" && rp != nil {
		if err := traces.Save(f.out, rp.Trace); err != nil {
			failed = append(failed, fmt.Errorf("--out %s: %w (the result above is complete; only this file is missing)", f.out, err))
		}
	}
	if f.out != "" && rp == nil {
		fmt.Fprintf(stderr, "%s explore: no violation, so nothing was written to %s\n", Name, f.out)
	}
	if f.json {
		if err := rep.WriteJSON(stdout, f.timing); err != nil {
			return 0, err
		}
	} else {
		times := stderr
		if f.timing {
			times = stdout
		}
		if err := rep.Print(stdout, times, f.full); err != nil {
			return 0, err
		}
	}
	if f.html != "" && rp != nil {
		if err := cli.WriteHTML(f.html, rp); err != nil {
			failed = append(failed, fmt.Errorf("--html %s: %w (the result above is complete; only this file is missing)", f.html, err))
		}
	}
	if len(failed) > 0 {
		return 0, errors.Join(failed...)
	}
	return rep.ExitCode(), nil
}
