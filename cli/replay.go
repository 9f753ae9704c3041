package cli

import (
	"fmt"
	"io"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces"
)

// load reads a trace file and replays it strictly; every failure is an
// input error (exit 2) that says what is wrong and where.
func (c *command) load(path string) (*traces.Replayed, error) {
	t, err := traces.Load(path)
	if err != nil {
		return nil, usageError{err}
	}
	p, err := c.traceProtocol(t)
	if err != nil {
		return nil, usageError{fmt.Errorf("%s: %w", clip(path), err)}
	}
	r, err := traces.Replay(p, t)
	if err != nil {
		return nil, usageError{fmt.Errorf("%s: %w", clip(path), err)}
	}
	return r, nil
}

// traceProtocol is the protocol a trace was found with: the registry's,
// with the properties the trace names left out.
func (c *command) traceProtocol(t *traces.Trace) (*model.Protocol, error) {
	p, err := c.reg.Lookup(t.Protocol)
	if err != nil {
		return nil, err
	}
	return p.Without(t.Without...), nil
}

type replayDoc struct {
	Protocol  string        `json:"protocol"`
	Variant   string        `json:"variant"`
	Params    any           `json:"params"`
	Verdict   string        `json:"verdict"`
	Violation any           `json:"violation"`
	Trace     *traces.Trace `json:"trace"`
	Metrics   []metricTotal `json:"metrics"`
}

type metricTotal struct {
	Name  string `json:"name"`
	Total int64  `json:"total"`
}

func (c *command) replay(args []string) (int, error) {
	stdout := c.stdout
	fs := c.newFlags("replay", "replay [--json] [--html FILE.html] [--full] FILE")
	asJSON := fs.Bool("json", false, "print JSON")
	html := fs.String("html", "", "also write a self-contained HTML view of the trace to this file")
	impl := fs.Bool("impl", false, "drive the real implementation through the trace instead of the model")
	full := fs.Bool("full", false, "show every step and every changed variable (default: a summary that fits on a screen)")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 1 {
		return 0, usagef("replay takes one trace FILE")
	}
	set := flagsSet(fs)
	if *impl {
		if err := unused(set, "with --impl (it prints the code's steps and whether the violation reproduces)", "json", "html", "full"); err != nil {
			return 0, err
		}
		return c.replayImpl(pos[0], stdout)
	}
	if *asJSON {
		if err := unused(set, "with --json (the trace is in the document, every step of it)", "full"); err != nil {
			return 0, err
		}
	}
	if err := checkWritable("html", *html); err != nil {
		return 0, err
	}
	r, err := c.load(pos[0])
	if err != nil {
		return 0, err
	}
	code := ExitOK
	verdict := "no violation"
	if r.Execution.Violation != nil {
		code, verdict = ExitViolation, "violation"
	}
	if *asJSON {
		d := replayDoc{Protocol: r.Trace.Protocol, Variant: r.Trace.Variant, Params: r.Trace.Params, Verdict: verdict, Violation: r.Execution.Violation, Trace: r.Trace}
		for i, name := range r.Machine.Properties().Metrics {
			d.Metrics = append(d.Metrics, metricTotal{name, r.Execution.Totals[i]})
		}
		if err := writeJSON(stdout, d); err != nil {
			return 0, err
		}
	} else if err := render(stdout, r, *full); err != nil {
		return 0, err
	}
	if *html != "" {
		if err := writeHTML(*html, r); err != nil {
			return 0, outputError("html", *html, err)
		}
	}
	return code, nil
}

func (c *command) minimize(args []string) (int, error) {
	stdout := c.stdout
	fs := c.newFlags("minimize", "minimize [--out FILE] FILE")
	out := fs.String("out", "", "write the minimized trace here (default: print it as JSON on stdout)")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 1 {
		return 0, usagef("minimize takes one trace FILE")
	}
	if err := checkWritable("out", *out); err != nil {
		return 0, err
	}
	r, err := c.load(pos[0])
	if err != nil {
		return 0, err
	}
	if r.Execution.Violation == nil {
		return 0, usagef("%s: the trace ends in no violation, so there is nothing to minimize", pos[0])
	}
	p, _ := c.traceProtocol(r.Trace)
	m, err := traces.Minimize(p, r.Trace)
	if err != nil {
		return 0, err
	}
	if *out == "" {
		b, err := traces.Encode(m)
		if err != nil {
			return 0, err
		}
		_, err = stdout.Write(b)
		return ExitViolation, err
	}
	if err := traces.Save(*out, m); err != nil {
		return 0, outputError("out", *out, err)
	}
	fmt.Fprintf(stdout, "minimized %d steps to %d; written to %s\n\n", len(r.Trace.Schedule), len(m.Schedule), *out)
	rep, err := traces.Replay(p, m)
	if err != nil {
		return 0, err
	}
	return ExitViolation, render(stdout, rep, false)
}

// render writes the text view: every step and change with full, otherwise
// the summary that fits in traces.DefaultLines lines.
func render(w io.Writer, r *traces.Replayed, full bool) error {
	if full {
		return traces.Render(w, r)
	}
	return traces.RenderSummary(w, r, traces.DefaultLines)
}
