// Package procmem reads how much memory this process holds, as the
// explorer measures it for its reports: what the Go runtime has mapped
// and not returned to the system (under Prism in process, the workers'
// memory too).
package procmem

import "runtime/metrics"

// A Peak keeps the most memory seen by Sample.
type Peak struct {
	Bytes  int64
	sample []metrics.Sample
}

// Sample reads the memory in use now and keeps it if it is the most.
func (p *Peak) Sample() {
	if p.sample == nil {
		p.sample = []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	}
	metrics.Read(p.sample)
	var used int64
	if p.sample[0].Value.Kind() == metrics.KindUint64 {
		used = int64(p.sample[0].Value.Uint64())
	}
	if p.sample[1].Value.Kind() == metrics.KindUint64 {
		used -= int64(p.sample[1].Value.Uint64())
	}
	p.Bytes = max(p.Bytes, used)
}
