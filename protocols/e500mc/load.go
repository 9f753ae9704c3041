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
	fn := ""
	if x.Labelling() {
		fn = fmt.Sprintf("kvmppc_core_vcpu_load_e500mc: vCPU %s of %s on CPU%d", vcpuName(vc.id), vmName(s.vms[vc.vm].id), c)
	}
	if vc.midLoad != midNone {
		l := int(x.Load(s.mem, m.kvmLPID[vc.vm]))
		flush := vc.midLoad == midFlush
		vc.midLoad = midNone
		m.enter(s, c, v, l)
		if !flush {
			if x.Labelling() {
				x.Label(fn + " resumes after preemption and enters the guest without a flush (decided before it was preempted)")
			}
			return
		}
		m.flush(s, c, v, l, x)
		if x.Labelling() {
			x.Labelf("%s resumes after preemption, tlbilxlpid %d (decided before it was preempted)", fn, m.hwLPID(c, l))
		}
		return
	}
	if !m.cfg.unbounded {
		s.loadsLeft--
	}
	l := int(x.Load(s.mem, m.kvmLPID[vc.vm])) // mtspr(SPRN_LPID, get_lpid(vcpu))
	d := m.decide(s, c, v, l, x)
	why := ""
	if x.Labelling() {
		why = m.why(s, c, v, l, d)
	}
	if m.cfg.preemptible {
		vc.midLoad = midSkip
		verdict := "no flush"
		if d.flush {
			vc.midLoad, verdict = midFlush, "flush"
		}
		if x.Labelling() {
			x.Labelf("%s decides %s (%s), then is preempted before acting on it", fn, verdict, why)
		}
		return
	}
	m.enter(s, c, v, l)
	if !d.flush {
		if x.Labelling() {
			x.Labelf("%s, no flush (%s)", fn, why)
		}
		return
	}
	m.flush(s, c, v, l, x)
	if x.Labelling() {
		x.Labelf("%s, tlbilxlpid %d (%s)", fn, m.hwLPID(c, l), why)
	}
}

// enter makes v the vCPU loaded on c with LPID l.
func (m *machine) enter(s *state, c, v, l int) {
	p := &s.cpus[c]
	p.run, p.lpidr, p.step = int8(v), uint8(l), 0
	s.vcpus[v].cpu = int8(c)
}

// A decision is the outcome of the flush condition and the words it read
// (|| short-circuits as in C: a term not evaluated read nothing), from
// which why renders the reason.
type decision struct {
	flush      bool
	readOldpir bool
	oldpir     uint64
	readLast   bool
	last       uint64
}

// decide evaluates the variant's flush condition for v on CPU c.
func (m *machine) decide(s *state, c, v, l int, x *model.Exec) decision {
	var d decision
	me := uint64(v + 1) // the vCPU pointer: its slot's address
	pir := uint64(c)    // mfspr(SPRN_PIR)
	oldpir := func() bool {
		d.readOldpir = true
		d.oldpir = x.Load(s.mem, m.oldpir[v])
		return d.oldpir != pir
	}
	last := func(a model.Addr) bool {
		d.readLast = true
		d.last = x.Load(s.mem, a)
		return d.last != me
	}
	switch m.cfg.cond {
	case condPerLPID:
		d.flush = oldpir() || last(m.lastOfLPID[c][l])
	case condPerCPU:
		d.flush = oldpir() || last(m.lastOnCPU[c])
	case condOldpirOnly:
		d.flush = oldpir()
	case condLastOnly:
		d.flush = last(m.lastOfLPID[c][l])
	}
	return d
}

// why says why load decided d, in the code's terms.
func (m *machine) why(s *state, c, v, l int, d decision) string {
	if m.cfg.cond == condNever {
		return "this variant never flushes"
	}
	why := ""
	if d.readOldpir {
		if d.oldpir != uint64(c) {
			return fmt.Sprintf("oldpir %s != PIR %d", pirString(d.oldpir), c)
		}
		why = fmt.Sprintf("oldpir == PIR %d", c)
	}
	if d.readLast {
		name := fmt.Sprintf("last_vcpu_of_lpid[%d]", l)
		if m.cfg.cond == condPerCPU {
			name = "last_vcpu_on_cpu"
		}
		me := s.vcpus[v].id
		if d.last != uint64(v+1) {
			why += fmt.Sprintf("%s%s %s != %s", sep(why), name, s.pointerString(d.last), vcpuName(me))
		} else {
			why += fmt.Sprintf("%s%s == %s", sep(why), name, vcpuName(me))
		}
	}
	return why
}

// flush is kvmppc_e500_tlbil_all (tlbilxlpid, local to CPU c) and the
// record of v as the last vCPU the condition looks at.
func (m *machine) flush(s *state, c, v, l int, x *model.Exec) {
	me := uint64(v + 1)
	x.Touch(m.tlbName[c], true)
	*m.tlbAt(s, c, l) = entry{}
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
// inside the scheduler). A vCPU in guest mode first exits on a host
// interrupt (a timer tick: kvmppc_handle_exit runs with interrupts on,
// and the scheduler takes the CPU at its first preemption point); the
// exit touches nothing the model shares, so it is part of this step. The
// vCPU keeps its place in the run loop (vcpuState.pc): it resumes there
// on whichever CPU loads it next.
func (m *machine) put(s *state, c int, x *model.Exec) {
	p := &s.cpus[c]
	v := int(p.run)
	vc := &s.vcpus[v]
	exit := vc.pc == pcGuest
	if exit {
		vc.pc = pcHost
	}
	x.Store(s.mem, m.oldpir[v], uint64(c))
	p.run, p.lpidr, p.step = -1, 0, 0
	vc.cpu = -1
	if x.Labelling() {
		how := ""
		if exit {
			how = "guest exit on a host interrupt, then "
		}
		x.Labelf("%skvmppc_core_vcpu_put_e500mc: vCPU %s of %s leaves CPU%d, oldpir = %d", how, vcpuName(vc.id), vmName(s.vms[vc.vm].id), c, c)
	}
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
