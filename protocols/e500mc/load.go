package e500mc

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// load is kvmppc_core_vcpu_load_e500mc(v) on CPU c, as one atomic step:
// it runs with preemption disabled (vcpu_load's get_cpu() or the
// kvm_sched_in preempt notifier), so no other load or put can interleave
// on c, and no other CPU reads or writes c's per-CPU last_vcpu_of_lpid or
// c's TLB. No other CPU writes the other words it reads meanwhile: v's
// oldpir is written only by v's own put, and kvm->arch.lpid is immutable
// while v lives. The preempt-window variant drops that atomicity: the
// condition is evaluated in one step on c, and acted on in a later step
// on whichever CPU the vCPU resumes on.
func (m *machine) load(s *state, c, v int, x *model.Exec) {
	vc := &s.vcpus[v]
	fn := fmt.Sprintf("kvmppc_core_vcpu_load_e500mc: vCPU %s of %s on CPU%d", vcpuName(vc.id), vmName(s.vms[vc.vm].id), c)
	if vc.midLoad != midNone {
		l := int(x.Load(s.mem, m.kvmLPID[vc.vm]))
		flush := vc.midLoad == midFlush
		vc.midLoad = midNone
		m.enter(s, c, v, l, x)
		if !flush {
			x.Labelf("%s resumes after preemption and enters the guest without a flush (decided before it was preempted)", fn)
			return
		}
		m.flush(s, c, v, l, x)
		x.Labelf("%s resumes after preemption, tlbilxlpid %d (decided before it was preempted)", fn, l)
		return
	}
	s.loadsLeft--
	l := int(x.Load(s.mem, m.kvmLPID[vc.vm])) // mtspr(SPRN_LPID, get_lpid(vcpu))
	flush, why := m.decide(s, c, v, l, x)
	if m.cfg.preemptible {
		vc.midLoad = midSkip
		verdict := "no flush"
		if flush {
			vc.midLoad, verdict = midFlush, "flush"
		}
		x.Labelf("%s decides %s (%s), then is preempted before acting on it", fn, verdict, why)
		return
	}
	m.enter(s, c, v, l, x)
	if !flush {
		x.Labelf("%s, no flush (%s)", fn, why)
		return
	}
	m.flush(s, c, v, l, x)
	x.Labelf("%s, tlbilxlpid %d (%s)", fn, l, why)
}

// enter makes v the vCPU loaded on c with LPID l.
func (m *machine) enter(s *state, c, v, l int, x *model.Exec) {
	p := &s.cpus[c]
	p.run, p.lpidr, p.step = int8(v), uint8(l), 0
	s.vcpus[v].cpu = int8(c)
}

// decide evaluates the variant's flush condition for v on CPU c and says
// why, in the code's terms.
func (m *machine) decide(s *state, c, v, l int, x *model.Exec) (bool, string) {
	vc := &s.vcpus[v]
	me := uint64(v + 1) // the vCPU pointer: its slot's address
	pir := uint64(c)    // mfspr(SPRN_PIR)
	why := ""
	oldpir := func() bool {
		o := x.Load(s.mem, m.oldpir[v])
		if o != pir {
			why = fmt.Sprintf("oldpir %s != PIR %d", pirString(o), pir)
			return true
		}
		why = fmt.Sprintf("oldpir == PIR %d", pir)
		return false
	}
	last := func(a model.Addr, name string) bool {
		w := x.Load(s.mem, a)
		if w != me {
			why += fmt.Sprintf("%s%s %s != %s", sep(why), name, s.pointerString(w), vcpuName(vc.id))
			return true
		}
		why += fmt.Sprintf("%s%s == %s", sep(why), name, vcpuName(vc.id))
		return false
	}
	lastLPID := fmt.Sprintf("last_vcpu_of_lpid[%d]", l)
	switch m.cfg.cond {
	case condPerLPID:
		return oldpir() || last(m.lastOfLPID[c][l], lastLPID), why
	case condPerCPU:
		return oldpir() || last(m.lastOnCPU[c], "last_vcpu_on_cpu"), why
	case condOldpirOnly:
		return oldpir(), why
	case condLastOnly:
		return last(m.lastOfLPID[c][l], lastLPID), why
	}
	return false, "this variant never flushes"
}

// flush is kvmppc_e500_tlbil_all (tlbilxlpid, local to CPU c) and the
// record of v as the last vCPU the condition looks at.
func (m *machine) flush(s *state, c, v, l int, x *model.Exec) {
	me := uint64(v + 1)
	x.Touch(fmt.Sprintf("CPU%d.tlb", c), true)
	s.cpus[c].tlb[l] = entry{}
	x.Count(metricFlushes, 1)
	switch m.cfg.cond {
	case condPerLPID, condLastOnly:
		x.Store(s.mem, m.lastOfLPID[c][l], me)
	case condPerCPU:
		x.Store(s.mem, m.lastOnCPU[c], me)
	}
}

// put is kvmppc_core_vcpu_put_e500mc(v) on CPU c: one atomic step for the
// same reason as load (vcpu_put's preempt_disable, or kvm_sched_out
// inside the scheduler).
func (m *machine) put(s *state, c int, x *model.Exec) {
	p := &s.cpus[c]
	v := int(p.run)
	vc := &s.vcpus[v]
	x.Store(s.mem, m.oldpir[v], uint64(c))
	p.run, p.lpidr, p.step = -1, 0, 0
	vc.cpu = -1
	x.Labelf("kvmppc_core_vcpu_put_e500mc: vCPU %s of %s leaves CPU%d, oldpir = %d", vcpuName(vc.id), vmName(s.vms[vc.vm].id), c, c)
}

func sep(s string) string {
	if s == "" {
		return ""
	}
	return ", "
}

func pirString(o uint64) string {
	if o == invalidPIR {
		return "0xffffffff"
	}
	return fmt.Sprint(o)
}

// pointerString renders a stored vCPU pointer (slot+1, 0 = NULL) by the
// incarnation that lives at that address now, or says it dangles.
func (s *state) pointerString(w uint64) string {
	if w == 0 {
		return "NULL"
	}
	vc := &s.vcpus[w-1]
	if !vc.live {
		return fmt.Sprintf("slot%d (freed)", w-1)
	}
	return vcpuName(vc.id)
}
