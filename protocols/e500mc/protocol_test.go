package e500mc

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// TestParamExtremes builds every variant at every parameter's minimum and
// at all maxima together and walks it: the machine must stay within its
// arrays, terminate, and the correct variants stay clean. With unbounded
// loads the walks cannot terminate: they must run to the step bound, clean
// for the correct variants.
func TestParamExtremes(t *testing.T) {
	lo, hi := model.Params{}, model.Params{}
	for _, p := range Protocol.Params {
		lo[p.Name], hi[p.Name] = p.Min, p.Max
	}
	hi["scenario"], hi["unbounded-loads"] = 0, 0
	unbounded := model.Params{}
	for k, v := range hi {
		unbounded[k] = v
	}
	unbounded["unbounded-loads"] = 1
	for _, v := range Protocol.Variants {
		for _, p := range []model.Params{lo, hi} {
			p = withFixed(v, p)
			r := explore(t, machineFor(t, v.Name, p), explorer.Options{Strategy: explorer.Random, Seed: 5, Runs: 200})
			if v.Expect == model.ExpectOK && r.Violation != nil {
				t.Errorf("%s %v: %s", v.Name, p, r)
			}
			if r.Violation == nil && r.Bound != "random: 200 walks from seed 5" {
				t.Errorf("%s %v: walks did not terminate: %s", v.Name, p, r.Bound)
			}
		}
		if v.Expect != model.ExpectOK {
			continue
		}
		r := explore(t, machineFor(t, v.Name, withFixed(v, unbounded)), explorer.Options{Strategy: explorer.Random, Seed: 5, Runs: 20, MaxSteps: 2000})
		if r.Violation != nil || !strings.Contains(r.Bound, "max-steps=2000") {
			t.Errorf("%s unbounded loads: %s (%s), want 20 clean walks to the step bound", v.Name, r, r.Bound)
		}
	}
}

// withFixed is p with the parameters variant v is defined with, and an
// even number of CPUs where v fixes two threads per core.
func withFixed(v model.Variant, p model.Params) model.Params {
	q := model.Params{}
	for k, x := range p {
		q[k] = x
	}
	for k, x := range v.Fixed {
		q[k] = x
	}
	if q["threads"] == 2 && q["cpus"]%2 == 1 {
		q["cpus"]++
	}
	return q
}
