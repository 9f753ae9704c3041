package e500mc

// The real concurrent implementation of the protocol, written against
// explorer/rt (see package model on the steps a real implementation yields at). It mirrors the code the
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
//     inval_gtlbe_on_host (kvmppc_e500_tlbil_one), the DTLB-miss refill
//     kvmppc_mmu_map (kvmppc_e500_shadow_map, write_stlbe) and
//     kvmppc_core_flush_tlb;
//   - arch/powerpc/kvm/powerpc.c kvmppc_prepare_to_enter and booke.c
//     kvmppc_core_check_requests (KVM_REQ_TLB_FLUSH);
//   - virt/kvm/kvm_main.c: the MMU notifier's invalidate_range_start and
//     _end, kvm_flush_remote_tlbs and kvm_make_all_cpus_request;
//   - seed 002 ([PATCH v3] KVM: PPC: e500mc: Enhance tlb invalidation
//     condition on vcpu schedule, Mihai Caraman).
//
// # Threads and steps
//
// One goroutine per physical CPU ("CPU0", "CPU1", ...: the host scheduler
// of that core, which loads a vCPU, runs it in the host and in guest mode,
// and puts it), when cycles > 0 one "VMM" goroutine that destroys a VM and
// creates a VM and its vCPUs in its place, and when unmaps > 0 one
// "host-mm" goroutine that invalidates a VM's memory through the MMU
// notifier; the same threads, in the same order, as Machine.Threads(). Every step of the model is exactly one scheduling
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
//     altTLBILX, altPut and altHost (the model's alternative numbers),
//     then the guest access (a TLB hit, or the DTLB miss exit), the
//     emulated tlbwe or tlbilx, kvmppc_core_vcpu_put_e500mc, or the vCPU's
//     next host-side step where its run loop is (vcpu.pc):
//     kvmppc_prepare_to_enter (with the KVM_REQ_TLB_FLUSH handling),
//     kvmppc_mmu_map / kvmppc_e500_shadow_map, write_stlbe, or the guest
//     exit the host's IPI forces.
//   - VMM: Env.Choose over (VM slot, teardown CPU) pairs, numbered
//     k*cpus+c as in the model, for kvm_destroy_vm; Env.Yield for
//     kvmppc_core_init_vm_e500mc and for each kvmppc_core_vcpu_create_e500mc.
//   - host-mm: Env.Choose over VM slots for invalidate_range_start (the
//     requests and IPIs), and Env.Yield for the end of the IPI wait,
//     invalidate_range_end and the free.
//
// Under the controlled runtime each step is atomic because exactly one
// goroutine runs between two scheduling points. Under the Go scheduler
// the same atomicity (preempt_disable around load and put; guest
// operations that touch only the core's own TLB and the running vCPU's
// gtlb) is given by hostLock, a real mutex every step holds, and
// goroutines that have nothing to do (an idle core with no runnable vCPU,
// the VMM while every VM has a loaded vCPU, host-mm while an IPI it sent
// is not taken) sleep on hostCond. Neither is
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
	Variants: []string{"per-lpid", "per-cpu", "oldpir-only", "no-oldpir", "oldpir-zero", "never-flush", "preempt-window", "ignore-request"},
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
	gen     uint8 // generation of the VM's host pages the entry maps
}

// pcpu is a physical CPU: what it runs, SPRN_LPID, its hardware TLB and
// its per-CPU variables (DEFINE_PER_CPU last_vcpu_of_lpid /
// last_vcpu_on_cpu), which hold vCPU pointers (slot + 1).
type pcpu struct {
	run        int // slot of the loaded vCPU, -1 when idle
	lpidr      int
	step       int // loads of EA 0 that hit in this slice (scenario 1's script)
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
	ref    uint8 // gtlb_priv ref of that entry: host page gen + 1, 0 = !E500_TLB_VALID
	req    bool  // KVM_REQ_TLB_FLUSH in vcpu->requests
	pc     int   // where the vCPU's thread is in the run loop (pcHost, ...)
}

