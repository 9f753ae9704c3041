package e500mc

import "github.com/protocheck/protocheck/model"

// scriptedStep is the seed's workload (scenario 1): one CPU whose host
// scheduler alternates vCPU A of VM1 and vCPU B of VM2 (the seed's
// "other guest"; e500mc.md calls it C), A first, for `rounds` rounds. A
// runs the memory-stress loop: in its first slice it maps EA 0 (tlbwe),
// and in every slice it touches EA 0 once. B is CPU bound and does
// nothing with the TLB. There is exactly one choice at each step, so the
// exploration is the one execution whose flush count the seed's claim is
// about: per-cpu flushes at every one of the 2N loads, per-lpid only at
// the first load of A and of B. The one alternative keeps the number it
// has in the general scenario (the slot loaded, altTLBWE, altAccess,
// altPut), so that the schedule reads the same.
func (m *machine) scriptedStep(s *state, c int, x *model.Exec) {
	p := &s.cpus[c]
	if p.run < 0 {
		if s.loadsLeft == 0 {
			x.Done()
			return
		}
		done := 2*m.cfg.rounds - int(s.loadsLeft)
		m.load(s, c, x.ChooseFrom(1<<uint(done%2)), x)
		return
	}
	alt := altPut
	if p.run == 0 {
		switch {
		case s.mem.Peek(m.gtlb[0]) == 0:
			alt = altTLBWE
		case p.step == 0 || p.step == 1 && int(s.loadsLeft) == 2*m.cfg.rounds-1:
			// One access per slice (the first slice also did the tlbwe).
			alt = altAccess
		}
	}
	m.guestStep(s, c, x.ChooseFrom(1<<uint(alt)), x)
}
