package e500mc

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

const (
	scenarioGeneral = iota
	scenarioAlternating
)

// Alternatives of a CPU thread that has a vCPU loaded. Alternative 0 keeps
// the guest running (schedtest's "keep running the current thread").
const (
	altAccess  = iota // guest load through the core's TLB
	altTLBWE          // guest tlbwe, emulated
	altTLBILX         // guest tlbilx, emulated
	altPut            // host scheduler puts the vCPU (from guest mode: after an exit)
	altHost           // the vCPU's next host-side step (see hostStep)
	altTLBIVAX        // guest tlbivax, emulated (parameter tlbivax)
)

// bootPage is the guest page EA 0 maps to in every vCPU's guest TLB at
// boot when the guests execute no TLB instruction (tlb-ops=0): a number
// no tlbwe of the model uses (tlbwe maps to the operation's sequence
// number, at most 60).
const bootPage = 64

// machine is one instance: its configuration and the addresses of its
// shared words. Threads are the physical CPUs' host schedulers (each loads
// and puts vCPUs and runs the loaded vCPU, in the host and in guest mode),
// and, when they have work, the VMM and the host's memory management (the
// MMU notifier's caller).
type machine struct {
	cfg     config
	nslots  int
	threads []string
	vmm     int // thread index of the VMM, or -1
	mm      int // thread index of the host MM, or -1
	props   model.Properties
	tlbName [maxCPUs]string // "CPU0.tlb": the object a TLB access touches

	// Shared words.
	lastOfLPID [maxCPUs][maxLPIDs + 1]model.Addr // per-CPU last_vcpu_of_lpid[L]: slot+1, 0 = NULL
	lastOnCPU  [maxCPUs]model.Addr               // per-CPU last_vcpu_on_cpu (per-cpu variant)
	oldpir     [maxSlots]model.Addr              // vcpu->arch.oldpir
	gtlb       [maxSlots]model.Addr              // the vCPU's guest TLB entry for EA 0: rpn, 0 = invalid
	ref        [maxSlots]model.Addr              // gtlb_priv[0][esel].ref for that entry: host gen + 1, 0 = !E500_TLB_VALID
	requests   [maxSlots]model.Addr              // vcpu->requests: bit 0 is KVM_REQ_TLB_FLUSH
	kvmLPID    [maxVMs]model.Addr                // kvm->arch.lpid
	inProgress [maxVMs]model.Addr                // kvm->mmu_invalidate_in_progress
	lpidInuse  model.Addr                        // the LPID allocator's bitmap (an IDA in current kernels)
	init       *state
}

