package e500mc

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// The guest's operations on vCPU v loaded on CPU c. Each is one step: the
// guest access is one TLB use (and, on a miss, the host's refill, which
// runs on the same core before the guest retries, touching only this
// core's TLB and v's own gtlb); an emulated tlbwe or tlbilx touches only
// v's gtlb (private to whichever CPU runs v) and this core's TLB, which no
// other CPU can reach (all host invalidations here are local). Splitting
// them would only add interleavings with steps of other CPUs, which touch
// neither.

// seq numbers a guest operation; a tlbwe maps EA 0 to page seq, so every
// mapping ever installed is a distinct page and a wrong translation is
// visible as a wrong page number.
func (m *machine) seq(s *state) uint8 {
	s.opsLeft--
	return uint8(m.cfg.ops) - s.opsLeft
}

// guestAccess is a guest load of EA 0: the hardware looks up (TGS=1,
// TLPID=LPIDR, EA 0) in the core's TLB; on a miss the host's DTLB-miss
// handler refills from v's gtlb (kvmppc_mmu_map) or injects a guest TLB
// miss. A hit is where the properties are checked.
func (m *machine) guestAccess(s *state, c int, x *model.Exec) {
	p := &s.cpus[c]
	v := int(p.run)
	vc := &s.vcpus[v]
	l := int(p.lpidr)
	m.seq(s)
	p.step++
	x.Touch(m.tlbName[c], false)
	who := ""
	if x.Labelling() {
		who = fmt.Sprintf("vCPU %s of %s", vcpuName(vc.id), vmName(s.vms[vc.vm].id))
	}
	client := int(vc.id)
	if x.Recording() {
		x.Call(client, op{VCPU: vc.id, Kind: opTranslate})
	}
	if e := *m.tlbAt(s, c, l); e.valid() {
		if x.Labelling() {
			x.Labelf("guest load EA 0: %s on CPU%d hits the TLB (LPID %d) -> page %d", who, c, l, e.rpn)
		}
		if x.Recording() {
			x.Return(client, result{Page: e.rpn})
		}
		m.checkHit(s, c, v, e, x)
		return
	}
	g := x.Load(s.mem, m.gtlb[v])
	if g == 0 {
		if x.Labelling() {
			x.Labelf("guest load EA 0: %s on CPU%d misses; no gtlb entry, guest TLB miss injected", who, c)
		}
		if x.Recording() {
			x.Return(client, result{})
		}
		return
	}
	x.Touch(m.tlbName[c], true)
	*m.tlbAt(s, c, l) = entry{creator: vc.id + 1, vm: s.vms[vc.vm].id, rpn: uint8(g)}
	x.Count(metricRefills, 1)
	if x.Labelling() {
		x.Labelf("kvmppc_mmu_map: %s on CPU%d misses EA 0, host refills page %d from its gtlb (LPID %d)", who, c, g, l)
	}
	if x.Recording() {
		x.Return(client, result{Page: uint8(g)})
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

// guestTLBWE is kvmppc_e500_emul_tlbwe for EA 0: invalidate the shadow of
// the entry being replaced on this core (kvmppc_e500_tlbil_one: tlbsx by
// EA in this LPID, then clear whatever entry it finds), write the gtlb
// entry, and premap its shadow on this core (kvmppc_mmu_map). The model's
// TLB holds one entry per (LPID, EA), so the premap replaces any entry
// with that tag, as tlbil_one would have.
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
	x.Store(s.mem, m.gtlb[v], uint64(page))
	x.Touch(m.tlbName[c], true)
	*m.tlbAt(s, c, l) = entry{creator: vc.id + 1, vm: s.vms[vc.vm].id, rpn: page}
	p.step++
	if x.Recording() {
		x.Call(int(vc.id), op{VCPU: vc.id, Kind: opInstall, Page: page})
		x.Return(int(vc.id), result{})
	}
	if x.Labelling() {
		inval := ""
		if old != 0 {
			inval = fmt.Sprintf("tlbil_one of old page %d on CPU%d, ", old, c)
		}
		x.Labelf("kvmppc_e500_emul_tlbwe: vCPU %s maps EA 0 -> page %d (%swrite gtlb, premap on CPU%d LPID %d)", vcpuName(vc.id), page, inval, c, l)
	}
}

// guestTLBILX is kvmppc_e500_emul_tlbilx for EA 0: for the matching gtlb
// entry, kvmppc_e500_tlbil_one on this core only, then invalidate the
// gtlb entry. Entries for EA 0 on other cores are left alone: this is
// what makes an entry stale after migration.
func (m *machine) guestTLBILX(s *state, c int, x *model.Exec) {
	p := &s.cpus[c]
	v := int(p.run)
	vc := &s.vcpus[v]
	l := int(p.lpidr)
	m.seq(s)
	old := x.Load(s.mem, m.gtlb[v])
	x.Touch(m.tlbName[c], true)
	*m.tlbAt(s, c, l) = entry{}
	x.Store(s.mem, m.gtlb[v], 0)
	if x.Recording() {
		x.Call(int(vc.id), op{VCPU: vc.id, Kind: opInvalidate})
		x.Return(int(vc.id), result{})
	}
	if x.Labelling() {
		x.Labelf("kvmppc_e500_emul_tlbilx: vCPU %s invalidates EA 0 (page %d) in its gtlb and on CPU%d only (LPID %d)", vcpuName(vc.id), old, c, l)
	}
}
