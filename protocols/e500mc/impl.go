package e500mc

// The real concurrent implementation of the protocol, written against
// explorer/rt (DESIGN.md, "Real implementations"). It mirrors the code the
// model mirrors (see doc.go for the sources):
//
//   - arch/powerpc/kvm/e500mc.c, kvmppc_core_vcpu_load_e500mc and
//     kvmppc_core_vcpu_put_e500mc: the flush condition (oldpir != PIR ||
//     last_vcpu_of_lpid[lpid] != vcpu, as merged at torvalds/linux
//     32f35b8; last_vcpu_on_cpu before the seed; oldpir only at 0980bd9),
//     kvmppc_e500_tlbil_all (tlbilxlpid, local to the core),
//     kvmppc_core_vcpu_create_e500mc (oldpir = 0xffffffff),
//     kvmppc_core_init_vm_e500mc / kvmppc_alloc_lpid (lowest free LPID),
//     kvmppc_core_destroy_vm_e500mc;
//   - arch/powerpc/kvm/e500_mmu.c and e500_mmu_host.c:
//     kvmppc_e500_emul_tlbwe, kvmppc_e500_emul_tlbilx,
//     kvmppc_e500_tlbil_one and the DTLB-miss refill kvmppc_mmu_map;
//   - seed 002 ([PATCH v3] KVM: PPC: e500mc: Enhance tlb invalidation
//     condition on vcpu schedule) and /work/shared/protocols/e500mc.md.
//
// # Threads and steps
//
// One goroutine per physical CPU ("CPU0", "CPU1", ...: the host scheduler
// of that core, which loads a vCPU, runs its guest and puts it) and, when
// cycles > 0, one "VMM" goroutine that destroys a VM and creates a VM and
// its vCPUs in its place; the same threads, in the same order, as
// Machine.Threads(). Every step of the model is exactly one scheduling
// point of this code, with the model's label: the primitive carries the
// static part of the label and Env.Note completes it with what the step
// found, so the final label is the model's byte for byte.
//
//   - CPU idle: Env.Choose over the vCPU slots (alternative v loads the
//     vCPU at slot v, as the model's alternative v), then the whole
//     kvmppc_core_vcpu_load_e500mc. The model's load is one atomic step
//     because the kernel runs it with preemption disabled; here it is one
//     step because it contains no other scheduling point.
//   - CPU with a vCPU loaded: Env.Choose over altAccess, altTLBWE,
//     altTLBILX and altPut (the model's alternative numbers), then the
//     guest access (TLB lookup, refill on a miss), the emulated tlbwe or
//     tlbilx, or kvmppc_core_vcpu_put_e500mc.
//   - VMM: Env.Choose over (VM slot, teardown CPU) pairs, numbered
//     k*cpus+c as in the model, for kvm_destroy_vm; Env.Yield for
//     kvmppc_core_init_vm_e500mc and for each kvmppc_core_vcpu_create_e500mc.
//
// Under the controlled runtime each step is atomic because exactly one
// goroutine runs between two scheduling points. Under the Go scheduler
// the same atomicity (preempt_disable around load and put; guest
// operations that touch only the core's own TLB and the running vCPU's
// gtlb) is given by hostLock, a real mutex every step holds, and
// goroutines that have nothing to do (an idle core with no runnable vCPU,
// the VMM while every VM has a loaded vCPU) sleep on hostCond. Neither is
// touched under control, where they would add steps the model does not
// have: a goroutine with nothing to do parks at its Choose instead (see
// Gated).
//
// # Addresses and bookkeeping
//
// A vCPU pointer is its slot in a fixed slab, plus one (0 = NULL), and
// slots are handed out lowest free first, as kmem_cache gives a freed
// struct kvm_vcpu's address to the next allocation: this is what makes the
// ABA of the pointer comparison in the flush condition real (a Go pointer
// would never be reused while a per-CPU variable still holds it). The
// simulated hardware TLB is tagged by LPID only; each entry also carries
// the checker's bookkeeping (which vCPU and VM incarnation installed it),
// never read by the protocol code, and a TLB hit is checked against
// no-pollution and vm-isolation at the step where the model checks it,
// with Env.Fail and the model's property names. The guest TLB of each vCPU
// incarnation is an object whose operations are recorded with Env.Call
// and Env.Return, as the model's, for the linearizability check.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// Impl is the real implementation of every variant of the model. Under the
// Go scheduler (rt.Real, conform.Target.Real) and along a given schedule
// (rt.Replay, rt.ReplayExpect, conform.Target.ReplayModel) it is used as
// is; for controlled runs chosen by a strategy (Random, PCT) use the
// strategy and Impl that Gated returns.
var Impl = &rt.Impl{
	Variants: []string{"per-lpid", "per-cpu", "oldpir-only", "no-oldpir", "oldpir-zero", "never-flush", "preempt-window"},
	New: func(variant string, p model.Params) (rt.Body, error) {
		return newBody(variant, p, nil)
	},
}