// kvmVM is a struct kvm slot.
type kvmVM struct {
	live bool
	id   uint8 // incarnation: VM1, VM2, VM3...
	nv   int   // vCPUs it has (or will have while the VMM creates them)
	lpid int   // kvm->arch.lpid
	gen  uint8 // generation of the host pages backing its memory
	// inProgress is kvm->mmu_invalidate_in_progress.
	inProgress bool
}

// host is one execution: the machine's memory, shared by the goroutines.
type host struct {
	e     *rt.Env
	ctl   bool // controlled: labels are completed, hostLock is not used
	cfg   config
	slots int
	vmm   int // thread id of the VMM, -1 without one
	mm    int // thread id of host-mm, -1 without one

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

	// host-mm's program counter.
	mmPhase int   // hostIdle, hostWaiting
	mmVM    int   // VM slot being invalidated
	mmDone  int   // invalidations done
	mmIPI   uint8 // CPUs with the IPI not yet taken
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
	// e6500's shared core TLB and the guest's tlbivax are in the model
	// only.
	if cfg.threads != 1 {
		return nil, fmt.Errorf("e500mc: threads=%d exists only in the model; the real implementation has one thread per core (use threads=1)", cfg.threads)
	}
	if cfg.tlbivax {
		return nil, fmt.Errorf("e500mc: tlbivax=1 exists only in the model; the real implementation has no guest tlbivax (use tlbivax=0)")
	}
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
		if h.mm >= 0 {
			e.Go("host-mm", h.mmLoop)
		}
		return nil
	}, nil
}

