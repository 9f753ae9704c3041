package e500mc

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// The guest's operations on vCPU v running in guest mode on CPU c. A TLB
// hit is one step of the guest alone. A miss and every guest TLB
// instruction trap to the host (an exit; kvmppc_handle_exit): the step is
// the exit and the emulation up to the host's first preemptible point,
// after which the vCPU's thread is in the host (vcpuState.pc) and the
// rest are steps of its own (runloop.go). What the emulation touches
// before that point is v's gtlb and gtlb_priv (private to whichever CPU
// runs v) and this core's TLB, which no other CPU can reach (all host
// invalidations here are local), so nothing of another thread could
// interleave with it.

// seq numbers a guest operation; a tlbwe maps EA 0 to page seq, so every
// mapping ever installed is a distinct page and a wrong translation is
// visible as a wrong page number.
func (m *machine) seq(s *state) uint8 {
	s.opsLeft--
	return uint8(m.cfg.ops) - s.opsLeft
}

// guestAccess is a guest load of EA 0: the hardware looks up (TGS=1,
// TLPID=LPIDR, EA 0) in the core's TLB. A hit is where no-pollution and
// vm-isolation are checked. A miss exits to the host (a DTLB miss
// interrupt), whose handler looks EA 0 up in v's gtlb
// (kvmppc_mmu_dtlb_index): with no entry it injects a guest TLB miss and
// resumes the guest; with one it goes on to kvmppc_mmu_map, a step of its
// own, after which the guest retries the load (another guest operation).
func (m *machine) guestAccess(s *state, c int, x *model.Exec) {
	p := &s.cpus[c]
	v := int(p.run)
	vc := &s.vcpus[v]
	l := int(p.lpidr)
	m.seq(s)
	x.Touch(m.tlbName[c], false)
	who := ""
	if x.Labelling() {
		who = fmt.Sprintf("vCPU %s of %s", vcpuName(vc.id), vmName(s.vms[vc.vm].id))
	}
	client := int(vc.id)
	if e := *m.tlbAt(s, c, l); e.valid() {
		p.step++
		if x.Labelling() {
			x.Labelf("guest load EA 0: %s on CPU%d hits the TLB (LPID %d) -> page %d", who, c, m.hwLPID(c, l), e.rpn)
		}
		if x.Recording() {
			x.Call(client, op{VCPU: vc.id, Kind: opTranslate})
			x.Return(client, result{Page: e.rpn})
		}
		m.checkHit(s, c, v, e, x)
		return
	}
	g := x.Load(s.mem, m.gtlb[v])
	if g == 0 {
		vc.pc = pcHost
		if x.Labelling() {
			x.Labelf("guest load EA 0: %s on CPU%d misses; no gtlb entry, guest TLB miss injected", who, c)
		}
		if x.Recording() {
			x.Call(client, op{VCPU: vc.id, Kind: opTranslate})
			x.Return(client, result{})
		}
		return
	}
	vc.pc = pcMap
	x.Count(metricRefills, 1)
	if x.Labelling() {
		x.Labelf("guest load EA 0: %s on CPU%d misses the TLB (LPID %d); DTLB miss exit, its gtlb maps EA 0 to page %d: kvmppc_mmu_map next", who, c, m.hwLPID(c, l), g)
	}
}

// checkHit checks a TLB hit of vCPU v on CPU c against both properties,
// each from its own call site.
func (m *machine) checkHit(s *state, c, v int, e entry, x *model.Exec) {
	vc := &s.vcpus[v]
	vm := s.vms[vc.vm].id
	l := s.cpus[c].lpidr
	if e.vm != vm {
		x.Fail(VMIsolation, "vCPU %s of %s (LPID %d) on CPU%d hit the TLB entry EA 0 -> page %d that vCPU %s of %s installed: %s was destroyed, %s reuses LPID %d, and %s's entry survived on CPU%d (a cross-VM leak)",
			vcpuName(vc.id), vmName(vm), l, c, e.rpn, vcpuName(e.creator-1), vmName(e.vm), vmName(e.vm), vmName(vm), l, vmName(e.vm), c)
		return
	}
	g := uint8(s.mem.Peek(m.gtlb[v]))
	if e.creator != vc.id+1 {
		x.Fail(NoPollution, "vCPU %s of %s (LPID %d) on CPU%d hit the TLB entry EA 0 -> page %d that vCPU %s of the same VM installed; %s's own guest TLB %s (pollution)",
			vcpuName(vc.id), vmName(vm), l, c, e.rpn, vcpuName(e.creator-1), vcpuName(vc.id), gtlbString(g))
		return
	}
	if e.rpn != g {
		x.Fail(NoPollution, "vCPU %s of %s (LPID %d) on CPU%d hit its own stale TLB entry EA 0 -> page %d; its guest TLB %s since it changed it on another CPU (invalidations are local)",
			vcpuName(vc.id), vmName(vm), l, c, e.rpn, gtlbString(g))
	}
}

func gtlbString(g uint8) string {
	if g == 0 {
		return "has no mapping for EA 0"
	}
	return fmt.Sprintf("maps EA 0 to page %d", g)
}

// invalGtlbeOnHost is inval_gtlbe_on_host for the gtlb entry of EA 0 of
// vCPU v on CPU c: only when gtlb_priv's ref is E500_TLB_VALID does it
// kvmppc_e500_tlbil_one (tlbsx by EA in this LPID, then clear whatever
// entry it finds, on this core only); either way the ref is cleared. It
// returns whether it invalidated on the host.
func (m *machine) invalGtlbeOnHost(s *state, c, v, l int, x *model.Exec) bool {
	ref := x.Load(s.mem, m.ref[v])
	if ref != 0 {
		x.Touch(m.tlbName[c], true)
		*m.tlbAt(s, c, l) = entry{}
	}
	x.Store(s.mem, m.ref[v], 0)
	return ref != 0
}