// Controlled runs that choose on their own go through the gate (Gated).
func init() { Impl.Gate = Gated }

// PropHarness is the property of a run in which a strategy took an
// alternative the code does not offer in that state: a controlled run of
// Impl that was not scheduled through Gated. It is a fault of the harness,
// never of the protocol.
const PropHarness = "e500mc-harness"

// tlbEntry is one core's hardware TLB entry for the guest's effective
// address 0 under one LPID. The tag is (TGS=1, TLPID, EA); creator and vm
// are bookkeeping for the checks.
type tlbEntry struct {
	creator uint8 // installer's vCPU incarnation id + 1; 0 = invalid
	vm      uint8 // installer's VM incarnation id
	rpn     uint8 // guest page
}

// pcpu is a physical CPU: what it runs, SPRN_LPID, its hardware TLB and
// its per-CPU variables (DEFINE_PER_CPU last_vcpu_of_lpid /
// last_vcpu_on_cpu), which hold vCPU pointers (slot + 1).
type pcpu struct {
	run        int // slot of the loaded vCPU, -1 when idle
	lpidr      int
	step       int // guest operations in this slice (scenario 1's script)
	tlb        [maxLPIDs + 1]tlbEntry
	lastOfLPID [maxLPIDs + 1]uint64
	lastOnCPU  uint64
}

// kvcpu is a struct kvm_vcpu in its slab slot.
type kvcpu struct {
	live   bool
	kvm    int   // struct kvm slot
	id     uint8 // incarnation (the letter in labels)
	cpu    int   // loaded on, -1
	mid    uint8 // preempt-window: a load decided and was preempted (midSkip, midFlush)
	oldpir uint64
	gtlb   uint8 // the guest TLB entry for EA 0: page, 0 = invalid
}

// kvmVM is a struct kvm slot.
type kvmVM struct {
	live bool
	id   uint8 // incarnation: VM1, VM2, VM3...
	nv   int   // vCPUs it has (or will have while the VMM creates them)
	lpid int   // kvm->arch.lpid
}

// host is one execution: the machine's memory, shared by the goroutines.
type host struct {
	e     *rt.Env
	ctl   bool // controlled: labels are completed, hostLock is not used
	cfg   config
	slots int
	vmm   int // thread id of the VMM, -1 without one

	hostLock *rt.Mutex // real mode only: every step holds it
	hostCond *rt.Cond  // real mode only: the end of every step broadcasts

	cpus  [maxCPUs]pcpu
	vcpus [maxSlots]kvcpu
	vms   [maxVMs]kvmVM

	lpidInuse uint64 // the LPID allocator's bitmap: bit 0 is the host's
	loadsLeft int    // budgets, global as in the model
	opsLeft   int
	nextVCPU  uint8
	nextVM    uint8

	// The VMM's program counter, which allowed reads.
	cycle    int
	phase    int
	vmmVM    int
	toCreate int
}

// newBody resolves the configuration as the model does (the same
// parameters bound the same loops) and returns the body of one execution;
// g, if not nil, is told about each execution's host.
func newBody(variant string, p model.Params, g *gate) (rt.Body, error) {
	m, err := newMachine(variant, p)
	if err != nil {
		return nil, err
	}
	cfg := m.(*machine).cfg
	return func(e *rt.Env) func() *model.Violation {
		h := newHost(e, cfg)
		if g != nil {
			g.h = h
		}
		for c := 0; c < cfg.cpus; c++ {
			e.Go(fmt.Sprintf("CPU%d", c), func() { h.cpuLoop(c) })
		}
		if h.vmm >= 0 {
			e.Go("VMM", h.vmmLoop)
		}
		return nil
	}, nil
}

