package explorer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// A ClaimResult is what CheckClaim found.
type ClaimResult struct {
	// Holds: both variants were explored completely and clean, and the
	// claim's relation holds between their metric summaries.
	Holds bool
	// Found says what was found, in the claim's words, or why it could
	// not be judged (a variant with a violation, no complete execution).
	Found string
	// Judged: both variants were explored completely and clean, with
	// complete executions to summarise, so Holds is the claim's answer
	// and not a search that could not judge it.
	Judged bool
	// Params are the parameters both variants ran with.
	Params model.Params
	// Interrupted: opts.Stop ended a search before it was complete.
	Interrupted bool
}

// CheckClaim explores variants a and b of p exhaustively at the claim's
// configuration, with exact per-execution metrics (bfs, states stored
// exactly: a claim summarises every complete execution), and lets the
// claim judge the two summaries of its metric. a and b are normally the
// claim's own A and B; a test passes another variant in A's place to see
// the claim fail without the optimisation it is about. opts supplies the
// workers, symmetry and Stop; the strategy, metrics and fingerprints are
// set here. An error is a claim that does not fit its protocol.
func CheckClaim(p *model.Protocol, cl model.Claim, a, b string, opts Options) (ClaimResult, error) {
	var res ClaimResult
	opts.Strategy, opts.Metrics, opts.Fingerprint = BFS, true, false
	var sums [2]model.MetricSummary
	for i, variant := range []string{a, b} {
		m, params, err := p.Instantiate(variant, cl.Params)
		if err != nil {
			return res, fmt.Errorf("claim %s/%s: %w", p.Name, cl.Name, err)
		}
		res.Params = params
		r, err := Explore(m, opts)
		if err != nil {
			return res, fmt.Errorf("claim %s/%s: %w", p.Name, cl.Name, err)
		}
		if !r.OK() {
			res.Found = fmt.Sprintf("%s is %s, not explored completely and clean", variant, r.Verdict)
			switch r.Verdict {
			case Interrupted:
				res.Found, res.Interrupted = string(Interrupted), true
			case Partial:
				res.Found = fmt.Sprintf("%s is partial, every state explored but not every property checked (%s)", variant, strings.Join(r.Unchecked, "; "))
			}
			return res, nil
		}
		k := slices.IndexFunc(r.Metrics, func(x Metric) bool { return x.Name == cl.Metric })
		if k < 0 {
			return res, fmt.Errorf("claim %s/%s: %s has no metric %q", p.Name, cl.Name, variant, cl.Metric)
		}
		x := r.Metrics[k]
		if x.Executions == 0 {
			res.Found = fmt.Sprintf("%s has no complete executions to summarise %s over (a cycle?)", variant, cl.Metric)
			return res, nil
		}
		sums[i] = model.MetricSummary{Executions: x.Executions, Min: x.Min, Max: x.Max, Mean: x.Mean, TransitionsSum: x.Transitions}
	}
	res.Judged = true
	res.Holds, res.Found = cl.Holds(sums[0], sums[1])
	return res, nil
}
