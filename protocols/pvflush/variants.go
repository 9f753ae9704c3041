package pvflush

import "github.com/protocheck/protocheck/model"

// Property names, with their ids (B-SAFE, B-S1, B-S2, B11: doc.go).
const (
	// StaleTLB (B-SAFE): once an initiator's flush of its page returned,
	// no vCPU uses a translation of that page obtained before the PTE
	// change.
	StaleTLB = "stale-tlb"
	// FlagShape (B-S2): FLUSH_TLB set implies PREEMPTED set, and no bit
	// of the byte is set while PREEMPTED is clear.
	FlagShape = "flag-shape"
	// PreemptedNotRunning (B-S1): a vCPU whose steal_time byte says
	// PREEMPTED is not in guest mode and is not in the middle of an
	// emulated instruction (no translation in flight).
	PreemptedNotRunning = "preempted-not-running"
	// PTUseAfterFree (B11): a lockless page-table walker
	// (get_user_pages_fast) never reads a page-table page that was freed.
	PTUseAfterFree = "pt-use-after-free"
	// FlushReturns is the progress property: every flush that started (a
	// PTE cleared) eventually returns.
	FlushReturns = "flush-returns"
)

// Metric names.
const (
	// WaitSteps counts the steps (by any thread) taken while an
	// initiator, running, busy-waits for the IPI ack of a vCPU that is
	// scheduled out (once per such initiator): the waste the seed's
	// ebizzy numbers measure.
	WaitSteps = "wait-steps"
	// IPIs counts call-function IPIs sent by the initiators.
	IPIs = "ipis"
)

const (
	metricWait = iota
	metricIPIs
)

// variant holds the switches of one named variant. The guest side and the
// host side are separate axes; every switch is false in the
// merged guest with the fixed (mainline) host. The host parameter selects
// the 2017 host instead (host.go), which has the bugs of noGuard,
// hostCopy and noBoundary at once.
type variant struct {
	// Guest (kvm_flush_tlb_others).
	native     bool // no PV flush: IPI every target and wait
	shiftBug   bool // cmpxchg new value state | 1 << KVM_VCPU_SHOULD_FLUSH (bit 2)
	uncompared bool // skip the target iff cmpxchg returned non-zero
	alwaysSkip bool // skip a target read as PREEMPTED whatever cmpxchg returned
	plainStore bool // plain store of state | FLUSH_TLB instead of cmpxchg
	busyWait   bool // csd_lock_wait is a spin step (a self-loop reading the ack), not a blocked await
	// Guest page-table freeing (B11): targets run get_user_pages_fast on
	// X, and vCPU0's last unmap frees X's page-table page Q.
	walker    bool
	tablePage bool // Q is freed with tlb_remove_page right after the flush (else tlb_remove_table: RCU-sched)
	// Host (x86.c), single bugs on the fixed host.
	noGuard    bool // set_preempted lacks the "already reported" guard (SP2)
	hostCopy   bool // record_steal_time clears through a host copy (read, then write back)
	noBoundary bool // set_preempted lacks the at_instruction_boundary gate (SP0)
	userPut    bool // kvm_arch_vcpu_put reports at a return to userspace too (before 54aa83c90198)
	earlyEntry bool // record_steal_time may fail to read or map steal_time and return without clearing
}

var variants = map[string]variant{
	"posted":            {shiftBug: true, uncompared: true},
	"shift-bug":         {shiftBug: true},
	"ignore-cmpxchg":    {uncompared: true},
	"fixed":             {},
	"native":            {native: true},
	"busy-wait":         {busyWait: true},
	"host-clobber":      {noGuard: true},
	"host-copy":         {hostCopy: true},
	"mid-instruction":   {noBoundary: true, userPut: true},
	"always-skip":       {alwaysSkip: true},
	"early-entry":       {earlyEntry: true},
	"guest-plain-store": {plainStore: true},
	"pt-free-page":      {walker: true, tablePage: true},
	"pt-free-rcu":       {walker: true},
	"pt-free-native":    {native: true, walker: true, tablePage: true},
}

const seed = "seed 003_cebc059dddab0bb4 (Wanpeng Li, KVM: Add paravirt remote TLB flush; review by Radim Krčmář)"

