package pvflush

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// maxVCPUs bounds the fixed arrays; the vcpus parameter stays within it.
const maxVCPUs = 6

// maxInitiators bounds the initiators parameter: vCPU0 and vCPU1.
const maxInitiators = 2

// Bits of steal_time.preempted (arch/x86/include/uapi/asm/kvm_para.h).
const (
	kvmVCPUPreempted = 1 << 0 // KVM_VCPU_PREEMPTED
	kvmVCPUFlushTLB  = 1 << 1 // KVM_VCPU_FLUSH_TLB (KVM_VCPU_SHOULD_FLUSH in the seed)
	// shiftedFlush is what the seed's "1 << KVM_VCPU_SHOULD_FLUSH" sets
	// when KVM_VCPU_SHOULD_FLUSH is already the mask 1 << 1 (B1; the
	// value is inferred from the review).
	shiftedFlush = 1 << kvmVCPUFlushTLB
)

// Where a vCPU's host thread H_t is.
const (
	modeGuest   uint8 = iota // guest mode: runs guest code, takes IPIs
	modeHost                 // host kernel inside KVM_RUN: exit handling, emulation, requests
	modeDesched              // scheduled out by the host scheduler
	modeUser                 // KVM_RUN returned to userspace (the VMM's thread), vcpu_put done
)

var modeNames = [...]string{"guest", "host", "sched-out", "userspace"}

// The call-function IPI from an initiator to a vCPU, as the vCPU sees it
// (the csd the initiator queued on the vCPU's call_single_queue).
const (
	ipiNone    uint8 = iota
	ipiPending       // queued and sent, not yet taken (held while the vCPU is not in guest mode or has IRQs off)
	ipiHandler       // flush_tlb_func flushed the TLB entry; the ack (csd unlock) is next
	ipiAcked         // acked; the initiator's csd_lock_wait can return
)

var ipiNames = [...]string{"none", "pending", "in-handler", "acked"}

// The page-table page Q that maps X (X0 with two initiators), in the
// variants with a lockless walker.
const (
	ptLive     uint8 = iota // linked from pmd[X]
	ptUnlinked              // pmd cleared, queued in the mmu_gather (pte_free_tlb)
	ptRCU                   // handed to call_rcu_sched by tlb_table_flush
	ptFreed                 // freed: the allocator may reuse it
)

var ptNames = [...]string{"live", "unlinked", "call_rcu", "freed"}

// vcpu is vCPU t: the guest vCPU and its host thread H_t. Frames are small
// ints; -1 means "none".
type vcpu struct {
	mode uint8
	ipi  [maxInitiators]uint8 // the csd of initiator k on this vCPU
	tlb  [maxInitiators]int8  // frame of the cached translation of page k (TLB(t) ⊆ {Xk->P}), or -1
	// inflight is the frame of the translation KVM's emulator obtained by
	// walking the guest page table of page inflightPage and has not used
	// yet (B5), or -1.
	inflight     int8
	inflightPage uint8
	// hostCopy is vcpu->arch.st.preempted, the "already reported" guard of
	// the fixed host (SP2); with the 2017 host it is the host's copy of
	// the byte, vcpu->arch.st.steal.preempted, that record_steal_time
	// writes back.
	hostCopy uint8
	req      bool // KVM_REQ_STEAL_UPDATE pending
	// atBoundary is vcpu->arch.at_instruction_boundary: true after an exit
	// caused by a host interrupt, until the next vcpu_run iteration.
	atBoundary bool
	rsWrites   uint8 // record_steal_time's write-backs of the host copy still to do
	left       uint8 // guest accesses still to do
	// walk is the stage of a get_user_pages_fast on this vCPU (walker
	// variants): 0 outside it, else the next step (walkPTE...).
	walk    uint8
	walkPTE uint8 // the PTE value the walk read (for its re-check)
}

