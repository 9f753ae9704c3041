package cli

import (
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// A verification row: one variant explored at its default size.
type verifyRow struct {
	Protocol    string  `json:"protocol"`
	Variant     string  `json:"variant"`
	Expected    string  `json:"expected"`
	Found       string  `json:"found"`
	Match       bool    `json:"match"`
	States      int64   `json:"states"`
	Transitions int64   `json:"transitions"`
	TraceLen    int     `json:"trace_length"`
	Seconds     float64 `json:"seconds,omitempty"` // with --timing only
	// Walks is the number of random walks whose histories were checked for
	// linearizability (correct variants of protocols with a spec).
	Walks int64 `json:"linearizability_walks"`
	// Symmetry: the states were counted up to permutations of
	// interchangeable threads.
	Symmetry bool `json:"symmetry,omitempty"`
}

func (c *command) verify(args []string) (int, error) {
	stdout, stderr := c.stdout, c.stderr
	fs := c.newFlags("verify", "verify [--json] [--progress=false] [--strategy bfs|dfs] [--workers N] [--fingerprint] [--symmetry] [--timing] [PROTOCOL ...]")
	asJSON := fs.Bool("json", false, "print JSON")
	progress := fs.Bool("progress", true, "progress lines on stderr for runs longer than a second")
	strategy := fs.String("strategy", explorer.BFS, "exhaustive strategy: bfs or dfs (dfs's counterexamples are minimized)")
	workers := fs.Int("workers", runtime.NumCPU(), "bfs: goroutines expanding states")
	fingerprint := fs.Bool("fingerprint", false, "store 64-bit fingerprints instead of states")
	symmetry := fs.Bool("symmetry", false, "symmetry reduction for the protocols whose models support it (the others run without)")
	timing := fs.Bool("timing", false, "show each variant's wall-clock time (a column, or \"seconds\" with --json); otherwise the total goes to stderr and stdout is the same for the same inputs")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	if *strategy != explorer.BFS && *strategy != explorer.DFS {
		return 0, usagef("verify explores exhaustively: --strategy must be bfs or dfs, got %q", clip(*strategy))
	}
	set := flagsSet(fs)
	if *strategy == explorer.DFS {
		if err := unused(set, "with --strategy dfs (it applies to: bfs)", "workers"); err != nil {
			return 0, err
		}
	}
	if set["workers"] && *workers <= 0 {
		return 0, usagef("--workers must be at least 1, got %d", *workers)
	}
	base := explorer.Options{Strategy: *strategy, Workers: *workers, Fingerprint: *fingerprint}
	var ps []*model.Protocol
	for _, name := range pos {
		p, err := c.reg.Lookup(name)
		if err != nil {
			return 0, usageError{err}
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		ps = c.reg.Protocols
	}
	start := time.Now()
	var rows []verifyRow
	ok, interrupted, total := true, false, 0
	for _, p := range ps {
		total += len(p.Variants)
	}
	for _, p := range ps {
		for _, v := range p.Variants {
			if interrupted {
				break
			}
			var w io.Writer
			if *progress {
				w = stderr
			}
			opts := base
			opts.Progress = w
			row, err := c.verifyVariant(p, v, opts, *symmetry)
			if err != nil {
				return 0, err
			}
			if !*timing {
				row.Seconds = 0
			}
			interrupted = row.Found == string(explorer.Interrupted)
			ok = ok && (row.Match || interrupted)
			rows = append(rows, row)
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, rows); err != nil {
			return 0, err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		header := "variant\texpected\tfound\tstates\ttransitions\ttrace\tlin walks\t"
		if *timing {
			header += "time\t"
		}
		fmt.Fprintln(tw, header+"\t")
		for _, r := range rows {
			mark := "match"
			switch {
			case r.Found == string(explorer.Interrupted):
				mark = "interrupted"
			case !r.Match:
				mark = "MISMATCH"
			}
			trace := "-"
			if r.TraceLen > 0 {
				trace = fmt.Sprint(r.TraceLen)
			}
			walks := "-"
			if r.Walks > 0 {
				walks = fmt.Sprint(r.Walks)
			}
			states := fmt.Sprint(r.States)
			if r.Symmetry {
				states += " (sym)"
			}
			fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%d\t%s\t%s\t", r.Protocol, r.Variant, r.Expected, r.Found, states, r.Transitions, trace, walks)
			if *timing {
				fmt.Fprintf(tw, "%.2fs\t", r.Seconds)
			}
			fmt.Fprintf(tw, "%s\t\n", mark)
		}
		tw.Flush()
		matched := 0
		for _, r := range rows {
			if r.Match {
				matched++
			}
		}
		if interrupted {
			fmt.Fprintf(stdout, "interrupted: %d of the %d variants checked before it match their expected verdict; %d of %d not verified\n", matched, len(rows)-1, total-len(rows)+1, total)
		} else {
			fmt.Fprintf(stdout, "%d of %d variants match their expected verdict\n", matched, len(rows))
		}
	}
	fmt.Fprintf(stderr, "time: %s\n", time.Since(start).Round(time.Millisecond))
	switch {
	case !ok:
		return ExitViolation, nil
	case interrupted:
		return ExitInterrupted, nil
	}
	return ExitOK, nil
}

// verifyVariant explores v exhaustively at default size; for a variant
// expected correct it also checks linearizability on seeded random walks.
func (c *command) verifyVariant(p *model.Protocol, v model.Variant, opts explorer.Options, symmetry bool) (verifyRow, error) {
	start := time.Now()
	opts.Clock = time.Now
	if symmetry {
		m, _, err := p.Instantiate(v.Name, nil)
		if err != nil {
			return verifyRow{}, usageError{err}
		}
		_, opts.Symmetry = m.(model.Symmetric)
	}
	o, err := c.exploreVariant(p, v.Name, nil, opts)
	if err != nil {
		return verifyRow{}, err
	}
	r := o.result
	row := verifyRow{Protocol: p.Name, Variant: v.Name, Expected: v.Expect, States: r.Stats.States, Transitions: r.Stats.Transitions, Symmetry: opts.Symmetry}
	switch r.Verdict {
	case explorer.Violation:
		row.Found = r.Violation.Property
		row.TraceLen = len(o.trace.Schedule)
	default:
		row.Found = string(r.Verdict)
	}
	row.Walks = o.linWalks
	row.Match = v.Accepts(row.Found)
	row.Seconds = time.Since(start).Seconds()
	return row, nil
}
