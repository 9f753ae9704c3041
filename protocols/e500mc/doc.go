// Package e500mc models KVM's TLB invalidation at vCPU load on Freescale
// e500mc/e5500 cores (arch/powerpc/kvm/e500mc.c), the subject of seed 002:
// "[PATCH v3] KVM: PPC: e500mc: Enhance tlb invalidation condition on
// vcpu schedule" (Mihai Caraman, 2014), merged as the per-CPU array
// last_vcpu_of_lpid[] after Scott Wood's review, together with the host's
// own flush (the MMU notifier's KVM_REQ_TLB_FLUSH), whose safety rests on
// that load-time check.
//
// # What is modelled
//
// Physical CPUs, each with a hardware TLB whose guest entries are tagged
// by LPID only (no vCPU identity: any vCPU running with that LPID on that
// core can hit any of them; the installer is kept as checker bookkeeping).
// Each CPU's thread is its host scheduler: it loads a vCPU
// (kvmppc_core_vcpu_load_e500mc), runs it, and puts it
// (kvmppc_core_vcpu_put_e500mc). Load and put are one atomic step each
// because they run with preemption disabled (vcpu_load's get_cpu(), the
// kvm_sched_in/out preempt notifiers), so nothing else can run on that CPU
// in between and no other CPU touches its per-CPU data.
//
// A loaded vCPU runs KVM's run loop (runloop.go): kvmppc_prepare_to_enter
// (which handles a pending KVM_REQ_TLB_FLUSH with kvmppc_core_flush_tlb on
// the CPU it runs on) and guest mode; in guest mode, loads of one
// effective address through the core's TLB (a miss exits to the host,
// whose kvmppc_mmu_map refills from the vCPU's own guest TLB through
// kvmppc_e500_shadow_map and write_stlbe), and guest tlbwe and local
// tlbilx, which trap and are emulated on the current core only
// (kvmppc_e500_emul_tlbwe/_tlbilx with inval_gtlbe_on_host). Every point
// of the loop outside guest mode is preemptible: the vCPU can be put
// there and resume on another CPU, which is how a flush lands on one CPU
// and a shadow entry on another.
//
// A host MM thread (mm.go) invalidates a VM's memory through the MMU
// notifier: invalidate_range_start, kvm_flush_remote_tlbs (a request to
// every vCPU of the VM and an IPI to each CPU running one in guest mode,
// waited for), then the old host pages are freed. A VMM thread destroys a
// VM (freeing its vCPUs, with a tlbilxlpid on the CPU running the
// teardown only, then its LPID) and creates a VM and its vCPUs in its
// place; LPIDs are allocated lowest free first and a vCPU pointer is its
// slot (the address kmem_cache hands out), so a freed LPID and a freed
// vCPU's address come straight back and the ABA of the per-CPU pointer
// comparison is reachable. A vCPU incarnation (the letter in messages), a
// VM incarnation number and a host page generation tell the checker which
// object really installed an entry and whether its page still exists.
//
// Shared words go through model.Mem: per-CPU last_vcpu_of_lpid[L] (or
// last_vcpu_on_cpu), per-vCPU oldpir, guest TLB, gtlb_priv ref and
// requests, kvm->arch.lpid, kvm->mmu_invalidate_in_progress and the LPID
// bitmap. TLB contents and their installers are bookkeeping.
//
// Variants: per-lpid (the seed, merged), per-cpu (2013, before the seed),
// oldpir-only (2012), no-oldpir, oldpir-zero, never-flush, preempt-window,
// where the load evaluates the condition, is preempted, and acts on its
// decision on the CPU it resumes on (C-bug-d; mainline is safe
// because the load runs with preemption disabled), and ignore-request,
// where the run loop ignores KVM_REQ_TLB_FLUSH (the request half of the
// host's flush), and e6500-one-lpid, two threads of an e6500 core
// sharing its TLB with one LPID per VM (C-bug-e; threads=2).
//
// # e6500 threads and the guest's tlbivax
//
// threads=2 makes CPUs 2i and 2i+1 the two hardware threads of core i,
// which share the core's TLB. Mainline gives a VM two LPIDs on such cores
// (32f35b8 e500mc.c: kvmppc_e500mc_init exposes KVMPPC_NR_LPIDS /
// threads_per_core LPIDs "to workarround the lack of tlb write conditional
// instruction", kvmppc_core_init_vm_e500mc shifts the allocated LPID left
// by one, "vm1 will use lpids 2 and 3"), and every tag, search and
// invalidation uses get_lpid(vcpu) = get_thread_specific_lpid(kvm->arch.lpid)
// = lpid | (smp_processor_id() & 1) (e500.h, "should be called with
// preemption disabled"): SPRN_LPID at load, last_vcpu_of_lpid's index,
// MAS5 in kvmppc_e500_tlbil_all/_one, MAS8 in __write_host_tlbe (e500_mmu_host.c,
// under write_stlbe's preempt_disable). So an entry tagged 2l | t is
// written, hit and invalidated by thread t of that core only, and the
// shared TLB is two private ones: with threads=2 (the core's TLB indexed
// by tag, tlbAt) per-lpid and per-cpu explore exactly the states and
// transitions they have with one thread per core, and every buggy variant
// keeps its shortest counterexample. e6500-one-lpid drops the thread bit: both
// threads tag a VM's entries l in the one TLB, and a vCPU on one thread
// hits what its sibling thread's vCPU of the same VM installed; no
// load-time check can see it, because the two vCPUs run at once.
//
// tlbivax=1 lets guests execute tlbivax. It never reaches the hardware:
// kvmppc_core_vcpu_setup sets EPCR[DGTMI], so guest TLB management
// instructions trap, and kvmppc_e500_emul_tlbivax (e500_mmu.c) invalidates
// the matching entry of the executing vCPU's own gtlb (all of them for
// IA=1), then kvmppc_core_flush_tlb: tlbilxlpid of get_lpid(vcpu) on the
// current CPU and clear_tlb_privs. Whatever the architecture broadcasts,
// no other vCPU's gtlb and no other CPU's TLB is touched. Its effect is
// tlbilx's on the gtlb and KVM_REQ_TLB_FLUSH's on this CPU's TLB and the
// ref, both already modelled; the explorer agrees: it adds transitions
// and no state (e6500_test.go), and every verdict is the one without it.
//
// Known variants and bugs, by id (the Sources and tests use them): C-v0,
// never flush (the strawman): never-flush; C-bug-a, the oldpir term
// dropped, so a vCPU that invalidated an entry on another CPU comes back
// and hits its own stale entry: no-oldpir; C-bug-b, C-bug-a with the LPID
// and a freed vCPU's address reused, so a new VM's vCPU trusts the old
// VM's entries (mainline is saved by oldpir = 0xffffffff at creation):
// no-oldpir with VM cycles, and oldpir-zero, where oldpir starts at a
// valid PIR; C-bug-d, the check made with preemption enabled:
// preempt-window. The property ids S1, S2 and S3 are below.
//
// # Properties
//
//   - no-pollution (S1): a TLB hit by vCPU v is on an entry v installed
//     and has not since replaced or invalidated in its guest TLB.
//   - vm-isolation (S2): no vCPU hits an entry a vCPU of another VM
//     installed (only possible across LPID reuse).
//   - host-memory-safety (S3), an invariant: no CPU runs guest code while
//     its TLB holds, under that guest's LPID, an entry for a host page the
//     MMU notifier has freed. (Pages of a destroyed VM are not freed in the
//     model; a hit on a destroyed VM's entry is vm-isolation.)
//   - linearizability: each vCPU's guest TLB is an object (install, local
//     invalidate, translate); histories are partitioned per vCPU. S3 is
//     invisible there: the guest reads the page it mapped, through a freed
//     host page.
//
// # Metrics
//
// flushes counts loads that execute tlbilxlpid; refills counts the DTLB
// misses the host refills; request-flushes the kvmppc_core_flush_tlb calls
// made for KVM_REQ_TLB_FLUSH; ipis the IPIs that force a guest exit.
// Parameter scenario=1 replays the seed's workload shape (one CPU
// alternating a vCPU of VM1 and one of VM2 for rounds=N rounds): per-cpu
// flushes 2N times, per-lpid twice (Protocol.Claims; Protocol.Matrix
// lists the sizes verification runs besides the default).
//
// # Sources
//
//   - seed 002, Mihai Caraman's "[PATCH v3] KVM: PPC: e500mc: Enhance tlb
//     invalidation condition on vcpu schedule": the patch, its condition
//     and Scott Wood's review.
//   - torvalds/linux 0980bd9cd32de2fef7eaa2858345c49d14498625
//     arch/powerpc/kvm/e500mc.c: the 2012 condition oldpir != PIR, oldpir
//     initialised to 0xffffffff, kvmppc_e500_tlbil_one/_all.
//   - torvalds/linux 32f35b863451884e856f0f577474740561a87fad
//     arch/powerpc/kvm/e500mc.c: the merged last_vcpu_of_lpid condition.
//   - torvalds/linux arch/powerpc/kvm/e500_mmu_host.c (kvmppc_mmu_map,
//     kvmppc_e500_shadow_map, write_stlbe, inval_gtlbe_on_host,
//     kvmppc_core_flush_tlb, kvm_e500_mmu_unmap_gfn), e500_mmu.c
//     (kvmppc_e500_emul_tlbwe, tlbilx_one), powerpc.c
//     (kvmppc_prepare_to_enter), booke.c (kvmppc_core_check_requests,
//     kvmppc_handle_exit, kvmppc_booke_vcpu_load/put), virt/kvm/kvm_main.c
//     (kvm_mmu_notifier_invalidate_range_start/_end,
//     kvm_flush_remote_tlbs, kvm_make_vcpus_request_mask), include/linux/
//     kvm_host.h (KVM_REQ_TLB_FLUSH carries KVM_REQUEST_WAIT).
//   - e6500 and tlbivax: torvalds/linux 32f35b8 e500mc.c
//     (kvmppc_core_init_vm_e500mc, kvmppc_e500mc_init, the EPCR[DGTMI] of
//     kvmppc_core_vcpu_setup), 03b755b2 e500_mmu_host.c (__write_host_tlbe,
//     kvmppc_core_flush_tlb), ecd740c6 e500_mmu.c (kvmppc_e500_emul_tlbivax);
//     e500.h's get_thread_specific_lpid and get_lpid read in a copy of the
//     mainline file (the stored torvalds e500.h predates them).
package e500mc