// guestTLBWE is kvmppc_e500_emul_tlbwe for EA 0: if the gtlb entry being
// replaced is valid, inval_gtlbe_on_host; write the gtlb entry; then the
// premap (kvmppc_mmu_map), whose kvmppc_e500_shadow_map and write_stlbe
// are the vCPU's next steps.
func (m *machine) guestTLBWE(s *state, c int, x *model.Exec) {
	p := &s.cpus[c]
	v := int(p.run)
	vc := &s.vcpus[v]
	l := int(p.lpidr)
	page := m.seq(s)
	if m.cfg.scenario == scenarioAlternating {
		page = uint8(v + 1)
	}
	old := x.Load(s.mem, m.gtlb[v])
	inval := false
	if old != 0 {
		inval = m.invalGtlbeOnHost(s, c, v, l, x)
	}
	x.Store(s.mem, m.gtlb[v], uint64(page))
	vc.pc = pcMap
	if x.Recording() {
		x.Call(int(vc.id), op{VCPU: vc.id, Kind: opInstall, Page: page})
		x.Return(int(vc.id), result{})
	}
	if x.Labelling() {
		what := ""
		switch {
		case inval:
			what = fmt.Sprintf("inval_gtlbe_on_host: tlbil_one of old page %d on CPU%d, ", old, c)
		case old != 0:
			what = fmt.Sprintf("old page %d has no valid ref: no tlbil_one, ", old)
		}
		x.Labelf("kvmppc_e500_emul_tlbwe: vCPU %s on CPU%d maps EA 0 -> page %d (%swrite gtlb); premap with kvmppc_mmu_map next", vcpuName(vc.id), c, page, what)
	}
}

// guestTLBILX is kvmppc_e500_emul_tlbilx for EA 0 (tlbilx_one): for the
// matching gtlb entry, inval_gtlbe_on_host on this core only, then
// invalidate the gtlb entry; the guest resumes through
// kvmppc_prepare_to_enter. Entries for EA 0 on other cores are left
// alone: this is what makes an entry stale after migration.
func (m *machine) guestTLBILX(s *state, c int, x *model.Exec) {
	p := &s.cpus[c]
	v := int(p.run)
	vc := &s.vcpus[v]
	l := int(p.lpidr)
	m.seq(s)
	old := x.Load(s.mem, m.gtlb[v])
	inval := m.invalGtlbeOnHost(s, c, v, l, x)
	x.Store(s.mem, m.gtlb[v], 0)
	vc.pc = pcHost
	if x.Recording() {
		x.Call(int(vc.id), op{VCPU: vc.id, Kind: opInvalidate})
		x.Return(int(vc.id), result{})
	}
	if x.Labelling() {
		where := fmt.Sprintf("tlbil_one on CPU%d only", c)
		if !inval {
			where = "no valid ref: nothing invalidated on the host"
		}
		x.Labelf("kvmppc_e500_emul_tlbilx: vCPU %s invalidates EA 0 (page %d) in its gtlb; inval_gtlbe_on_host: %s (LPID %d)", vcpuName(vc.id), old, where, m.hwLPID(c, l))
	}
}

// guestTLBIVAX is kvmppc_e500_emul_tlbivax for EA 0 (arch/powerpc/kvm/
// e500_mmu.c): the guest's tlbivax, which the hardware would broadcast to
// every core, traps (kvmppc_core_vcpu_setup sets EPCR[DGTMI]) and is
// emulated on this vCPU alone: the matching entry of its own gtlb is
// invalidated (kvmppc_e500_gtlbe_invalidate, with no inval_gtlbe_on_host),
// then kvmppc_core_flush_tlb runs kvmppc_e500_tlbil_all (tlbilxlpid of
// get_lpid(vcpu), this CPU only) and clear_tlb_privs (the ref loses
// E500_TLB_VALID). No other vCPU's gtlb and no other CPU's TLB is touched;
// the guest resumes through kvmppc_prepare_to_enter. Like tlbilx, one
// step: what it touches is v's gtlb and gtlb_priv and this core's TLB.
func (m *machine) guestTLBIVAX(s *state, c int, x *model.Exec) {
	p := &s.cpus[c]
	v := int(p.run)
	vc := &s.vcpus[v]
	l := int(p.lpidr)
	m.seq(s)
	old := x.Load(s.mem, m.gtlb[v])
	x.Store(s.mem, m.gtlb[v], 0)
	x.Touch(m.tlbName[c], true)
	*m.tlbAt(s, c, l) = entry{}
	x.Store(s.mem, m.ref[v], 0)
	vc.pc = pcHost
	if x.Recording() {
		x.Call(int(vc.id), op{VCPU: vc.id, Kind: opInvalidate})
		x.Return(int(vc.id), result{})
	}
	if x.Labelling() {
		what := "no gtlb entry for EA 0"
		if old != 0 {
			what = fmt.Sprintf("invalidates EA 0 (page %d) in its gtlb", old)
		}
		x.Labelf("kvmppc_e500_emul_tlbivax: vCPU %s %s; kvmppc_core_flush_tlb: tlbilxlpid %d on CPU%d only, clear_tlb_privs", vcpuName(vc.id), what, m.hwLPID(c, l), c)
	}
}