// flusher is the flush program of initiator k (vCPU k): its unmaps and
// flush_tlb_mm_range calls.
type flusher struct {
	phase uint8
	cur   uint8 // the vCPU phaseRead..phaseWait is about
	round uint8 // flush round: round r unmaps frame r of page k
	seen  uint8 // the value read by phaseRead, used by phaseCAS
	mask  uint8 // flushmask: bit t = vCPU t still to IPI / wait for
}

// Phases of an initiator.
const (
	phaseMap      uint8 = iota // set_pte_at: map X to the round's fresh page
	phaseZap                   // ptep_get_and_clear: clear the PTE of X
	phasePmdClear              // free_pgtables: pmd_clear, pte_free_tlb(Q) (walker variants, last round of vCPU0)
	phaseGen                   // flush_tlb_mm_range: inc_mm_tlb_gen
	phaseRead                  // kvm_flush_tlb_others: READ_ONCE(st[cur].preempted)
	phaseCAS                   // kvm_flush_tlb_others: cmpxchg (or the plain store of guest-plain-store)
	phaseSend                  // native_flush_tlb_others: queue the csd and send the IPI to cur
	phaseWait                  // native_flush_tlb_others: csd_lock_wait for cur's ack
	phaseRet                   // the flush returns; pages (and tables) are freed
	phaseDone
)

var phaseNames = [...]string{"map", "zap", "pmd-clear", "inc-tlb-gen", "read", "cmpxchg", "send-ipi", "wait-ack", "return", "done"}

// inFlight reports whether a flush of the initiator is in flight: from its
// PTE clear to its return (the progress property's obligation).
func (f *flusher) inFlight() bool { return f.phase > phaseZap && f.phase < phaseDone }

// userMode reports whether the initiator runs user code (between two
// unmaps), where it may access the other initiator's page.
func (f *flusher) userMode() bool {
	return f.phase == phaseMap || f.phase == phaseZap || f.phase == phaseDone
}

// state is one global state. The vCPUs are indexed by id (only 0..n-1 are
// used), the initiators by k (only 0..ni-1).
type state struct {
	mem model.Mem
	v   [maxVCPUs]vcpu
	in  [maxInitiators]flusher
	// freed is the observer of B-SAFE: frames of page k below freed[k]
	// have been freed and reused, because the flush that unmapped them
	// returned.
	freed   [maxInitiators]uint8
	preempt uint8 // host preemptions left (shared bound)
	uexit   uint8 // returns of KVM_RUN to userspace left (shared bound)
	pt      uint8 // the page-table page Q (walker variants)
	// gpWait is the set of vCPUs (bit t) that were inside an IRQ-off
	// section when Q was handed to call_rcu_sched and have not left it
	// since: the RCU-sched grace period waits for them.
	gpWait uint8
	lay    *layout // the machine's layout (not encoded)
}

// layout is what a machine fixes about its states: sizes and the fields
// the encoding leaves out.
type layout struct {
	n, ni  int
	walker bool
	uexits bool // user-exits > 0: the budget is encoded
	bits   int  // encoded bits after the memory
}

// The encoding packs everything after the memory into a bit stream, each
// field in as few bits as its range needs (Protocol.Params bounds them:
// frames and rounds <= flushes <= 4, preemptions <= 8, accesses <= 6,
// steal_time bytes < 8, phases < 16, vCPU ids < maxVCPUs <= 8): the
// explorer stores every reachable state as its key, so a smaller key is
// more states in memory. Fields that a configuration never uses (the
// second initiator, the walker) are left out.
const (
	bitsFrame = 3 // frame+1 <= flushes <= 4
	bitsMask  = maxVCPUs
)

func (l *layout) vcpuBits() int {
	b := 2 + 1 + 1 + 1 + 2 + 3 + bitsFrame // mode, hostCopy, req, boundary, rsWrites, left, inflight
	b += l.ni * (2 + bitsFrame)            // ipi[k], tlb[k]
	if l.ni > 1 {
		b++ // inflightPage
	}
	if l.walker {
		b += 3 + 3 // walk, walkPTE
	}
	return b
}

