package e500mc

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// Property names, with their ids (S1, S2, S3: doc.go).
const (
	// NoPollution (S1): every TLB hit by vCPU v is on an entry v itself
	// installed from its own guest TLB and has not since invalidated.
	NoPollution = "no-pollution"
	// VMIsolation (S2): no vCPU ever hits an entry installed by a vCPU of
	// another VM (across LPID reuse).
	VMIsolation = "vm-isolation"
	// HostMemorySafety (S3): no CPU runs guest code while its TLB holds an
	// entry of that guest's LPID for a host page the MMU notifier has
	// freed (an invariant: the guest can touch such an entry at its next
	// load).
	HostMemorySafety = "host-memory-safety"
	// LPIDExhausted: kvmppc_alloc_lpid found no free LPID, which a VM's
	// creation fails on (a configuration with fewer LPIDs than VMs alive
	// at once).
	LPIDExhausted = "lpid-exhausted"
	// HostFlushReturns (progress): every kvm_flush_remote_tlbs the MMU
	// notifier starts returns, so the host frees the invalidated pages:
	// each vCPU in guest mode it sent an IPI to eventually takes it, under
	// weak fairness.
	HostFlushReturns = "host-flush-returns"
)

// Metric names.
const (
	// Flushes counts vCPU loads that execute tlbilxlpid: the seed's cost.
	Flushes = "flushes"
	// Refills counts DTLB misses the host refills from a guest TLB
	// (kvmppc_mmu_map): the exits a needless flush causes.
	Refills = "refills"

	// RequestFlushes counts kvmppc_core_flush_tlb calls made for
	// KVM_REQ_TLB_FLUSH: the host's own flush, on the CPU the vCPU enters
	// on.
	RequestFlushes = "request-flushes"
	// IPIs counts the IPIs kvm_flush_remote_tlbs sends to CPUs running a
	// vCPU of the VM in guest mode.
	IPIs = "ipis"
)

const (
	metricFlushes = iota
	metricRefills
	metricRequestFlushes
	metricIPIs
)

// cond is the flush condition kvmppc_core_vcpu_load_e500mc evaluates.
type cond int

const (
	condPerLPID    cond = iota // oldpir != PIR || last_vcpu_of_lpid[L] != v
	condPerCPU                 // oldpir != PIR || last_vcpu_on_cpu != v
	condOldpirOnly             // oldpir != PIR
	condLastOnly               // last_vcpu_of_lpid[L] != v
	condNever                  // no flush at load
)

// variant is a Variant's switches.
type variant struct {
	cond cond
	// oldpirInit is vcpu->arch.oldpir at vCPU creation: 0xffffffff
	// ("this LPID doesn't have valid state on any cpu") or a valid PIR.
	oldpirInit uint64
	// preemptible: the load can be preempted between evaluating the
	// condition and acting on it, and resume on another CPU.
	preemptible bool
	// ignoreRequest: kvmppc_core_check_requests without its
	// KVM_REQ_TLB_FLUSH case, so the host's flush reaches no CPU.
	ignoreRequest bool
	// oneLPID: on a two-thread core (threads=2), both threads tag a VM's
	// entries with its one LPID in the core's shared TLB (no
	// get_thread_specific_lpid, no lpid <<= 1 in
	// kvmppc_core_init_vm_e500mc).
	oneLPID bool
}

// invalidPIR is the value kvmppc_core_vcpu_create_e500mc gives oldpir.
const invalidPIR = 0xffffffff

var variants = map[string]variant{
	"per-lpid":       {cond: condPerLPID, oldpirInit: invalidPIR},
	"per-cpu":        {cond: condPerCPU, oldpirInit: invalidPIR},
	"oldpir-only":    {cond: condOldpirOnly, oldpirInit: invalidPIR},
	"no-oldpir":      {cond: condLastOnly, oldpirInit: invalidPIR},
	"oldpir-zero":    {cond: condPerLPID, oldpirInit: 0},
	"never-flush":    {cond: condNever, oldpirInit: invalidPIR},
	"preempt-window": {cond: condPerLPID, oldpirInit: invalidPIR, preemptible: true},
	"ignore-request": {cond: condPerLPID, oldpirInit: invalidPIR, ignoreRequest: true},
	"e6500-one-lpid": {cond: condPerLPID, oldpirInit: invalidPIR, oneLPID: true},
}

const src = "seed 002 ([PATCH v3] KVM: PPC: e500mc: Enhance tlb invalidation condition on vcpu schedule, 2014); arch/powerpc/kvm/e500mc.c, e500_mmu_host.c; virt/kvm/kvm_main.c"