// variantList is the variant table (the posted patch and its two bugs, the
// fix, native, the host bugs, the mutations) and the variants added for
// page-table freeing and busy-waiting. Expect records what bfs
// finds at the default size (see pvflush_test.go); nothing here is
// declared without the checker agreeing.
var variantList = []model.Variant{
	{Name: "posted", Expect: StaleTLB,
		Description: "the seed as posted: cmpxchg sets state | 1 << KVM_VCPU_SHOULD_FLUSH (bit 2) and its result is not compared",
		Source:      seed},
	{Name: "shift-bug", Expect: StaleTLB,
		Description: "only the shift bug: cmpxchg sets bit 2, which the host never tests, and the target is skipped",
		Source:      seed + "; fixed in v2 of the series (\"fix cmpxchg check\")"},
	{Name: "ignore-cmpxchg", Expect: model.ExpectOK,
		Description: "only the uncompared cmpxchg: the target is skipped iff cmpxchg returns non-zero; latent in Linux (SC and TSO, inc_mm_tlb_gen modelled)",
		Source:      seed + "; Radim: compare with state \"to avoid a race that would drop running VCPU\""},
	{Name: "fixed", Expect: model.ExpectOK,
		Description: "Radim's correction (cmpxchg(...) == state, later try_cmpxchg) with the fixed host",
		Source:      "858a43aae236 KVM: X86: use paravirtualized TLB Shootdown; host f38a7b75267f with the fixes 8c6de56a42e0, b043138246a4, 6cd88243c7e0"},
	{Name: "native", Expect: model.ExpectOK,
		Description: "no PV flush: native_flush_tlb_others IPIs every target and waits, scheduled out or not",
		Source:      "arch/x86/mm/tlb.c native_flush_tlb_others (smp_call_function_many, wait=1)"},
	{Name: "busy-wait", Expect: model.ExpectOK,
		Description: "fixed, with csd_lock_wait as the spin it is (cpu_relax until the csd is unlocked): a self-loop, so flush-returns needs fairness",
		Source:      "kernel/smp.c csd_lock_wait (smp_cond_load_acquire on csd->flags)"},
	{Name: "host-clobber", Expect: StaleTLB,
		Description: "fixed guest; kvm_steal_time_set_preempted stores PREEMPTED on every put, clearing a pending FLUSH_TLB",
		Source:      "CVE-2019-3016 part 1, fixed by 8c6de56a42e0 x86/kvm: Be careful not to clear KVM_VCPU_FLUSH_TLB bit"},
	{Name: "host-copy", Expect: StaleTLB,
		Description: "fixed guest; record_steal_time clears preempted through a host copy, read then written back non-atomically",
		Source:      "CVE-2019-3016 part 2, fixed by b043138246a4 x86/KVM: Make sure KVM_VCPU_FLUSH_TLB flag is not missed"},
	{Name: "mid-instruction", Expect: PreemptedNotRunning, AlsoViolates: []string{StaleTLB},
		Description: "fixed guest; a vCPU scheduled out in the middle of an emulated access, or returning to userspace at an MMIO exit, is reported PREEMPTED",
		Source:      "CVE-2022-39189, fixed by 6cd88243c7e0 KVM: x86: do not report a vCPU as preempted outside instruction boundaries; the host before it also reported at the return to userspace (54aa83c90198, applied just before it; both in v5.19)"},
	{Name: "always-skip", Expect: StaleTLB,
		Description: "misreading of the patch: a target read as PREEMPTED is skipped whatever cmpxchg returned",
		Source:      "hypothetical misreading of the seed's if (cmpxchg(...)) (contrast to ignore-cmpxchg)"},
	{Name: "early-entry", Expect: PreemptedNotRunning, AlsoViolates: []string{StaleTLB},
		Description: "fixed guest; record_steal_time may fail to read or map steal_time and return without clearing, and the vCPU still enters",
		Source:      "mutation V-B4; the early returns of record_steal_time in every era"},
	{Name: "guest-plain-store", Expect: PreemptedNotRunning, AlsoViolates: []string{StaleTLB},
		Description: "the guest sets FLUSH_TLB with a plain store instead of cmpxchg and skips the target",
		Source:      "mutation V-B1"},
	{Name: "pt-free-page", Expect: PTUseAfterFree,
		Description: "PV flush, but page-table pages freed with tlb_remove_page right after the flush: a vCPU preempted inside get_user_pages_fast (IRQs off) is skipped and the table it walks is freed",
		Source:      "B11; x86 before 9e52fc2b50de x86/mm: Enable RCU based page table freeing (v4.14), or a PV guest whose pv_mmu_ops.tlb_remove_table is left at native's tlb_remove_page"},
	{Name: "pt-free-rcu", Expect: model.ExpectOK,
		Description: "PV flush with page-table pages freed through tlb_remove_table: call_rcu_sched, after every IRQ-off walker has left",
		Source:      "9e52fc2b50de (v4.14, every x86 kernel); KVM's pv_mmu_ops.tlb_remove_table = tlb_remove_table from \"x86/mm: Only use tlb_remove_table() for paravirt\" (2018)"},
	{Name: "pt-free-native", Expect: model.ExpectOK,
		Description: "no PV flush, page-table pages freed with tlb_remove_page: the IPI wait is what protects the IRQ-off walker",
		Source:      "x86 before 9e52fc2b50de; native since \"x86/mm: Only use tlb_remove_table() for paravirt\" until 2025"},
}