func (l *layout) initiatorBits() int { return 4 + 3 + 3 + 3 + bitsMask }

func (l *layout) globalBits() int {
	b := 4 + l.ni*bitsFrame // preempt, freed
	if l.walker {
		b += 2 + bitsMask // pt, gpWait
	}
	if l.uexits {
		b += bitsUexit
	}
	return b
}

// bitsUexit holds the user-exits budget (<= 4).
const bitsUexit = 3

func newLayout(n, ni int, walker, uexits bool) *layout {
	l := &layout{n: n, ni: ni, walker: walker, uexits: uexits}
	l.bits = l.globalBits() + ni*l.initiatorBits() + (n-l.first())*l.vcpuBits()
	return l
}

// first is the first vCPU the encoding holds: with one initiator, vCPU0's
// record never changes (nobody preempts it, sends it an IPI or reads its
// byte, and it accesses no page), so it is left out.
func (l *layout) first() int {
	if l.ni == 1 {
		return 1
	}
	return 0
}

// bitWriter appends values of a few bits each to a byte slice.
type bitWriter struct {
	b   []byte
	acc uint64
	n   uint
}

// put appends the low bits of v (v < 1<<bits, bits <= 32). The
// accumulator holds fewer than 32 bits between calls, so nothing is lost
// in the shift; whole 32-bit words are written at once, little-endian,
// which is the same byte stream as writing byte by byte.
func (w *bitWriter) put(v uint64, bits uint) {
	w.acc |= v << w.n
	w.n += bits
	if w.n >= 32 {
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(w.acc))
		w.acc >>= 32
		w.n -= 32
	}
}

func (w *bitWriter) done() []byte {
	for w.n > 0 {
		w.b = append(w.b, byte(w.acc))
		w.acc >>= 8
		w.n -= min(w.n, 8)
	}
	return w.b
}

// bitReader reads what a bitWriter wrote.
type bitReader struct {
	b   []byte
	acc uint64
	n   uint
}