// Protocol is the e500mc vCPU-load TLB invalidation protocol.
var Protocol = &model.Protocol{
	Name:        "e500mc",
	Description: "KVM PPC e500mc: flush a core's LPID-tagged TLB at vCPU load unless this vCPU was the last of its LPID there and last ran there",
	Source:      src,
	Variants: []model.Variant{
		{Name: "per-lpid", Expect: model.ExpectOK,
			Description: "flush if oldpir != PIR || last_vcpu_of_lpid[LPID] != vcpu (the seed, as merged)",
			Source:      "seed 002; torvalds/linux 32f35b8 arch/powerpc/kvm/e500mc.c kvmppc_core_vcpu_load_e500mc"},
		{Name: "per-cpu", Expect: model.ExpectOK,
			Description: "flush if oldpir != PIR || last_vcpu_on_cpu != vcpu (2013 fix, before the seed): correct, flushes more",
			Source:      "context lines of the seed diff; opennetworklinux/linux-3.8.13 53bb9ce arch/powerpc/kvm/e500mc.c"},
		{Name: "oldpir-only", Expect: NoPollution,
			// Another vCPU's entry for a page the host has since freed is
			// also a host-memory-safety violation.
			AlsoViolates: []string{HostMemorySafety},
			Description:  "flush only if oldpir != PIR (original 2012 code): another vCPU of the same VM pollutes the TLB",
			Source:       "torvalds/linux 0980bd9 arch/powerpc/kvm/e500mc.c kvmppc_core_vcpu_load"},
		{Name: "no-oldpir", Expect: HostMemorySafety,
			// With the host's flush modelled the shortest counterexample
			// is an entry left on a CPU that outlives the host's flush of
			// its page (no guest TLB instruction needed). Without host
			// unmaps it is the guest's own stale entry after a local
			// tlbilx (no-pollution, C-bug-a), and with a freed
			// vCPU's slot reused by another VM a cross-VM leak (C-bug-b).
			AlsoViolates: []string{NoPollution, VMIsolation},
			Description:  "flush only if last_vcpu_of_lpid[LPID] != vcpu: entries left on a CPU outlive the host's flush and the guest's local invalidations done elsewhere",
			Source:       "hypothetical (C-bug-a): shows why the oldpir term exists"},
		{Name: "oldpir-zero", Expect: VMIsolation,
			Description: "merged condition, but oldpir starts at PIR 0: a new vCPU at a freed vCPU's address in a VM that reuses the LPID trusts the old VM's entries",
			Source:      "hypothetical (C-bug-b/oldpir reuse); mainline sets oldpir = 0xffffffff in kvmppc_core_vcpu_create_e500mc"},
		{Name: "never-flush", Expect: NoPollution,
			AlsoViolates: []string{VMIsolation, HostMemorySafety},
			Description:  "never flush at vCPU load (strawman)",
			Source:       "strawman (C-v0)"},
		{Name: "preempt-window", Expect: NoPollution,
			Description: "merged condition, but checked with preemption enabled: decided on one CPU, acted on (flush and record) on another",
			Source:      "hypothetical (C-bug-d); mainline runs the load with preemption disabled"},
		{Name: "ignore-request", Expect: HostMemorySafety,
			Description: "merged load condition, but kvmppc_core_check_requests ignores KVM_REQ_TLB_FLUSH: the host frees pages the running vCPU's TLB still maps",
			Source:      "hypothetical mutation of arch/powerpc/kvm/booke.c kvmppc_core_check_requests (the request half of the host's flush)"},
		{Name: "e6500-one-lpid", Expect: NoPollution,
			Description: "merged load condition on e6500 (two threads sharing a core's TLB) with one LPID per VM: a vCPU on one thread hits the entry a vCPU of the same VM installed on the other",
			Source:      "hypothetical (C-bug-e); mainline gives a VM two LPIDs on two-thread cores (torvalds/linux 32f35b8 arch/powerpc/kvm/e500mc.c kvmppc_core_init_vm_e500mc, kvmppc_e500mc_init; e500.h get_thread_specific_lpid)",
			// One e6500 core: its two threads are the two CPUs.
			Fixed: model.Params{"threads": 2, "cpus": 2}},
	},
	Params: []model.Param{
		{Name: "scenario", Default: 0, Min: 0, Max: 1, Sentinel: true,
			Description: "0: general exploration; 1: the seed's workload, one CPU alternating vCPU A of VM1 (memory stress) and vCPU B of VM2 (CPU bound) for `rounds` rounds"},
		{Name: "rounds", Default: 3, Min: 1, Max: 100,
			Description: "scenario 1: rounds of A then B"},
		{Name: "cpus", Default: 2, Min: 1, Max: maxCPUs,
			Description: "physical CPUs (each with its own TLB and per-CPU last_vcpu_of_lpid)"},
		{Name: "vm1-vcpus", Default: 2, Min: 1, Max: 3,
			Description: "vCPUs of the first VM"},
		{Name: "vm2-vcpus", Default: 1, Min: 1, Max: 3,
			Description: "vCPUs of the second VM"},
		{Name: "lpids", Default: 2, Min: 2, Max: maxLPIDs,
			Description: "guest LPIDs the allocator hands out (lowest free first; LPID 0 is the host's)"},
		{Name: "loads", Default: 3, Min: 0, Max: 60,
			Description: "vCPU loads (time slices) all host schedulers together may do"},
		{Name: "unbounded-loads", Default: 0, Min: 0, Max: 1,
			Description: "1: no bound on loads (the loads parameter is ignored): the host schedulers load and put vCPUs forever, and the state space is finite because a load or put only moves per-CPU and per-vCPU words among few values"},
		{Name: "ops", Default: 2, Min: 0, Max: 60,
			Description: "guest operations (access attempts, tlbwe, tlbilx) all vCPUs together may do"},
		{Name: "tlb-ops", Default: 1, Min: 0, Max: 1,
			Description: "1: guests execute tlbwe and tlbilx (emulated); 0: no guest TLB instruction: every vCPU boots with EA 0 mapped in its guest TLB (set by userspace through KVM_CONFIG_TLB before the first KVM_RUN) and only loads"},
		{Name: "threads", Default: 1, Min: 1, Max: 2,
			Description: "hardware threads per core: 2 is e6500, where CPUs 2i and 2i+1 are the threads of core i and share its TLB, a VM gets two LPIDs (kvmppc_core_init_vm_e500mc: lpid <<= 1) and a thread tags with lpid | (smp_processor_id() & 1) (get_thread_specific_lpid); needs an even cpus"},
		{Name: "tlbivax", Default: 0, Min: 0, Max: 1,
			Description: "1: guests also execute tlbivax, trapped (EPCR[DGTMI]) and emulated by kvmppc_e500_emul_tlbivax: the vCPU's own gtlb entry, then kvmppc_core_flush_tlb on the current CPU only (needs tlb-ops=1)"},
		{Name: "cycles", Default: 1, Min: 0, Max: 3,
			Description: "VM destroy/create cycles the VMM does (each reuses the freed LPID and vCPU slots)"},
		{Name: "unmaps", Default: 1, Min: 0, Max: 3,
			Description: "MMU-notifier invalidations of a VM's memory the host does (invalidate_range_start, KVM_REQ_TLB_FLUSH and IPIs, then the old host pages are freed)"},
	},
	New:    newMachine,
	Matrix: matrix,
	Claims: claims,
}

