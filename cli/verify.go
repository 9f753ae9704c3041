package cli

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// A verification row: one variant explored at one configuration of its
// protocol's matrix.
type verifyRow struct {
	Protocol string `json:"protocol"`
	Variant  string `json:"variant"`
	// Params are every parameter's value at this configuration.
	Params   model.Params `json:"params"`
	Why      string       `json:"why,omitempty"` // what the configuration exercises (not the default)
	Expected string       `json:"expected"`
	Found    string       `json:"found"`
	Match    bool         `json:"match"`
	// Incomplete: the row's search found no violation but did not finish
	// what the expectation needs (found "bounded": cut short by a limit;
	// "partial" or "unchecked PROPERTY": a property it could not check):
	// neither a match nor a mismatch, and verify exits 3.
	Incomplete  bool    `json:"incomplete,omitempty"`
	States      int64   `json:"states"`
	Transitions int64   `json:"transitions"`
	TraceLen    int     `json:"trace_length"`
	Seconds     float64 `json:"seconds,omitempty"` // with --timing only
	// Walks is the number of random walks whose histories were checked for
	// linearizability (correct variants of protocols with a spec).
	Walks int64 `json:"linearizability_walks"`
	// Options are the explorer settings the configuration needed
	// ("fingerprint", "symmetry").
	Options []string `json:"options,omitempty"`
	// Unchecked lists the properties the run could not check, with why.
	Unchecked []string `json:"unchecked,omitempty"`
}

// A claim row: a performance claim checked as an expectation.
type claimRow struct {
	Protocol string       `json:"protocol"`
	Claim    string       `json:"claim"`
	Text     string       `json:"text"`
	Metric   string       `json:"metric"`
	A        string       `json:"a"`
	B        string       `json:"b"`
	Params   model.Params `json:"params"`
	Found    string       `json:"found"`
	Match    bool         `json:"match"`
}

// verifyDoc is verify's --json document.
type verifyDoc struct {
	Variants []verifyRow `json:"variants"`
	Claims   []claimRow  `json:"claims"`
}

func (c *command) verify(args []string) (int, error) {
	stdout, stderr := c.stdout, c.stderr
	fs := c.newFlags("verify", "verify [--json] [--quick] [--progress text|json|none] [--strategy bfs|dfs] [--workers N] [--fingerprint] [--symmetry] [--timing] [PROTOCOL ...]")
	asJSON := fs.Bool("json", false, "print JSON")
	quick := fs.Bool("quick", false, "each variant at its protocol's default configuration only, not the whole matrix (the claims are checked either way)")
	progress := fs.String("progress", "text", "progress on stderr for each row's runs longer than a second: text, json (one object per line) or none")
	strategy := fs.String("strategy", explorer.BFS, "exhaustive strategy: bfs or dfs (dfs's counterexamples are minimized)")
	workers := fs.Int("workers", runtime.NumCPU(), "bfs: goroutines expanding states")
	fingerprint := fs.Bool("fingerprint", false, "store 64-bit fingerprints instead of states")
	symmetry := fs.Bool("symmetry", false, "symmetry reduction for the protocols whose models support it (the others run without)")
	timing := fs.Bool("timing", false, "show each row's wall-clock time (a column, or \"seconds\" with --json); otherwise the total goes to stderr and stdout is the same for the same inputs")
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
	progressOut, err := progressTo(*progress, stderr)
	if err != nil {
		return 0, err
	}
	if set["workers"] && *workers <= 0 {
		return 0, usagef("--workers must be at least 1, got %d", *workers)
	}
	base := explorer.Options{Strategy: *strategy, Fingerprint: *fingerprint}
	if *strategy == explorer.BFS && *workers > 1 {
		base.Workers = *workers
	}
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
	base.Progress, base.ProgressJSON = progressOut, *progress == "json"
	start := time.Now()
	var doc verifyDoc
	doc.Variants, doc.Claims = []verifyRow{}, []claimRow{}
	ok, interrupted, incomplete, total, totalClaims := true, false, false, 0, 0
	for _, p := range ps {
		for _, cfg := range configs(p, *quick) {
			for _, v := range p.Variants {
				if cfg.Covers(v.Name) {
					total++
				}
			}
		}
		totalClaims += len(p.Claims)
	}
	for _, p := range ps {
		for _, cfg := range configs(p, *quick) {
			for _, v := range p.Variants {
				if interrupted || !cfg.Covers(v.Name) {
					continue
				}
				row, err := c.verifyVariant(p, v, cfg, base, *symmetry)
				if err != nil {
					return 0, err
				}
				if !*timing {
					row.Seconds = 0
				}
				interrupted = row.Found == string(explorer.Interrupted)
				ok = ok && (row.Match || interrupted || row.Incomplete)
				incomplete = incomplete || row.Incomplete
				doc.Variants = append(doc.Variants, row)
			}
		}
	}
	for _, p := range ps {
		for _, cl := range p.Claims {
			if interrupted {
				break
			}
			row, err := c.verifyClaim(p, cl, base)
			if err != nil {
				return 0, err
			}
			interrupted = row.Found == string(explorer.Interrupted)
			ok = ok && (row.Match || interrupted)
			doc.Claims = append(doc.Claims, row)
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, doc); err != nil {
			return 0, err
		}
	} else {
		printVerify(stdout, doc, *timing, interrupted, total, totalClaims)
	}
	fmt.Fprintf(stderr, "time: %s\n", time.Since(start).Round(time.Millisecond))
	switch {
	case !ok:
		return ExitViolation, nil
	case interrupted:
		return ExitInterrupted, nil
	case incomplete:
		return ExitIncomplete, nil
	}
	return ExitOK, nil
}

