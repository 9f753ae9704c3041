package cli

import (
	"fmt"
	"text/tabwriter"
)

type listedProtocol struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Source      string      `json:"source"`
	Variants    interface{} `json:"variants"`
	Params      interface{} `json:"params"`
}

func (c *command) list(args []string) (int, error) {
	stdout := c.stdout
	fs := c.newFlags("list", "list [--json]")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) > 0 {
		return 0, usagef("list takes no arguments, got %q", pos)
	}
	if *asJSON {
		var out []listedProtocol
		for _, p := range c.reg.Protocols {
			out = append(out, listedProtocol{p.Name, p.Description, p.Source, p.Variants, p.Params})
		}
		return ExitOK, writeJSON(stdout, out)
	}
	for i, p := range c.reg.Protocols {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "%s — %s\n", p.Name, p.Description)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  variant\texpect\tdescription")
		for _, v := range p.Variants {
			fmt.Fprintf(tw, "  %s/%s\t%s\t%s\n", p.Name, v.Name, v.Expect, v.Description)
		}
		tw.Flush()
		if len(p.Params) == 0 {
			continue
		}
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  parameter\tdefault\trange\tdescription")
		for _, q := range p.Params {
			fmt.Fprintf(tw, "  %s\t%d\t%d..%d\t%s\n", q.Name, q.Default, q.Min, q.Max, q.Description)
		}
		tw.Flush()
	}
	return ExitOK, nil
}

func (c *command) explain(args []string) (int, error) {
	stdout := c.stdout
	fs := c.newFlags("explain", "explain PROTOCOL/VARIANT")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 1 {
		return 0, usagef("explain takes one PROTOCOL/VARIANT")
	}
	p, v, err := c.reg.Parse(pos[0])
	if err != nil {
		return 0, usageError{err}
	}
	fmt.Fprintf(stdout, "%s/%s\n", p.Name, v.Name)
	fmt.Fprintf(stdout, "  protocol: %s\n", p.Description)
	fmt.Fprintf(stdout, "  change:   %s\n", v.Description)
	fmt.Fprintf(stdout, "  source:   %s\n", v.Source)
	if v.Expect == "ok" {
		fmt.Fprintf(stdout, "  expected: correct (no property fails)\n")
	} else {
		fmt.Fprintf(stdout, "  expected: violates %s\n", v.Expect)
	}
	for _, also := range v.AlsoViolates {
		fmt.Fprintf(stdout, "  also:     violates %s by another schedule (a search in another order may find it first)\n", also)
	}
	fmt.Fprintf(stdout, "  try:      check explore %s/%s\n", p.Name, v.Name)
	return ExitOK, nil
}