// newHost builds the boot state: VM1 (kvm0) with LPID 1 and vCPUs A, B...,
// VM2 (kvm1) with LPID 2 and the next ones, as the model's initial state.
func newHost(e *rt.Env, cfg config) *host {
	h := &host{e: e, ctl: e.IsControlled(), cfg: cfg, vmm: -1,
		slots: cfg.vmVCPUs[0] + cfg.vmVCPUs[1], loadsLeft: cfg.loads, opsLeft: cfg.ops}
	h.hostLock = e.Mutex("hostLock")
	h.hostCond = e.Cond("hostCond", h.hostLock)
	if cfg.cycles > 0 {
		h.vmm = cfg.cpus
	}
	for c := range h.cpus {
		h.cpus[c].run = -1
	}
	slot := 0
	for k := 0; k < maxVMs; k++ {
		h.vms[k] = kvmVM{live: true, id: uint8(k), nv: cfg.vmVCPUs[k], lpid: k + 1}
		for i := 0; i < cfg.vmVCPUs[k]; i++ {
			h.vcpus[slot] = kvcpu{live: true, kvm: k, id: uint8(slot), cpu: -1, oldpir: cfg.oldpirInit}
			slot++
		}
	}
	for v := slot; v < maxSlots; v++ {
		h.vcpus[v].cpu = -1
	}
	h.nextVCPU, h.nextVM = uint8(slot), maxVMs
	h.lpidInuse = 1 | 1<<1 | 1<<2
	return h
}

// begin and end bracket a step. In real mode they take hostLock and wake
// the sleepers; under control they do nothing (the step is atomic).
func (h *host) begin() {
	if !h.ctl {
		h.hostLock.Lock("hostLock")
	}
}

func (h *host) end() {
	if !h.ctl {
		h.hostCond.Broadcast("hostCond")
		h.hostLock.Unlock("hostLock")
	}
}

// ready reports, inside begin, whether thread t has something to do; in
// real mode it sleeps until it has, or until it never will (false). Under
// control it returns false only when t is done for good; a thread with
// nothing to do yet parks at its Choose, which Gated keeps it from taking.
func (h *host) ready(t int) bool {
	for !h.done(t) {
		if h.ctl || h.anyAllowed(t) {
			return true
		}
		h.hostCond.Wait("hostCond")
	}
	return false
}

// pick is thread t's step with n alternatives numbered as the model's. In
// real mode it draws among those the code allows now; under control it
// takes the strategy's and fails loudly if the code does not allow it.
func (h *host) pick(t int, label string, n int) (int, bool) {
	if h.ctl {
		alt := h.e.Choose(label, n)
		if !h.allowed(t, alt) {
			h.e.Failf(PropHarness, "%s took alternative %d of %q, which the code does not offer in this state: schedule controlled runs of e500mc.Impl through e500mc.Gated", h.threadName(t), alt, label)
			return alt, false
		}
		return alt, true
	}
	var alts [maxSlots + maxVMs*maxCPUs + 4]int
	k := 0
	for a := 0; a < n; a++ {
		if h.allowed(t, a) {
			alts[k] = a
			k++
		}
	}
	return alts[h.e.Choose(label, k)], true
}

// note completes the label of the step just taken (static part, then the
// rest of full). Labels are only built under control.
func (h *host) note(static, full string) {
	if !strings.HasPrefix(full, static) {
		h.e.Failf(PropHarness, "label %q does not start with its static part %q", full, static)
		return
	}
	h.e.Note(full[len(static):])
}

func (h *host) threadName(t int) string {
	if t == h.vmm {
		return "VMM"
	}
	return fmt.Sprintf("CPU%d", t)
}

