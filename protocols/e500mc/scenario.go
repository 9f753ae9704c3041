package e500mc

import "github.com/protocheck/protocheck/model"

// scriptedStep is the seed's workload (scenario 1): one CPU whose host
// scheduler alternates vCPU A of VM1 and vCPU B of VM2 (the seed's
// "other guest"), A first, for `rounds` rounds. A
// runs the memory-stress loop: in its first slice it maps EA 0 (tlbwe,
// whose premap installs the shadow entry), and in every slice it loads
// EA 0 until the load hits once (a miss exits, the host refills the
// entry and the guest retries). B is CPU bound: it enters the guest and
// does nothing with the TLB. There is exactly one choice at each step, so
// the exploration is the one execution whose flush count the seed's
// claim is about: per-cpu flushes at every one of the 2N loads, per-lpid
// only at the first load of A and of B. The one alternative keeps the
// number it has in the general scenario (the slot loaded, altTLBWE,
// altAccess, altPut, altHost), so that the schedule reads the same.
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
	m.vcpuStep(s, c, x.ChooseFrom(1<<uint(m.script(s, c))), x)
}

// script is the one thing CPU c, with a vCPU loaded, does next in
// scenario 1.
func (m *machine) script(s *state, c int) int {
	p := &s.cpus[c]
	if s.vcpus[p.run].pc != pcGuest {
		return altHost
	}
	if p.run == 0 {
		switch {
		case s.mem.Peek(m.gtlb[0]) == 0:
			return altTLBWE
		case p.step == 0: // no load of EA 0 has hit in this slice yet
			return altAccess
		}
	}
	return altPut
}
