// Package target names the machine a pipeline explores (a protocol, a
// variant and its parameters) in a form that travels inside a pipeline:
// Beam serialises a DoFn's exported fields into the job, and each worker
// rebuilds the machine from them, through the same protocol registry as
// the command that submitted the job.
package target

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/protocols"
)

// A Target is one variant of a protocol at resolved parameters (every
// parameter, defaults included, so that a worker builds exactly the
// machine the driver built).
type Target struct {
	Protocol string
	Variant  string
	Params   model.Params
}

// Protocols returns the protocols a target may name: the check command's
// registry, in its order, so that a protocol added there runs here too.
func Protocols() []*model.Protocol { return protocols.All() }

// Lookup returns the named protocol.
func Lookup(name string) (*model.Protocol, error) {
	for _, p := range Protocols() {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("unknown protocol %q", name)
}

// Resolve checks protocol, variant and the given parameters and returns
// the target with every parameter resolved, and the machine.
func Resolve(p *model.Protocol, variant string, given model.Params) (Target, model.Machine, error) {
	m, params, err := p.Instantiate(variant, given)
	if err != nil {
		return Target{}, nil, err
	}
	return Target{Protocol: p.Name, Variant: variant, Params: params}, m, nil
}

// Machine builds the target's machine.
func (t Target) Machine() (model.Machine, error) {
	p, err := t.Proto()
	if err != nil {
		return nil, err
	}
	m, _, err := p.Instantiate(t.Variant, t.Params)
	return m, err
}

// Proto returns the target's protocol.
func (t Target) Proto() (*model.Protocol, error) { return Lookup(t.Protocol) }

// String is "protocol/variant key=value ...".
func (t Target) String() string {
	if len(t.Params) == 0 {
		return t.Protocol + "/" + t.Variant
	}
	return fmt.Sprintf("%s/%s %s", t.Protocol, t.Variant, t.Params)
}
