package cputlb

import (
	"strings"

	"github.com/protocheck/protocheck/model"
)

// The lifetime of the old map (rcu=1): how QEMU frees the dispatch a
// committed transaction replaces, and who may still read it.
//
// address_space_set_flatview publishes the new FlatView and drops the
// old one with flatview_unref, whose last reference queues
// flatview_destroy with call_rcu (system/memory.c). The call_rcu thread
// (util/rcu.c) waits for a grace period with synchronize_rcu and then,
// with the BQL held, runs the callback: flatview_destroy ->
// address_space_dispatch_free, which frees the AddressSpaceDispatch and
// its sections. A vCPU reads a dispatch only inside cpu_exec, which holds
// an RCU read section from its start to its return (RCU_READ_LOCK_GUARD
// in accel/tcg/cpu-exec.c), and a grace period waits only for the read
// sections that began before it: a pointer to the old dispatch that
// outlives the read section it was read in (the cached
// cpuas->memory_dispatch of QEMU 8.2 to 10.0, a section kept in a TLB
// entry) is safe only if nothing uses it in a later section.
//
// The model keeps RCU's guarantee, not its counters: each vCPU's
// read-section flag (rcu_read_lock and rcu_read_unlock are one step
// each), and, when synchronize_rcu starts, the set of vCPUs inside a
// read section, each of which the grace period waits for until it
// leaves. That is what rcu_gp_ctr, the readers' ctr and the barriers of
// util/rcu.c exist to provide: a reader whose rcu_read_lock precedes the
// counter's flip is waited for, one whose section begins after it sees
// every store published before call_rcu. rcu_sync_lock and
// rcu_registry_lock are taken by the call_rcu thread alone here, so
// they are left out; the two event waits (rcu_call_ready_event,
// rcu_gp_event) are steps that block until what they wait for holds.
//
// On the first target one device interrupt is pending from the start.
// cpu_exec's loop calls cpu_handle_interrupt before it tests exit_request
// (accel/tcg/cpu-exec.c), and delivering the interrupt reads the guest's
// vector table through the softmmu TLB: the entry misses (the table is
// not in the TLB the model starts with), and tlb_fill resolves it with
// address_space_translate_for_iotlb, which reads a dispatch. That read is
// the first thing a vCPU does with a dispatch in a read section that may
// have begun after a grace period started: a commit that lands after the
// vCPU drained its work list and before it entered cpu_exec queues
// tcg_commit_cpu behind it, and the grace period does not wait for the
// vCPU.

// dispatch0 names the old map's dispatch in footprints.
const dispatch0 = "dispatch(generation 0)"

// readerObj names vCPU c's RCU reader state (its ctr and waiting flag)
// in footprints.
func readerObj(c int) string { return "rcu_reader(" + cpuNames[c] + ")" }

// What reads a dispatch, in a dispatch-live violation.
const (
	readFillM   uint8 = iota // tlb_fill of M
	readIotlb                // iotlb_to_section
	readSection              // io_prepare through full->section
	readFillIRQ              // tlb_fill of the interrupt's vector table
)

// dispatchLive is what the property DispatchLive checks: vCPU t reading
// dispatch generation g (or a section of it) while the call_rcu thread
// has freed it. The message is built only on a violation: this runs on
// every dispatch read of the search.
func (m *machine) dispatchLive(s *state, t int, g uint64, x *model.Exec, read uint8) {
	if !m.rcu || g != 0 {
		return
	}
	x.Touch(dispatch0, false)
	if !s.freed {
		return
	}
	name := cpuNames[t]
	who := [...]string{"tlb_fill(" + name + ") for M", "iotlb_to_section(" + name + ")",
		"io_prepare(" + name + "), through full->section,", "tlb_fill(" + name + ") for the interrupt's vector table"}[read]
	x.Fail(DispatchLive, "%s reads dispatch generation 0, which the call_rcu thread freed (flatview_destroy: address_space_dispatch_free) "+
		"after a grace period that did not wait for this read section: %s", who, m.liveCause(t))
}

// liveCause explains, in a dispatch-live violation, why vCPU t still
// holds generation 0.
func (m *machine) liveCause(t int) string {
	name := cpuNames[t]
	if m.cfg.uncached {
		return "the section was resolved at the fill and kept in " + name + "'s TLB entry, which tcg_commit_cpu has not flushed yet"
	}
	return name + "'s cpuas->memory_dispatch still points to it: tcg_commit_cpu, which would switch it, waits on " + name +
		"'s work list, and " + name + " entered cpu_exec after the grace period began (gitlab #3040, fixed by 2865bf1c5795)"
}

// execEntry is where a vCPU goes when cpu_exec_start lets it into
// cpu_exec: rcu_read_lock first when the model has RCU.
func (m *machine) execEntry() pc {
	if m.rcu {
		return pcRCULock
	}
	return pcExec
}

// execExit is where a vCPU leaving cpu_exec goes: rcu_read_unlock first
// when the model has RCU.
func (m *machine) execExit() pc {
	if m.rcu {
		return pcRCUUnlock
	}
	return pcEnd
}

