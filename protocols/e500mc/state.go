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
}

func (e entry) valid() bool { return e.creator != 0 }

// cpuState is what one physical CPU's host scheduler runs. Its hardware
// TLB is in core.tlb.
type cpuState struct {
	run   int8  // slot of the loaded vCPU, or -1
	lpidr uint8 // SPRN_LPID while a vCPU is loaded
	step  uint8 // guest operations done in the current slice (scenario 1)
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
}

// vmState is a struct kvm slot. Its LPID (kvm->arch.lpid) is in Mem.
type vmState struct {
	live bool
	id   uint8 // incarnation id: VM1, VM2, then VM3... after a destroy
	nv   uint8 // vCPUs it has (or will have, while the VMM creates them)
}

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
	// tlb[c*lpids+l-1] (machine.tlbAt). LPID 0 is the host's and never
	// tagged on a guest entry.
	tlb       []entry
	vcpus     []vcpuState // one per slot
	vms       [maxVMs]vmState
	vmm       vmmState
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

// tlbAt is CPU c's TLB entry for LPID l.
func (m *machine) tlbAt(s *state, c, l int) *entry { return &s.tlb[c*m.cfg.lpids+l-1] }

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
			val = fmt.Sprintf("%s, %d vCPUs", vmName(m.id), m.nv)
		}
		out = append(out, model.Var{Name: fmt.Sprintf("kvm%d", k), Value: val})
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
			parts = append(parts, fmt.Sprintf("[LPID %d: EA0->page %d, by %s of %s]", l, e.rpn, vcpuName(e.creator-1), vmName(e.vm)))
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
	return fmt.Sprintf("vCPU %s of %s, %s", vcpuName(p.id), vmName(s.vms[p.vm].id), where)
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
