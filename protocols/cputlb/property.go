package cputlb

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// Property names of this protocol (deadlock is model.Deadlock; the
// progress properties are named per source, proceedsName).
const (
	NoStaleTranslation = "no-stale-translation"
	WorkOnce           = "work-once"
	DirtyTracking      = "dirty-tracking"
	DispatchCoherent   = "dispatch-coherent"
	DispatchLive       = "dispatch-live"
	TLBOwnerOnly       = "tlb-owner-only"
)

// Metric indexes into the machine's Properties().Metrics.
const (
	mBQL = iota
	mFlushBQL
	mKicks
	mTLBLock
)

// metricNames: every BQL acquisition; those made to run a TLB flush work
// item (the remote flushes of a broadcast invalidate, tcg_commit's
// flushes: what seed 000 changes); kicks; tlb.c.lock acquisitions.
var metricNames = []string{"bql-acquisitions", "flush-bql-acquisitions", "kicks", "tlb-lock-acquisitions"}

// workOnce is the invariant of work-once. The property is checked in two
// places: inside the run and free steps (at most once), and here, at the
// end of an execution (exactly once). no-stale-translation is checked
// inside the TLB-use step and dispatch-coherent inside io_readx (the
// observers they need are part of the state, so bfs merging states is
// sound).
//
// When every thread is done, each work item queued on a vCPU has run
// exactly once and its qemu_work_item was freed (or, for run_on_cpu's,
// marked done) exactly once, and each vCPU got every item it should: a
// remote flush from every other source, its own safe flush when it is a
// source of a synced flush, one run_on_cpu per migration round and one
// tcg_commit item per transaction.
func (m *machine) workOnce(st model.State) string {
	s := st.(*state)
	for t := 0; t < m.n; t++ {
		if !m.done(s, t) {
			return ""
		}
	}
	if s.hasMig && s.mig.pc != migDone || s.hasMain && s.main.pc != cmDone || s.hasIOMMU && s.iommu.pc != imDone {
		return ""
	}
	for c := 0; c < m.n; c++ {
		v := &s.cpu[c]
		want := m.itemsFor(c)
		if v.posted != want || v.ran != want || v.freed != want {
			return fmt.Sprintf("every thread is done, but %s's work items: queued %d, run %d, freed %d (want %d each)",
				cpuName(c), v.posted, v.ran, v.freed, want)
		}
	}
	return ""
}

// itemsFor is the number of work items vCPU c receives in a complete
// execution.
func (m *machine) itemsFor(c int) uint8 {
	want := m.sources
	if m.isSource(c) {
		want--
		if m.cfg.synced {
			want++
		}
	}
	want += int(m.rounds) + m.transactions()
	if m.iommu && !m.cfg.notifyDirect && c == m.envCPU {
		want++ // the notifier's queued tlb_flush
	}
	if m.vcpuCommit && !m.cfg.commitDeferred && c == m.envCPU {
		// The v5.0 code flushes the committing vCPU at once (tcg_commit).
		want--
	}
	return uint8(want)
}