// stepReadSection is vCPU t's rcu_read_lock at cpu_exec's start (after
// cpu_handle_halt, which returns before it), its rcu_read_unlock at
// cpu_exec's return, and the second step of an interrupt's delivery.
func (m *machine) stepReadSection(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuNames[t]
	switch v.pc {
	case pcRCULock:
		if v.halted {
			if x.Labelling() {
				x.Labelf("cpu_exec(%s): cpu_handle_halt: cpu->halted, return EXCP_HALTED", name)
			}
			v.pc = pcEnd
			return
		}
		v.inRCU = true
		x.Touch(readerObj(t), true)
		if x.Labelling() {
			x.Labelf("cpu_exec(%s): RCU_READ_LOCK_GUARD: rcu_read_lock", name)
		}
		v.pc = pcExec
	case pcRCUUnlock:
		x.Touch(readerObj(t), true)
		if x.Labelling() {
			if v.gpWait {
				x.Labelf("cpu_exec(%s): return: rcu_read_unlock; the grace period was waiting for it: qemu_event_set(&rcu_gp_event)", name)
			} else {
				x.Labelf("cpu_exec(%s): return: rcu_read_unlock", name)
			}
		}
		v.inRCU, v.gpWait = false, false
		v.pc = pcEnd
	case pcIRQInstall:
		m.tlbLocked(x)
		x.Touch(tlbNames[t], true)
		v.irq = false
		if x.Labelling() {
			x.Labelf("tlb_set_page(%s): qemu_spin_lock(%s); install the vector table's entry (generation %d); qemu_spin_unlock; do_interrupt delivers the interrupt", name, tlbLockNames[t], v.reg)
		}
		v.reg = 0
		v.pc = pcExec
	}
}

// deliverIRQ is cpu_handle_interrupt on vCPU t, before cpu_exec tests
// exit_request: do_interrupt reads the vector table, whose TLB entry
// misses, so tlb_fill resolves it against a dispatch. The install is the
// next step (pcIRQInstall).
func (m *machine) deliverIRQ(s *state, t int, x *model.Exec) {
	v := &s.cpu[t]
	name := cpuNames[t]
	g := x.Load(s.mem, m.dispatchWord(t))
	if x.Labelling() {
		x.Labelf("cpu_exec(%s): cpu_handle_interrupt: interrupt_request: do_interrupt reads the vector table: tlb_fill: "+
			"address_space_translate_for_iotlb: %s is generation %d", name, m.dispatchRead(), g)
	}
	m.dispatchLive(s, t, g, x, readFillIRQ)
	v.reg = uint8(g)
	v.pc = pcIRQInstall
}

// callRCU is address_space_set_flatview dropping the old FlatView's last
// reference: flatview_unref queues flatview_destroy with call_rcu, for
// the call_rcu thread to run after a grace period.
func callRCU(s *state, x *model.Exec) {
	s.cbQueued = true
	x.Touch("rcu_call_queue", true)
	if x.Labelling() {
		x.Label("address_space_set_flatview: flatview_unref(old map): call_rcu(flatview_destroy); qemu_event_set(&rcu_call_ready_event)")
	}
}

// Steps of the call_rcu thread (state.rcuPC).
const (
	rcWaitCB  uint8 = iota // qemu_event_wait(&rcu_call_ready_event) until a callback is queued
	rcSync                 // synchronize_rcu: flip rcu_gp_ctr, the readers to wait for
	rcReaders              // wait_for_readers: until none of them is in its read section
	rcFree                 // with the BQL: flatview_destroy -> address_space_dispatch_free
	rcDone
)

var rcuPCNames = [...]string{"wait for a callback", "synchronize_rcu", "wait_for_readers", "flatview_destroy", "done"}

// stepRCU is the call_rcu thread with the one callback a commit queues.
func (m *machine) stepRCU(s *state, x *model.Exec) {
	switch s.rcuPC {
	case rcWaitCB:
		if !s.cbQueued {
			x.Block()
			if x.Labelling() {
				x.Label("call_rcu_thread: qemu_event_wait(&rcu_call_ready_event) (no callback queued)")
			}
			return
		}
		x.Touch("rcu_call_queue", true)
		if x.Labelling() {
			x.Label("call_rcu_thread: woken; qatomic_read(&rcu_call_count) == 1; qatomic_sub(&rcu_call_count, 1)")
		}
		s.rcuPC = rcSync
	case rcSync:
		// One step from the flip of rcu_gp_ctr to the readers it must
		// wait for: the guarantee the barriers around it give (rcu.go).
		var waiting []string
		for c := 0; c < m.n; c++ {
			x.Touch(readerObj(c), true)
			if s.cpu[c].inRCU {
				s.cpu[c].gpWait = true
				waiting = append(waiting, cpuNames[c])
			}
		}
		x.Touch("rcu_gp_ctr", true)
		if x.Labelling() {
			who := "none"
			if len(waiting) > 0 {
				who = strings.Join(waiting, ", ")
			}
			x.Labelf("call_rcu_thread: synchronize_rcu: rcu_gp_ctr += RCU_GP_CTR; wait_for_readers: readers in a read section: %s", who)
		}
		s.rcuPC = rcReaders
	case rcReaders:
		for c := 0; c < m.n; c++ {
			x.Touch(readerObj(c), false)
			if s.cpu[c].gpWait {
				x.Block()
				if x.Labelling() {
					x.Labelf("call_rcu_thread: wait_for_readers: qemu_event_wait(&rcu_gp_event) (%s is in a read section that began before the grace period)", cpuNames[c])
				}
				return
			}
		}
		x.Touch("rcu_gp_ctr", false)
		if x.Labelling() {
			x.Label("call_rcu_thread: wait_for_readers: no reader of the old map is left; the grace period ends")
		}
		s.rcuPC = rcFree
	case rcFree:
		// bql_lock; the callback; bql_unlock: a critical section with one
		// access another thread makes without the BQL (the vCPUs read
		// the dispatch lock-free), one step by Lipton's reduction.
		if bqlBusy(s, x) {
			return
		}
		x.Count(mBQL, 1)
		x.Touch("bql", true)
		s.freed = true
		x.Touch(dispatch0, true)
		if x.Labelling() {
			x.Label("call_rcu_thread: bql_lock; flatview_destroy(old map): address_space_dispatch_free (dispatch generation 0); bql_unlock")
		}
		s.rcuPC = rcDone
	case rcDone:
		x.Done()
	}
}
