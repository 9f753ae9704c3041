// Package claimtest checks a protocol's performance claims from its own
// tests exactly as check verify does (explorer.CheckClaim), so that every
// protocol package asserts its claims, and their dependence on the
// optimisation they are about, in one way.
package claimtest

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// Judge explores variants a and b at the claim's configuration and
// returns the claim's answer; t fails at once when the claim cannot be
// judged (a variant not clean, no complete execution, a claim that does
// not fit its protocol).
func Judge(t testing.TB, p *model.Protocol, c model.Claim, a, b string) (bool, string) {
	t.Helper()
	res, err := explorer.CheckClaim(p, c, a, b, explorer.Options{})
	if err != nil || !res.Judged {
		t.Fatalf("claim %s with %s and %s: %v %s", c.Name, a, b, err, res.Found)
	}
	return res.Holds, res.Found
}

// Hold checks that p declares claims and that every one of them for
// which skip is false (skip may be nil) holds, each in a subtest.
func Hold(t *testing.T, p *model.Protocol, skip func(model.Claim) bool) {
	if len(p.Claims) == 0 {
		t.Fatal("no claims")
	}
	for _, c := range p.Claims {
		if skip != nil && skip(c) {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			ok, found := Judge(t, p, c, c.A, c.B)
			if !ok {
				t.Errorf("claim %s does not hold: %s", c.Name, found)
			}
			t.Logf("%s: %s", c.Name, found)
		})
	}
}

// NeedVariant checks that every claim fails once variant without stands
// in A's place: the variant without the optimisation the claims are about.
func NeedVariant(t *testing.T, p *model.Protocol, without func(model.Claim) string) {
	for _, c := range p.Claims {
		if ok, found := Judge(t, p, c, without(c), c.B); ok {
			t.Errorf("claim %s still holds with %s in %s's place: %s", c.Name, without(c), c.A, found)
		}
	}
}