// allowed reports whether thread t's alternative alt can be taken now: the
// code's own conditions, which are the alternatives the model's step
// draws from (the host scheduler runs only a live vCPU that is not loaded
// elsewhere, within the budgets; the VMM destroys only a VM none of whose
// vCPUs is loaded). TestImplOffersTheModelsChoices checks that they give
// explorer.Enabled's choices at every step.
func (h *host) allowed(t, alt int) bool {
	if t == h.vmm {
		if h.cycle >= h.cfg.cycles {
			return false
		}
		if h.phase != phaseDestroy {
			return alt == 0
		}
		k := alt / h.cfg.cpus
		return k < maxVMs && h.vms[k].live && !h.anyLoaded(k)
	}
	if h.cfg.scenario == scenarioAlternating {
		return alt == h.scripted(t)
	}
	p := &h.cpus[t]
	if p.run < 0 {
		if alt >= h.slots {
			return false
		}
		vc := &h.vcpus[alt]
		return vc.live && vc.cpu < 0 && (h.loadsLeft > 0 || vc.mid != midNone)
	}
	switch alt {
	case altAccess, altTLBWE:
		return h.opsLeft > 0
	case altTLBILX:
		// kvmppc_e500_emul_tlbilx only acts on a matching gtlb entry.
		return h.opsLeft > 0 && h.vcpus[p.run].gtlb != 0
	}
	return alt == altPut
}

// scripted is the seed's workload (scenario 1): the one thing CPU c does
// next, or -1.
func (h *host) scripted(c int) int {
	p := &h.cpus[c]
	if p.run < 0 {
		if h.loadsLeft == 0 {
			return -1
		}
		return (2*h.cfg.rounds - h.loadsLeft) % 2
	}
	if p.run == 0 {
		switch {
		case h.vcpus[0].gtlb == 0:
			return altTLBWE
		case p.step == 0 || p.step == 1 && h.loadsLeft == 2*h.cfg.rounds-1:
			return altAccess
		}
	}
	return altPut
}

func (h *host) anyAllowed(t int) bool {
	for a := 0; a < maxSlots+maxVMs*maxCPUs+4; a++ {
		if h.allowed(t, a) {
			return true
		}
	}
	return false
}

// done reports whether thread t will never do anything again: an idle
// core once the load budget is spent and no load is half done, the VMM
// after its cycles.
func (h *host) done(t int) bool {
	if t == h.vmm {
		return h.cycle >= h.cfg.cycles
	}
	if h.cpus[t].run >= 0 || h.loadsLeft > 0 {
		return false
	}
	for v := 0; v < h.slots; v++ {
		if h.vcpus[v].live && h.vcpus[v].mid != midNone {
			return false
		}
	}
	return true
}

func (h *host) anyLoaded(k int) bool {
	for v := 0; v < h.slots; v++ {
		if vc := &h.vcpus[v]; vc.live && vc.kvm == k && (vc.cpu >= 0 || vc.mid != midNone) {
			return true
		}
	}
	return false
}

// cpuLoop is physical CPU c's host scheduler.
func (h *host) cpuLoop(c int) {
	for {
		h.begin()
		if !h.ready(c) {
			h.end()
			return
		}
		var ok bool
		if h.cpus[c].run < 0 {
			var v int
			v, ok = h.pick(c, loadLabel, h.slots)
			if ok {
				h.load(c, v)
			}
		} else {
			var alt int
			alt, ok = h.pick(c, "", altPut+1)
			switch {
			case !ok:
			case alt == altAccess:
				h.guestAccess(c)
			case alt == altTLBWE:
				h.guestTLBWE(c)
			case alt == altTLBILX:
				h.guestTLBILX(c)
			case alt == altPut:
				h.put(c)
			}
		}
		h.end()
		if !ok {
			return
		}
	}
}

const (
	loadLabel       = "kvmppc_core_vcpu_load_e500mc: vCPU "
	destroyLabel    = "kvm_destroy_vm: VM"
	initVMLabel     = "kvmppc_core_init_vm_e500mc: VM"
	vcpuCreateLabel = "kvmppc_core_vcpu_create_e500mc: vCPU "
)

// vmmLoop is the VMM: destroy a VM, create one in its place with the
// lowest free LPID, then its vCPUs at the lowest free slots; cycles times.
func (h *host) vmmLoop() {
	for h.cycle < h.cfg.cycles {
		h.begin()
		if !h.ready(h.vmm) {
			h.end()
			return
		}
		alt, ok := h.pick(h.vmm, destroyLabel, maxVMs*h.cfg.cpus)
		if ok {
			h.destroyVM(alt/h.cfg.cpus, alt%h.cfg.cpus)
		}
		h.end()
		if !ok {
			return
		}
		h.begin()
		h.e.Yield(initVMLabel)
		ok = h.createVM()
		h.end()
		if !ok {
			return
		}
		for h.phase == phaseCreateVCPU {
			h.begin()
			h.e.Yield(vcpuCreateLabel)
			h.createVCPU()
			h.end()
		}
	}
}