// matrix is what verification runs besides the defaults (ops=2, loads=3:
// every bug is found there, and the correct variants are explored in
// seconds): sizes at which each mechanism happens at least twice, all with
// CPU symmetry (model.Symmetric), which halves the state count at two
// CPUs and changes no verdict (TestSymmetryAgreesWithBFS).
var matrix = []model.Config{
	{Params: model.Params{"ops": 3}, Options: []string{"symmetry"},
		Why: "three loads and three guest operations in total (the bound the default had before the run loop and the host's flush were modelled)"},
	{Params: model.Params{"loads": 4}, Options: []string{"symmetry"},
		Why: "four loads: two complete load/put cycles on each of the two CPUs"},
	{Params: model.Params{"unbounded-loads": 1}, Options: []string{"symmetry"},
		Why: "no bound on loads: any number of load/put cycles on every CPU, with the VM cycle and the host's flush; the state space closes because loads only move per-CPU and per-vCPU words among few values"},
	{Params: model.Params{"unmaps": 2}, Options: []string{"symmetry"},
		Why: "the host's MMU-notifier flush twice (two KVM_REQ_TLB_FLUSH rounds, host pages of three generations)"},
	{Params: model.Params{"cycles": 2}, Options: []string{"symmetry"},
		Why: "two VM destroy/create cycles: a freed LPID and freed vCPU slots reused twice"},
	{Params: model.Params{"threads": 2}, Options: []string{"symmetry"},
		Why: "e6500: the two CPUs are the two threads of one core and share its TLB; with get_thread_specific_lpid each thread's entries carry a tag the other never uses, so per-lpid and per-cpu explore exactly the states and transitions they have with one thread per core, every other variant but e6500-one-lpid keeps its shortest counterexample, and e6500-one-lpid (one LPID per VM) breaks no-pollution"},
	{Params: model.Params{"tlbivax": 1}, Options: []string{"symmetry"},
		Why: "guests also execute tlbivax, which KVM emulates on the executing vCPU only (its gtlb, then tlbilxlpid on the current CPU): every verdict is the one without it"},
}

