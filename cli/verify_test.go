package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/protocols"
)

type verifyDoc struct {
	Variants []struct {
		Protocol, Variant, Expected, Found string
		Match                              bool
		Params                             map[string]int
	}
	Claims []struct {
		Protocol, Claim, Found string
		Match                  bool
	}
}

// Every variant of every protocol at its default configuration matches its
// expectation, and every protocol's claims hold: verify --quick, as the
// README says go test runs it. (The whole matrix is check verify's, for
// minutes rather than seconds.)
func TestVerifyQuickMatchesEveryExpectation(t *testing.T) {
	if testing.Short() {
		t.Skip("explores every variant at its default size")
	}
	code, stdout, stderr := check(t, "verify", "--quick", "--json", "--progress", "none")
	if code != cli.ExitOK {
		t.Fatalf("verify --quick: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var doc verifyDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	claims := map[string]int{}
	for _, c := range doc.Claims {
		if !c.Match {
			t.Errorf("claim %s/%s does not hold: %s", c.Protocol, c.Claim, c.Found)
		}
		claims[c.Protocol]++
	}
	variants := map[string]int{}
	for _, r := range doc.Variants {
		if !r.Match {
			t.Errorf("%s/%s at %v: found %s, expected %s", r.Protocol, r.Variant, r.Params, r.Found, r.Expected)
		}
		if len(r.Params) == 0 {
			t.Errorf("%s/%s: a row without its parameters", r.Protocol, r.Variant)
		}
		variants[r.Protocol]++
	}
	for _, p := range protocols.All() {
		if variants[p.Name] != len(p.Variants) {
			t.Errorf("%s: %d rows, %d variants", p.Name, variants[p.Name], len(p.Variants))
		}
		if len(p.Claims) > 0 && claims[p.Name] != len(p.Claims) {
			t.Errorf("%s: %d claim rows, %d claims", p.Name, claims[p.Name], len(p.Claims))
		}
	}
}

// Removing a protocol's optimisation leaves every variant safe, and verify
// fails all the same: the seed's claim no longer holds. pvflush's fixed
// built as native (every target IPIed) and e500mc's per-lpid built as
// per-cpu (a flush on every load).
func TestVerifyFailsWithoutTheOptimisation(t *testing.T) {
	for _, c := range []struct{ protocol, variant, as string }{
		{"pvflush", "fixed", "native"},
		{"e500mc", "per-lpid", "per-cpu"},
	} {
		orig, err := protocols.Lookup(c.protocol)
		if err != nil {
			t.Fatal(err)
		}
		p := *orig
		p.Matrix = nil
		p.New = func(variant string, params model.Params) (model.Machine, error) {
			if variant == c.variant {
				variant = c.as
			}
			return orig.New(variant, params)
		}
		reg := &cli.Registry{Protocols: []*model.Protocol{&p}}
		var stdout, stderr strings.Builder
		code := cli.Run(reg, []string{"verify", "--quick", "--json", "--progress", "none", c.protocol}, &stdout, &stderr, nil)
		var doc verifyDoc
		if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil {
			t.Fatalf("%s: %v\n%s", c.protocol, err, stderr.String())
		}
		failed := 0
		for _, cl := range doc.Claims {
			if !cl.Match {
				failed++
			}
		}
		for _, r := range doc.Variants {
			if !r.Match {
				t.Errorf("%s/%s as %s: a verdict changed (%s), only a claim should fail", c.protocol, r.Variant, c.as, r.Found)
			}
		}
		if code != cli.ExitViolation || failed == 0 {
			t.Errorf("%s with %s built as %s: exit %d, %d claims failed; want exit 1 and a failed claim", c.protocol, c.variant, c.as, code, failed)
		}
	}
}

// dfs checks no progress property: a row expecting a violation of one is
// reported unchecked, a correct variant's row partial, never ok; neither
// is a match or a mismatch, but incomplete, and verify exits 3: no
// violation was missed, and nothing is proved.
func TestVerifyWithDFSSaysWhatItCouldNotCheck(t *testing.T) {
	code, out, _ := check(t, "verify", "exclusive", "--quick", "--strategy", "dfs", "--json")
	var doc struct {
		Variants []struct {
			Variant, Expected, Found string
			Match, Incomplete        bool
		} `json:"variants"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if code != cli.ExitIncomplete {
		t.Errorf("exit %d, want %d", code, cli.ExitIncomplete)
	}
	seen, partial := 0, 0
	for _, r := range doc.Variants {
		switch {
		case strings.HasPrefix(r.Found, "unchecked "):
			seen++
			if r.Match || !r.Incomplete || r.Found != "unchecked "+r.Expected {
				t.Errorf("%s: found %q, match %v, incomplete %v", r.Variant, r.Found, r.Match, r.Incomplete)
			}
		case r.Expected == model.ExpectOK:
			partial++
			if r.Match || !r.Incomplete || r.Found != "partial" {
				t.Errorf("%s: found %q, match %v, incomplete %v; want partial and incomplete", r.Variant, r.Found, r.Match, r.Incomplete)
			}
		default:
			if !r.Match || r.Incomplete {
				t.Errorf("%s: found %q, expected %q: a violation dfs checks must match", r.Variant, r.Found, r.Expected)
			}
		}
	}
	if seen < 2 || partial == 0 {
		t.Errorf("%d rows expecting a progress violation (want no-kick, end-signals-resume and more), %d correct variants:\n%s", seen, partial, out)
	}
}

// pairState is two interchangeable threads that each step once: a
// symmetric model with a progress property.
type pairState struct{ PC [2]uint8 }

// pairProtocol has one correct variant and a matrix configuration that
// declares symmetry, which leaves its progress property unchecked.
var pairProtocol = &model.Protocol{
	Name: "pair", Description: "two threads that each step once", Source: "cli tests",
	Variants: []model.Variant{{Name: "v", Expect: model.ExpectOK, Description: "both finish"}},
	Matrix:   []model.Config{{Why: "the same size with symmetry", Options: []string{"symmetry"}}},
	New: func(string, model.Params) (model.Machine, error) {
		return model.New(model.Def[pairState]{
			Threads: []string{"A", "B"},
			Init:    func(*pairState) {},
			Step: func(s *pairState, t int, x *model.Exec) {
				if s.PC[t] == 1 {
					x.Done()
					return
				}
				s.PC[t] = 1
				x.Labelf("%d steps", t)
			},
			Progress: []model.ProgressOf[pairState]{{Name: "both-finish", Pending: func(s *pairState) bool { return s.PC != [2]uint8{1, 1} }}},
			Canonical: func(s *pairState, b []byte) []byte {
				lo, hi := min(s.PC[0], s.PC[1]), max(s.PC[0], s.PC[1])
				return append(b, lo, hi)
			},
		})
	},
}

// A matrix configuration that declares symmetry accepts that a correct
// variant's progress is not checked there: its row is found partial and
// matches, and says so. Symmetry asked for on the command line is not
// such a declaration: the row is incomplete and verify exits 3.
func TestVerifyPartialRows(t *testing.T) {
	reg := &cli.Registry{Protocols: []*model.Protocol{pairProtocol}}
	run := func(args ...string) (int, string) {
		var stdout, stderr strings.Builder
		code := cli.Run(reg, args, &stdout, &stderr, nil)
		return code, stdout.String() + stderr.String()
	}
	code, out := run("verify", "--progress", "none")
	if code != cli.ExitOK || !strings.Contains(out, "2 of 2 variant configurations match") || !strings.Contains(out, "1 of those matches are partial") {
		t.Errorf("verify: exit %d\n%s", code, out)
	}
	code, out = run("verify", "--quick", "--symmetry", "--progress", "none")
	if code != cli.ExitIncomplete || !strings.Contains(out, "0 of 1 variant configurations match") || !strings.Contains(out, "1 incomplete") || strings.Contains(out, "MISMATCH") {
		t.Errorf("verify --quick --symmetry: exit %d\n%s", code, out)
	}
}
