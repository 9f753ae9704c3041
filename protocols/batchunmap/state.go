package batchunmap

import (
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// PTE and TLB entry bits. Page i is only ever mapped at va i, so the pfn is
// implicit; a cleared PTE (0) stands for the swap entry reclaim installs.
const (
	bPresent = 1 << iota
	bWrite
	bDirty
)

func describePTE(v uint8) string {
	if v&bPresent == 0 {
		return "none"
	}
	s := "ro"
	if v&bWrite != 0 {
		s = "rw"
	}
	if v&bDirty != 0 {
		s += ",dirty"
	}
	return s
}

// Page states, in the order reclaim moves a page through them.
const (
	pgMapped    = iota
	pgUnmapped  // PTE cleared by try_to_unmap_one
	pgWriteback // pageout took the swap snapshot; the page waits to be freed
	pgFreed     // free_unref_folios returned it to the allocator
	pgReused    // the allocator handed it to a new owner
)

var pageStateNames = [...]string{"mapped", "unmapped", "writeback", "freed", "reused"}

// Reclaimer program counters (shrink_folio_list for one page at a time).
const (
	rLock       = iota // spin_lock PTL of the page's va
	rClear             // ptep_get_and_clear
	rFlushRange        // immediate: flush_tlb_range under the PTL
	rAddPending        // arch_tlbbatch_add_pending
	rRead              // set_tlb_ubc_flush_pending: atomic_read
	rUpdate            // atomic_inc, or the overflow-reset cmpxchg
	rSetBool           // bool-flag: tlb_flush_batched = true
	rUnlock            // spin_unlock
	rFlushDirty        // try_to_unmap_flush_dirty
	rPageout           // pageout: the swap snapshot
	rFlush             // try_to_unmap_flush before freeing the batch
	rFree              // free_unref_folios
	rDone
)

// Syscall thread program counters (change_pte_range of mprotect).
const (
	sLock       = iota // spin_lock PTL
	sDrainRead         // flush_tlb_batched_pending: atomic_read
	sDrainFlush        // flush_tlb_mm
	sDrainClear        // cmpxchg to flushed = pending, or the bool's store false
	sPTE               // modify the PTE
	sFlush             // flush_tlb_range of the changed PTE
	sUnlock            // spin_unlock; mprotect returns
	sDone
)

// The fixed-size parts of the state put their 16-bit fields first, so
// that they have no padding inside and the codec copies them together.

type reclaimer struct {
	word     uint16 // tlb_flush_batched as last read
	pc       uint8
	page     uint8 // the page being reclaimed
	pteval   uint8 // what ptep_get_and_clear returned
	flushReq bool  // tlb_ubc.flush_required
	writable bool  // tlb_ubc.writable
	mask     uint8 // tlb_ubc.arch.cpumask
	queued   uint8 // pages in the free batch (bit per page)
}

type syscaller struct {
	word      uint16 // tlb_flush_batched as read by the drain
	pc        uint8
	op        uint8 // index of the current mprotect call
	needFlush bool
	// returned observes the calls (va bit set: its mprotect has
	// returned); it is outside the memory layer.
	returned uint8
}

// Note kinds: the first place an execution lost a pending flush, kept so
// that a violation found later can say where and under which locks.
const (
	noteNone        = iota
	noteBoolCleared // bool-flag: the drain stored false over a newer deferral
	noteWrapped     // pending wrapped onto flushed
	noteNoDrain     // mprotect trusted a none PTE with no drain at all
	noteNoFlush     // mprotect trusted a none PTE after a drain that did not flush
	noteNestedReset // init_tlb_ubc cleared flush_required
	noteDirtySkip   // pageout with writable set and no flush_dirty
)

type note struct {
	word uint16 // the tlb_flush_batched value involved
	kind uint8
	va   uint8 // the va whose flush was lost
	ptl  uint8 // the lock the other thread held
	page uint8 // nested reset: the page whose pageout reset it
}

// vars is the state's data: plain values, encoded by codec (copied field
// bytes, slices prefixed with their length). The parts sized by a
// parameter are slices of that length, so that a state's key is as short
// as its configuration allows, and the per-page and per-CPU bytes share
// one slice (cells), so that encoding and decoding copy few pieces: a
// state is decoded before every step the explorer runs.
type vars struct {
	mem   model.Mem
	ptl   []model.Mutex // one per page-table lock
	cells []uint8       // state.tlb, page, val and acc, in this order
	note  note          // outside the memory layer, like s.returned
	s     syscaller
	r     reclaimer
}

var codec = model.MustCodec[vars]()

// state is a machine's state: its data, views into its cells, and the
// configuration that gives the data its meaning (sizes, names), shared by
// every state of the machine and not part of the encoding.
type state struct {
	vars
	// tlb holds the TLBs of CPUs 1..ncpu-1, pages entries each: CPU cpu's
	// entry for va is tlb[(cpu-1)*pages+va] (see config.tlbAt). CPU0 runs
	// kswapd and caches no user translation.
	tlb  []uint8 // bits as in a PTE; 0 = no entry
	page []uint8 // per page: pgMapped...
	val  []uint8 // page contents
	acc  []uint8 // accesses made by each user thread
	c    *config
}

// newState returns a state of c with every variable zero.
func newState(c *config) *state {
	s := &state{c: c}
	s.mem = model.NewMem(c.memNames...)
	s.ptl = make([]model.Mutex, c.ptls)
	s.cells = make([]uint8, c.cells())
	tlb := (c.ncpu - 1) * c.pages
	s.tlb = s.cells[:tlb:tlb]
	s.page = s.cells[tlb : tlb+c.pages : tlb+c.pages]
	s.val = s.cells[tlb+c.pages : tlb+2*c.pages : tlb+2*c.pages]
	s.acc = s.cells[tlb+2*c.pages:]
	return s
}

// cells is the length of state.cells.
func (c *config) cells() int { return (c.ncpu-1)*c.pages + 2*c.pages + c.users }

func (s *state) AppendKey(b []byte) []byte { return codec.Append(b, &s.vars) }

// Decode copies into the slices newState made, so the views keep pointing
// into cells: every encoding of this configuration has their lengths, and
// an encoding with other lengths is not one of this machine's. A failed
// decode may have replaced a slice (the codec makes a new one for a longer
// encoded slice), so it leaves a new zero state, views included.
func (s *state) Decode(b []byte) error {
	err := codec.Decode(b, &s.vars)
	c := s.c
	if err == nil && (len(s.ptl) != c.ptls || len(s.cells) != c.cells()) {
		err = fmt.Errorf("decode batchunmap state: the encoding is not of a machine with pages=%d ptls=%d users=%d", c.pages, c.ptls, c.users)
	}
	if err != nil {
		*s = *newState(c)
	}
	return err
}

// entry is CPU cpu's TLB entry for va (0: none).
func (s *state) entry(cpu, va int) uint8 { return s.tlb[s.c.tlbAt(cpu, va)] }

func (s *state) setEntry(cpu, va int, e uint8) { s.tlb[s.c.tlbAt(cpu, va)] = e }

func (s *state) Vars() []model.Var {
	c := s.c
	out := s.mem.Vars()
	for i := range out {
		switch {
		case i < c.pages:
			out[i].Value = describePTE(uint8(s.mem.Peek(model.Addr(i))))
		case i < c.pages+c.mms:
			out[i].Value = c.describeWord(s.mem.Peek(model.Addr(i)))
		default:
			out[i].Value = cpus(uint8(s.mem.Peek(model.Addr(i))))
		}
	}
	for i := 0; i < c.ptls; i++ {
		out = append(out, model.Var{Name: fmt.Sprintf("PTL%d", i), Value: s.lockHolder(i)})
	}
	for cpu := 1; cpu < c.ncpu; cpu++ {
		var parts []string
		for va := 0; va < c.pages; va++ {
			if e := s.entry(cpu, va); e != 0 {
				parts = append(parts, fmt.Sprintf("va%d:%s", va, describePTE(e)))
			}
		}
		out = append(out, model.Var{Name: fmt.Sprintf("tlb[cpu%d]", cpu), Value: "{" + strings.Join(parts, " ") + "}"})
	}
	for p := 0; p < c.pages; p++ {
		out = append(out, model.Var{Name: fmt.Sprintf("page%d", p), Value: fmt.Sprintf("%s val=%d", pageStateNames[s.page[p]], s.val[p])})
	}
	r := s.r
	out = append(out,
		model.Var{Name: "reclaimer.pc", Value: fmt.Sprintf("%d page %d", r.pc, r.page)},
		model.Var{Name: "tlb_ubc", Value: fmt.Sprintf("flush_required=%v writable=%v cpumask=%s", r.flushReq, r.writable, cpus(r.mask))},
		model.Var{Name: "free_batch", Value: pageSet(r.queued)},
		model.Var{Name: "syscall.pc", Value: fmt.Sprintf("%d op %d", s.s.pc, s.s.op)},
	)
	for u := 0; u < c.users; u++ {
		out = append(out, model.Var{Name: fmt.Sprintf("user%d.accesses", u), Value: fmt.Sprint(s.acc[u])})
	}
	return append(out, model.Var{Name: "mprotect_returned", Value: pageSet(s.s.returned)})
}

func (s *state) lockHolder(i int) string {
	h := s.ptl[i].Holder()
	if h < 0 {
		return "free"
	}
	return "held by " + s.c.names[h]
}

// cpus renders a cpumask as "{1,2}".
func cpus(m uint8) string {
	var parts []string
	for i := 0; i < 8; i++ {
		if m&(1<<uint(i)) != 0 {
			parts = append(parts, fmt.Sprint(i))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func pageSet(m uint8) string {
	var parts []string
	for i := 0; i < 8; i++ {
		if m&(1<<uint(i)) != 0 {
			parts = append(parts, fmt.Sprintf("va%d", i))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}
