package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/protocheck/protocheck/model"
)

type listedProtocol struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Source      string      `json:"source"`
	Variants    interface{} `json:"variants"`
	Params      interface{} `json:"params"`
	Properties  properties  `json:"properties"`
	Metrics     []string    `json:"metrics"`
	Claims      []string    `json:"claims"`
}

// properties are what a protocol's variants are checked for.
type properties struct {
	Invariants []string `json:"invariants"`
	// Assertions are the properties the steps assert (those that are not
	// invariants too).
	Assertions      []string `json:"assertions"`
	Progress        []string `json:"progress"`
	Deadlock        bool     `json:"deadlock"`
	Linearizability bool     `json:"linearizability"`
}

// describeProperties reads a protocol's properties and metrics off its
// first variant's machine at the default size (every variant of a
// protocol is checked for the same ones).
func describeProperties(p *model.Protocol) (properties, []string, error) {
	out := properties{Invariants: []string{}, Assertions: []string{}, Progress: []string{}, Deadlock: true}
	if len(p.Variants) == 0 {
		return out, []string{}, nil
	}
	m, _, err := p.Instantiate(p.Variants[0].Name, nil)
	if err != nil {
		return out, nil, err
	}
	props := m.Properties()
	for _, inv := range props.Invariants {
		out.Invariants = append(out.Invariants, inv.Name)
	}
	out.Assertions = append(out.Assertions, props.StepAssertions()...)
	for _, pr := range props.Progress {
		out.Progress = append(out.Progress, pr.Name)
	}
	out.Linearizability = props.Spec != nil
	return out, append([]string{}, props.Metrics...), nil
}

func (c *command) list(args []string) (int, error) {
	stdout := c.stdout
	fs := c.newFlags("list", "list [--json] [PROTOCOL...]")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	// The protocols named, in the order given; all of them by default.
	protos := c.reg.Protocols
	if len(pos) > 0 {
		protos = nil
		for _, name := range pos {
			p, err := c.reg.Lookup(name)
			if err != nil {
				return 0, usageError{err}
			}
			protos = append(protos, p)
		}
	}
	var out []listedProtocol
	for _, p := range protos {
		props, metrics, err := describeProperties(p)
		if err != nil {
			return 0, err
		}
		claims := []string{}
		for _, cl := range p.Claims {
			claims = append(claims, cl.Name)
		}
		out = append(out, listedProtocol{p.Name, p.Description, p.Source, p.Variants, p.Params, props, metrics, claims})
	}
	if *asJSON {
		return ExitOK, writeJSON(stdout, out)
	}
	for i, p := range protos {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "%s — %s\n", p.Name, p.Description)
		lp := out[i].Properties
		checks := append(append([]string{}, lp.Invariants...), lp.Assertions...)
		checks = append(checks, model.Deadlock)
		if lp.Linearizability {
			checks = append(checks, model.Linearizability)
		}
		fmt.Fprintf(stdout, "  safety:   %s\n", strings.Join(checks, ", "))
		if len(lp.Progress) > 0 {
			fmt.Fprintf(stdout, "  progress: %s (under weak fairness)\n", strings.Join(lp.Progress, ", "))
		}
		if len(out[i].Metrics) > 0 {
			fmt.Fprintf(stdout, "  metrics:  %s\n", strings.Join(out[i].Metrics, ", "))
		}
		if len(out[i].Claims) > 0 {
			fmt.Fprintf(stdout, "  claims:   %s\n", strings.Join(out[i].Claims, ", "))
		}
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
	if len(v.Fixed) > 0 {
		fmt.Fprintf(stdout, "  fixed:    %s (the variant is defined with these; another value is refused)\n", v.Fixed)
	}
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
