// Package e500mc models KVM's TLB invalidation at vCPU load on Freescale
// e500mc/e5500 cores (arch/powerpc/kvm/e500mc.c), the subject of seed 002:
// "[PATCH v3] KVM: PPC: e500mc: Enhance tlb invalidation condition on
// vcpu schedule" (Mihai Caraman, 2014), merged as the per-CPU array
// last_vcpu_of_lpid[] after Scott Wood's review.
//
// # What is modelled
//
// Physical CPUs, each with a hardware TLB whose guest entries are tagged
// by LPID only (no vCPU identity: any vCPU running with that LPID on that
// core can hit any of them; the installer is kept as checker bookkeeping).
// Each CPU's thread is its host scheduler: it loads a vCPU
// (kvmppc_core_vcpu_load_e500mc), runs the vCPU's guest, and puts it
// (kvmppc_core_vcpu_put_e500mc). Load and put are one atomic step each
// because they run with preemption disabled (vcpu_load's get_cpu(), the
// kvm_sched_in/out preempt notifiers), so nothing else can run on that CPU
// in between and no other CPU touches its per-CPU data. The guest, while
// loaded, does loads of one effective address through the core's TLB
// (a miss is refilled by the host from the vCPU's own guest TLB,
// kvmppc_mmu_map), and guest tlbwe and local tlbilx, which trap and are
// emulated on the current core only (kvmppc_e500_emul_tlbwe/_tlbilx with
// kvmppc_e500_tlbil_one). A VMM thread destroys a VM (freeing its vCPUs,
// with a tlbilxlpid on the CPU running the teardown only, then its LPID)
// and creates a VM and its vCPUs in its place; LPIDs are allocated lowest
// free first and a vCPU pointer is its slot (the address kmem_cache hands
// out), so a freed LPID and a freed vCPU's address come straight back and
// the ABA of the per-CPU pointer comparison is reachable. A vCPU
// incarnation (the letter in messages) and a VM incarnation number tell
// the checker which object really installed an entry.
//
// Shared words go through model.Mem: per-CPU last_vcpu_of_lpid[L] (or
// last_vcpu_on_cpu), per-vCPU oldpir and guest TLB, kvm->arch.lpid and the
// LPID bitmap. TLB contents and their installers are bookkeeping.
//
// Variants: per-lpid (the seed, merged), per-cpu (2013, before the seed),
// oldpir-only (2012), no-oldpir, oldpir-zero, never-flush, and
// preempt-window, where the load evaluates the condition, is preempted,
// and acts on its decision on the CPU it resumes on (e500mc.md C-bug-d;
// mainline is safe because the load runs with preemption disabled).
// e6500-shared-lpid is not modelled.
//
// # Properties
//
//   - no-pollution (S1): a TLB hit by vCPU v is on an entry v installed
//     and has not since replaced or invalidated in its guest TLB.
//   - vm-isolation (S2): no vCPU hits an entry a vCPU of another VM
//     installed (only possible across LPID reuse).
//   - linearizability: each vCPU's guest TLB is an object (install, local
//     invalidate, translate); histories are partitioned per vCPU.
//
// host-memory-safety (S3) is not modelled: there is no host unmap
// (KVM_REQ_TLB_FLUSH), and a hit on a destroyed VM's entry is reported as
// vm-isolation, which the same hit violates first.
//
// # Metrics
//
// flushes counts loads that execute tlbilxlpid; refills counts the host
// DTLB-miss refills that follow. Parameter scenario=1 replays the seed's
// workload shape (one CPU alternating a vCPU of VM1 and one of VM2 for
// rounds=N rounds): per-cpu flushes 2N times, per-lpid twice.
//
// # Sources
//
//   - seed 002 (/work/shared/seeds/002_6414358d65bdb836.txt): the patch,
//     its condition and Scott Wood's review.
//   - torvalds/linux 0980bd9cd32de2fef7eaa2858345c49d14498625
//     arch/powerpc/kvm/e500mc.c: the 2012 condition oldpir != PIR, oldpir
//     initialised to 0xffffffff, kvmppc_e500_tlbil_one/_all.
//   - torvalds/linux 32f35b863451884e856f0f577474740561a87fad
//     arch/powerpc/kvm/e500mc.c: the merged last_vcpu_of_lpid condition.
//   - /work/shared/protocols/e500mc.md: the protocol reference (variants
//     C-v0..C-bug-b, properties S1-S3, the seed's flush counts).
package e500mc