// load is kvmppc_core_vcpu_load_e500mc(vcpu at slot v) on CPU c.
func (h *host) load(c, v int) {
	vc := &h.vcpus[v]
	fn := ""
	if h.ctl {
		fn = fmt.Sprintf("kvmppc_core_vcpu_load_e500mc: vCPU %s of %s on CPU%d", vcpuName(vc.id), vmName(h.vms[vc.kvm].id), c)
	}
	if vc.mid != midNone {
		// The preempted load resumes here, on whichever core picked the
		// vCPU, and acts on the decision taken on the old one.
		l := h.vms[vc.kvm].lpid
		flush := vc.mid == midFlush
		vc.mid = midNone
		h.enter(c, v, l)
		if !flush {
			if h.ctl {
				h.note(loadLabel, fn+" resumes after preemption and enters the guest without a flush (decided before it was preempted)")
			}
			return
		}
		h.flush(c, v, l)
		if h.ctl {
			h.note(loadLabel, fmt.Sprintf("%s resumes after preemption, tlbilxlpid %d (decided before it was preempted)", fn, l))
		}
		return
	}
	h.loadsLeft--
	l := h.vms[vc.kvm].lpid // mtspr(SPRN_LPID, get_lpid(vcpu))
	flush, why := h.decide(c, v, l)
	if h.cfg.preemptible {
		vc.mid = midSkip
		verdict := "no flush"
		if flush {
			vc.mid, verdict = midFlush, "flush"
		}
		if h.ctl {
			h.note(loadLabel, fmt.Sprintf("%s decides %s (%s), then is preempted before acting on it", fn, verdict, why))
		}
		return
	}
	h.enter(c, v, l)
	if !flush {
		if h.ctl {
			h.note(loadLabel, fmt.Sprintf("%s, no flush (%s)", fn, why))
		}
		return
	}
	h.flush(c, v, l)
	if h.ctl {
		h.note(loadLabel, fmt.Sprintf("%s, tlbilxlpid %d (%s)", fn, l, why))
	}
}

func (h *host) enter(c, v, l int) {
	p := &h.cpus[c]
	p.run, p.lpidr, p.step = v, l, 0
	h.vcpus[v].cpu = c
}

// decide is the variant's flush condition, with the reason in the code's
// terms (built only under control). || short-circuits as in C.
func (h *host) decide(c, v, l int) (bool, string) {
	vc := &h.vcpus[v]
	me := uint64(v + 1) // the vCPU pointer
	pir := uint64(c)    // mfspr(SPRN_PIR)
	why := ""
	oldpir := func() bool {
		o := vc.oldpir
		if o != pir {
			if h.ctl {
				why = fmt.Sprintf("oldpir %s != PIR %d", pirString(o), pir)
			}
			return true
		}
		if h.ctl {
			why = fmt.Sprintf("oldpir == PIR %d", pir)
		}
		return false
	}
	last := func(w uint64, name string) bool {
		if w != me {
			if h.ctl {
				why += fmt.Sprintf("%s%s %s != %s", sep(why), name, h.pointerString(w), vcpuName(vc.id))
			}
			return true
		}
		if h.ctl {
			why += fmt.Sprintf("%s%s == %s", sep(why), name, vcpuName(vc.id))
		}
		return false
	}
	p := &h.cpus[c]
	lastLPID := ""
	if h.ctl {
		lastLPID = fmt.Sprintf("last_vcpu_of_lpid[%d]", l)
	}
	switch h.cfg.cond {
	case condPerLPID:
		return oldpir() || last(p.lastOfLPID[l], lastLPID), why
	case condPerCPU:
		return oldpir() || last(p.lastOnCPU, "last_vcpu_on_cpu"), why
	case condOldpirOnly:
		return oldpir(), why
	case condLastOnly:
		return last(p.lastOfLPID[l], lastLPID), why
	}
	return false, "this variant never flushes"
}

// pointerString names the vCPU a stored pointer points at now.
func (h *host) pointerString(w uint64) string {
	if w == 0 {
		return "NULL"
	}
	vc := &h.vcpus[w-1]
	if !vc.live {
		return fmt.Sprintf("slot%d (freed)", w-1)
	}
	return vcpuName(vc.id)
}

