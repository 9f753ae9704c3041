package protocols

import (
	"github.com/protocheck/protocheck/cli"
	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/protocols/batchunmap"
	"github.com/protocheck/protocheck/protocols/cputlb"
	"github.com/protocheck/protocheck/protocols/e500mc"
	"github.com/protocheck/protocheck/protocols/exclusive"
	"github.com/protocheck/protocheck/protocols/pvflush"
)

// impls maps a protocol name to its real concurrent implementation.
var impls = map[string]*rt.Impl{
	"pvflush":    pvflush.Impl,
	"exclusive":  exclusive.Impl,
	"cputlb":     cputlb.Impl,
	"e500mc":     e500mc.Impl,
	"batchunmap": batchunmap.Impl,
}

// Impl returns the real implementation of the named protocol, or nil.
func Impl(name string) *rt.Impl { return impls[name] }

// Registry returns the registry the check command runs on: every protocol,
// in the order All gives, with its real implementation.
func Registry() *cli.Registry {
	return &cli.Registry{Name: "check", Protocols: all, Impls: impls}
}
