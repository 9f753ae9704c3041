package model

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/protocheck/protocheck/internal/clip"
)

// A Protocol describes one protocol family: its variants (the correct
// version and each known bug, as data) and its parameters, and builds a
// Machine for a variant and a full set of parameters.
type Protocol struct {
	Name        string
	Description string // one line
	Source      string // the seed or commits the model follows
	Variants    []Variant
	Params      []Param
	// New builds the machine. It is only called with a known variant and
	// parameters that Resolve accepted.
	New func(variant string, p Params) (Machine, error)
	// Matrix lists the configurations verification runs besides the
	// defaults: sizes chosen so that each mechanism of the protocol happens
	// at least twice, each with the verdict every variant is expected to
	// have there.
	Matrix []Config
	// Claims are the protocol's performance claims (the seeds'), checked
	// as expectations.
	Claims []Claim
	// LeftOut names, sorted, the properties that every machine New builds
	// leaves out (set by Without); a trace records them.
	LeftOut []string
}

// Without returns a copy of p whose machines leave the named properties
// out (model.Without): the protocol a search for "what else breaks"
// explores, and that a trace recorded from it names, so that replay and
// minimization leave them out too. An unknown name is an error of
// Instantiate.
func (p *Protocol) Without(names ...string) *Protocol {
	if len(names) == 0 {
		return p
	}
	q := *p
	q.LeftOut = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(p.LeftOut), names...))))
	build := p.New
	q.New = func(variant string, params Params) (Machine, error) {
		m, err := build(variant, params)
		if err != nil {
			return nil, err
		}
		return Without(m, names...)
	}
	return &q
}

// A Config is one configuration of a verification matrix.
type Config struct {
	// Params are the parameters that differ from the defaults.
	Params Params
	// Why says what this size exercises that the default does not ("two
	// exclusive sections, so whatever the first leaves behind meets the
	// second").
	Why string
	// Variants restricts the configuration to these variants (all when
	// empty), for sizes too large for every variant.
	Variants []string
	// Expect overrides a variant's expected verdict at this size (a bug
	// that needs a larger size, a variant that is correct only here).
	Expect map[string]string
	// Options are explorer settings this size needs to fit in time and
	// memory ("fingerprint", "symmetry"); verification says which it used.
	// Symmetry reduction checks no progress property (a cycle of orbits
	// need not be a cycle of states): declaring it accepts that a variant
	// expected correct is found "partial" here, every state explored and
	// its progress properties not checked, and verification counts that
	// as a match. Without the declaration (check verify --symmetry or
	// --strategy dfs) such a row is incomplete, not a match.
	Options []string
}

// Expected returns the verdict variant v is expected to have at c.
func (c Config) Expected(v Variant) (string, []string) {
	if e, ok := c.Expect[v.Name]; ok {
		return e, nil
	}
	return v.Expect, v.AlsoViolates
}

// Covers reports whether c runs variant name.
func (c Config) Covers(name string) bool {
	if len(c.Variants) == 0 {
		return true
	}
	for _, v := range c.Variants {
		if v == name {
			return true
		}
	}
	return false
}

// A Claim is a performance claim as an expectation: two variants explored
// exhaustively at one configuration and compared on one metric, summarised
// exactly over every complete execution.
type Claim struct {
	Name string
	// Text is the claim in the protocol's words, with its source.
	Text   string
	Metric string
	A, B   string // the variants compared
	Params Params // beyond the defaults
	// Holds decides the claim from the two summaries and says what was
	// found, in words ("per-lpid 2 flushes, per-cpu 10 = 2*rounds").
	Holds func(a, b MetricSummary) (ok bool, found string)
}

// MetricSummary is a metric summarised over every complete execution of
// one exploration: minimum, maximum and mean of its total per execution.
type MetricSummary struct {
	Executions     float64
	Min, Max       int64
	Mean           float64
	TransitionsSum int64
}

// A Variant is one version of a protocol: a small switch in its model.
type Variant struct {
	Name string `json:"name"`
	// Expect is "ok" for a variant expected to be correct, or the name of
	// the property it is expected to violate.
	Expect string `json:"expect"`
	// AlsoViolates lists other properties the variant is known to break,
	// through a different schedule of the same length or shorter under
	// another search order (a dfs may meet that one first). Verification
	// accepts any of them; bfs reports Expect.
	AlsoViolates []string `json:"also_violates,omitempty"`
	Description  string   `json:"description"`
	Source       string   `json:"source"`
	// Fixed holds the parameters the variant is defined with (if-not-while
	// with spurious wake-ups, no-smp-mb on x86-TSO): Instantiate gives them
	// these values, so that every header, trace and verdict names the
	// configuration that was explored, and refuses another value given
	// for one of them.
	Fixed Params `json:"fixed,omitempty"`
}