// flush is kvmppc_e500_tlbil_all (tlbilxlpid l on this core) and the
// per-CPU write of the vCPU pointer.
func (h *host) flush(c, v, l int) {
	p := &h.cpus[c]
	p.tlb[l] = tlbEntry{}
	switch h.cfg.cond {
	case condPerLPID, condLastOnly:
		p.lastOfLPID[l] = uint64(v + 1)
	case condPerCPU:
		p.lastOnCPU = uint64(v + 1)
	}
}

// put is kvmppc_core_vcpu_put_e500mc: vcpu->arch.oldpir = mfspr(SPRN_PIR).
func (h *host) put(c int) {
	p := &h.cpus[c]
	v := p.run
	vc := &h.vcpus[v]
	vc.oldpir = uint64(c)
	p.run, p.lpidr, p.step = -1, 0, 0
	vc.cpu = -1
	if h.ctl {
		h.note("", fmt.Sprintf("kvmppc_core_vcpu_put_e500mc: vCPU %s of %s leaves CPU%d, oldpir = %d", vcpuName(vc.id), vmName(h.vms[vc.kvm].id), c, c))
	}
}

// seq takes one guest operation from the budget and numbers it.
func (h *host) seq() uint8 {
	h.opsLeft--
	return uint8(h.cfg.ops - h.opsLeft)
}

// guestAccess is a guest load of EA 0 through CPU c's TLB: a hit, or the
// host's DTLB-miss handler (kvmppc_mmu_map from the vCPU's gtlb, or a
// guest TLB miss injected).
func (h *host) guestAccess(c int) {
	p := &h.cpus[c]
	v := p.run
	vc := &h.vcpus[v]
	l := p.lpidr
	h.seq()
	p.step++
	who := ""
	if h.ctl {
		who = fmt.Sprintf("vCPU %s of %s", vcpuName(vc.id), vmName(h.vms[vc.kvm].id))
	}
	client := int(vc.id)
	h.e.Call(client, op{VCPU: vc.id, Kind: opTranslate})
	if e := p.tlb[l]; e.creator != 0 {
		if h.ctl {
			h.note("", fmt.Sprintf("guest load EA 0: %s on CPU%d hits the TLB (LPID %d) -> page %d", who, c, l, e.rpn))
		}
		h.e.Return(client, result{Page: e.rpn})
		h.checkHit(c, v, e)
		return
	}
	g := vc.gtlb
	if g == 0 {
		if h.ctl {
			h.note("", fmt.Sprintf("guest load EA 0: %s on CPU%d misses; no gtlb entry, guest TLB miss injected", who, c))
		}
		h.e.Return(client, result{})
		return
	}
	p.tlb[l] = tlbEntry{creator: vc.id + 1, vm: h.vms[vc.kvm].id, rpn: g}
	if h.ctl {
		h.note("", fmt.Sprintf("kvmppc_mmu_map: %s on CPU%d misses EA 0, host refills page %d from its gtlb (LPID %d)", who, c, g, l))
	}
	h.e.Return(client, result{Page: g})
}

// checkHit checks a TLB hit against the installer bookkeeping: S2 first,
// then S1, each from its own call site (the model's order and messages).
func (h *host) checkHit(c, v int, e tlbEntry) {
	vc := &h.vcpus[v]
	vm := h.vms[vc.kvm].id
	l := h.cpus[c].lpidr
	if e.vm != vm {
		h.e.Failf(VMIsolation, "vCPU %s of %s (LPID %d) on CPU%d hit the TLB entry EA 0 -> page %d that vCPU %s of %s installed: %s was destroyed, %s reuses LPID %d, and %s's entry survived on CPU%d (a cross-VM leak)",
			vcpuName(vc.id), vmName(vm), l, c, e.rpn, vcpuName(e.creator-1), vmName(e.vm), vmName(e.vm), vmName(vm), l, vmName(e.vm), c)
		return
	}
	if e.creator != vc.id+1 {
		h.e.Failf(NoPollution, "vCPU %s of %s (LPID %d) on CPU%d hit the TLB entry EA 0 -> page %d that vCPU %s of the same VM installed; %s's own guest TLB %s (pollution)",
			vcpuName(vc.id), vmName(vm), l, c, e.rpn, vcpuName(e.creator-1), vcpuName(vc.id), gtlbString(vc.gtlb))
		return
	}
	if e.rpn != vc.gtlb {
		h.e.Failf(NoPollution, "vCPU %s of %s (LPID %d) on CPU%d hit its own stale TLB entry EA 0 -> page %d; its guest TLB %s since it changed it on another CPU (invalidations are local)",
			vcpuName(vc.id), vmName(vm), l, c, e.rpn, gtlbString(vc.gtlb))
	}
}

