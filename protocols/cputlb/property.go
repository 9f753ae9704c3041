package cputlb

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// workOnce is the invariant of work-once. The property is checked in two
// places: inside the flush and free steps (at most once), and here, at the
// end of an execution (exactly once). no-stale-translation is checked
// inside the TLB-use step (the observer source_resumed is part of the
// state, so bfs merging states is sound).
//
// When every vCPU is done, each flush item queued by the
// invalidate has run exactly once on its target and both its
// TLBFlushPageByMMUIdxData and its qemu_work_item were freed exactly once;
// every target got one, and the source got its safe item when synced.
func (m *machine) workOnce(st model.State) string {
	s := st.(*state)
	for t := 0; t < m.n; t++ {
		if !m.done(s, t) {
			return ""
		}
	}
	for c := 0; c < m.n; c++ {
		v := &s.cpu[c]
		want := uint8(1)
		if c == src && !m.cfg.synced {
			want = 0
		}
		if v.posted != want || v.ran != want || v.freedD != want || v.freedW != want {
			return fmt.Sprintf("every vCPU is idle, but %s's flush items: queued %d, run %d, data freed %d, work items freed %d (want %d each)",
				cpuName(c), v.posted, v.ran, v.freedD, v.freedW, want)
		}
	}
	return ""
}
