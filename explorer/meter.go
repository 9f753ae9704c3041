package explorer

import (
	"runtime/metrics"
	"time"
)

// A Meter measures the memory and time of a search as Stats reports
// them, for the explorer and for search engines outside this package (a
// pipeline on a cluster), so that their figures mean the same. Memory is
// what the Go runtime has mapped and not returned to the system, plus
// what the explorer holds outside the heap: an upper bound of the
// process's resident memory, read without stopping the world. The zero
// Meter is ready to use; it is not safe for concurrent use.
type Meter struct {
	peak   int64
	sample []metrics.Sample
}

// Memory returns the memory held now and keeps the most seen.
func (m *Meter) Memory() int64 {
	if m.sample == nil {
		m.sample = []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	}
	metrics.Read(m.sample)
	var used int64
	if m.sample[0].Value.Kind() == metrics.KindUint64 {
		used = int64(m.sample[0].Value.Uint64())
	}
	if m.sample[1].Value.Kind() == metrics.KindUint64 {
		used -= int64(m.sample[1].Value.Uint64())
	}
	used += mapped.Load() // the visited table and key arena outside the heap
	m.peak = max(m.peak, used)
	return used
}

// Finish fills the memory and time figures of s, whose States are
// counted: the peak memory (read once more now) and its share per state
// and, with a clock, the time since start and the states per second.
func (m *Meter) Finish(s *Stats, clock func() time.Time, start time.Time) {
	m.Memory()
	s.PeakMemory = m.peak
	if s.States > 0 {
		s.BytesPerState = float64(m.peak) / float64(s.States)
	}
	if clock == nil {
		return
	}
	s.Elapsed = clock().Sub(start)
	if s.Elapsed > 0 {
		s.StatesPerSec = float64(s.States) / s.Elapsed.Seconds()
	}
}