// guestTLBWE is kvmppc_e500_emul_tlbwe for EA 0: tlbil_one of the old
// shadow on this core, write the gtlb entry, premap it on this core.
func (h *host) guestTLBWE(c int) {
	p := &h.cpus[c]
	v := p.run
	vc := &h.vcpus[v]
	l := p.lpidr
	page := h.seq()
	if h.cfg.scenario == scenarioAlternating {
		page = uint8(v + 1)
	}
	old := vc.gtlb
	vc.gtlb = page
	p.tlb[l] = tlbEntry{creator: vc.id + 1, vm: h.vms[vc.kvm].id, rpn: page}
	p.step++
	h.e.Call(int(vc.id), op{VCPU: vc.id, Kind: opInstall, Page: page})
	h.e.Return(int(vc.id), result{})
	if h.ctl {
		inval := ""
		if old != 0 {
			inval = fmt.Sprintf("tlbil_one of old page %d on CPU%d, ", old, c)
		}
		h.note("", fmt.Sprintf("kvmppc_e500_emul_tlbwe: vCPU %s maps EA 0 -> page %d (%swrite gtlb, premap on CPU%d LPID %d)", vcpuName(vc.id), page, inval, c, l))
	}
}

// guestTLBILX is kvmppc_e500_emul_tlbilx for EA 0: tlbil_one on this core
// only, then invalidate the gtlb entry. Other cores keep their copies.
func (h *host) guestTLBILX(c int) {
	p := &h.cpus[c]
	v := p.run
	vc := &h.vcpus[v]
	l := p.lpidr
	h.seq()
	old := vc.gtlb
	p.tlb[l] = tlbEntry{}
	vc.gtlb = 0
	h.e.Call(int(vc.id), op{VCPU: vc.id, Kind: opInvalidate})
	h.e.Return(int(vc.id), result{})
	if h.ctl {
		h.note("", fmt.Sprintf("kvmppc_e500_emul_tlbilx: vCPU %s invalidates EA 0 (page %d) in its gtlb and on CPU%d only (LPID %d)", vcpuName(vc.id), old, c, l))
	}
}

// destroyVM is kvm_destroy_vm of VM slot k with the teardown on CPU c:
// each vCPU's free ends in a tlbilxlpid on CPU c only; then the LPID is
// freed. No CPU's last_vcpu_of_lpid is cleared.
func (h *host) destroyVM(k, c int) {
	vm := &h.vms[k]
	l := vm.lpid
	h.cpus[c].tlb[l] = tlbEntry{}
	var freed strings.Builder
	for v := 0; v < h.slots; v++ {
		if vc := &h.vcpus[v]; vc.live && vc.kvm == k {
			vc.live = false
			if h.ctl {
				fmt.Fprintf(&freed, " %s (slot%d)", vcpuName(vc.id), v)
			}
		}
	}
	h.lpidInuse &^= 1 << l
	vm.live = false
	h.phase, h.vmmVM, h.toCreate = phaseCreateVM, k, vm.nv
	if h.ctl {
		h.note(destroyLabel, fmt.Sprintf("kvm_destroy_vm: %s on CPU%d frees vCPUs%s (tlbilxlpid %d on CPU%d only) and LPID %d", vmName(vm.id), c, freed.String(), l, c, l))
	}
}

// createVM is kvmppc_core_init_vm_e500mc: kvmppc_alloc_lpid gives the
// lowest free LPID.
func (h *host) createVM() bool {
	l := 1
	for ; l <= h.cfg.lpids && h.lpidInuse&(1<<l) != 0; l++ {
	}
	if l > h.cfg.lpids {
		h.e.Failf("lpid-exhausted", "kvmppc_alloc_lpid: no free LPID among 1..%d", h.cfg.lpids)
		return false
	}
	h.lpidInuse |= 1 << l
	k := h.vmmVM
	h.vms[k] = kvmVM{live: true, id: h.nextVM, nv: h.toCreate, lpid: l}
	h.nextVM++
	h.phase = phaseCreateVCPU
	if h.ctl {
		h.note(initVMLabel, fmt.Sprintf("kvmppc_core_init_vm_e500mc: %s gets LPID %d (lowest free)", vmName(h.vms[k].id), l))
	}
	return true
}

