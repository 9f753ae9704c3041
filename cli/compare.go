package cli

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/protocheck/protocheck/explorer"
)

func (c *command) compare(args []string) (int, error) {
	stdout, stderr := c.stdout, c.stderr
	fs := c.newFlags("compare", "compare [flags] PROTOCOL VARIANT_A VARIANT_B [key=value ...]")
	var ef exploreFlags
	ef.register(fs)
	fs.Lookup("metrics").Usage = "refused: compare always summarises every metric exactly (bfs)"
	metric := fs.String("metric", "", "show only this metric")
	asJSON := fs.Bool("json", false, "print one JSON document: each variant's explore --json document")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) < 3 {
		return 0, usagef("compare needs PROTOCOL VARIANT_A VARIANT_B")
	}
	p, err := c.reg.Lookup(pos[0])
	if err != nil {
		return 0, usageError{err}
	}
	given, err := parseParams(pos[3:])
	if err != nil {
		return 0, err
	}
	if err := ef.check(fs); err != nil {
		return 0, err
	}
	if ef.set["metrics"] {
		return 0, usagef("--metrics does nothing with compare, which always computes the metrics exactly (bfs)")
	}
	opts, err := ef.options(stderr)
	if err != nil {
		return 0, err
	}
	if opts.Strategy == explorer.BFS {
		opts.Metrics = true // the point of compare: exact per-execution metrics
	}
	// Check the variants and the metric before two explorations run.
	var known []string
	for _, v := range pos[1:3] {
		m, _, err := p.Instantiate(v, given)
		if err != nil {
			return 0, usageError{err}
		}
		known = m.Properties().Metrics
	}
	if *metric != "" && !slices.Contains(known, *metric) {
		return 0, usagef("protocol %s has no metric %q (metrics: %v)", p.Name, clip(*metric), known)
	}
	var outs [2]*outcome
	for i, v := range pos[1:3] {
		if outs[i], err = c.exploreVariant(p, v, given, opts); err != nil {
			return 0, err
		}
	}
	if *asJSON {
		doc := struct {
			Protocol string     `json:"protocol"`
			Metric   string     `json:"metric,omitempty"`
			Variants []document `json:"variants"`
		}{Protocol: p.Name, Metric: *metric}
		for _, o := range outs {
			d := o.document(false)
			if *metric != "" {
				d.Metrics = slices.DeleteFunc(d.Metrics, func(m metricDoc) bool { return m.Name != *metric })
			}
			doc.Variants = append(doc.Variants, d)
		}
		if err := writeJSON(stdout, doc); err != nil {
			return 0, err
		}
		return compareExit(outs), nil
	}
	fmt.Fprintf(stdout, "%s: %s vs %s  %s  strategy %s\n", p.Name, pos[1], pos[2], outs[0].params, outs[0].result.Strategy)
	for _, o := range outs {
		r := o.result
		found := string(r.Verdict)
		if r.Violation != nil {
			found = "violation of " + r.Violation.Property
		}
		fmt.Fprintf(stdout, "  %s: %s, %d states, %d transitions\n", o.variant, found, r.Stats.States, r.Stats.Transitions)
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "metric\tvariant\texecutions\tmin\tmax\tmean\tall transitions\t\n")
	for k, m := range outs[0].result.Metrics {
		if *metric != "" && m.Name != *metric {
			continue
		}
		for _, o := range outs {
			mm := o.result.Metrics[k]
			if mm.Executions == 0 || mm.Name != m.Name {
				fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t%d\t\n", mm.Name, o.variant, mm.Transitions)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.3f\t%d\t\n", mm.Name, o.variant, formatCount(mm.Executions), mm.Min, mm.Max, mm.Mean, mm.Transitions)
		}
	}
	tw.Flush()
	for _, o := range outs {
		switch o.result.Verdict {
		case explorer.Violation:
			fmt.Fprintf(stdout, "\nnote: %s violates %s; its executions stop at the first violation, so its metrics cover only the explored part.\n", o.variant, o.result.Violation.Property)
		case explorer.Interrupted:
			fmt.Fprintf(stdout, "\nnote: %s was interrupted; its metrics cover only the explored part.\n", o.variant)
		case explorer.Bounded:
			if explorer.Exhaustive(o.result.Strategy) {
				fmt.Fprintf(stdout, "\nnote: %s: the search stopped before it was exhaustive (%s); not explored: %s. Its metrics cover only the explored part.\n", o.variant, o.result.Bound, notExplored(o.result))
			}
		case explorer.Partial:
			fmt.Fprintf(stdout, "\nnote: %s: every state explored, but not checked: %s.\n", o.variant, strings.Join(o.result.Unchecked, "; "))
		}
	}
	return compareExit(outs), nil
}

// compareExit is compare's exit status: a violation in either variant wins
// over an interruption, which wins over a search that did not finish
// (bounded or partial), as in explore.
func compareExit(outs [2]*outcome) int {
	code := ExitOK
	for _, o := range outs {
		code = worse(code, o.exitCode())
	}
	return code
}

// worse is the exit status of two results together: a violation (1) wins
// over an interruption (130), which wins over a search that did not
// finish (3), which wins over a clean one (0).
func worse(a, b int) int {
	rank := func(c int) int {
		switch c {
		case ExitViolation:
			return 3
		case ExitOK:
			return 0
		case ExitIncomplete:
			return 1
		}
		return 2 // interrupted, whatever the signal
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}
