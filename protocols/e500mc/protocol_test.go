package e500mc

import (
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// TestParamExtremes builds every variant at every parameter's minimum and
// at all maxima together and walks it: the machine must stay within its
// arrays, terminate, and the correct variants stay clean.
func TestParamExtremes(t *testing.T) {
	lo, hi := model.Params{}, model.Params{}
	for _, p := range Protocol.Params {
		lo[p.Name], hi[p.Name] = p.Min, p.Max
	}
	hi["scenario"] = 0
	for _, v := range Protocol.Variants {
		for _, p := range []model.Params{lo, hi} {
			r := explore(t, machineFor(t, v.Name, p), explorer.Options{Strategy: explorer.Random, Seed: 5, Runs: 200})
			if v.Expect == model.ExpectOK && r.Violation != nil {
				t.Errorf("%s %v: %s", v.Name, p, r)
			}
			if r.Violation == nil && r.Bound != "random: 200 walks from seed 5" {
				t.Errorf("%s %v: walks did not terminate: %s", v.Name, p, r.Bound)
			}
		}
	}
}