// configs is a protocol's verification matrix: its default configuration,
// then (unless quick) every configuration it declares.
func configs(p *model.Protocol, quick bool) []model.Config {
	out := []model.Config{{}}
	if !quick {
		out = append(out, p.Matrix...)
	}
	return out
}

// printVerify writes verify's two tables. An interruption stops at a row
// or at a claim (the last one printed, marked interrupted): the counts of
// that table say how many were checked before it.
func printVerify(w io.Writer, doc verifyDoc, timing, interrupted bool, total, totalClaims int) {
	rowsCut := interrupted && len(doc.Claims) == 0
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "variant\tparams\texpected\tfound\tstates\ttransitions\ttrace\tlin walks\t"
	if timing {
		header += "time\t"
	}
	fmt.Fprintln(tw, header)
	for _, r := range doc.Variants {
		mark := "match"
		switch {
		case r.Found == string(explorer.Interrupted):
			mark = "interrupted"
		case r.Incomplete:
			mark = "incomplete"
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
		if len(r.Options) > 0 {
			states += " (" + strings.Join(r.Options, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t", r.Protocol, r.Variant, r.Params, r.Expected, r.Found, states, r.Transitions, trace, walks)
		if timing {
			fmt.Fprintf(tw, "%.2fs\t", r.Seconds)
		}
		fmt.Fprintf(tw, "%s\n", mark)
	}
	tw.Flush()
	matched, partial, incomplete := 0, 0, 0
	for _, r := range doc.Variants {
		if r.Match {
			matched++
			if r.Found == string(explorer.Partial) {
				partial++
			}
		}
		if r.Incomplete {
			incomplete++
		}
	}
	if rowsCut {
		fmt.Fprintf(w, "interrupted: %d of the %d rows checked before it match their expected verdict; %d of %d not verified\n", matched, len(doc.Variants)-1, total-len(doc.Variants)+1, total)
	} else {
		fmt.Fprintf(w, "%d of %d variant configurations match their expected verdict\n", matched, len(doc.Variants))
	}
	if partial > 0 {
		fmt.Fprintf(w, "%d of those matches are partial: every state explored, progress not checked under the symmetry reduction their configuration declares (--json: unchecked)\n", partial)
	}
	if incomplete > 0 {
		fmt.Fprintf(w, "%d incomplete: the search found no violation but did not finish (bounded) or could not check what the expectation needs (partial, unchecked; --json says which): neither a match nor a mismatch, and nothing proved\n", incomplete)
	}
	if len(doc.Claims) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "claim\tmetric\tcompared\tparams\tfound\t")
	claims := 0
	for _, r := range doc.Claims {
		mark := "holds"
		switch {
		case r.Found == string(explorer.Interrupted):
			mark = "interrupted"
		case !r.Match:
			mark = "DOES NOT HOLD"
		default:
			claims++
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s vs %s\t%s\t%s\t%s\n", r.Protocol, r.Claim, r.Metric, r.A, r.B, r.Params, r.Found, mark)
	}
	tw.Flush()
	if interrupted {
		n := len(doc.Claims)
		fmt.Fprintf(w, "interrupted: %d of the %d claims checked before it hold; %d of %d not checked\n", claims, n-1, totalClaims-n+1, totalClaims)
		return
	}
	fmt.Fprintf(w, "%d of %d claims hold\n", claims, len(doc.Claims))
}

// verifyVariant explores v exhaustively at configuration cfg; for a
// variant expected correct it also checks linearizability on seeded
// random walks.
func (c *command) verifyVariant(p *model.Protocol, v model.Variant, cfg model.Config, opts explorer.Options, symmetry bool) (verifyRow, error) {
	start := time.Now()
	opts.Clock = time.Now
	m, params, err := p.Instantiate(v.Name, cfg.Params)
	if err != nil {
		return verifyRow{}, fmt.Errorf("%s/%s at %s: %w", p.Name, v.Name, cfg.Params, err)
	}
	row := verifyRow{Protocol: p.Name, Variant: v.Name, Params: params, Why: cfg.Why}
	if _, sym := m.(model.Symmetric); sym && (symmetry || slices.Contains(cfg.Options, "symmetry")) {
		opts.Symmetry = true
		row.Options = append(row.Options, "symmetry")
	}
	if slices.Contains(cfg.Options, "fingerprint") && opts.Strategy == explorer.BFS {
		opts.Fingerprint = true
	}
	if opts.Fingerprint {
		row.Options = append(row.Options, "fingerprint")
	}
	if opts.Symmetry || opts.Fingerprint {
		opts.SpillDir = spillDir()
	}
	o, err := c.exploreVariant(p, v.Name, cfg.Params, opts)
	if err != nil {
		return verifyRow{}, err
	}
	r := o.result
	expect, also := cfg.Expected(v)
	row.Expected, row.States, row.Transitions, row.Unchecked = expect, r.Stats.States, r.Stats.Transitions, r.Unchecked
	expectsUnchecked := false
	switch r.Verdict {
	case explorer.Violation:
		row.Found = r.Violation.Property
		row.TraceLen = len(o.trace.Schedule)
	default:
		row.Found = string(r.Verdict)
		for _, u := range r.Unchecked {
			if r.Verdict == explorer.Partial && strings.HasPrefix(u, expect+":") {
				// The expected violation is of a property this search
				// does not check (progress under dfs): "partial" would
				// not say that it is the one expected.
				row.Found, expectsUnchecked = "unchecked "+expect, true
			}
		}
	}
	row.Walks = o.linWalks
	row.Match = row.Found == expect || slices.Contains(also, row.Found)
	if !row.Match && row.Found == string(explorer.Partial) && expect == model.ExpectOK &&
		slices.Contains(cfg.Options, "symmetry") && opts.Strategy == explorer.BFS && !opts.NoProgress {
		// The configuration declares the symmetry that leaves progress
		// unchecked (model.Config.Options): a partial row is what it
		// expects of a correct variant.
		row.Match = true
	}
	// A search that stopped at a limit, or could not check what the
	// expectation is about, neither matches nor contradicts it.
	row.Incomplete = !row.Match && (r.Verdict == explorer.Bounded || expectsUnchecked ||
		r.Verdict == explorer.Partial && expect == model.ExpectOK)
	row.Seconds = time.Since(start).Seconds()
	return row, nil
}

// verifyClaim explores the claim's two variants exhaustively with exact
// metrics and lets the claim judge them (explorer.CheckClaim).
func (c *command) verifyClaim(p *model.Protocol, cl model.Claim, opts explorer.Options) (claimRow, error) {
	row := claimRow{Protocol: p.Name, Claim: cl.Name, Text: cl.Text, Metric: cl.Metric, A: cl.A, B: cl.B}
	opts.Stop = c.stop
	res, err := explorer.CheckClaim(p, cl, cl.A, cl.B, opts)
	if err != nil {
		return row, err
	}
	row.Params, row.Match, row.Found = res.Params, res.Holds, res.Found
	return row, nil
}