// createVCPU is kvmppc_core_vcpu_create_e500mc at the lowest free slot
// (possibly a freed vCPU's address): a zeroed gtlb and the initial oldpir.
func (h *host) createVCPU() {
	v := 0
	for ; h.vcpus[v].live; v++ {
	}
	k := h.vmmVM
	h.vcpus[v] = kvcpu{live: true, kvm: k, id: h.nextVCPU, cpu: -1, oldpir: h.cfg.oldpirInit}
	h.nextVCPU++
	if h.toCreate--; h.toCreate == 0 {
		h.cycle++
		h.phase = phaseDestroy
	}
	if h.ctl {
		h.note(vcpuCreateLabel, fmt.Sprintf("kvmppc_core_vcpu_create_e500mc: vCPU %s of %s at slot%d, oldpir = %s", vcpuName(h.vcpus[v].id), vmName(h.vms[k].id), v, pirString(h.cfg.oldpirInit)))
	}
}

// Gated returns a strategy that schedules controlled runs of the Impl it
// returns with inner, offering inner only the choices the code allows in
// the current state.
//
// Why: the model's alternatives are numbered by meaning (alternative v
// loads the vCPU at slot v; altPut is 3 whether or not tlbilx is offered;
// the VMM's destroy is VM*cpus+CPU) and which of them exist changes while
// a goroutine waits for its turn (another core loads the same vCPU or
// spends the last load; a VM gets a loaded vCPU). rt.Env.Choose offers a
// fixed 0..n-1 decided when the goroutine parks, so the code parks with
// every alternative its step can have and this strategy filters them
// through the code's own conditions (host.allowed) at each decision, which
// is what a choice whose alternatives are evaluated by the scheduler
// would do. A run in which nobody can step ends normally when every
// parked goroutine is done for good (an idle core after the last load),
// and as a deadlock otherwise. Replays (rt.Replay, rt.ReplayExpect) need
// no gate: they take the model's choices, which are always among those
// offered.
func Gated(inner rt.Strategy) (rt.Strategy, *rt.Impl) {
	g := &gate{inner: inner}
	im := &rt.Impl{Variants: Impl.Variants, New: func(variant string, p model.Params) (rt.Body, error) {
		return newBody(variant, p, g)
	}}
	return g, im
}

type gate struct {
	inner rt.Strategy
	h     *host // the current run's; set by its body
	buf   []model.Choice
}

// errQuiescent ends a run in which every goroutine left is done.
var errQuiescent = errors.New("e500mc: every goroutine left is done")

type stuckError struct{ msg string }

func (e *stuckError) Error() string { return e.msg }

func (g *gate) Begin() error {
	g.h = nil
	return g.inner.Begin()
}

func (g *gate) Pick(p *rt.Point) (model.Choice, error) {
	h := g.h
	if h == nil {
		return g.inner.Pick(p)
	}
	g.buf = g.buf[:0]
	for _, c := range p.Enabled {
		if h.allowed(c.Thread, c.Alt) {
			g.buf = append(g.buf, c)
		}
	}
	if len(g.buf) == 0 {
		var waiting []string
		for i, c := range p.Enabled {
			if (i == 0 || p.Enabled[i-1].Thread != c.Thread) && !h.done(c.Thread) {
				waiting = append(waiting, p.Thread(c.Thread))
			}
		}
		if len(waiting) > 0 {
			return model.Choice{}, &stuckError{fmt.Sprintf("no goroutine can step: %s wait for a runnable vCPU or a destroyable VM", strings.Join(waiting, ", "))}
		}
		return model.Choice{}, errQuiescent
	}
	q := *p
	q.Enabled = g.buf
	return g.inner.Pick(&q)
}

func (g *gate) End(r *rt.Run) error {
	var stuck *stuckError
	switch {
	case errors.Is(r.Err, errQuiescent):
		r.Err = nil
	case errors.As(r.Err, &stuck):
		r.Err = nil
		r.Violation = &model.Violation{Property: model.Deadlock, Message: stuck.msg}
	}
	return g.inner.End(r)
}

func (g *gate) String() string { return "gated " + g.inner.String() }
