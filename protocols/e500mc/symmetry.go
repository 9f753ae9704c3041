package e500mc

import (
	"bytes"
	"encoding/binary"

	"github.com/protocheck/protocheck/model"
)

// Symmetry reduction (model.Symmetric) over the physical CPUs.
//
// In the general scenario the CPUs run the same host scheduler code on
// their own per-CPU data, and a CPU's identity enters the model only as
// data that a renaming of CPUs can rename consistently:
//
//   - per CPU: what it runs (run, lpidr, step), its TLB, and its per-CPU
//     words last_vcpu_of_lpid[*] and last_vcpu_on_cpu (whose values are
//     vCPU pointers, i.e. slots, not CPUs);
//   - per vCPU: the CPU it is loaded on (vcpuState.cpu) and oldpir, which
//     holds a PIR, i.e. a CPU id (or 0xffffffff, which names no CPU);
//   - the host MM's set of CPUs with its IPI pending (hostState.ipi);
//   - the steps: a load on CPU c compares oldpir with PIR = c and reads
//     and writes c's per-CPU words and TLB; a put stores oldpir = c; the
//     vCPU's host-side steps and guest operations on c touch c's TLB and
//     the vCPU's own words; the VMM's teardown on CPU c (alternative
//     k*cpus+c) invalidates c's TLB; the host MM IPIs the CPUs whose
//     vCPU of the VM is in guest mode, and only waits for them.
//
// So for a permutation π of the CPUs, applying π to the per-CPU records,
// the per-CPU words, vcpuState.cpu and every oldpir that holds a valid PIR
// maps each step of CPU c to the same step of CPU π(c) (and the VMM's
// teardown on c to the teardown on π(c)), with the same assertion outcome
// (no-pollution and vm-isolation look at entries, vCPUs and VMs, never at
// CPU ids), the same events and metric deltas; the invariant
// host-memory-safety looks at every CPU alike, and deadlock is
// permutation-invariant. One exception: the
// oldpir-zero variant has kvmppc_core_vcpu_create_e500mc store the
// constant PIR 0 in a new vCPU's oldpir, which names CPU0; when the VMM
// creates vCPUs (cycles > 0), only permutations that fix CPU0 are
// symmetries. (Without the VMM the constant is only in the initial
// state, which does not matter: the transition relation is symmetric.)
//
// The canonical key is the least, byte-wise, of the encodings of π(s) over
// the permutations π of the group (at most 4! = 24; appendPermuted, an
// encoding of its own in which CPUs come in the permuted order): two
// states get the same key iff one is a permutation of the other. In
// scenario 1 there is one CPU, and the group is trivial.

var _ model.Symmetric = (*machine)(nil)

// cpuPerms[n] lists the permutations of 0..n-1, identity first.
var cpuPerms = func() [maxCPUs + 1][][maxCPUs]int8 {
	var out [maxCPUs + 1][][maxCPUs]int8
	for n := 1; n <= maxCPUs; n++ {
		var rec func(p [maxCPUs]int8, used int, k int)
		rec = func(p [maxCPUs]int8, used int, k int) {
			if k == n {
				out[n] = append(out[n], p)
				return
			}
			for c := 0; c < n; c++ {
				if used&(1<<c) == 0 {
					p[k] = int8(c)
					rec(p, used|1<<c, k+1)
				}
			}
		}
		rec([maxCPUs]int8{}, 0, 0)
	}
	return out
}()

// fixedCPU returns the CPU every symmetry must fix, or -1.
func (m *machine) fixedCPU() int {
	if m.cfg.cycles > 0 && m.cfg.oldpirInit < uint64(m.cfg.cpus) {
		return int(m.cfg.oldpirInit)
	}
	return -1
}

// CanonicalKey implements model.Symmetric (see the comment above).
func (m *machine) CanonicalKey(ms model.State, b []byte) []byte {
	s := ms.(*state)
	start := len(b)
	fixed := m.fixedCPU()
	perms := cpuPerms[m.cfg.cpus]
	if m.cfg.oneLPID {
		// The two threads of a core reach the same entries, so only
		// renamings that keep cores together (and the threads' parity
		// out of the tags) could be symmetries: none is used.
		perms = perms[:1]
	}
	b = m.appendPermuted(b, s, &perms[0]) // the identity
	var tmp [512]byte
	for i := 1; i < len(perms); i++ {
		p := &perms[i]
		if fixed >= 0 && p[fixed] != int8(fixed) {
			continue
		}
		cand := m.appendPermuted(tmp[:0], s, p)
		if bytes.Compare(cand, b[start:]) < 0 {
			b = append(b[:start], cand...)
		}
	}
	return b
}

// appendPermuted appends an encoding of π(s), where CPU c of s becomes
// CPU pi[c]: position i of the encoding holds the CPU c with pi[c] = i.
// It encodes every part of the state, so two states get the same
// encoding under some permutations iff one is a permutation of the other.
func (m *machine) appendPermuted(b []byte, s *state, pi *[maxCPUs]int8) []byte {
	n := m.cfg.cpus
	var inv [maxCPUs]int
	for c := 0; c < n; c++ {
		inv[pi[c]] = c
	}
	for i := 0; i < n; i++ {
		c := inv[i]
		p := &s.cpus[c]
		b = append(b, byte(p.run), p.lpidr, p.step, s.host.ipi>>uint(c)&1)
		for l := 1; l <= m.cfg.lpids; l++ {
			e := m.tlbAt(s, c, l)
			b = append(b, e.creator, e.vm, e.rpn, e.gen)
		}
		for l := 1; l <= m.cfg.lpids; l++ {
			b = binary.AppendUvarint(b, s.mem.Peek(m.lastOfLPID[c][l]))
		}
		if m.cfg.cond == condPerCPU {
			b = binary.AppendUvarint(b, s.mem.Peek(m.lastOnCPU[c]))
		}
	}
	for v := range s.vcpus {
		p := &s.vcpus[v]
		cpu := p.cpu
		if cpu >= 0 {
			cpu = pi[cpu]
		}
		b = append(b, boolByte(p.live), p.vm, p.id, byte(cpu), p.midLoad, p.pc)
		o := s.mem.Peek(m.oldpir[v])
		if o < uint64(n) {
			o = uint64(pi[o])
		}
		b = binary.AppendUvarint(b, o)
		b = binary.AppendUvarint(b, s.mem.Peek(m.gtlb[v]))
		b = binary.AppendUvarint(b, s.mem.Peek(m.ref[v]))
		b = binary.AppendUvarint(b, s.mem.Peek(m.requests[v]))
	}
	for k, vm := range s.vms {
		b = append(b, boolByte(vm.live), vm.id, vm.nv, vm.gen)
		b = binary.AppendUvarint(b, s.mem.Peek(m.kvmLPID[k]))
		b = binary.AppendUvarint(b, s.mem.Peek(m.inProgress[k]))
	}
	b = binary.AppendUvarint(b, s.mem.Peek(m.lpidInuse))
	return append(b, s.vmm.cycle, s.vmm.phase, s.vmm.vm, s.vmm.toCreate,
		s.host.phase, s.host.vm, s.host.done,
		s.loadsLeft, s.opsLeft, s.nextVCPU, s.nextVM)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}
