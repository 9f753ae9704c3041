// Package pvflush models the KVM paravirtual remote TLB flush (seed
// 003_cebc059dddab0bb4: Wanpeng Li's "KVM: Add paravirt remote TLB flush"
// with Radim Krčmář's review), its guest side as posted and as merged
// (858a43aae236, arch/x86/kernel/kvm.c kvm_flush_tlb_others, later
// kvm_flush_tlb_multi), and the host side in arch/x86/kvm/x86.c
// (record_steal_time, kvm_steal_time_set_preempted, kvm_arch_vcpu_load/put)
// with the fixes that followed: 8c6de56a42e0 and b043138246a4
// (CVE-2019-3016), 6cd88243c7e0 (CVE-2022-39189). The protocol document is
// pvflush.md (reference B.0-B.5, Appendix C).
//
// # Threads
//
// Thread 0, "vCPU0 (initiator)", is the guest kernel on the flushing vCPU:
// per round it clears the PTE of page X (ptep_get_and_clear), then
// kvm_flush_tlb_others reads each target's steal_time.preempted, sets
// FLUSH_TLB with cmpxchg in a byte read as PREEMPTED and drops that target,
// sends a call-function IPI to each remaining target, busy-waits for each
// ack (a blocked await, not a self-loop), and returns; the page is then
// freed and reused (the allocator is folded into the return step). A later
// round first maps X to a fresh page. vCPU0 itself is never preempted and
// never accesses X.
//
// Threads 1..n-1, "vCPUt", are the targets. Each is one thread for the
// guest vCPU and its host thread H_t, which is what the vCPU is in host
// mode: in guest mode it accesses X through its TLB (a miss walks the PTE
// and caches the translation), takes the IPI (flush_tlb_func: flush, then
// ack), or has an instruction exit to KVM's emulator, which walks the PTE
// and holds the translation until it completes the access (Appendix C
// note 4); in host mode it finishes emulation, runs record_steal_time
// (xchg st.preempted to 0, flush if FLUSH_TLB was set) and re-enters the
// guest. The host scheduler is not a thread of its own: a preemption
// (kvm_sched_out -> kvm_arch_vcpu_put -> kvm_steal_time_set_preempted) is
// an alternative step of the preempted vCPU, enabled in guest and host
// mode while the shared budget "preemptions" lasts, and kvm_sched_in
// (vcpu_load: KVM_REQ_STEAL_UPDATE) is that vCPU's only step while it is
// scheduled out. Guest mode and host mode of one vCPU never run at once,
// so one thread loses no interleaving.
//
// # Steps
//
// One step per shared access (the PTE, a steal_time byte), RMW, IPI send,
// ack, TLB fill-and-use or flush. Two coarser steps, with reasons in the
// code: a guest access's walk, fill and use are one step (a guest
// instruction is atomic with respect to the interrupts that flush its
// TLB), and a preemption from guest mode folds the exit on the host's
// interrupt into the put (the exit writes nothing shared; an IPI sent in
// between stays pending as if sent before). at_instruction_boundary is
// true after that exit and stays true across the schedule-out and back in
// until the next vcpu_run iteration, which folds into record_steal_time;
// so a second put before re-entry is at a boundary, which is how B3 is
// reached even with 6cd88243c7e0's gate.
//
// # Variants
//
// The guest and host are separate switches (variants.go). posted,
// shift-bug, host-clobber, host-copy, mid-instruction, always-skip,
// early-entry and guest-plain-store violate stale-tlb; fixed, native and
// ignore-cmpxchg are exhaustively correct at the default size, and
// ignore-cmpxchg also at flushes=2 preemptions=3 (pvflush_test.go), under
// sequential consistency (the default, memory=0).
//
// ignore-cmpxchg (skip iff cmpxchg returns non-zero) is latent under
// sequential consistency with the merged host, as pvflush.md predicted,
// and the checker shows why. A failed cmpxchg can return 0: the host's
// record_steal_time took the byte, the vCPU is back, and 0 is falsy, so it
// keeps its IPI. With one flush round nothing else is reachable, and the
// state graph is identical in size to fixed's. With two rounds vCPU0 can
// read 3 (its previous round's deferred flush, still pending) and then
// find 1: in between the host entered, its xchg returned 3 and flushed,
// and the vCPU was preempted again. The posted code skips the vCPU, and
// that is safe: the flush happened after the read, hence after the PTE
// change, so the TLB holds no old translation and later fills see the
// cleared PTE. The third value, 3 after reading 1, needs a second
// initiator setting FLUSH_TLB concurrently (not modelled); it is safe for
// the same reason as a success, the pending flush runs at the next entry.
// Every non-zero return carries PREEMPTED (flag-shape), which is what
// makes the omission harmless under SC; it is a bug with a host that
// leaves PREEMPTED set while the vCPU runs (not modelled), or under store
// buffering (pvflush.md B2(a)), which the parameters memory and pte-clear
// settle. always-skip is the contrast: a target read as PREEMPTED and
// skipped after a cmpxchg that found 0 is running with its old TLB.
//
// Under x86-TSO (memory=1: per-vCPU store buffers, commits as steps of a
// "store buffers" thread, model.WithTSO) with Linux's unmap, whose
// ptep_get_and_clear is a locked xchg that drains vCPU0's buffer before
// the flush reads steal_time, nothing changes: every variant keeps its
// verdict at the default size. The B2(a) model drops that barrier
// (pte-clear=1: a plain store; the IPI send still drains, as
// smp_call_function_many's llist_add is a locked cmpxchg). Then
// ignore-cmpxchg violates stale-tlb and fixed stays correct, at the
// smallest size vcpus=2 flushes=2 preemptions=2 accesses=2 (fixed: 3236
// states; ignore-cmpxchg: a 23-step shortest counterexample; tso_test.go).
// The schedule is pvflush.md's, with the first round standing in for I2:
// round 0 defers its flush (byte 3); round 1 maps X->P1 and buffers the
// clear; vCPU0 reads 3; the host's xchg returns 3 and flushes, the map
// (not the clear) commits, vCPU1 walks the PTE and caches X->P1, and is
// preempted again (byte 1); vCPU0's cmpxchg drains the clear, fails and
// returns 1, and the uncompared test skips vCPU1; the flush returns, P1 is
// freed, the host enters without a flush and vCPU1 reads P1 through its
// stale entry. Fixed compares, sees 1 != 3 and sends the IPI. Every
// ingredient is needed: with memory=0, pte-clear=0, flushes=1,
// preemptions=1 or accesses=1, ignore-cmpxchg is exhaustively correct.
//
// # Memory model
//
// The shared words (the PTE, the steal_time bytes) go through model.Mem.
// memory=0 (the default) is sequentially consistent; memory=1 is x86-TSO:
// each vCPU's plain stores (set_pte_at, the pte-clear=1 clear,
// set_preempted's store, host-copy's write-back) enter its store buffer,
// the locked xchg and cmpxchg drain it, and vCPU0's IPI send drains it
// (llist_add). Commits are steps of the extra thread "store buffers";
// the store-buffer variables sb[vCPUt] hold raw words (the PTE as
// frame+1, 0 for not present). Symmetry reduction is not available under
// TSO. Partial-order reduction is (Independent is passed through for
// pairs of vCPUs, and commit steps depend on everything); the diamond
// test covers SC only, but dfs reaches bfs's 3236 states at the B2(a)
// size.
//
// # Properties
//
// stale-tlb (B-SAFE) is asserted at every use of a translation: the state
// carries the observer "frames below freed have been freed", and a TLB
// entry or in-flight emulator translation names its frame, so bfs is
// sound. flag-shape (B-S2) is an invariant: FLUSH_TLB implies PREEMPTED,
// and no bit is set while PREEMPTED is clear. The stray bit 2 of the shift
// bug is allowed next to PREEMPTED: the host clears the whole byte and
// vcpu_is_preempted's whole-byte test still agrees with the PREEMPTED bit,
// so the byte 5 does no harm by itself; the harm is the flush the host
// never does, and stale-tlb reports it. (The strict form, every byte in
// {0, 1, 3}, is checked for the correct variants in the tests.) Deadlock
// is the explorer's; vCPU0's blocked step names the ack it waits for.
//
// # Metrics
//
// wait-steps counts every step, by any thread, taken while vCPU0 waits
// for the ack of a target that is scheduled out; ipis counts IPIs sent.
// fixed still waits on scheduled-out targets, in the windows steal_time
// cannot show: a target read as running and preempted before its ack, or
// one scheduled out in host mode outside an instruction boundary (not
// reported since 6cd88243c7e0). See metrics_test.go for the numbers.
//
// # Spec
//
// The PTE of X as a register (spec.go): the unmap-and-flush is a write
// that returns when the flush does; an access is a read of the
// translation used. A page fault is not a read: during a flush one target
// may fault on the cleared PTE while another legally reads the old page
// through its TLB, which no register allows.
package pvflush
