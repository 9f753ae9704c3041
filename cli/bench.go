package cli

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// bench explores the correct variants of the named protocols (all when
// none) with every configuration of the explorer — bfs with 1 and N
// workers, fingerprints, dfs with and without reduction — and prints
// states, transitions, seconds, states per second and bytes per state.
// Times depend on the machine; the counts do not. Timing is what bench is
// for, so its stdout, unlike every other command's, holds wall-clock
// figures. It exits 1 when a variant named violates a property, and 3
// when a search was cut short by a limit (the verdict bounded).
func (c *command) bench(args []string) (int, error) {
	stdout := c.stdout
	fs := c.newFlags("bench", "bench [--json] [--config NAME,...] [PROTOCOL[/VARIANT] ...] [key=value ...]")
	asJSON := fs.Bool("json", false, "print JSON")
	only := fs.String("config", "", "run only these configurations, by the names the table prints, comma-separated (\"bfs,bfs workers=2\")")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	var names []string
	var kv []string
	for _, a := range pos {
		if strings.ContainsRune(a, '=') {
			kv = append(kv, a)
		} else {
			names = append(names, a)
		}
	}
	given, err := parseParams(kv)
	if err != nil {
		return 0, err
	}
	type target struct {
		p *model.Protocol
		v string
	}
	var targets []target
	add := func(p *model.Protocol, only string) {
		for _, v := range p.Variants {
			if (only == "" && v.Expect == model.ExpectOK) || v.Name == only {
				targets = append(targets, target{p, v.Name})
			}
		}
	}
	for _, n := range names {
		if strings.Contains(n, "/") {
			p, v, err := c.reg.Parse(n)
			if err != nil {
				return 0, usageError{err}
			}
			add(p, v.Name)
			continue
		}
		p, err := c.reg.Lookup(n)
		if err != nil {
			return 0, usageError{err}
		}
		add(p, "")
	}
	if len(names) == 0 {
		for _, p := range c.reg.Protocols {
			add(p, "")
		}
	}
	type result struct {
		Protocol string              `json:"protocol"`
		Variant  string              `json:"variant"`
		Params   model.Params        `json:"params"`
		Rows     []explorer.BenchRow `json:"rows"`
	}
	// Every target is instantiated, and the configurations named are
	// checked against them all, before anything runs: a name that no
	// target has is a usage error, not the end of a half-done run.
	type planned struct {
		target
		m       model.Machine
		params  model.Params
		configs []explorer.BenchConfig
	}
	var plan []planned
	known := map[string]bool{}
	var configNames []string
	for _, tg := range targets {
		m, params, err := tg.p.Instantiate(tg.v, given)
		if err != nil {
			return 0, usageError{err}
		}
		configs := explorer.BenchConfigs(m)
		if n := runtime.NumCPU(); n > 2 {
			configs = append(configs, explorer.BenchConfig{Name: fmt.Sprintf("bfs workers=%d", n), Options: explorer.Options{Strategy: explorer.BFS, Workers: n}})
		}
		for _, c := range configs {
			if !known[c.Name] {
				known[c.Name] = true
				configNames = append(configNames, c.Name)
			}
		}
		plan = append(plan, planned{tg, m, params, configs})
	}
	if *only != "" {
		var want []string
		for _, n := range strings.Split(*only, ",") {
			n = strings.TrimSpace(n)
			if !known[n] {
				return 0, usageError{fmt.Errorf("--config: no configuration %q (there are: %s)", clip(n), strings.Join(configNames, ", "))}
			}
			want = append(want, n)
		}
		for i := range plan {
			plan[i].configs = selectConfigs(plan[i].configs, want)
		}
	}
	var results []result
	if !*asJSON {
		fmt.Fprintf(stdout, "machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	}
	code := ExitOK
	for _, pl := range plan {
		tg, m, params, configs := pl.target, pl.m, pl.params, pl.configs
		if len(configs) == 0 {
			// None of the configurations named applies to this machine
			// (symmetry needs a model that declares it).
			if !*asJSON {
				fmt.Fprintf(stdout, "\n%s\nnone of the configurations named applies\n", describeTarget(tg.p.Name, tg.v, params))
			}
			results = append(results, result{tg.p.Name, tg.v, params, []explorer.BenchRow{}})
			continue
		}
		for i := range configs {
			configs[i].Options.Stop = c.stop
		}
		rows, err := explorer.Bench(m, configs, time.Now)
		if err != nil {
			return 0, err
		}
		results = append(results, result{tg.p.Name, tg.v, params, rows})
		for i, r := range rows {
			// A variant named on the command line may be a buggy one: its
			// rows time a search that stopped at a counterexample, and the
			// exit status says a violation was found, as explore's does.
			// A search cut short by a limit (bounded) exits 3 as explore's
			// does; a partial row does not: bench's dfs and symmetry
			// configurations never check progress, by design, and the
			// verdict column says so.
			switch {
			case r.Verdict == explorer.Violation:
				code = worse(code, ExitViolation)
			case r.Verdict == explorer.Bounded && explorer.Exhaustive(configs[i].Options.Strategy):
				code = worse(code, ExitIncomplete)
			}
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "\n%s\n%s", describeTarget(tg.p.Name, tg.v, params), explorer.FormatBench(rows))
		}
		if c.interrupted() {
			// The rows explored when the signal came say "interrupted".
			code = ExitInterrupted
			break
		}
	}
	if *asJSON {
		return code, writeJSON(stdout, results)
	}
	return code, nil
}

// selectConfigs keeps the configurations of all that are named in want,
// in the order of want; a name all lacks is left out.
func selectConfigs(all []explorer.BenchConfig, want []string) []explorer.BenchConfig {
	var out []explorer.BenchConfig
	for _, w := range want {
		for _, c := range all {
			if c.Name == w {
				out = append(out, c)
			}
		}
	}
	return out
}
