package batchunmap

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

// TestClaims checks each of the protocol's claims as verification does.
func TestClaims(t *testing.T) { claimtest.Hold(t, Protocol, nil) }

// TestClaimsNeedTheOptimisation deletes the seed's optimisation, the
// deferred flush: with immediate (the same code flushing each PTE) in
// generation's place, every claim fails. A change that made generation
// flush each PTE would fail verification.
func TestClaimsNeedTheOptimisation(t *testing.T) {
	claimtest.NeedVariant(t, Protocol, func(c model.Claim) string { return Immediate })
}

// TestMatrixDeclared checks the matrix as data: each configuration
// resolves and builds for every variant it covers, names known variants
// and properties, and together the configurations make each mechanism
// happen at least twice.
func TestMatrixDeclared(t *testing.T) {
	props := map[string]bool{model.ExpectOK: true, NoUseAfterFree: true, NoLostWrite: true, SyscallPostcondition: true, FlushBeforeFree: true, CounterSound: true}
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
		if len(c.Options) != 0 {
			t.Errorf("config %d: options %v (the model has no symmetry reduction)", i, c.Options)
		}
		for _, v := range c.Variants {
			if _, err := Protocol.Variant(v); err != nil {
				t.Errorf("config %d: %v", i, err)
			}
		}
		for v, e := range c.Expect {
			if _, err := Protocol.Variant(v); err != nil || !props[e] || !c.Covers(v) {
				t.Errorf("config %d: expectation %s=%s: variant or property unknown, or not covered", i, v, e)
			}
		}
		for _, v := range Protocol.Variants {
			if !c.Covers(v.Name) {
				continue
			}
			if _, _, err := Protocol.Instantiate(v.Name, c.Params); err != nil {
				t.Errorf("config %d: %v", i, err)
			}
		}
		if p["reclaimers"] == 2 && p["pages"] >= 3 && p["ptls"] == 2 {
			seen["a drain overlapping two deferrals under the other lock"] = true
		}
		if p["reclaimers"] == 1 && p["pages"] >= 4 {
			seen["four deferrals between drains"] = true
		}
		if p["migrations"] >= 2 {
			seen["two migrations"] = true
			if c.Covers(X86) {
				seen["two migrations on x86"] = true
			}
		}
		if p["syscall"] == 0 && p["syscalls"] == 4 {
			seen["every syscall kind"] = true
		}
		if p["users"] >= 2 && p["mms"] == 1 {
			seen["two user CPUs of one mm"] = true
		}
		if p["mms"] >= 2 {
			seen["two mms"] = true
		}
		if p["syscall"] == 7 || p["syscall"] == 8 {
			seen["mremap"] = true
		}
		if p["syscall"] == 5 || p["syscall"] == 6 {
			seen["MADV_COLD or MADV_PAGEOUT"] = true
		}
		if p["nested"] == 1 {
			seen["nested gathers"] = true
		}
		if p["memory"] == 2 && p["weaken"] == 0 && c.Covers(ARM64) {
			seen["arm64 under ARMv8 memory"] = true
		}
		if p["contend"] == 1 {
			seen["contended folios"] = true
			if c.Covers(X86) {
				seen["contended folios on x86"] = true
			}
		}
	}
	for _, mech := range []string{"a drain overlapping two deferrals under the other lock", "four deferrals between drains", "two migrations", "two migrations on x86", "every syscall kind", "two user CPUs of one mm", "two mms", "contended folios", "contended folios on x86", "nested gathers", "MADV_COLD or MADV_PAGEOUT", "mremap", "arm64 under ARMv8 memory"} {
		if !seen[mech] {
			t.Errorf("no configuration with %s", mech)
		}
	}
}

// TestMatrix runs the whole matrix: every variant at every configuration
// it covers, bfs with progress checked, against its expected verdict. It
// explores about 70 million states (a few minutes on two cores), so it
// runs only when BATCHUNMAP_MATRIX=1; the configurations themselves are
// checked as data by TestMatrixDeclared, and check verify runs them too.
func TestMatrix(t *testing.T) {
	if os.Getenv("BATCHUNMAP_MATRIX") != "1" {
		t.Skip("set BATCHUNMAP_MATRIX=1 to run the verification matrix (minutes)")
	}
	for _, c := range Protocol.Matrix {
		for _, v := range Protocol.Variants {
			if !c.Covers(v.Name) {
				continue
			}
			t.Run(fmt.Sprintf("%s/%v", v.Name, c.Params), func(t *testing.T) {
				opts := explorer.Options{Clock: time.Now}
				r, _ := explore(t, v.Name, c.Params, opts)
				found := model.ExpectOK
				if r.Violation != nil {
					found = r.Violation.Property
				}
				want, also := c.Expected(v)
				if r.Verdict == explorer.Bounded || found != want && !slices.Contains(also, found) || len(r.Unchecked) != 0 {
					t.Errorf("got %s (unchecked %v), want %s (or %v)", r, r.Unchecked, want, also)
				}
				steps := "exhaustive"
				if r.Violation != nil {
					steps = fmt.Sprintf("%d steps", len(r.Schedule))
				}
				t.Logf("%s: %d states, %d transitions, %s, %v", found, r.Stats.States, r.Stats.Transitions, steps, r.Stats.Elapsed.Round(time.Millisecond))
			})
		}
	}
}