func (r *bitReader) get(bits uint) uint64 {
	if r.n < bits && len(r.b) >= 4 {
		r.acc |= uint64(binary.LittleEndian.Uint32(r.b)) << r.n
		r.b = r.b[4:]
		r.n += 32
	}
	for r.n < bits {
		r.acc |= uint64(r.b[0]) << r.n
		r.b = r.b[1:]
		r.n += 8
	}
	v := r.acc & (1<<bits - 1)
	r.acc >>= bits
	r.n -= bits
	return v
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (l *layout) putVCPU(w *bitWriter, g *vcpu) {
	w.put(l.vcpuWord(g))
}

// vcpuWord packs a vCPU into one word of at most 27 bits, and says how
// many.
func (l *layout) vcpuWord(g *vcpu) (uint64, uint) {
	v := uint64(g.mode) | uint64(g.hostCopy)<<2 | b2u(g.req)<<3 | b2u(g.atBoundary)<<4 |
		uint64(g.rsWrites)<<5 | uint64(g.left)<<7 | uint64(g.inflight+1)<<10
	n := uint(10 + bitsFrame)
	for k := 0; k < l.ni; k++ {
		v |= (uint64(g.ipi[k]) | uint64(g.tlb[k]+1)<<2) << n
		n += 2 + bitsFrame
	}
	if l.ni > 1 {
		v |= uint64(g.inflightPage) << n
		n++
	}
	if l.walker {
		v |= (uint64(g.walk) | uint64(g.walkPTE)<<3) << n
		n += 6
	}
	return v, n
}

func (l *layout) getVCPU(r *bitReader, g *vcpu) {
	g.mode = uint8(r.get(2))
	g.hostCopy = uint8(r.get(1))
	f := r.get(2)
	g.req, g.atBoundary = f&1 != 0, f&2 != 0
	g.rsWrites = uint8(r.get(2))
	g.left = uint8(r.get(3))
	g.inflight = int8(r.get(bitsFrame)) - 1
	for k := 0; k < l.ni; k++ {
		g.ipi[k] = uint8(r.get(2))
		g.tlb[k] = int8(r.get(bitsFrame)) - 1
	}
	if l.ni > 1 {
		g.inflightPage = uint8(r.get(1))
	}
	if l.walker {
		g.walk = uint8(r.get(3))
		g.walkPTE = uint8(r.get(3))
	}
}

// putGlobals writes the globals as one word.
func (l *layout) putGlobals(w *bitWriter, s *state) {
	v, n := uint64(s.preempt), uint(4)
	for k := 0; k < l.ni; k++ {
		v |= uint64(s.freed[k]) << n
		n += bitsFrame
	}
	if l.walker {
		v |= (uint64(s.pt) | uint64(s.gpWait)<<2) << n
		n += 2 + bitsMask
	}
	w.put(v, n)
	if l.uexits {
		w.put(uint64(s.uexit), bitsUexit)
	}
}

// putFlusher writes an initiator as one word of 19 bits.
func putFlusher(w *bitWriter, f *flusher) {
	w.put(uint64(f.phase)|uint64(f.cur)<<4|uint64(f.round)<<7|uint64(f.seen)<<10|uint64(f.mask)<<13, 13+bitsMask)
}

func getFlusher(r *bitReader, f *flusher) {
	f.phase = uint8(r.get(4))
	f.cur = uint8(r.get(3))
	f.round = uint8(r.get(3))
	f.seen = uint8(r.get(3))
	f.mask = uint8(r.get(bitsMask))
}

// AppendKey implements model.State: the memory, then the packed globals,
// initiators and vCPUs.
func (s *state) AppendKey(b []byte) []byte {
	b = s.mem.AppendKey(b)
	l := s.lay
	w := bitWriter{b: b}
	l.putGlobals(&w, s)
	for k := 0; k < l.ni; k++ {
		putFlusher(&w, &s.in[k])
	}
	for t := l.first(); t < l.n; t++ {
		l.putVCPU(&w, &s.v[t])
	}
	return w.done()
}

// Decode implements model.State: s must come from the machine's Init,
// which fixes the layout and the memory's.
func (s *state) Decode(b []byte) error {
	b, err := s.mem.DecodeFrom(b)
	if err != nil {
		return err
	}
	l := s.lay
	if want := (l.bits + 7) / 8; len(b) != want {
		return fmt.Errorf("pvflush: %d bytes after the memory, want %d", len(b), want)
	}
	r := bitReader{b: b}
	s.preempt = uint8(r.get(4))
	for k := 0; k < l.ni; k++ {
		s.freed[k] = uint8(r.get(bitsFrame))
	}
	if l.walker {
		s.pt = uint8(r.get(2))
		s.gpWait = uint8(r.get(bitsMask))
	}
	if l.uexits {
		s.uexit = uint8(r.get(bitsUexit))
	}
	for k := 0; k < l.ni; k++ {
		getFlusher(&r, &s.in[k])
	}
	for t := l.first(); t < l.n; t++ {
		l.getVCPU(&r, &s.v[t])
	}
	return nil
}

// CopyFrom implements model.Copier.
func (s *state) CopyFrom(src model.State) {
	o := src.(*state)
	s.mem.CopyFrom(o.mem)
	s.v, s.in, s.freed = o.v, o.in, o.freed
	s.preempt, s.uexit, s.pt, s.gpWait, s.lay = o.preempt, o.uexit, o.pt, o.gpWait, o.lay
}

// names are the machine's names for pages, frames and vCPUs, for labels
// and Vars.
type names struct {
	ni int
}

// page names page k: X with one initiator, X0 and X1 with two.
func (nm names) page(k int) string {
	if nm.ni == 1 {
		return "X"
	}
	return fmt.Sprintf("X%d", k)
}

// frame names frame f of page k: P0, P1 ... with one initiator, P0.0,
// P1.0 ... (page.round) with two.
func (nm names) frame(k int, f int8) string {
	if nm.ni == 1 {
		return fmt.Sprintf("P%d", f)
	}
	return fmt.Sprintf("P%d.%d", k, f)
}

// tr renders the translation of page k to frame f.
func (nm names) tr(k int, f int8) string {
	if f < 0 {
		return "none"
	}
	return nm.page(k) + "->" + nm.frame(k, f)
}

// pte renders a PTE word of page k (frame+1, 0: not present).
func (nm names) pte(k int, v uint64) string {
	if v == 0 {
		return "not present"
	}
	return nm.tr(k, int8(v-1))
}

// Vars implements model.State.
func (s *state) Vars() []model.Var {
	l := s.lay
	nm := names{ni: l.ni}
	vs := s.mem.Vars()
	for k := 0; k < l.ni; k++ {
		vs[k].Value = nm.pte(k, s.mem.Peek(model.Addr(k)))
	}
	for k := 0; k < l.ni; k++ {
		f := &s.in[k]
		var mask []string
		for t := 0; t < l.n; t++ {
			if f.mask&(1<<t) != 0 {
				mask = append(mask, fmt.Sprintf("vCPU%d", t))
			}
		}
		p := fmt.Sprintf("vCPU%d.", k)
		vs = append(vs,
			model.Var{Name: p + "phase", Value: fmt.Sprintf("%s(round %d, vCPU%d)", phaseNames[f.phase], f.round, f.cur)},
			model.Var{Name: p + "flushmask", Value: "{" + strings.Join(mask, ",") + "}"},
		)
	}
	for k := 0; k < l.ni; k++ {
		name := "freed"
		if l.ni > 1 {
			name = fmt.Sprintf("freed[%s]", nm.page(k))
		}
		vs = append(vs, model.Var{Name: name, Value: fmt.Sprintf("frames < %s", nm.frame(k, int8(s.freed[k])))})
	}
	vs = append(vs, model.Var{Name: "preemptions-left", Value: fmt.Sprint(s.preempt)})
	if l.uexits {
		vs = append(vs, model.Var{Name: "user-exits-left", Value: fmt.Sprint(s.uexit)})
	}
	if l.walker {
		var wait []string
		for t := 0; t < l.n; t++ {
			if s.gpWait&(1<<t) != 0 {
				wait = append(wait, fmt.Sprintf("vCPU%d", t))
			}
		}
		vs = append(vs,
			model.Var{Name: "Q", Value: ptNames[s.pt]},
			model.Var{Name: "rcu-gp-waits-for", Value: "{" + strings.Join(wait, ",") + "}"},
		)
	}
	for t := 0; t < l.n; t++ {
		g := &s.v[t]
		p := fmt.Sprintf("vCPU%d.", t)
		vs = append(vs, model.Var{Name: p + "mode", Value: modeNames[g.mode]})
		for k := 0; k < l.ni; k++ {
			name := p + "ipi"
			if l.ni > 1 {
				name = fmt.Sprintf("%sipi[vCPU%d]", p, k)
			}
			vs = append(vs, model.Var{Name: name, Value: ipiNames[g.ipi[k]]})
		}
		for k := 0; k < l.ni; k++ {
			name := p + "tlb"
			if l.ni > 1 {
				name = fmt.Sprintf("%stlb[%s]", p, nm.page(k))
			}
			vs = append(vs, model.Var{Name: name, Value: nm.tr(k, g.tlb[k])})
		}
		vs = append(vs,
			model.Var{Name: p + "inflight", Value: nm.tr(int(g.inflightPage), g.inflight)},
			model.Var{Name: p + "host.st.preempted", Value: fmt.Sprint(g.hostCopy)},
			model.Var{Name: p + "host", Value: fmt.Sprintf("req=%v boundary=%v writebacks-left=%d", g.req, g.atBoundary, g.rsWrites)},
			model.Var{Name: p + "accesses-left", Value: fmt.Sprint(g.left)},
		)
		if l.walker {
			vs = append(vs, model.Var{Name: p + "gup", Value: walkNames[g.walk]})
		}
	}
	return vs
}
