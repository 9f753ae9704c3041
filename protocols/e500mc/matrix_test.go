package e500mc

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/claimtest"
	"github.com/protocheck/protocheck/model"
)

// configOptions turns a matrix configuration's Options into explorer
// options for a bfs.
func configOptions(t *testing.T, c model.Config) explorer.Options {
	t.Helper()
	opts := explorer.Options{Strategy: explorer.BFS, Workers: 2, MaxStates: 100_000_000}
	for _, o := range c.Options {
		switch o {
		case "symmetry":
			opts.Symmetry = true
		case "fingerprint":
			opts.Fingerprint = true
		default:
			t.Fatalf("unknown option %q", o)
		}
	}
	return opts
}

// TestClaims checks each of the protocol's claims as verification does.
func TestClaims(t *testing.T) { claimtest.Hold(t, Protocol, nil) }

// TestClaimsNeedTheOptimisation deletes the seed's optimisation, the
// per-LPID index of the last-vCPU check: with per-cpu (the same code
// without it) in per-lpid's place, every claim fails. A change that made
// per-lpid flush like per-cpu would fail verification.
func TestClaimsNeedTheOptimisation(t *testing.T) {
	claimtest.NeedVariant(t, Protocol, func(c model.Claim) string { return "per-cpu" })
}

// TestMatrixDeclared checks the matrix as data: each configuration
// resolves, names known variants, properties and options, and together
// they make each mechanism happen at least twice.
func TestMatrixDeclared(t *testing.T) {
	props := map[string]bool{model.ExpectOK: true, NoPollution: true, VMIsolation: true, HostMemorySafety: true}
	seen := map[string]bool{}
	for i, c := range Protocol.Matrix {
		p, err := Protocol.Resolve(c.Params)
		if err != nil {
			t.Errorf("config %d: %v", i, err)
			continue
		}
		if c.Why == "" {
			t.Errorf("config %d (%v) does not say why", i, c.Params)
		}
		configOptions(t, c)
		for _, v := range c.Variants {
			if _, err := Protocol.Variant(v); err != nil {
				t.Errorf("config %d: %v", i, err)
			}
		}
		for v, e := range c.Expect {
			if _, err := Protocol.Variant(v); err != nil || !props[e] {
				t.Errorf("config %d: expectation %s=%s: variant or property unknown", i, v, e)
			}
		}
		if p["unbounded-loads"] == 1 {
			seen["unbounded loads"] = true
		}
		if p["unbounded-loads"] == 1 || p["loads"] >= 2*p["cpus"] {
			seen["two load/put cycles per CPU"] = true
		}
		if p["unmaps"] >= 2 {
			seen["two host flushes"] = true
		}
		if p["cycles"] >= 2 {
			seen["LPID and slot reused twice"] = true
		}
		if p["ops"] >= 3 {
			seen["three guest operations"] = true
		}
	}
	for _, mech := range []string{"unbounded loads", "two load/put cycles per CPU", "two host flushes", "LPID and slot reused twice", "three guest operations"} {
		if !seen[mech] {
			t.Errorf("no configuration with %s", mech)
		}
	}
}

// TestMatrix runs the whole matrix: every variant at every configuration,
// bfs with the configuration's options, against its expected verdict. It
// explores about 40 million states (minutes on two cores), so it runs only
// when E500MC_MATRIX=1; the configurations themselves are checked as data
// by TestMatrixDeclared, and check verify runs them too.
func TestMatrix(t *testing.T) {
	if os.Getenv("E500MC_MATRIX") != "1" {
		t.Skip("set E500MC_MATRIX=1 to run the verification matrix (minutes)")
	}
	for _, c := range Protocol.Matrix {
		for _, v := range Protocol.Variants {
			if !c.Covers(v.Name) {
				continue
			}
			t.Run(fmt.Sprintf("%s/%v", v.Name, c.Params), func(t *testing.T) {
				opts := configOptions(t, c)
				opts.Clock = time.Now
				r := explore(t, machineFor(t, v.Name, c.Params), opts)
				found := model.ExpectOK
				if r.Violation != nil {
					found = r.Violation.Property
				}
				want, also := c.Expected(v)
				if r.Verdict == explorer.Bounded || found != want && !slices.Contains(also, found) {
					t.Errorf("got %s, want %s (or %v)", r, want, also)
				}
				t.Logf("%s: %d states, %d transitions, %s, %v", found, r.Stats.States, r.Stats.Transitions, steps(r), r.Stats.Elapsed.Round(time.Millisecond))
			})
		}
	}
}

func steps(r *explorer.Result) string {
	if r.Violation == nil {
		return "exhaustive"
	}
	return fmt.Sprintf("%d steps", len(r.Schedule))
}
