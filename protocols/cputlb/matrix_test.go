package cputlb

import (
	"flag"
	"fmt"
	"slices"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/explorer/claimtest"
	"github.com/protocheck/protocheck/model"
)

var runMatrix = flag.Bool("matrix", false, "explore the heavy configurations: the default size of the correct variants and the verification matrix (about 10 s on two cores)")

// TestMatrixDeclared checks the matrix as data: each configuration
// resolves, says why, names known variants and properties, and together
// they make each mechanism happen at least twice.
func TestMatrixDeclared(t *testing.T) {
	props := map[string]bool{model.ExpectOK: true, NoStaleTranslation: true, WorkOnce: true, DirtyTracking: true,
		DispatchCoherent: true, DispatchLive: true, TLBOwnerOnly: true, model.Deadlock: true}
	seen := map[string]bool{}
	for i, c := range append([]model.Config{{Why: "the default"}}, Protocol.Matrix...) {
		p, err := Protocol.Resolve(c.Params)
		if err != nil {
			t.Errorf("config %d: %v", i, err)
			continue
		}
		if c.Why == "" {
			t.Errorf("config %d (%v) does not say why", i, c.Params)
		}
		if _, err := newMachine(Protocol.Variants[0].Name, p); err != nil {
			t.Errorf("config %d: %v", i, err)
		}
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
		if p["migration"] >= 2 {
			seen["two dirty syncs"] = true
		}
		if p["migration"] >= 1 && p["commit"] >= 1 {
			seen["a tlb_reset_dirty beside a flush of every TLB"] = true
		}
		if p["commit"] >= 1 || p["sources"] >= 2 {
			seen["two flushes of one TLB"] = true
		}
		if p["sources"] >= 2 {
			seen["two sources"] = true
		}
		if p["cpus"]-p["sources"] >= 2 {
			seen["two targets"] = true
		}
		if p["migration"] >= 1 && p["commit"] == 0 || p["migration"] == 0 && p["commit"] >= 1 {
			seen["one foreign path alone"] = true
		}
		if p["rcu"] == 1 {
			seen["the old map freed through RCU"] = true
		}
		if p["vcpu-commit"] == 1 {
			seen["a commit from a vCPU's own write"] = true
		}
		if p["iommu"] == 1 {
			seen["the IOMMU notifier"] = true
		}
	}
	for _, mech := range []string{"two dirty syncs", "a tlb_reset_dirty beside a flush of every TLB", "two flushes of one TLB", "two sources", "two targets",
		"one foreign path alone", "the old map freed through RCU", "a commit from a vCPU's own write", "the IOMMU notifier"} {
		if !seen[mech] {
			t.Errorf("no configuration with %s", mech)
		}
	}
}

// TestMatrix runs the whole matrix: every variant at every configuration,
// exhaustive bfs, against its expected verdict. It explores about 40
// million states, so it runs only with -matrix; the configurations are
// checked as data by TestMatrixDeclared, and check verify runs them too.
func TestMatrix(t *testing.T) {
	if !*runMatrix {
		t.Skip("the verification matrix runs with -matrix (minutes)")
	}
	for _, c := range Protocol.Matrix {
		for _, v := range Protocol.Variants {
			if !c.Covers(v.Name) {
				continue
			}
			t.Run(fmt.Sprintf("%s/%v", v.Name, c.Params), func(t *testing.T) {
				r := bfs(t, v.Name, c.Params)
				found := model.ExpectOK
				if r.Violation != nil {
					found = r.Violation.Property
				}
				want, also := c.Expected(v)
				if r.Verdict == explorer.Bounded || found != want && !slices.Contains(also, found) {
					t.Errorf("got %s, want %s (or %v)", r, want, also)
				}
				if r.Verdict == explorer.OK && len(r.Unchecked) > 0 {
					t.Errorf("ok, but unchecked: %v", r.Unchecked)
				}
				t.Logf("%s: %d states, %d transitions, trace %d", found, r.Stats.States, r.Stats.Transitions, len(r.Schedule))
			})
		}
	}
}

// TestClaims checks each of the protocol's claims as verification does.
func TestClaims(t *testing.T) { claimtest.Hold(t, Protocol, nil) }

// TestClaimsNeedTheSeed deletes the seed's change: with the BQL-taking
// variant in the place of the seed's, every claim fails. A change that
// made the seed's flush jobs take the BQL again would fail verification.
func TestClaimsNeedTheSeed(t *testing.T) {
	claimtest.NeedVariant(t, Protocol, func(c model.Claim) string { return c.B })
}