// Accepts reports whether finding property (or "ok") matches what the
// variant is expected to do.
func (v Variant) Accepts(found string) bool {
	if found == v.Expect {
		return true
	}
	for _, p := range v.AlsoViolates {
		if p == found {
			return true
		}
	}
	return false
}

// ExpectOK is Variant.Expect for a variant expected to be correct.
const ExpectOK = "ok"

// A Param is an integer parameter of a protocol (a size or a bound).
type Param struct {
	Name        string `json:"name"`
	Default     int    `json:"default"`
	Min         int    `json:"min"`
	Max         int    `json:"max"`
	Description string `json:"description"`
	// Sentinel says that Min is not the smallest size but a value of its
	// own, which the description explains: "forever" or "unbounded"
	// (tbs=0: the guests never halt), "the variant's own" (a width), or
	// "every program in turn". The minimizer, which tries smaller
	// parameters to report a counterexample at a smaller size, then never
	// lowers the parameter to Min: a model at Min is not smaller.
	Sentinel bool `json:"sentinel,omitempty"`
}

// Smallest is the least value of q that is a smaller size than any above
// it: Min, or Min+1 when Min is a sentinel.
func (q Param) Smallest() int {
	if q.Sentinel {
		return q.Min + 1
	}
	return q.Min
}

// Params maps parameter names to values. Encoders sort the keys, so map
// order never reaches output.
type Params map[string]int

// Keys returns the parameter names, sorted: the one order in which params
// reach output, so that map order never does.
func (p Params) Keys() []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// String renders params as sorted "key=value" pairs.
func (p Params) String() string {
	keys := p.Keys()
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, p[k])
	}
	return strings.Join(parts, " ")
}

// Variant returns the named variant or an error listing the known ones.
func (p *Protocol) Variant(name string) (Variant, error) {
	for _, v := range p.Variants {
		if v.Name == name {
			return v, nil
		}
	}
	names := make([]string, len(p.Variants))
	for i, v := range p.Variants {
		names[i] = v.Name
	}
	return Variant{}, fmt.Errorf("protocol %s has no variant %q (variants: %s)", p.Name, clip.String(name), strings.Join(names, ", "))
}

// Param returns the named parameter.
func (p *Protocol) Param(name string) (Param, bool) {
	for _, q := range p.Params {
		if q.Name == name {
			return q, true
		}
	}
	return Param{}, false
}

// Resolve fills defaults and checks every value: an unknown name or a
// value out of range is an error that says which and why.
func (p *Protocol) Resolve(given Params) (Params, error) {
	for _, k := range given.Keys() {
		q, ok := p.Param(k)
		if !ok {
			names := make([]string, len(p.Params))
			for i, q := range p.Params {
				names[i] = q.Name
			}
			return nil, fmt.Errorf("protocol %s has no parameter %q (parameters: %s)", p.Name, clip.String(k), strings.Join(names, ", "))
		}
		if v := given[k]; v < q.Min || v > q.Max {
			return nil, fmt.Errorf("parameter %s=%d is out of range: %s must be between %d and %d", k, v, k, q.Min, q.Max)
		}
	}
	out := Params{}
	for _, q := range p.Params {
		out[q.Name] = q.Default
		if v, ok := given[q.Name]; ok {
			out[q.Name] = v
		}
	}
	return out, nil
}

// Instantiate checks the variant and parameters and builds the machine.
// It returns the resolved parameters, defaults included.
func (p *Protocol) Instantiate(variant string, given Params) (Machine, Params, error) {
	v, err := p.Variant(variant)
	if err != nil {
		return nil, nil, err
	}
	params, err := p.Resolve(given)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range v.Fixed.Keys() {
		if q, ok := p.Param(k); !ok || v.Fixed[k] < q.Min || v.Fixed[k] > q.Max {
			return nil, nil, fmt.Errorf("%s/%s: the variant fixes %s=%d, which is not a value of one of the protocol's parameters", p.Name, variant, k, v.Fixed[k])
		}
		if g, ok := given[k]; ok && g != v.Fixed[k] {
			return nil, nil, fmt.Errorf("%s/%s is defined with %s=%d, not %s=%d", p.Name, variant, k, v.Fixed[k], k, g)
		}
		params[k] = v.Fixed[k]
	}
	m, err := p.New(variant, params)
	if err != nil {
		return nil, nil, fmt.Errorf("%s/%s: %w", p.Name, variant, err)
	}
	return m, params, nil
}

// Single wraps one machine as a protocol with one variant, "model",
// expected to satisfy every property: the way to record, replay, minimize
// and render traces of a user's own Machine, since a trace file names a
// protocol and a variant.
func Single(name string, m Machine) *Protocol {
	return &Protocol{
		Name:        name,
		Description: name,
		Variants:    []Variant{{Name: "model", Expect: ExpectOK, Description: "the machine itself"}},
		New:         func(string, Params) (Machine, error) { return m, nil },
	}
}
