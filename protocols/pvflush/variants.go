package pvflush

import "github.com/protocheck/protocheck/model"

// Property names, in the words of pvflush.md (B-SAFE, B-S2).
const (
	// StaleTLB (B-SAFE): once vCPU0's flush of X returned, no target uses
	// a translation of X obtained before the PTE change.
	StaleTLB = "stale-tlb"
	// FlagShape (B-S2): FLUSH_TLB set implies PREEMPTED set, and no bit
	// of the byte is set while PREEMPTED is clear.
	FlagShape = "flag-shape"
)

// Metric names.
const (
	// WaitSteps counts the steps (by any thread) taken while vCPU0
	// busy-waits for the IPI ack of a target that is scheduled out: the
	// waste the seed's ebizzy numbers measure.
	WaitSteps = "wait-steps"
	// IPIs counts call-function IPIs sent by vCPU0.
	IPIs = "ipis"
)

const (
	metricWait = iota
	metricIPIs
)

// variant holds the switches of one named variant. The guest side and the
// host side are separate axes (pvflush.md); every switch is false in the
// merged guest and host.
type variant struct {
	// Guest (kvm_flush_tlb_others).
	native     bool // no PV flush: IPI every target and wait
	shiftBug   bool // cmpxchg new value state | 1 << KVM_VCPU_SHOULD_FLUSH (bit 2)
	uncompared bool // skip the target iff cmpxchg returned non-zero
	alwaysSkip bool // skip a target read as PREEMPTED whatever cmpxchg returned
	plainStore bool // plain store of state | FLUSH_TLB instead of cmpxchg
	// Host (x86.c).
	noGuard    bool // set_preempted lacks the "already reported" guard (SP2)
	hostCopy   bool // record_steal_time clears through a host copy (read, then write back)
	noBoundary bool // set_preempted lacks the at_instruction_boundary gate (SP0)
	earlyEntry bool // record_steal_time may fail a cache refresh and return without clearing
}

var variants = map[string]variant{
	"posted":            {shiftBug: true, uncompared: true},
	"shift-bug":         {shiftBug: true},
	"ignore-cmpxchg":    {uncompared: true},
	"fixed":             {},
	"native":            {native: true},
	"host-clobber":      {noGuard: true},
	"host-copy":         {hostCopy: true},
	"mid-instruction":   {noBoundary: true},
	"always-skip":       {alwaysSkip: true},
	"early-entry":       {earlyEntry: true},
	"guest-plain-store": {plainStore: true},
}

const seed = "seed 003_cebc059dddab0bb4 (Wanpeng Li, KVM: Add paravirt remote TLB flush; review by Radim Krčmář)"

// variantList is the table of pvflush.md, in its order. Expect records
// what the explorer found at the default size (see pvflush_test.go);
// nothing here is declared without the checker agreeing.
var variantList = []model.Variant{
	{Name: "posted", Expect: StaleTLB,
		Description: "the seed as posted: cmpxchg sets state | 1 << KVM_VCPU_SHOULD_FLUSH (bit 2) and its result is not compared",
		Source:      seed},
	{Name: "shift-bug", Expect: StaleTLB,
		Description: "only the shift bug: cmpxchg sets bit 2, which the host never tests, and the target is skipped",
		Source:      seed + "; fixed in v2 of the series (\"fix cmpxchg check\")"},
	{Name: "ignore-cmpxchg", Expect: model.ExpectOK,
		Description: "only the uncompared cmpxchg: the target is skipped iff cmpxchg returns non-zero; latent under SC with the merged host",
		Source:      seed + "; Radim: compare with state \"to avoid a race that would drop running VCPU\""},
	{Name: "fixed", Expect: model.ExpectOK,
		Description: "Radim's correction (cmpxchg(...) == state, later try_cmpxchg) with the merged host",
		Source:      "858a43aae236 KVM: X86: use paravirtualized TLB Shootdown; host f38a7b75267f, 8c6de56a42e0, b043138246a4, 6cd88243c7e0"},
	{Name: "native", Expect: model.ExpectOK,
		Description: "no PV flush: native_flush_tlb_others IPIs every target and waits, scheduled out or not",
		Source:      "arch/x86/mm/tlb.c native_flush_tlb_others (smp_call_function_many, wait=1)"},
	{Name: "host-clobber", Expect: StaleTLB,
		Description: "fixed guest; kvm_steal_time_set_preempted stores PREEMPTED on every put, clearing a pending FLUSH_TLB",
		Source:      "CVE-2019-3016 part 1, fixed by 8c6de56a42e0 x86/kvm: Be careful not to clear KVM_VCPU_FLUSH_TLB bit"},
	{Name: "host-copy", Expect: StaleTLB,
		Description: "fixed guest; record_steal_time clears preempted through a host copy, read then written back non-atomically",
		Source:      "CVE-2019-3016 part 2, fixed by b043138246a4 x86/KVM: Make sure KVM_VCPU_FLUSH_TLB flag is not missed"},
	{Name: "mid-instruction", Expect: StaleTLB,
		Description: "fixed guest; a vCPU scheduled out in the middle of an emulated access is reported PREEMPTED",
		Source:      "CVE-2022-39189, fixed by 6cd88243c7e0 KVM: x86: do not report a vCPU as preempted outside instruction boundaries"},
	{Name: "always-skip", Expect: StaleTLB,
		Description: "misreading of the patch: a target read as PREEMPTED is skipped whatever cmpxchg returned",
		Source:      "pvflush.md stretch variant (contrast to ignore-cmpxchg)"},
	{Name: "early-entry", Expect: StaleTLB,
		Description: "fixed guest; record_steal_time may fail its cache refresh and return without clearing, and the vCPU still enters",
		Source:      "pvflush.md V-B4 (mutation)"},
	{Name: "guest-plain-store", Expect: StaleTLB,
		Description: "the guest sets FLUSH_TLB with a plain store instead of cmpxchg and skips the target",
		Source:      "pvflush.md V-B1 (mutation)"},
}