// claims are seed 002's performance claim and what follows from it, as
// counts.
var claims = []model.Claim{
	{Name: "alternating-flushes", Metric: Flushes, A: "per-lpid", B: "per-cpu",
		Params: model.Params{"scenario": 1, "rounds": claimRounds},
		Text:   "seed 002: one CPU alternating a vCPU of VM1 and a vCPU of VM2 for N rounds flushes 2N times under per-cpu and twice under per-lpid",
		Holds: func(a, b model.MetricSummary) (bool, string) {
			return one(a, 2) && one(b, 2*claimRounds), fmt.Sprintf("per-lpid %s flushes, per-cpu %s (2*rounds = %d)", span(a), span(b), 2*claimRounds)
		}},
	{Name: "alternating-refills", Metric: Refills, A: "per-lpid", B: "per-cpu",
		Params: model.Params{"scenario": 1, "rounds": claimRounds},
		Text:   "seed 002: the cost of a needless flush is the guest's refill exits; on the alternating schedule per-lpid refills nothing and per-cpu once per slice of A after the first",
		Holds: func(a, b model.MetricSummary) (bool, string) {
			return one(a, 0) && one(b, claimRounds-1), fmt.Sprintf("per-lpid %s refills, per-cpu %s (rounds-1 = %d)", span(a), span(b), claimRounds-1)
		}},
	{Name: "fewer-flushes-overall", Metric: Flushes, A: "per-lpid", B: "per-cpu",
		Params: model.Params{"cycles": 0, "unmaps": 0},
		Text:   "per-lpid never needs more flushes than per-cpu: over every execution of a small configuration, the same range and a lower mean",
		Holds: func(a, b model.MetricSummary) (bool, string) {
			return a.Executions > 0 && a.Min == b.Min && a.Max == b.Max && a.Mean < b.Mean,
				fmt.Sprintf("per-lpid %s flushes (mean %.4f), per-cpu %s (mean %.4f)", span(a), a.Mean, span(b), b.Mean)
		}},
}

// claimRounds is the rounds of the alternating-schedule claims.
const claimRounds = 5

// one reports whether a metric is exactly n in the one execution there is.
func one(s model.MetricSummary, n int64) bool {
	return s.Executions == 1 && s.Min == n && s.Max == n
}

func span(s model.MetricSummary) string {
	if s.Min == s.Max {
		return fmt.Sprint(s.Min)
	}
	return fmt.Sprintf("%d..%d", s.Min, s.Max)
}

// config is a machine's resolved parameters.
type config struct {
	variant
	name      string
	scenario  int
	rounds    int
	cpus      int
	vmVCPUs   [maxVMs]int
	lpids     int
	loads     int
	unbounded bool // unbounded-loads=1
	ops       int
	tlbOps    bool
	threads   int  // hardware threads per core (parameter threads)
	tlbivax   bool // guests execute tlbivax (parameter tlbivax)
	cycles    int
	unmaps    int
}

func newMachine(name string, p model.Params) (model.Machine, error) {
	v, ok := variants[name]
	if !ok {
		return nil, fmt.Errorf("unknown variant %q", name)
	}
	c := config{
		variant: v, name: name,
		scenario: p["scenario"], rounds: p["rounds"],
		cpus: p["cpus"], vmVCPUs: [maxVMs]int{p["vm1-vcpus"], p["vm2-vcpus"]},
		lpids: p["lpids"], loads: p["loads"], unbounded: p["unbounded-loads"] == 1,
		ops: p["ops"], tlbOps: p["tlb-ops"] == 1, cycles: p["cycles"], unmaps: p["unmaps"],
		threads: p["threads"], tlbivax: p["tlbivax"] == 1,
	}
	if c.oneLPID && c.threads != 2 {
		return nil, fmt.Errorf("variant %s needs threads=2", name)
	}
	if c.scenario == scenarioAlternating {
		// The seed's workload fixes the shape; only rounds matters. A's
		// program is one tlbwe in its first slice, then one load of EA 0
		// that hits in every slice (a miss is refilled and retried); B
		// does nothing with the TLB. There is no VMM and no host unmap.
		c.cpus, c.vmVCPUs, c.cycles, c.unmaps = 1, [maxVMs]int{1, 1}, 0, 0
		c.loads, c.ops, c.unbounded, c.tlbOps = 2*c.rounds, 2*c.rounds, false, true
		c.tlbivax = false
		if c.threads != 1 {
			return nil, fmt.Errorf("scenario 1 runs on one CPU: threads=%d needs two", c.threads)
		}
	}
	if c.threads == 2 && c.cpus%2 != 0 {
		return nil, fmt.Errorf("threads=2 pairs the CPUs into cores: cpus=%d is odd", c.cpus)
	}
	if c.tlbivax && !c.tlbOps {
		return nil, fmt.Errorf("tlbivax=1 is a guest TLB instruction: it needs tlb-ops=1")
	}
	if c.loads > 255 || c.ops > 255 {
		return nil, fmt.Errorf("loads and ops must fit a byte")
	}
	return build(c), nil
}