// newHost builds the boot state: VM1 (kvm0) with LPID 1 and vCPUs A, B...,
// VM2 (kvm1) with LPID 2 and the next ones, as the model's initial state.
func newHost(e *rt.Env, cfg config) *host {
	h := &host{e: e, ctl: e.IsControlled(), cfg: cfg, vmm: -1, mm: -1,
		slots: cfg.vmVCPUs[0] + cfg.vmVCPUs[1], loadsLeft: cfg.loads, opsLeft: cfg.ops}
	h.hostLock = e.Mutex("hostLock")
	h.hostCond = e.Cond("hostCond", h.hostLock)
	threads := cfg.cpus
	if cfg.cycles > 0 {
		h.vmm = threads
		threads++
	}
	if cfg.unmaps > 0 {
		h.mm = threads
	}
	for c := range h.cpus {
		h.cpus[c].run = -1
	}
	slot := 0
	for k := 0; k < maxVMs; k++ {
		h.vms[k] = kvmVM{live: true, id: uint8(k), nv: cfg.vmVCPUs[k], lpid: k + 1}
		for i := 0; i < cfg.vmVCPUs[k]; i++ {
			h.vcpus[slot] = kvcpu{live: true, kvm: k, id: uint8(slot), cpu: -1, oldpir: cfg.oldpirInit, gtlb: cfg.bootPage(), pc: pcHost}
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
	switch t {
	case h.vmm:
		return "VMM"
	case h.mm:
		return "host-mm"
	}
	return fmt.Sprintf("CPU%d", t)
}

// allowed reports whether thread t's alternative alt can be taken now: the
// code's own conditions, which are the alternatives the model's step
// draws from (the host scheduler runs only a live vCPU that is not loaded
// elsewhere, within the budgets; a loaded vCPU in guest mode does guest
// operations or is put, and only takes the IPI when one is pending; in
// the host it goes on or is put; the VMM destroys only a VM none of whose
// vCPUs is loaded and which the MMU notifier is not invalidating; host-mm
// invalidates a live VM and waits until every IPI it sent was taken).
// TestImplOffersTheModelsChoices checks that they give explorer.Enabled's
// choices at every step.
func (h *host) allowed(t, alt int) bool {
	switch t {
	case h.mm:
		if h.mmPhase == hostWaiting {
			return alt == 0 && h.mmIPI == 0
		}
		return h.mmDone < h.cfg.unmaps && alt < maxVMs && h.vms[alt].live
	case h.vmm:
		if h.cycle >= h.cfg.cycles {
			return false
		}
		if h.phase != phaseDestroy {
			return alt == 0
		}
		k := alt / h.cfg.cpus
		return k < maxVMs && h.vms[k].live && !h.anyLoaded(k) && !h.notifierBusy(k)
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
		return vc.live && vc.cpu < 0 && (h.loadsLeft > 0 || h.cfg.unbounded || vc.mid != midNone)
	}
	vc := &h.vcpus[p.run]
	if vc.pc != pcGuest {
		return alt == altHost || alt == altPut
	}
	if h.mmIPI&(1<<uint(t)) != 0 {
		return alt == altHost
	}
	switch alt {
	case altAccess:
		return h.opsLeft > 0
	case altTLBWE:
		return h.opsLeft > 0 && h.cfg.tlbOps
	case altTLBILX:
		// kvmppc_e500_emul_tlbilx only acts on a matching gtlb entry.
		return h.opsLeft > 0 && h.cfg.tlbOps && vc.gtlb != 0
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
	if h.vcpus[p.run].pc != pcGuest {
		return altHost
	}
	if p.run == 0 {
		switch {
		case h.vcpus[0].gtlb == 0:
			return altTLBWE
		case p.step == 0:
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
// after its cycles, host-mm after its invalidations.
func (h *host) done(t int) bool {
	switch t {
	case h.vmm:
		return h.cycle >= h.cfg.cycles
	case h.mm:
		return h.mmDone >= h.cfg.unmaps && h.mmPhase == hostIdle
	}
	if h.cpus[t].run >= 0 || h.loadsLeft > 0 || h.cfg.unbounded {
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

// notifierBusy: an invalidation of VM slot k is in progress, which
// kvm_destroy_vm's mmu_notifier_unregister waits for.
func (h *host) notifierBusy(k int) bool {
	return h.mmPhase != hostIdle && h.mmVM == k
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
			alt, ok = h.pick(c, "", altHost+1)
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
			case alt == altHost:
				h.hostStep(c)
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
	rangeStartLabel = "kvm_mmu_notifier_invalidate_range_start: VM"
	ipisTakenLabel  = "kvm_flush_remote_tlbs: smp_call_function_many returns"
)

// yield is a step of thread t with no draw (alternative 0). Under control
// it fails loudly when the code does not allow it now, as pick does.
func (h *host) yield(t int, label string) bool {
	h.e.Yield(label)
	if h.ctl && !h.allowed(t, 0) {
		h.e.Failf(PropHarness, "%s took %q, which the code does not allow in this state: schedule controlled runs of e500mc.Impl through e500mc.Gated", h.threadName(t), label)
		return false
	}
	return true
}

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
		ok = h.yield(h.vmm, initVMLabel) && h.createVM()
		h.end()
		if !ok {
			return
		}
		for h.phase == phaseCreateVCPU {
			h.begin()
			ok = h.yield(h.vmm, vcpuCreateLabel)
			if ok {
				h.createVCPU()
			}
			h.end()
			if !ok {
				return
			}
		}
	}
}

// mmLoop is host-mm: invalidate a live VM's memory through the MMU
// notifier, unmaps times.
func (h *host) mmLoop() {
	for {
		h.begin()
		if !h.ready(h.mm) {
			h.end()
			return
		}
		var ok bool
		if h.mmPhase == hostWaiting {
			ok = h.yield(h.mm, ipisTakenLabel)
			if ok {
				h.ipisTaken()
			}
		} else {
			var k int
			k, ok = h.pick(h.mm, rangeStartLabel, maxVMs)
			if ok {
				h.rangeStart(k)
			}
		}
		h.end()
		if !ok {
			return
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
	if !h.cfg.unbounded {
		h.loadsLeft--
	}
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

// put is kvmppc_core_vcpu_put_e500mc: vcpu->arch.oldpir = mfspr(SPRN_PIR);
// a vCPU in guest mode first exits on a host interrupt. It keeps its
// place in the run loop.
func (h *host) put(c int) {
	p := &h.cpus[c]
	v := p.run
	vc := &h.vcpus[v]
	exit := vc.pc == pcGuest
	if exit {
		vc.pc = pcHost
	}
	vc.oldpir = uint64(c)
	p.run, p.lpidr, p.step = -1, 0, 0
	vc.cpu = -1
	if h.ctl {
		how := ""
		if exit {
			how = "guest exit on a host interrupt, then "
		}
		h.note("", fmt.Sprintf("%skvmppc_core_vcpu_put_e500mc: vCPU %s of %s leaves CPU%d, oldpir = %d", how, vcpuName(vc.id), vmName(h.vms[vc.kvm].id), c, c))
	}
}

// seq takes one guest operation from the budget and numbers it.
func (h *host) seq() uint8 {
	h.opsLeft--
	return uint8(h.cfg.ops - h.opsLeft)
}

func (h *host) who(v int) string {
	vc := &h.vcpus[v]
	return fmt.Sprintf("vCPU %s of %s", vcpuName(vc.id), vmName(h.vms[vc.kvm].id))
}

// guestAccess is a guest load of EA 0 through CPU c's TLB: a hit, or a
// DTLB miss exit whose handler looks EA 0 up in the vCPU's gtlb and
// injects a guest TLB miss or goes on to kvmppc_mmu_map.
func (h *host) guestAccess(c int) {
	p := &h.cpus[c]
	v := p.run
	vc := &h.vcpus[v]
	l := p.lpidr
	h.seq()
	who := ""
	if h.ctl {
		who = h.who(v)
	}
	client := int(vc.id)
	if e := p.tlb[l]; e.creator != 0 {
		p.step++
		if h.ctl {
			h.note("", fmt.Sprintf("guest load EA 0: %s on CPU%d hits the TLB (LPID %d) -> page %d", who, c, l, e.rpn))
		}
		h.e.Call(client, op{VCPU: vc.id, Kind: opTranslate})
		h.e.Return(client, result{Page: e.rpn})
		h.checkHit(c, v, e)
		return
	}
	if vc.gtlb == 0 {
		vc.pc = pcHost
		if h.ctl {
			h.note("", fmt.Sprintf("guest load EA 0: %s on CPU%d misses; no gtlb entry, guest TLB miss injected", who, c))
		}
		h.e.Call(client, op{VCPU: vc.id, Kind: opTranslate})
		h.e.Return(client, result{})
		return
	}
	vc.pc = pcMap
	if h.ctl {
		h.note("", fmt.Sprintf("guest load EA 0: %s on CPU%d misses the TLB (LPID %d); DTLB miss exit, its gtlb maps EA 0 to page %d: kvmppc_mmu_map next", who, c, l, vc.gtlb))
	}
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

// checkHostMemory is the invariant host-memory-safety, checked where a
// step can break it (a guest entry, an install on a CPU in guest mode, the
// free of a VM's pages): no CPU in guest mode maps a freed host page of
// its VM.
func (h *host) checkHostMemory() {
	for c := 0; c < h.cfg.cpus; c++ {
		p := &h.cpus[c]
		if p.run < 0 || h.vcpus[p.run].pc != pcGuest {
			continue
		}
		vc := &h.vcpus[p.run]
		vm := &h.vms[vc.kvm]
		if e := p.tlb[p.lpidr]; e.creator != 0 && e.vm == vm.id && e.gen != vm.gen {
			h.e.Failf(HostMemorySafety, "vCPU %s of %s runs guest code on CPU%d (LPID %d) while CPU%d's TLB maps EA 0 -> page %d to a host page of generation %d, which the host freed after invalidation %d of %s's memory (host pages are now generation %d): a guest load of EA 0 reads freed host memory",
				vcpuName(vc.id), vmName(vm.id), c, p.lpidr, c, e.rpn, e.gen, e.gen+1, vmName(vm.id), vm.gen)
			return
		}
	}
}

// invalGtlbeOnHost is inval_gtlbe_on_host: kvmppc_e500_tlbil_one on this
// core only if the ref is E500_TLB_VALID; the ref is cleared.
func (h *host) invalGtlbeOnHost(c, v, l int) bool {
	vc := &h.vcpus[v]
	valid := vc.ref != 0
	if valid {
		h.cpus[c].tlb[l] = tlbEntry{}
	}
	vc.ref = 0
	return valid
}

// guestTLBWE is kvmppc_e500_emul_tlbwe for EA 0: inval_gtlbe_on_host of
// the entry replaced, write the gtlb entry; the premap (kvmppc_mmu_map)
// comes next.
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
	inval := false
	if old != 0 {
		inval = h.invalGtlbeOnHost(c, v, l)
	}
	vc.gtlb = page
	vc.pc = pcMap
	h.e.Call(int(vc.id), op{VCPU: vc.id, Kind: opInstall, Page: page})
	h.e.Return(int(vc.id), result{})
	if h.ctl {
		what := ""
		switch {
		case inval:
			what = fmt.Sprintf("inval_gtlbe_on_host: tlbil_one of old page %d on CPU%d, ", old, c)
		case old != 0:
			what = fmt.Sprintf("old page %d has no valid ref: no tlbil_one, ", old)
		}
		h.note("", fmt.Sprintf("kvmppc_e500_emul_tlbwe: vCPU %s on CPU%d maps EA 0 -> page %d (%swrite gtlb); premap with kvmppc_mmu_map next", vcpuName(vc.id), c, page, what))
	}
}

// guestTLBILX is kvmppc_e500_emul_tlbilx for EA 0: inval_gtlbe_on_host on
// this core only, then invalidate the gtlb entry. Other cores keep their
// copies.
func (h *host) guestTLBILX(c int) {
	p := &h.cpus[c]
	v := p.run
	vc := &h.vcpus[v]
	l := p.lpidr
	h.seq()
	old := vc.gtlb
	inval := h.invalGtlbeOnHost(c, v, l)
	vc.gtlb = 0
	vc.pc = pcHost
	h.e.Call(int(vc.id), op{VCPU: vc.id, Kind: opInvalidate})
	h.e.Return(int(vc.id), result{})
	if h.ctl {
		where := fmt.Sprintf("tlbil_one on CPU%d only", c)
		if !inval {
			where = "no valid ref: nothing invalidated on the host"
		}
		h.note("", fmt.Sprintf("kvmppc_e500_emul_tlbilx: vCPU %s invalidates EA 0 (page %d) in its gtlb; inval_gtlbe_on_host: %s (LPID %d)", vcpuName(vc.id), old, where, l))
	}
}

// hostStep is the loaded vCPU's next host-side step on CPU c, where its
// run loop is.
func (h *host) hostStep(c int) {
	switch h.vcpus[h.cpus[c].run].pc {
	case pcGuest:
		h.ipiExit(c)
	case pcHost:
		h.prepareToEnter(c)
	case pcMap:
		h.mmuMap(c)
	case pcMapped:
		h.writeStlbe(c)
	}
}

// prepareToEnter is kvmppc_prepare_to_enter: mode = IN_GUEST_MODE,
// smp_mb(), then a pending KVM_REQ_TLB_FLUSH is handled
// (kvmppc_core_check_requests -> kvmppc_core_flush_tlb: tlbilxlpid on this
// core, clear_tlb_privs) and the loop starts over, or the guest is
// entered.
func (h *host) prepareToEnter(c int) {
	p := &h.cpus[c]
	v := p.run
	vc := &h.vcpus[v]
	l := p.lpidr
	if vc.req && !h.cfg.ignoreRequest {
		vc.req = false
		p.tlb[l] = tlbEntry{}
		vc.ref = 0
		if h.ctl {
			h.note("", fmt.Sprintf("kvmppc_prepare_to_enter: %s on CPU%d, mode = IN_GUEST_MODE, smp_mb; KVM_REQ_TLB_FLUSH pending: kvmppc_core_check_requests, kvmppc_core_flush_tlb: tlbilxlpid %d on CPU%d only, clear_tlb_privs", h.who(v), c, l, c))
		}
		return
	}
	vc.pc = pcGuest
	if h.ctl {
		what := "no request pending"
		if vc.req {
			what = "KVM_REQ_TLB_FLUSH pending, ignored by this variant"
		}
		h.note("", fmt.Sprintf("kvmppc_prepare_to_enter: %s on CPU%d, mode = IN_GUEST_MODE, smp_mb; %s: guest entry (LPID %d)", h.who(v), c, what, l))
	}
	h.checkHostMemory()
}

// mmuMap is kvmppc_mmu_map for EA 0 on CPU c: with a valid ref, write the
// shadow entry at once; otherwise kvmppc_e500_shadow_map, which gives
// -EAGAIN while an invalidation of the VM's memory is in progress and
// otherwise sets the ref to the host page mapped now.
func (h *host) mmuMap(c int) {
	p := &h.cpus[c]
	v := p.run
	vc := &h.vcpus[v]
	if vc.ref != 0 {
		h.install(c, v, vc.gtlb, vc.ref-1)
		vc.pc = pcHost
		if h.ctl {
			h.note("", fmt.Sprintf("kvmppc_mmu_map: %s on CPU%d, gtlb_priv ref valid (host pages gen %d): write_stlbe EA 0 -> page %d into CPU%d's TLB (LPID %d)", h.who(v), c, vc.ref-1, vc.gtlb, c, p.lpidr))
		}
		return
	}
	vm := &h.vms[vc.kvm]
	if vm.inProgress {
		vc.pc = pcHost
		if h.ctl {
			h.note("", fmt.Sprintf("kvmppc_e500_shadow_map: %s, mmu_invalidate_retry: an invalidation of %s's memory is in progress, -EAGAIN (the guest faults again)", h.who(v), vmName(vm.id)))
		}
		return
	}
	vc.ref = vm.gen + 1
	vc.pc = pcMapped
	if h.ctl {
		h.note("", fmt.Sprintf("kvmppc_e500_shadow_map: %s looks up EA 0's guest page in %s's memory (host pages gen %d); ref E500_TLB_VALID; mmu_lock dropped, write_stlbe next", h.who(v), vmName(vm.id), vm.gen))
	}
}

// writeStlbe is write_stlbe into the TLB of the CPU the vCPU runs on now.
func (h *host) writeStlbe(c int) {
	v := h.cpus[c].run
	vc := &h.vcpus[v]
	h.install(c, v, vc.gtlb, vc.ref-1)
	vc.pc = pcHost
	if h.ctl {
		h.note("", fmt.Sprintf("write_stlbe: %s writes EA 0 -> page %d (host pages gen %d) into CPU%d's TLB (LPID %d)", h.who(v), vc.gtlb, vc.ref-1, c, h.cpus[c].lpidr))
	}
}

func (h *host) install(c, v int, g, gen uint8) {
	vc := &h.vcpus[v]
	p := &h.cpus[c]
	p.tlb[p.lpidr] = tlbEntry{creator: vc.id + 1, vm: h.vms[vc.kvm].id, rpn: g, gen: gen}
}

// ipiExit is the guest exit the host's IPI forces; the IPI handler
// (ack_flush) runs and the vCPU is in the host.
func (h *host) ipiExit(c int) {
	v := h.cpus[c].run
	h.vcpus[v].pc = pcHost
	h.mmIPI &^= 1 << uint(c)
	if h.ctl {
		h.note("", fmt.Sprintf("guest exit on CPU%d: external interrupt (kvm_flush_remote_tlbs's IPI), ack_flush; %s is in the host", c, h.who(v)))
	}
}

// rangeStart is kvm_mmu_notifier_invalidate_range_start for VM slot k:
// mmu_invalidate_in_progress, then kvm_flush_remote_tlbs: KVM_REQ_TLB_FLUSH
// to every vCPU of the VM and an IPI to the CPU of each in guest mode.
// With no IPI to wait for, invalidate_range_start returns at once and the
// pages are freed (ipisTaken).
func (h *host) rangeStart(k int) {
	vm := &h.vms[k]
	vm.inProgress = true
	var names []string
	var ipi uint8
	for v := 0; v < h.slots; v++ {
		vc := &h.vcpus[v]
		if !vc.live || vc.kvm != k {
			continue
		}
		vc.req = true
		if h.ctl {
			names = append(names, vcpuName(vc.id))
		}
		if vc.cpu >= 0 && vc.pc == pcGuest {
			ipi |= 1 << uint(vc.cpu)
		}
	}
	h.mmVM, h.mmIPI, h.mmPhase = k, ipi, hostWaiting
	if ipi == 0 {
		h.rangeEnd()
	}
	if h.ctl {
		send := "no vCPU in guest mode, no IPI to wait for: invalidate_range_start returns; " + freed(vm.id, vm.gen)
		if ipi != 0 {
			send = "IPI " + cpuList(ipi) + " (a vCPU in guest mode) and wait"
		}
		h.note(rangeStartLabel, fmt.Sprintf("kvm_mmu_notifier_invalidate_range_start: %s's memory, mmu_invalidate_in_progress = 1; kvm_flush_remote_tlbs: KVM_REQ_TLB_FLUSH to vCPUs %s; %s", vmName(vm.id), strings.Join(names, ", "), send))
	}
}

// ipisTaken: smp_call_function_many returns; invalidate_range_start
// returns, the pages are freed and invalidate_range_end runs.
func (h *host) ipisTaken() {
	vm := &h.vms[h.mmVM]
	h.rangeEnd()
	if h.ctl {
		h.note(ipisTakenLabel, "kvm_flush_remote_tlbs: smp_call_function_many returns, every IPI taken; invalidate_range_start returns; "+freed(vm.id, vm.gen))
	}
}

// rangeEnd frees the VM's host pages (a new generation) and ends the
// invalidation.
func (h *host) rangeEnd() {
	vm := &h.vms[h.mmVM]
	vm.gen++
	vm.inProgress = false
	h.mmPhase = hostIdle
	h.mmDone++
	h.checkHostMemory()
}

// destroyVM is kvm_destroy_vm of VM slot k with the teardown on CPU c:
// each vCPU's free ends in a tlbilxlpid on CPU c only; then the LPID is
// freed. No CPU's last_vcpu_of_lpid is cleared.
func (h *host) destroyVM(k, c int) {
	vm := &h.vms[k]
	l := vm.lpid
	h.cpus[c].tlb[l] = tlbEntry{}
	var freedVCPUs strings.Builder
	for v := 0; v < h.slots; v++ {
		if vc := &h.vcpus[v]; vc.live && vc.kvm == k {
			vc.live = false
			if h.ctl {
				fmt.Fprintf(&freedVCPUs, " %s (slot%d)", vcpuName(vc.id), v)
			}
		}
	}
	h.lpidInuse &^= 1 << l
	vm.live = false
	h.phase, h.vmmVM, h.toCreate = phaseCreateVM, k, vm.nv
	if h.ctl {
		h.note(destroyLabel, fmt.Sprintf("kvm_destroy_vm: %s on CPU%d frees vCPUs%s (tlbilxlpid %d on CPU%d only) and LPID %d", vmName(vm.id), c, freedVCPUs.String(), l, c, l))
	}
}

// createVM is kvmppc_core_init_vm_e500mc: kvmppc_alloc_lpid gives the
// lowest free LPID.
func (h *host) createVM() bool {
	l := 1
	for ; l <= h.cfg.lpids && h.lpidInuse&(1<<l) != 0; l++ {
	}
	if l > h.cfg.lpids {
		h.e.Failf(LPIDExhausted, "kvmppc_alloc_lpid: no free LPID among 1..%d", h.cfg.lpids)
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
// (possibly a freed vCPU's address): the guest TLB as at boot, no ref, no
// request, and the initial oldpir.
func (h *host) createVCPU() {
	v := 0
	for ; h.vcpus[v].live; v++ {
	}
	k := h.vmmVM
	h.vcpus[v] = kvcpu{live: true, kvm: k, id: h.nextVCPU, cpu: -1, oldpir: h.cfg.oldpirInit, gtlb: h.cfg.bootPage(), pc: pcHost}
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
