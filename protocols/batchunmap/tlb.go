package batchunmap

import (
	"math/bits"

	"github.com/protocheck/protocheck/model"
)

// Metrics, indexed like machine.Metrics.
const (
	mFlushRounds  = iota // flush rounds caused by reclaim: per-PTE, batch and drain flushes
	mRemote              // remote invalidations (IPIs / SBI fences) of those rounds, per target CPU
	mDrain               // flush_tlb_mm calls by flush_tlb_batched_pending
	mUnmapped            // present PTEs cleared by try_to_unmap_one
	mBatchTargets        // CPUs in the batch cpumask at each arch_tlbbatch_flush
)

var metricNames = []string{"flush-rounds", "remote-flushes", "drain-flushes", "unmapped-pages", "batch-flush-targets"}

// A flush round is one step: flush_tlb_multi (or the SBI remote fence)
// waits until every target has acknowledged, and an invalidation on one CPU
// only conflicts with that CPU's own accesses, so an access interleaved
// between two targets' acknowledgements is equivalent to one made before
// the round on its CPU (if that CPU had not yet invalidated) or after it.

// round counts a reclaim-caused flush round issued from cpu to mask.
func round(x *model.Exec, from int, mask uint8) {
	x.Count(mFlushRounds, 1)
	x.Count(mRemote, int64(bits.OnesCount8(mask&^(1<<uint(from)))))
}

// touchTLBs records the invalidation of the TLBs of the CPUs in mask. A
// mask holds only CPUs of the machine (mm_cpumask is set up in newMachine
// and never changes), and never CPU0, whose kswapd caches no user entry.
func (s *state) touchTLBs(x *model.Exec, mask uint8) {
	for m := mask; m != 0; m &= m - 1 {
		x.Touch(s.c.tlbName[bits.TrailingZeros8(m)], true)
	}
}

// flushAll is a full flush (all ASIDs) of the CPUs in mask: x86's and
// riscv's arch_tlbbatch_flush.
func (s *state) flushAll(x *model.Exec, mask uint8) {
	s.touchTLBs(x, mask)
	for cpu := 1; cpu < s.c.ncpu; cpu++ {
		if mask&(1<<uint(cpu)) != 0 {
			clear(s.tlb[s.c.tlbAt(cpu, 0):s.c.tlbAt(cpu+1, 0)])
		}
	}
}

// flushMM drops mm's entries on the CPUs in mask: flush_tlb_mm.
func (s *state) flushMM(x *model.Exec, mm int, mask uint8) {
	s.touchTLBs(x, mask)
	for cpu := 1; cpu < s.c.ncpu; cpu++ {
		if mask&(1<<uint(cpu)) == 0 {
			continue
		}
		for va := 0; va < s.c.pages; va++ {
			if s.c.mmOf[va] == mm {
				s.setEntry(cpu, va, 0)
			}
		}
	}
}

// flushVA drops va's entry on the CPUs in mask: flush_tlb_range of one page.
func (s *state) flushVA(x *model.Exec, va int, mask uint8) {
	s.touchTLBs(x, mask)
	for cpu := 1; cpu < s.c.ncpu; cpu++ {
		if mask&(1<<uint(cpu)) != 0 {
			s.setEntry(cpu, va, 0)
		}
	}
}

// stale reports whether cpu caches va with more rights than its PTE gives:
// the PTE is gone, or the entry is writable and the PTE no longer is.
func (s *state) stale(cpu, va int) bool {
	e := s.entry(cpu, va)
	if e == 0 {
		return false
	}
	pte := uint8(s.mem.Peek(s.c.pteAddr(va)))
	return pte&bPresent == 0 || (e&bWrite != 0 && pte&bWrite == 0)
}

// staleCPUs returns the CPUs with a stale entry for va.
func (s *state) staleCPUs(va int) uint8 {
	var m uint8
	for cpu := 1; cpu < s.c.ncpu; cpu++ {
		if s.stale(cpu, va) {
			m |= 1 << uint(cpu)
		}
	}
	return m
}

// holders returns the CPUs whose TLB maps va at all.
func (s *state) holders(va int) uint8 {
	var m uint8
	for cpu := 1; cpu < s.c.ncpu; cpu++ {
		if s.entry(cpu, va) != 0 {
			m |= 1 << uint(cpu)
		}
	}
	return m
}
