// Package pvflush models the KVM paravirtual remote TLB flush (seed
// 003_cebc059dddab0bb4: Wanpeng Li's "KVM: Add paravirt remote TLB flush"
// with Radim Krčmář's review), its guest side as posted and as merged
// (858a43aae236, arch/x86/kernel/kvm.c kvm_flush_tlb_others, later
// kvm_flush_tlb_multi) behind flush_tlb_mm_range (arch/x86/mm/tlb.c), and
// the host side in arch/x86/kvm/x86.c (record_steal_time,
// kvm_steal_time_set_preempted, kvm_arch_vcpu_load/put) in two eras: the
// host merged with the guest (f38a7b75267f, parameter host=1) and the
// fixed host (8c6de56a42e0 and b043138246a4 for CVE-2019-3016,
// 6cd88243c7e0 for CVE-2022-39189; host=0, the default). It also models
// the lockless page-table walker that the PV flush endangers
// (get_user_pages_fast, B11) and the table freeing that protects it
// (tlb_remove_table, 9e52fc2b50de).
//
// # Threads
//
// One thread per vCPU, "vCPUt": the guest vCPU and its host thread H_t,
// which is what the vCPU is in host mode. Guest and host mode of one vCPU
// never run at once, so one thread loses no interleaving. In guest mode a
// vCPU accesses pages through its TLB (a miss walks the PTE and caches the
// translation), takes call-function IPIs (flush_tlb_func: flush the
// initiator's page, then ack), or has an instruction exit to KVM's
// emulator, which walks the PTE and holds the translation until it
// completes the access (which B5 needs). In host mode it finishes
// emulation, runs record_steal_time and enters the guest. The host
// scheduler is not a thread: a preemption (kvm_sched_out ->
// kvm_arch_vcpu_put -> kvm_steal_time_set_preempted) is an alternative of
// the preempted vCPU's step while the shared budget "preemptions" lasts,
// and kvm_sched_in (vcpu_load: KVM_REQ_STEAL_UPDATE) is its only step
// while it is scheduled out.
//
// vCPU0, and with initiators=2 vCPU1, are also initiators, "vCPUk
// (initiator)": each unmaps a page of its own, Xk (X with one
// initiator), per round: it clears the PTE (ptep_get_and_clear), calls
// flush_tlb_mm_range, whose inc_mm_tlb_gen is the next step, then
// kvm_flush_tlb_others reads each other vCPU's steal_time.preempted in id
// order, sets FLUSH_TLB with cmpxchg in a byte read as PREEMPTED and drops
// that vCPU, queues a csd and sends a call-function IPI to each remaining
// one, waits for each ack (csd_lock_wait: a blocked await; busy-wait makes
// it the spin it is), and returns; the page is then freed and reused. A
// later round first maps a fresh frame. An initiator's program steps are
// one alternative of its vCPU's step: between any two of them it may take
// the other initiator's IPI (interrupts are enabled there; only the local
// flush, which the model leaves out, disables them), be preempted by the
// host, and, between its unmaps, access the other initiator's page. So
// with two initiators each is the other's target: both cmpxchg the same
// bytes, and a cmpxchg can find the 3 the other initiator set.
//
// With one initiator vCPU0 is never preempted and has no steal_time byte:
// nobody reads it, sends it an IPI or flushes its TLB, so its preemption
// could only stutter. An initiator's own TLB never holds its own page: it
// accesses only the other initiator's page, because flush_tlb_mm_range
// flushes the local TLB itself (with interrupts off) and no other vCPU is
// involved in that. Initiators' accesses go through the TLB only: an
// access that exits for emulation exercises the host's
// instruction-boundary gate, which pure targets exercise on every page,
// and leaving it out of the initiators keeps two initiators at the default
// size within the explorer's default state bound with symmetry.
//
// The walker variants (pt-free-*) add, on vCPUs that are not initiators,
// get_user_pages_fast on X (walker.go), and make vCPU0's last unmap free
// X's page-table page Q (free_pgtables: pmd_clear, pte_free_tlb); with
// tlb_remove_table a thread "rcu_sched" ends the grace period after
// call_rcu_sched(Q) once every vCPU that was inside an IRQ-off walk has
// left it.
//
// # Steps
//
// One step per shared access (a PTE, the PMD, tlb_gen, a steal_time
// byte), atomic RMW, IPI send, ack, TLB fill-and-use or TLB flush.
// Coarser steps, each with its reason in the code: a guest access's walk,
// fill and use are one step (an instruction is atomic with respect to the
// interrupts that flush its TLB); a preemption from guest mode folds the
// exit on the host's interrupt into the put (the exit writes nothing
// shared; an IPI sent in between stays pending as if sent before);
// record_steal_time's TLB flush folds into its read or xchg of the byte
// (nothing but the vCPU's own guest code reads its TLB, and it runs none
// in between); the csd's llist_add and the IPI send are one step (a target
// may take it at once, a superset of the IPI arriving later);
// local_irq_disable folds into the walker's PMD read. flush_tlb_func's
// tlb_gen bookkeeping (a full flush catching up several generations, or
// nothing because an earlier flush on this vCPU, after the initiator's
// inc_mm_tlb_gen, covered it) is left out: each IPI flushes its
// initiator's page, which the real code has flushed by then too. The
// order in which one interrupt runs two queued csds is left to the
// scheduler (the llist's FIFO order is one of them).
// at_instruction_boundary is true after an interrupt exit and stays true
// across the schedule-out and back in until the next vcpu_run iteration,
// which folds into record_steal_time; so a second put before re-entry is
// at a boundary, which is how B3 is reached even with 6cd88243c7e0's gate.
//
// The 2017 host (host=1): set_preempted stores PREEMPTED into the byte and
// the host copy on every put, with no guard and no boundary gate;
// record_steal_time reads the byte into the host copy
// (kvm_read_guest_cached), clears the copy (the xchg is on the copy),
// flushes if FLUSH_TLB was set, and writes the copy back three times
// (kvm_write_guest_cached around the version and steal updates), each a
// step, with preemption allowed in between: a put in between sets the copy
// to 1, and the next write-back writes that 1 over a FLUSH_TLB an
// initiator set meanwhile. record_steal_time runs with preemption enabled
// (vcpu_enter_guest processes requests before preempt_disable), and a
// request made meanwhile cancels the entry, so it runs again.
//
// Returns to userspace (user-exits, 0 by default): KVM_RUN of a vCPU
// that is not the lone initiator may return to userspace, from guest mode
// (the exit folded in, at an instruction boundary: KVM_EXIT_INTR) or from
// host mode outside record_steal_time; with an emulated access in flight
// the return is the MMIO exit (KVM_EXIT_MMIO), and complete_userspace_io
// finishes the access at the next KVM_RUN, before vcpu_run, through the
// translation obtained before the exit. kvm_arch_vcpu_ioctl_run ends with
// vcpu_put, and KVM_RUN starts with vcpu_load (KVM_REQ_STEAL_UPDATE). In
// userspace the vCPU's only step is KVM_RUN: no preempt notifier is
// registered outside vcpu_load .. vcpu_put. What the put reports is the
// host's: since 54aa83c90198 ("KVM: x86: do not set st->preempted when
// going back to user space", applied just before 6cd88243c7e0, both in v5.19)
// kvm_arch_vcpu_put calls kvm_steal_time_set_preempted only if
// vcpu->preempted, which kvm_sched_out sets and a return to userspace does
// not, so the fixed host reports nothing; the 2017 host (f38a7b75267f:
// kvm_arch_vcpu_put calls it unconditionally) and mid-instruction's host
// (54aa83c90198's parent: the guard, no gate) report at every put. The
// model's in-flight translation stands, at an MMIO exit, for the gpa of
// each of vcpu->mmio_fragments, which complete_emulated_mmio uses after
// re-entry without walking again; a stale use of it reaches the device or
// ROM at the old address rather than a reused page of RAM. Not modelled:
// the put of every other vCPU ioctl (KVM_GET_REGS and the like do
// vcpu_load and vcpu_put; on the 2017 host that put stores PREEMPTED too,
// over a pending FLUSH_TLB, which is B3 again).
//
// # Variants
//
// The guest and host are separate switches (variants.go); the host
// parameter replaces the fixed host by the 2017 one for every variant. At
// the default size posted, shift-bug, host-clobber, host-copy,
// always-skip violate stale-tlb; mid-instruction, early-entry and
// guest-plain-store violate preempted-not-running first (and stale-tlb
// without it); pt-free-page violates pt-use-after-free; fixed, native,
// busy-wait, ignore-cmpxchg, pt-free-rcu and pt-free-native are correct.
// With host=1 every variant, fixed included, violates
// preempted-not-running in two steps (an emulated instruction's vCPU
// reported preempted: CVE-2022-39189), and stale-tlb without B-S1 (B5,
// and B4 through the write-backs without emulation: host2017_test.go).
// With host=1 the returns to userspace alone (preemptions=0
// user-exits=1) do the same: the MMIO exit's put reports the vCPU
// mid-instruction (B-S1, 2 steps; stale-tlb in 14 without it), and without
// emulation a return to userspace, the re-entry's record_steal_time and
// its write-back of the host copy lose a deferred flush (B4, 19 steps). On
// the fixed host returns to userspace change no verdict, and with no
// preemption at all only mid-instruction is reported preempted (at the
// MMIO exit).
//
// ignore-cmpxchg (skip iff cmpxchg returns non-zero) is latent: under
// sequential consistency every non-zero value a failed cmpxchg returns
// carries PREEMPTED (flag-shape), and a byte found at 1 or 3 means the
// host's flush for that value runs at the next entry, after the reader's
// PTE change; with two initiators a cmpxchg that finds the other's 3 and
// skips is safe for the same reason. Under x86-TSO it stays latent with
// Linux's barriers: the PTE clear is followed by flush_tlb_mm_range's
// inc_mm_tlb_gen, a locked RMW that drains the store buffer before the
// steal_time reads, whether the clear is ptep_get_and_clear's locked xchg
// (pte-clear=0) or a plain store (pte-clear=2, as
// native_local_ptep_get_and_clear). Only the hypothetical caller of
// pte-clear=1 (a plain clear and no barrier at all before the PV flush;
// no such caller exists in Linux, see the README) lets the clear sit in
// the store buffer past the reads, and then ignore-cmpxchg drops a
// running vCPU that holds a translation of the freed page (tso_test.go).
//
// Known bugs and mutations, by id (the tests, the variants' Sources and
// the README use them):
//
//   - B1: the seed's shift bug: cmpxchg sets state | 1 << KVM_VCPU_SHOULD_FLUSH
//     where the constant is already the mask, so bit 2, which the host
//     never tests (Radim Krčmář's review; fixed in v2, "fix cmpxchg
//     check"): shift-bug and posted.
//   - B2: the seed's uncompared cmpxchg, if (cmpxchg(...)) instead of
//     == state, which Radim said could "drop running VCPU": ignore-cmpxchg
//     and posted. B2(a) is its schedule under x86-TSO: the byte holds 3
//     (set by a second initiator, "I2", or by an earlier flush round), the
//     initiator's PTE clear is still in its store buffer when it reads the
//     byte (step G2a, kvm_flush_tlb_others' READ_ONCE), the target flushes,
//     re-caches the old translation and is preempted again, and the failed
//     cmpxchg drops it.
//   - B3: CVE-2019-3016 part 1: kvm_steal_time_set_preempted stores
//     PREEMPTED on every put, clearing a pending FLUSH_TLB (fixed by
//     8c6de56a42e0 "x86/kvm: Be careful not to clear KVM_VCPU_FLUSH_TLB
//     bit"): host-clobber.
//   - B4: CVE-2019-3016 part 2: record_steal_time clears the byte through
//     a host copy, read and written back non-atomically (fixed by
//     b043138246a4 "x86/KVM: Make sure KVM_VCPU_FLUSH_TLB flag is not
//     missed"): host-copy.
//   - B5: CVE-2022-39189: a vCPU scheduled out in the middle of an
//     emulated access, its translation in flight, is reported PREEMPTED
//     (fixed by 6cd88243c7e0 "KVM: x86: do not report a vCPU as preempted
//     outside instruction boundaries"): mid-instruction.
//   - B11: a lockless page-table walker (get_user_pages_fast, interrupts
//     off) relies on the flush IPI, which the PV flush does not send to a
//     preempted vCPU, so its page-table page can be freed under it unless
//     tables are freed through RCU (9e52fc2b50de "x86/mm: Enable RCU based
//     page table freeing"): pt-free-page, pt-free-rcu, pt-free-native.
//   - V-B1: mutation: the guest sets FLUSH_TLB with a plain store instead
//     of cmpxchg: guest-plain-store.
//   - V-B4: mutation: record_steal_time returns early without clearing
//     the byte and the vCPU still enters the guest: early-entry.
//
// The property ids B-SAFE, B-S1 and B-S2 are under Properties below.
//
// # Memory model
//
// The shared words go through model.Mem. memory=0 (the default) is
// sequentially consistent; memory=1 is x86-TSO: each vCPU's plain stores
// (set_pte_at, a plain PTE clear, pmd_clear, set_preempted's store, the
// host copy's write-backs) enter its store buffer; the locked xchg,
// cmpxchg and inc_mm_tlb_gen drain it, and so do the initiator's IPI send
// (llist_add is a locked cmpxchg) and VM entry (vcpu_enter_guest's
// srcu_read_unlock has an smp_mb). Commits are steps of the extra thread
// "store buffers".
//
// # Properties
//
// stale-tlb (B-SAFE) is asserted at every use of a translation: the state
// carries, per page, the observer "frames below freed have been freed",
// and a TLB entry or in-flight emulator translation names its frame.
// pt-use-after-free (B11) is asserted at every read through Q.
// flag-shape (B-S2) and preempted-not-running (B-S1: a byte with
// PREEMPTED belongs to a vCPU that is not in guest mode and has no
// emulated instruction in flight) are invariants. flush-returns is the
// progress property: it is pending while some initiator's flush is in
// flight, from its PTE clear to its return, and is checked by bfs under
// weak fairness. The blocked-await variants have acyclic state graphs, so
// it holds with or without fairness; busy-wait's spin is a self-loop, and
// flush-returns fails without fairness (the spin repeats while the target
// never runs) and holds with weak fairness. Deadlock is the explorer's; a
// blocked initiator names the ack it waits for.
//
// # Metrics
//
// wait-steps counts, at every step by any thread, the initiators that run
// and wait for the ack of a vCPU that is scheduled out; ipis counts IPIs
// sent. Both are summarised per execution on acyclic graphs (not
// busy-wait's). The mean is over executions, each counted once, not by its
// likelihood (matrix_test.go).
//
// # Spec
//
// Each page's PTE as a register (spec.go): the unmap-and-flush is a write
// that returns when the flush does; an access is a read of the translation
// used. A page fault is not a read: during a flush one vCPU may fault on
// the cleared PTE while another legally reads the old page through its
// TLB, which no register allows.
package pvflush