func build(c config) *machine {
	m := &machine{cfg: c, vmm: -1, mm: -1}
	m.nslots = c.vmVCPUs[0] + c.vmVCPUs[1]
	// no-pollution and vm-isolation are checked where the guest observes
	// them: at each TLB hit (a step assertion in guestAccess).
	// host-memory-safety is an invariant: a CPU in guest mode with an
	// entry for a freed page is unsafe whether or not the guest has
	// touched it yet.
	m.props = model.Properties{
		Metrics:    []string{Flushes, Refills, RequestFlushes, IPIs},
		Invariants: []model.Invariant{{Name: HostMemorySafety, Check: m.hostMemorySafety}},
		Assertions: []string{NoPollution, VMIsolation, LPIDExhausted},
		Progress:   []model.Progress{{Name: HostFlushReturns, Pending: m.hostFlushPending}},
		Spec:       guestTLBSpec(m.bootPage()),
	}
	var names []string
	add := func(name string) model.Addr {
		names = append(names, name)
		return model.Addr(len(names) - 1)
	}
	for cpu := 0; cpu < c.cpus; cpu++ {
		for l := 1; l <= c.lpids; l++ {
			m.lastOfLPID[cpu][l] = add(fmt.Sprintf("CPU%d.last_vcpu_of_lpid[%d]", cpu, l))
		}
		if c.cond == condPerCPU {
			m.lastOnCPU[cpu] = add(fmt.Sprintf("CPU%d.last_vcpu_on_cpu", cpu))
		}
		m.tlbName[cpu] = fmt.Sprintf("CPU%d.tlb", cpu)
		if c.threads == 2 {
			// The two threads of a core share its TLB: one object.
			m.tlbName[cpu] = fmt.Sprintf("core%d.tlb", cpu/2)
		}
	}
	for v := 0; v < m.nslots; v++ {
		m.oldpir[v] = add(fmt.Sprintf("slot%d.arch.oldpir", v))
		m.gtlb[v] = add(fmt.Sprintf("slot%d.gtlb[EA0]", v))
		m.ref[v] = add(fmt.Sprintf("slot%d.gtlb_priv.ref", v))
		m.requests[v] = add(fmt.Sprintf("slot%d.requests", v))
	}
	for k := 0; k < maxVMs; k++ {
		m.kvmLPID[k] = add(fmt.Sprintf("kvm%d.arch.lpid", k))
		m.inProgress[k] = add(fmt.Sprintf("kvm%d.mmu_invalidate_in_progress", k))
	}
	m.lpidInuse = add("lpid_inuse")

	for cpu := 0; cpu < c.cpus; cpu++ {
		m.threads = append(m.threads, fmt.Sprintf("CPU%d", cpu))
	}
	if c.cycles > 0 {
		m.vmm = len(m.threads)
		m.threads = append(m.threads, "VMM")
	}
	if c.unmaps > 0 {
		m.mm = len(m.threads)
		m.threads = append(m.threads, "host-mm")
	}

	// The initial VMs exist before exploration starts: VM1 (kvm0) has
	// LPID 1 and vCPUs A, B..., VM2 (kvm1) LPID 2 and the next ones.
	loads := c.loads
	if c.unbounded {
		loads = 0 // not counted
	}
	s := &state{m: m, core: core{
		mem:       model.NewMem(names...),
		cpus:      make([]cpuState, c.cpus),
		tlb:       make([]entry, c.cpus*c.lpids),
		vcpus:     make([]vcpuState, m.nslots),
		loadsLeft: uint8(loads), opsLeft: uint8(c.ops),
	}}
	for cpu := range s.cpus {
		s.cpus[cpu].run = -1
	}
	slot := 0
	for k := 0; k < maxVMs; k++ {
		s.vms[k] = vmState{live: true, id: uint8(k), nv: uint8(c.vmVCPUs[k])}
		s.mem.Init(m.kvmLPID[k], uint64(k+1))
		for i := 0; i < c.vmVCPUs[k]; i++ {
			s.vcpus[slot] = vcpuState{live: true, vm: uint8(k), id: uint8(slot), cpu: -1, pc: pcHost}
			s.mem.Init(m.oldpir[slot], c.oldpirInit)
			s.mem.Init(m.gtlb[slot], uint64(m.bootPage()))
			slot++
		}
	}
	s.nextVCPU, s.nextVM = uint8(slot), maxVMs
	s.mem.Init(m.lpidInuse, 1|1<<1|1<<2) // host LPID 0, VM1's 1, VM2's 2
	m.init = s
	return m
}

// bootPage is the page EA 0 maps to in a new vCPU's guest TLB: none (0)
// when the guest maps it itself with tlbwe.
func (c config) bootPage() uint8 {
	if c.tlbOps {
		return 0
	}
	return bootPage
}

func (m *machine) bootPage() uint8 { return m.cfg.bootPage() }

func (m *machine) Threads() []string            { return m.threads }
func (m *machine) Init() model.State            { return m.init.clone() }
func (m *machine) Properties() model.Properties { return m.props }

// hostFlushPending: the host is inside kvm_flush_remote_tlbs, waiting for
// the IPIs to CPUs in guest mode.
func (m *machine) hostFlushPending(ms model.State) bool {
	return ms.(*state).host.phase == hostWaiting
}
func (m *machine) Step(ms model.State, t int, x *model.Exec) {
	s := ms.(*state)
	switch t {
	case m.vmm:
		m.vmmStep(s, x)
		return
	case m.mm:
		m.mmStep(s, x)
		return
	}
	if m.cfg.scenario == scenarioAlternating {
		m.scriptedStep(s, t, x)
		return
	}
	p := &s.cpus[t]
	if p.run < 0 {
		set := m.loadable(s)
		if set == 0 {
			m.idle(s, x)
			return
		}
		// Alternative v loads the vCPU at slot v: alternatives are
		// identities, not positions.
		m.load(s, t, x.ChooseFrom(set), x)
		return
	}
	m.vcpuStep(s, t, x.ChooseFrom(m.vcpuChoices(s, t)), x)
}

