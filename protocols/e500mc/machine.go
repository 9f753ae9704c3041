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
	altAccess = iota // guest load through the core's TLB
	altTLBWE         // guest tlbwe, emulated
	altTLBILX        // guest local tlbilx, emulated
	altPut           // host scheduler puts the vCPU
)

// machine is one instance: its configuration and the addresses of its
// shared words. Threads are the physical CPUs' host schedulers (each loads
// and puts vCPUs and runs the loaded vCPU's guest) and, when it has work,
// the VMM.
type machine struct {
	cfg     config
	nslots  int
	threads []string
	vmm     int // thread index of the VMM, or -1

	// Shared words.
	lastOfLPID [maxCPUs][maxLPIDs + 1]model.Addr // per-CPU last_vcpu_of_lpid[L]: slot+1, 0 = NULL
	lastOnCPU  [maxCPUs]model.Addr               // per-CPU last_vcpu_on_cpu (per-cpu variant)
	oldpir     [maxSlots]model.Addr              // vcpu->arch.oldpir
	gtlb       [maxSlots]model.Addr              // the vCPU's guest TLB entry for EA 0: rpn, 0 = invalid
	kvmLPID    [maxVMs]model.Addr                // kvm->arch.lpid
	lpidInuse  model.Addr                        // the LPID allocator's bitmap (an IDA in current kernels)
	init       *state
}

func build(c config) *machine {
	m := &machine{cfg: c, vmm: -1}
	m.nslots = c.vmVCPUs[0] + c.vmVCPUs[1]
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
	}
	for v := 0; v < m.nslots; v++ {
		m.oldpir[v] = add(fmt.Sprintf("slot%d.arch.oldpir", v))
		m.gtlb[v] = add(fmt.Sprintf("slot%d.gtlb[EA0]", v))
	}
	for k := 0; k < maxVMs; k++ {
		m.kvmLPID[k] = add(fmt.Sprintf("kvm%d.arch.lpid", k))
	}
	m.lpidInuse = add("lpid_inuse")

	for cpu := 0; cpu < c.cpus; cpu++ {
		m.threads = append(m.threads, fmt.Sprintf("CPU%d", cpu))
	}
	if c.cycles > 0 {
		m.vmm = len(m.threads)
		m.threads = append(m.threads, "VMM")
	}

	// The initial VMs exist before exploration starts: VM1 (kvm0) has
	// LPID 1 and vCPUs A, B..., VM2 (kvm1) LPID 2 and the next ones.
	s := &state{mem: model.NewMem(names...), ncpus: uint8(c.cpus), nslots: uint8(m.nslots),
		loadsLeft: uint8(c.loads), opsLeft: uint8(c.ops)}
	for cpu := range s.cpus {
		s.cpus[cpu].run = -1
	}
	slot := 0
	for k := 0; k < maxVMs; k++ {
		s.vms[k] = vmState{live: true, id: uint8(k), nv: uint8(c.vmVCPUs[k])}
		s.mem.Init(m.kvmLPID[k], uint64(k+1))
		for i := 0; i < c.vmVCPUs[k]; i++ {
			s.vcpus[slot] = vcpuState{live: true, vm: uint8(k), id: uint8(slot), cpu: -1}
			s.mem.Init(m.oldpir[slot], c.oldpirInit)
			slot++
		}
	}
	for v := slot; v < maxSlots; v++ {
		s.vcpus[v].cpu = -1
	}
	s.nextVCPU, s.nextVM = uint8(slot), maxVMs
	s.mem.Init(m.lpidInuse, 1|1<<1|1<<2) // host LPID 0, VM1's 1, VM2's 2
	m.init = s
	return m
}

func (m *machine) Threads() []string { return m.threads }
func (m *machine) Init() model.State { return m.init.Clone() }
func (m *machine) Metrics() []string { return []string{Flushes, Refills} }
func (m *machine) Spec() *model.Spec { return guestTLBSpec }
func (m *machine) Invariants() []model.Invariant {
	// Both properties are checked where the guest can observe them: at
	// each TLB hit (a step assertion in guestAccess).
	return nil
}

func (m *machine) Enabled(ms model.State, buf []model.Choice) []model.Choice {
	s := ms.(*state)
	for c := 0; c < m.cfg.cpus; c++ {
		if m.cfg.scenario == scenarioAlternating {
			buf = m.scripted(s, c, buf)
			continue
		}
		buf = m.cpuEnabled(s, c, buf)
	}
	if m.vmm >= 0 {
		buf = m.vmmEnabled(s, buf)
	}
	return buf
}

// cpuEnabled lists what CPU c's host scheduler and the guest it runs can
// do next.
func (m *machine) cpuEnabled(s *state, c int, buf []model.Choice) []model.Choice {
	p := &s.cpus[c]
	if p.run < 0 {
		for v := 0; v < m.nslots; v++ {
			// A vCPU preempted inside its load resumes without a new
			// load of the budget.
			if vc := &s.vcpus[v]; vc.live && vc.cpu < 0 && (s.loadsLeft > 0 || vc.midLoad != midNone) {
				buf = append(buf, model.Choice{Thread: c, Alt: v})
			}
		}
		return buf
	}
	if s.opsLeft > 0 {
		buf = append(buf, model.Choice{Thread: c, Alt: altAccess}, model.Choice{Thread: c, Alt: altTLBWE})
		// A tlbilx that matches nothing in the vCPU's gtlb touches nothing
		// on the host (kvmppc_e500_emul_tlbilx walks the gtlb only), so
		// it is only offered when the gtlb maps EA 0.
		if s.mem.Peek(m.gtlb[p.run]) != 0 {
			buf = append(buf, model.Choice{Thread: c, Alt: altTLBILX})
		}
	}
	return append(buf, model.Choice{Thread: c, Alt: altPut})
}

func (m *machine) Step(ms model.State, ch model.Choice, x *model.Exec) model.State {
	s := ms.Clone().(*state)
	if ch.Thread == m.vmm {
		m.vmmStep(s, ch.Alt, x)
		return s
	}
	c := ch.Thread
	if s.cpus[c].run < 0 {
		m.load(s, c, ch.Alt, x)
		return s
	}
	switch ch.Alt {
	case altAccess:
		m.guestAccess(s, c, x)
	case altTLBWE:
		m.guestTLBWE(s, c, x)
	case altTLBILX:
		m.guestTLBILX(s, c, x)
	case altPut:
		m.put(s, c, x)
	}
	return s
}

func (m *machine) Status(ms model.State, t int) model.Status {
	s := ms.(*state)
	if t == m.vmm {
		if int(s.vmm.cycle) >= m.cfg.cycles {
			return model.Status{Done: true}
		}
		return model.Status{WaitsFor: "every vCPU of the VM it destroys to be put"}
	}
	if s.cpus[t].run >= 0 {
		return model.Status{WaitsFor: "nothing: it can put its vCPU"}
	}
	if m.cfg.scenario == scenarioAlternating || s.loadsLeft == 0 {
		return model.Status{Done: s.loadsLeft == 0}
	}
	for v := 0; v < m.nslots; v++ {
		if s.vcpus[v].live {
			return model.Status{WaitsFor: "a vCPU that is not loaded elsewhere"}
		}
	}
	if m.vmm >= 0 && int(s.vmm.cycle) < m.cfg.cycles {
		return model.Status{WaitsFor: "the VMM to create a vCPU"}
	}
	return model.Status{Done: true}
}
