// Package protocols is the registry of the protocols protocheck models:
// one package per protocol family below this directory, each exporting a
// model.Protocol. The CLI and the tests that sweep every protocol look
// them up here, and Registry hands them to the cli package.
package protocols

import (
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
func Lookup(name string) (*model.Protocol, error) { return Registry().Lookup(name) }

// Parse splits "PROTOCOL/VARIANT" and looks both up.
func Parse(spec string) (*model.Protocol, model.Variant, error) { return Registry().Parse(spec) }