// vcpuChoices is the set of alternatives of CPU c, which has a vCPU
// loaded. In guest mode: the guest's operations, within the budget, and
// the put (an exit on a host interrupt, then the scheduler); with the
// host's IPI pending, only the exit it forces. In the host: the vCPU's
// next step, or the put (preemption is enabled at every such point).
// The alternatives keep their numbers whichever of them the state offers.
func (m *machine) vcpuChoices(s *state, c int) uint64 {
	v := int(s.cpus[c].run)
	if s.vcpus[v].pc != pcGuest {
		return 1<<altHost | 1<<altPut
	}
	if s.host.ipi&(1<<uint(c)) != 0 {
		return 1 << altHost
	}
	set := uint64(1) << altPut
	if s.opsLeft > 0 {
		set |= 1 << altAccess
		if m.cfg.tlbOps {
			set |= 1 << altTLBWE
			// A tlbilx that matches nothing in the vCPU's gtlb touches
			// nothing on the host (kvmppc_e500_emul_tlbilx walks the gtlb
			// only), so it is only offered when the gtlb maps EA 0.
			if s.mem.Peek(m.gtlb[v]) != 0 {
				set |= 1 << altTLBILX
			}
			// kvmppc_e500_emul_tlbivax flushes this CPU's LPID whether or
			// not the gtlb maps EA 0: always offered.
			if m.cfg.tlbivax {
				set |= 1 << altTLBIVAX
			}
		}
	}
	return set
}

// vcpuStep runs alternative alt of CPU c, which has a vCPU loaded.
func (m *machine) vcpuStep(s *state, c, alt int, x *model.Exec) {
	switch alt {
	case altAccess:
		m.guestAccess(s, c, x)
	case altTLBWE:
		m.guestTLBWE(s, c, x)
	case altTLBILX:
		m.guestTLBILX(s, c, x)
	case altTLBIVAX:
		m.guestTLBIVAX(s, c, x)
	case altPut:
		m.put(s, c, x)
	case altHost:
		m.hostStep(s, c, x)
	}
}

// loadable is the set of slots an idle CPU can load (bit v: slot v): a
// live vCPU not loaded elsewhere, within the load budget. A vCPU
// preempted inside its load resumes without a new load of the budget.
func (m *machine) loadable(s *state) uint64 {
	var set uint64
	budget := s.loadsLeft > 0 || m.cfg.unbounded
	for v := range s.vcpus {
		if vc := &s.vcpus[v]; vc.live && vc.cpu < 0 && (budget || vc.midLoad != midNone) {
			set |= 1 << uint(v)
		}
	}
	return set
}

// idle is the step of an idle CPU with no vCPU to load: it is done once
// the load budget is spent, and otherwise waits. It is only reached when
// loadable is empty, so a CPU on which a preempted load could resume
// (preempt-window, after the last load) is never called done: it steps.
func (m *machine) idle(s *state, x *model.Exec) {
	if s.loadsLeft == 0 && !m.cfg.unbounded {
		x.Done()
		return
	}
	for v := range s.vcpus {
		if s.vcpus[v].live {
			x.Block()
			x.Label("a vCPU that is not loaded elsewhere")
			return
		}
	}
	if m.vmm >= 0 && int(s.vmm.cycle) < m.cfg.cycles {
		x.Block()
		x.Label("the VMM to create a vCPU")
		return
	}
	x.Done()
}

// hostMemorySafety is the invariant S3: no CPU in guest mode has, under
// the running vCPU's LPID, an entry of the running VM whose host page was
// freed by an MMU-notifier invalidation (an older host page generation).
// Entries of another VM incarnation under a reused LPID are vm-isolation's,
// checked at the hit.
func (m *machine) hostMemorySafety(ms model.State) string {
	s := ms.(*state)
	for c := range s.cpus {
		p := &s.cpus[c]
		if p.run < 0 {
			continue
		}
		vc := &s.vcpus[p.run]
		if vc.pc != pcGuest {
			continue
		}
		vm := &s.vms[vc.vm]
		if e := *m.tlbAt(s, c, int(p.lpidr)); e.valid() && e.vm == vm.id && e.gen != vm.gen {
			return fmt.Sprintf("vCPU %s of %s runs guest code on CPU%d (LPID %d) while CPU%d's TLB maps EA 0 -> page %d to a host page of generation %d, which the host freed after invalidation %d of %s's memory (host pages are now generation %d): a guest load of EA 0 reads freed host memory",
				vcpuName(vc.id), vmName(vm.id), c, p.lpidr, c, e.rpn, e.gen, e.gen+1, vmName(vm.id), vm.gen)
		}
	}
	return ""
}
