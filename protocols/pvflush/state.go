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
// targets are indexed by vCPU id (index 0 unused).
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
	n       uint8 // vCPUs
}

func (s *state) Clone() model.State {
	c := *s
	c.mem = s.mem.Clone()
	return &c
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func (s *state) AppendKey(b []byte) []byte {
	b = s.mem.AppendKey(b)
	b = append(b, s.phase, s.cur, s.round, s.seen, byte(s.mask), byte(s.mask>>8), s.freed, s.preempt)
	for t := 1; t < int(s.n); t++ {
		g := &s.tg[t]
		flags := b2u(g.req) | b2u(g.atBoundary)<<1 | b2u(g.rsFlush)<<2 | b2u(g.rsWrite)<<3
		b = append(b, g.mode, g.ipi, byte(g.tlb), byte(g.inflight), g.hostCopy, flags, g.left)
	}
	return b
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
