package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
)

// An interruption during the claims leaves every row checked: the rows'
// count is the plain one, the claim being checked is marked interrupted
// (not "DOES NOT HOLD"), and the claims' count says how many were checked
// before it and how many were not.
func TestVerifyInterruptedInTheClaims(t *testing.T) {
	doc := verifyDoc{
		Variants: []verifyRow{
			{Protocol: "p", Variant: "a", Expected: "ok", Found: "ok", Match: true},
			{Protocol: "p", Variant: "b", Expected: "x", Found: "x", Match: true},
		},
		Claims: []claimRow{
			{Protocol: "p", Claim: "c1", Found: "1 < 2", Match: true},
			{Protocol: "p", Claim: "c2", Found: string(explorer.Interrupted)},
		},
	}
	var out bytes.Buffer
	printVerify(&out, doc, false, true, 2, 5)
	got := out.String()
	for _, want := range []string{
		"2 of 2 variant configurations match their expected verdict",
		"interrupted: 1 of the 1 claims checked before it hold; 4 of 5 not checked",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "DOES NOT HOLD") || strings.Contains(got, "rows checked before it") {
		t.Errorf("an interrupted claim reported as failed, or the rows as cut:\n%s", got)
	}
	if !strings.Contains(got, "p/c2") || !strings.Contains(got[strings.Index(got, "p/c2"):], "interrupted\n") {
		t.Errorf("the interrupted claim is not marked interrupted:\n%s", got)
	}
}
