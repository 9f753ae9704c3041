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
// Times depend on the machine; the counts do not.
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
	var results []result
	if !*asJSON {
		fmt.Fprintf(stdout, "machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	}
	code := ExitOK
	for _, tg := range targets {
		m, params, err := tg.p.Instantiate(tg.v, given)
		if err != nil {
			return 0, usageError{err}
		}
		configs := explorer.BenchConfigs(m)
		if n := runtime.NumCPU(); n > 2 {
			configs = append(configs, explorer.BenchConfig{Name: fmt.Sprintf("bfs workers=%d", n), Options: explorer.Options{Strategy: explorer.BFS, Workers: n}})
		}
		if *only != "" {
			if configs, err = selectConfigs(configs, *only); err != nil {
				return 0, usageError{err}
			}
		}
		for i := range configs {
			configs[i].Options.Stop = c.stop
		}
		rows, err := explorer.Bench(m, configs, time.Now)
		if err != nil {
			return 0, err
		}
		results = append(results, result{tg.p.Name, tg.v, params, rows})
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

// selectConfigs keeps the configurations named in list (comma-separated),
// in the order given.
func selectConfigs(all []explorer.BenchConfig, list string) ([]explorer.BenchConfig, error) {
	var out []explorer.BenchConfig
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
next:
	for _, want := range strings.Split(list, ",") {
		want = strings.TrimSpace(want)
		for _, c := range all {
			if c.Name == want {
				out = append(out, c)
				continue next
			}
		}
		return nil, fmt.Errorf("--config: no configuration %q (there are: %s)", want, strings.Join(names, ", "))
	}
	return out, nil
}
