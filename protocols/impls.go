package protocols

import "github.com/protocheck/protocheck/explorer/rt"

// impls maps a protocol name to its real concurrent implementation.
var impls = map[string]*rt.Impl{}

// Impl returns the real implementation of the named protocol, or nil.
func Impl(name string) *rt.Impl { return impls[name] }
