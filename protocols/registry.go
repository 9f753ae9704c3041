// Package protocols is the registry of the protocols protocheck models:
// one package per protocol family below this directory, each exporting a
// model.Protocol. The CLI and the tests that sweep every protocol look
// them up here.
package protocols

import (
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/protocols/batchunmap"
	"github.com/protocheck/protocheck/protocols/cputlb"
	"github.com/protocheck/protocheck/protocols/e500mc"
	"github.com/protocheck/protocheck/protocols/exclusive"
	"github.com/protocheck/protocheck/protocols/pvflush"
)

// all lists the protocols in the order the CLI shows them.
var all = []*model.Protocol{
	pvflush.Protocol,
	exclusive.Protocol,
	cputlb.Protocol,
	e500mc.Protocol,
	batchunmap.Protocol,
}

// All returns every protocol.
func All() []*model.Protocol { return all }

// Lookup returns the named protocol, or an error listing the known ones.
func Lookup(name string) (*model.Protocol, error) {
	for _, p := range all {
		if p.Name == name {
			return p, nil
		}
	}
	names := make([]string, len(all))
	for i, p := range all {
		names[i] = p.Name
	}
	return nil, fmt.Errorf("unknown protocol %q (protocols: %s)", name, strings.Join(names, ", "))
}

// Parse splits "PROTOCOL/VARIANT" and looks both up.
func Parse(spec string) (*model.Protocol, model.Variant, error) {
	name, variant, ok := strings.Cut(spec, "/")
	if !ok || name == "" || variant == "" {
		return nil, model.Variant{}, fmt.Errorf("expected PROTOCOL/VARIANT, got %q", spec)
	}
	p, err := Lookup(name)
	if err != nil {
		return nil, model.Variant{}, err
	}
	v, err := p.Variant(variant)
	if err != nil {
		return nil, model.Variant{}, err
	}
	return p, v, nil
}
