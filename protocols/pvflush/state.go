package pvflush

import (
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// maxVCPUs bounds the fixed arrays; the vcpus parameter stays within it.
const maxVCPUs = 6

// Bits of steal_time.preempted (arch/x86/include/uapi/asm/kvm_para.h).
const (
	kvmVCPUPreempted = 1 << 0 // KVM_VCPU_PREEMPTED
	kvmVCPUFlushTLB  = 1 << 1 // KVM_VCPU_FLUSH_TLB (KVM_VCPU_SHOULD_FLUSH in the seed)
	// shiftedFlush is what the seed's "1 << KVM_VCPU_SHOULD_FLUSH" sets
	// when KVM_VCPU_SHOULD_FLUSH is already the mask 1 << 1 (pvflush.md
	// B1; the value is inferred from the review).
	shiftedFlush = 1 << kvmVCPUFlushTLB
)

// Shared words. Word 0 is the PTE of X; word t (t >= 1) is
// st[t].preempted, the steal_time byte of target vCPU t. The PTE holds
// frame+1 of the page X maps, or 0 when X is not present.
const pteX model.Addr = 0

func stAddr(t int) model.Addr { return model.Addr(t) }

// Where a target's host thread H_t is.
const (
	modeGuest   uint8 = iota // guest mode: runs guest code, takes IPIs
	modeHost                 // host kernel inside KVM_RUN: exit handling, emulation, requests
	modeDesched              // scheduled out by the host scheduler
)

var modeNames = [...]string{"guest", "host", "sched-out"}

// The call-function IPI from vCPU0 to a target, as seen by the target.
const (
	ipiNone    uint8 = iota
	ipiPending       // sent, not yet taken (held while the target is not in guest mode)
	ipiHandler       // flush_tlb_func flushed the TLB; the ack (csd unlock) is next
	ipiAcked         // acked; vCPU0's csd_lock_wait can return
)

var ipiNames = [...]string{"none", "pending", "in-handler", "acked"}

// target is vCPU t: the guest vCPU and its host thread H_t. Frames are
// small ints; -1 means "none".
type target struct {
	mode uint8
	ipi  uint8
	tlb  int8 // frame of the cached translation of X (TLB(t) ⊆ {X->P}), or -1
	// inflight is the frame of the translation KVM's emulator obtained by
	// walking the guest page table and has not used yet (Appendix C note
	// 4), or -1.
	inflight int8
	hostCopy uint8 // vcpu->arch.st.preempted: "already reported" (SP2)
	req      bool  // KVM_REQ_STEAL_UPDATE pending
	// atBoundary is vcpu->arch.at_instruction_boundary: true after an exit
	// caused by a host interrupt, until the next vcpu_run iteration.
	atBoundary bool
	rsFlush    bool  // record_steal_time saw FLUSH_TLB; its kvm_vcpu_flush_tlb_guest is next
	rsWrite    bool  // host-copy: record_steal_time's write-back of the copy is next
	left       uint8 // guest accesses of X still to do
}

// Phases of vCPU0, the initiator.
const (
	phaseMap  uint8 = iota // set_pte_at: map X to the round's fresh page
	phaseZap               // ptep_get_and_clear: clear the PTE of X
	phaseRead              // kvm_flush_tlb_others: READ_ONCE(st[cur].preempted)
	phaseCAS               // kvm_flush_tlb_others: cmpxchg (or the plain store of guest-plain-store)
	phaseSend              // native_flush_tlb_others: send the IPI to cur
	phaseWait              // native_flush_tlb_others: csd_lock_wait for cur's ack
	phaseRet               // kvm_flush_tlb_others returns; the page is freed and reused
	phaseDone
)

var phaseNames = [...]string{"map", "zap", "read", "cmpxchg", "send-ipi", "wait-ack", "return", "done"}

// state is one global state. The initiator's fields are plain; the
// targets are indexed by vCPU id (index 0 unused, and only 1..n-1 are
// encoded).
type state struct {
	mem   model.Mem
	tg    [maxVCPUs]target
	phase uint8
	cur   uint8  // the target phaseRead..phaseWait is about
	round uint8  // flush round: round r unmaps frame r
	seen  uint8  // the value read by phaseRead, used by phaseCAS
	mask  uint16 // flushmask: bit t = vCPU t still to IPI / wait for
	// freed is the observer of B-SAFE: frames below it have been freed
	// and reused, because the flush that unmapped them returned.
	freed   uint8
	preempt uint8 // host preemptions left (shared bound)
	n       uint8 // vCPUs (fixed by the machine, not encoded)
}

// The encoding packs the state into as few bytes as its ranges allow,
// since the explorer stores every reachable state as its key: the memory
// (one byte per word under sequential consistency), then vCPU0 in
// initiatorBytes, then each target in targetBytes. Every packed field is
// below 16 for every parameter value (Protocol.Params bounds them: frames
// and rounds below flushes+1 <= 5, preemptions <= 8, accesses <= 6, a
// steal_time byte below 8, phases below 8, vCPU ids below maxVCPUs), so
// two fields share a byte as nibbles, and the flushmask (bits below
// maxVCPUs <= 8) is one byte: the packing is lossless.
const (
	initiatorBytes = 4
	targetBytes    = 3
)

// flags packs a target's host booleans into four bits.
func (g *target) flags() byte {
	return b2u(g.req) | b2u(g.atBoundary)<<1 | b2u(g.rsFlush)<<2 | b2u(g.rsWrite)<<3
}

// pack returns the encoding of target g: mode, IPI state and host flags;
// the TLB entry and in-flight translation (frame+1, 0 for none); the host
// copy (0 or PREEMPTED) and the accesses left.
func (g *target) pack() [targetBytes]byte {
	return [targetBytes]byte{
		g.mode | g.ipi<<2 | g.flags()<<4,
		uint8(g.tlb+1) | uint8(g.inflight+1)<<4,
		g.hostCopy | g.left<<1,
	}
}

func (g *target) unpack(r []byte) {
	g.mode, g.ipi = r[0]&3, r[0]>>2&3
	g.req, g.atBoundary, g.rsFlush, g.rsWrite = r[0]&0x10 != 0, r[0]&0x20 != 0, r[0]&0x40 != 0, r[0]&0x80 != 0
	g.tlb, g.inflight = int8(r[1]&15)-1, int8(r[1]>>4)-1
	g.hostCopy, g.left = r[2]&1, r[2]>>1
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// appendInitiator appends vCPU0's control state and the globals.
func (s *state) appendInitiator(b []byte) []byte {
	return append(b, s.phase|s.cur<<4, s.round|s.freed<<4, byte(s.mask), s.preempt|s.seen<<4)
}

// AppendKey implements model.State.
func (s *state) AppendKey(b []byte) []byte {
	b = s.mem.AppendKey(b)
	b = s.appendInitiator(b)
	for t := 1; t < int(s.n); t++ {
		r := s.tg[t].pack()
		b = append(b, r[:]...)
	}
	return b
}

// Decode implements model.State: s must come from the machine's Init,
// which fixes n and the memory's layout.
func (s *state) Decode(b []byte) error {
	b, err := s.mem.DecodeFrom(b)
	if err != nil {
		return err
	}
	if len(b) != initiatorBytes+targetBytes*(int(s.n)-1) {
		return fmt.Errorf("pvflush: %d bytes after the memory, want %d", len(b), initiatorBytes+targetBytes*(int(s.n)-1))
	}
	s.phase, s.cur = b[0]&15, b[0]>>4
	s.round, s.freed = b[1]&15, b[1]>>4
	s.mask = uint16(b[2])
	s.preempt, s.seen = b[3]&15, b[3]>>4
	b = b[initiatorBytes:]
	for t := 1; t < int(s.n); t++ {
		s.tg[t].unpack(b[:targetBytes])
		b = b[targetBytes:]
	}
	return nil
}

func frameName(f int8) string {
	if f < 0 {
		return "none"
	}
	return fmt.Sprintf("X->P%d", f)
}

func (s *state) Vars() []model.Var {
	vs := s.mem.Vars()
	vs[0].Value = pteName(s.mem.Peek(pteX))
	var mask []string
	for t := 1; t < int(s.n); t++ {
		if s.mask&(1<<t) != 0 {
			mask = append(mask, fmt.Sprintf("vCPU%d", t))
		}
	}
	vs = append(vs,
		model.Var{Name: "vCPU0.phase", Value: fmt.Sprintf("%s(round %d, vCPU%d)", phaseNames[s.phase], s.round, s.cur)},
		model.Var{Name: "vCPU0.flushmask", Value: "{" + strings.Join(mask, ",") + "}"},
		model.Var{Name: "freed", Value: fmt.Sprintf("frames < P%d", s.freed)},
		model.Var{Name: "preemptions-left", Value: fmt.Sprint(s.preempt)},
	)
	for t := 1; t < int(s.n); t++ {
		g := &s.tg[t]
		p := fmt.Sprintf("vCPU%d.", t)
		vs = append(vs,
			model.Var{Name: p + "mode", Value: modeNames[g.mode]},
			model.Var{Name: p + "ipi", Value: ipiNames[g.ipi]},
			model.Var{Name: p + "tlb", Value: frameName(g.tlb)},
			model.Var{Name: p + "inflight", Value: frameName(g.inflight)},
			model.Var{Name: p + "host.st.preempted", Value: fmt.Sprint(g.hostCopy)},
			model.Var{Name: p + "host", Value: fmt.Sprintf("req=%v boundary=%v flush-next=%v writeback-next=%v", g.req, g.atBoundary, g.rsFlush, g.rsWrite)},
			model.Var{Name: p + "accesses-left", Value: fmt.Sprint(g.left)},
		)
	}
	return vs
}

// pteName renders the PTE of X.
func pteName(v uint64) string {
	if v == 0 {
		return "not present"
	}
	return fmt.Sprintf("X->P%d", v-1)
}
