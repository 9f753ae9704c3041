package e500mc

import (
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// Size limits of the state. The parameters' Max values stay within them.
const (
	maxCPUs  = 4
	maxSlots = 6 // vCPU slots: the addresses kmem_cache hands out
	maxVMs   = 2 // struct kvm slots; a destroyed VM's slot is reused
	maxLPIDs = 4 // guest LPIDs 1..maxLPIDs; LPID 0 is the host's
)

// An entry is the hardware TLB entry of one core for the model's one
// guest effective address under one LPID (TGS=1). The hardware tag is
// only (TGS, TLPID, EA): creator and vm are the checker's bookkeeping,
// never read by the modelled code.
type entry struct {
	creator uint8 // vCPU incarnation id + 1 of the installer; 0 = invalid
	vm      uint8 // VM incarnation id of the installer
	rpn     uint8 // the guest page the entry translates to
	// gen is the generation of the VM's host pages the entry's real page
	// number belongs to (vmState.gen when kvmppc_e500_shadow_map looked
	// it up): an entry of an older generation maps a freed host page.
	gen uint8
}

func (e entry) valid() bool { return e.creator != 0 }

// cpuState is what one physical CPU's host scheduler runs. Its hardware
// TLB is in core.tlb.
type cpuState struct {
	run   int8  // slot of the loaded vCPU, or -1
	lpidr uint8 // SPRN_LPID while a vCPU is loaded
	step  uint8 // loads of EA 0 that hit in the current slice (scenario 1)
}

// vcpuState is a vCPU slot: the struct kvm_vcpu at one address, and which
// incarnation lives there. Its shared words (oldpir, gtlb) are in Mem.
type vcpuState struct {
	live bool
	vm   uint8 // VM slot
	id   uint8 // incarnation id: A, B, C, then D... for recreated vCPUs
	cpu  int8  // CPU it is loaded on, or -1
	// midLoad: preempt-window only: the load checked the condition on
	// one CPU and was preempted before acting on it (midNone, midSkip,
	// midFlush).
	midLoad uint8
	// pc is where the vCPU's thread is in KVM's run loop (pcHost, ...):
	// kept across a put, since a preempted vCPU resumes where it was.
	pc uint8
}

// Where a vCPU's thread is in the run loop (kvmppc_vcpu_run,
// kvmppc_handle_exit, kvmppc_prepare_to_enter). Every point but pcGuest
// runs with interrupts and preemption enabled, so the host scheduler can
// put the vCPU there.
const (
	// pcHost: in the host, next kvmppc_prepare_to_enter (after the
	// first KVM_RUN, after an exit, after a request was handled).
	pcHost = iota
	// pcGuest: executing guest code (after guest_enter_irqoff).
	pcGuest
	// pcMap: a DTLB miss exit (or tlbwe's premap) found a guest TLB
	// entry: next kvmppc_mmu_map.
	pcMap
	// pcMapped: kvmppc_e500_shadow_map set up the gtlb_priv ref and
	// dropped kvm->mmu_lock: next write_stlbe.
	pcMapped
)

// vmState is a struct kvm slot. Its LPID (kvm->arch.lpid) is in Mem.
type vmState struct {
	live bool
	id   uint8 // incarnation id: VM1, VM2, then VM3... after a destroy
	nv   uint8 // vCPUs it has (or will have, while the VMM creates them)
	// gen is the generation of the host pages backing the VM's memory:
	// each host unmap frees them and later faults get new ones.
	gen uint8
}

// hostState is the host MM thread's program counter: one MMU-notifier
// invalidation of a VM's memory at a time, unmaps times.
type hostState struct {
	phase uint8 // hostIdle, hostWaiting
	vm    uint8 // VM slot being invalidated
	done  uint8 // invalidations completed
	ipi   uint8 // CPUs with kvm_flush_remote_tlbs's IPI not yet taken (bit c)
}

const (
	// hostIdle: no invalidation in progress.
	hostIdle = iota
	// hostWaiting: invalidate_range_start sent KVM_REQ_TLB_FLUSH and
	// IPIs and waits in smp_call_function_many for every IPI to be
	// taken.
	hostWaiting
)

// vmmState is the VMM thread's program counter: destroy a VM, create a VM
// in its place, create its vCPUs; repeated cycles times.
type vmmState struct {
	cycle    uint8
	phase    uint8 // phaseDestroy, phaseCreateVM, phaseCreateVCPU
	vm       uint8 // VM slot being recreated
	toCreate uint8 // vCPUs still to create
}

const (
	phaseDestroy = iota
	phaseCreateVM
	phaseCreateVCPU
)

// core is the whole machine state, plain data that coreCodec encodes: the
// shared words in mem, everything else small integers. The per-CPU and
// per-slot parts are slices as long as the configuration has CPUs, slots
// and LPIDs, so that an encoding holds no unused slot.
type core struct {
	mem  model.Mem
	cpus []cpuState // one per CPU
	// tlb holds the hardware TLBs: CPU c's entry for LPID l (1..lpids) is
	// tlb[c*lpids+l-1], or with two threads per core core i's entry for
	// tag g is tlb[i*2*lpids+g-2] (machine.tlbAt). LPID 0 is the host's and never
	// tagged on a guest entry.
	tlb       []entry
	vcpus     []vcpuState // one per slot
	vms       [maxVMs]vmState
	vmm       vmmState
	host      hostState
	loadsLeft uint8 // vCPU loads the host schedulers may still do
	opsLeft   uint8 // guest operations the vCPUs may still do
	nextVCPU  uint8 // next vCPU incarnation id
	nextVM    uint8 // next VM incarnation id
}

// coreCodec encodes a core field by field (bytes copied, adjacent fields
// merged, each slice prefixed with its length).
var coreCodec = model.MustCodec[core]()

// state is a state of a machine: its data and the machine whose layout
// (sizes, word names) it has, which is not part of the state.
type state struct {
	core
	m *machine
}

func (s *state) AppendKey(b []byte) []byte { return coreCodec.Append(b, &s.core) }

// CopyFrom makes s a copy of src (model.Copier) through the codec: field
// bytes, the memory's words and the slices' elements, reusing s's
// buffers.
func (s *state) CopyFrom(src model.State) { coreCodec.Copy(&s.core, &src.(*state).core) }

func (s *state) Decode(b []byte) error {
	if err := coreCodec.Decode(b, &s.core); err != nil {
		return err
	}
	m := s.m
	if len(s.cpus) != m.cfg.cpus || len(s.tlb) != m.cfg.cpus*m.cfg.lpids || len(s.vcpus) != m.nslots {
		return fmt.Errorf("decode e500mc state: %d CPUs, %d TLB entries, %d slots; the machine has %d, %d, %d",
			len(s.cpus), len(s.tlb), len(s.vcpus), m.cfg.cpus, m.cfg.cpus*m.cfg.lpids, m.nslots)
	}
	return nil
}

// clone returns an independent copy of s.
func (s *state) clone() *state {
	c := &state{core: s.core, m: s.m}
	c.mem = s.mem.Clone()
	c.cpus = append([]cpuState(nil), s.cpus...)
	c.tlb = append([]entry(nil), s.tlb...)
	c.vcpus = append([]vcpuState(nil), s.vcpus...)
	return c
}

// tlbAt is the TLB entry CPU c hits for EA 0 under the VM whose
// kvm->arch.lpid is l (as the allocator gave it). With one thread per core
// it is CPU c's entry tagged l. On e6500 (threads=2) CPU c is thread c&1
// of core c/2, whose TLB both threads share: the core's TLB holds one
// entry per tag, and CPU c reaches the one tagged get_lpid(vcpu) on c
// (hwLPID): 2l | (c&1) as mainline has it (tags 2 .. 2*lpids+1), or l in
// e6500-one-lpid (tags 1 .. lpids), where both threads reach the same
// entry.
func (m *machine) tlbAt(s *state, c, l int) *entry {
	if m.cfg.threads == 1 {
		return &s.tlb[c*m.cfg.lpids+l-1]
	}
	first := 2 // the lowest tag: LPID 1 shifted, thread 0
	if m.cfg.oneLPID {
		first = 1
	}
	return &s.tlb[c/2*2*m.cfg.lpids+m.hwLPID(c, l)-first]
}

// hwLPID is the LPID CPU c writes to SPRN_LPID and tags its entries with
// for the VM whose allocator LPID is l: get_lpid(vcpu) on c.
func (m *machine) hwLPID(c, l int) int {
	if m.cfg.threads == 2 && !m.cfg.oneLPID {
		return 2*l | c&1
	}
	return l
}

func (s *state) Vars() []model.Var {
	out := s.mem.Vars()
	for c := range s.cpus {
		p := &s.cpus[c]
		run := "idle"
		if p.run >= 0 {
			run = fmt.Sprintf("vCPU %s (LPID %d)", vcpuName(s.vcpus[p.run].id), p.lpidr)
		}
		out = append(out,
			model.Var{Name: fmt.Sprintf("CPU%d.running", c), Value: run},
			model.Var{Name: fmt.Sprintf("CPU%d.tlb", c), Value: s.describeTLB(c)})
	}
	for v := range s.vcpus {
		out = append(out, model.Var{Name: fmt.Sprintf("slot%d", v), Value: s.describeSlot(v)})
	}
	for k, m := range s.vms {
		val := "free"
		if m.live {
			val = fmt.Sprintf("%s, %d vCPUs, host pages gen %d", vmName(m.id), m.nv, m.gen)
		}
		out = append(out, model.Var{Name: fmt.Sprintf("kvm%d", k), Value: val})
	}
	if s.m.cfg.unmaps > 0 {
		out = append(out, model.Var{Name: "host", Value: s.describeHost()})
	}
	return append(out,
		model.Var{Name: "vmm", Value: fmt.Sprintf("cycle %d phase %d", s.vmm.cycle, s.vmm.phase)},
		model.Var{Name: "loads_left", Value: fmt.Sprint(s.loadsLeft)},
		model.Var{Name: "ops_left", Value: fmt.Sprint(s.opsLeft)})
}

func (s *state) describeTLB(c int) string {
	var parts []string
	for l := 1; l <= s.m.cfg.lpids; l++ {
		if e := *s.m.tlbAt(s, c, l); e.valid() {
			parts = append(parts, fmt.Sprintf("[LPID %d: EA0->page %d (host pages gen %d), by %s of %s]", l, e.rpn, e.gen, vcpuName(e.creator-1), vmName(e.vm)))
		}
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, " ")
}

func (s *state) describeSlot(v int) string {
	p := &s.vcpus[v]
	if !p.live {
		return "free"
	}
	where := "not loaded"
	if p.cpu >= 0 {
		where = fmt.Sprintf("loaded on CPU%d", p.cpu)
	}
	if p.midLoad != midNone {
		where = "preempted inside kvmppc_core_vcpu_load_e500mc"
	}
	return fmt.Sprintf("vCPU %s of %s, %s, %s", vcpuName(p.id), vmName(s.vms[p.vm].id), where, pcNames[p.pc])
}

var pcNames = [...]string{
	pcHost:   "in the host before kvmppc_prepare_to_enter",
	pcGuest:  "in guest mode",
	pcMap:    "in kvmppc_handle_exit before kvmppc_mmu_map",
	pcMapped: "in kvmppc_mmu_map between kvmppc_e500_shadow_map and write_stlbe",
}

func (s *state) describeHost() string {
	h := &s.host
	switch h.phase {
	case hostWaiting:
		return fmt.Sprintf("invalidate_range_start of kvm%d waiting for the IPIs to CPUs %s (%d of %d unmaps done)", h.vm, cpuList(h.ipi), h.done, s.m.cfg.unmaps)
	}
	return fmt.Sprintf("idle (%d of %d unmaps done)", h.done, s.m.cfg.unmaps)
}

// cpuList renders a set of CPUs (bit c: CPUc).
func cpuList(set uint8) string {
	var parts []string
	for c := 0; c < maxCPUs; c++ {
		if set&(1<<c) != 0 {
			parts = append(parts, fmt.Sprintf("CPU%d", c))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// vcpuName names a vCPU incarnation: A, B, C, ... (a recreated vCPU at a
// reused slot gets a new letter, so an ABA is visible in messages).
func vcpuName(id uint8) string { return string(rune('A' + id)) }

// vmName names a VM incarnation: VM1, VM2, ...
func vmName(id uint8) string { return fmt.Sprintf("VM%d", id+1) }

// midLoad values.
const (
	midNone  = iota
	midSkip  // decided not to flush
	midFlush // decided to flush
)
