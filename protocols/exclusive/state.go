package exclusive

import (
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// Size limits of the fixed arrays that keep the state plain data.
const (
	maxVCPUs   = 4
	maxCPUs    = maxVCPUs + 1 // + the CPU that cpu_list_add hot-plugs
	maxThreads = maxVCPUs + 1 // + the I/O thread
	maxItems   = 8            // safe work items + run_on_cpu items
	maxStack   = 4
)

// thread is one thread's control state: where it is in its program and
// its local variables. A call pushes the return pc; functions are flat pc
// ranges (pcs.go).
type thread struct {
	pc    uint8
	sp    uint8
	stack [maxStack]uint8
	// arg is the CPU that cpu_exec_start/cpu_exec_end act on (the
	// thread's own vCPU, or the hot-plugged CPU in finish_safe_work).
	arg uint8
	// iter is the CPU_FOREACH cursor of start_exclusive/end_exclusive.
	iter uint8
	// runningCPUs is start_exclusive's local running_cpus (upstream).
	runningCPUs uint8
	// round counts the TBs this vCPU has executed (the guest halts after
	// the rounds parameter); for the I/O thread, the run_on_cpu calls made.
	round uint8
	// depth is exclusive_context_count (upstream's nesting counter).
	depth uint8
	// item is the work item being processed or waited for.
	item uint8
}

// state is one global state. Shared words that the upstream protocol reads
// without a lock (pending_cpus, cpu->running, wi->done) live in mem; fields
// that the code only touches under a lock are plain fields next to that
// lock; observers for the properties are kept apart at the end.
type state struct {
	mem model.Mem
	th  [maxThreads]thread

	listLock model.Mutex // qemu_cpu_list_lock
	bql      model.Mutex
	cpuLock  [maxCPUs]model.Mutex // cpu->work_mutex (upstream) / cpu->lock (seed 001)

	exclusiveCond model.Cond // exclusive_cond (upstream)
	resumeCond    model.Cond // exclusive_resume
	workCond      model.Cond // qemu_work_cond (upstream)
	cpuCond       [maxCPUs]model.Cond
	haltCond      [maxCPUs]model.Cond

	// Under qemu_cpu_list_lock.
	hasWaiter   [maxCPUs]bool // cpu->has_waiter (upstream)
	workOngoing bool          // exclusive_work_ongoing (seed 001)
	inList      [maxCPUs]bool // the cpus list

	// Under cpu->lock (seed 001).
	running          [maxCPUs]bool
	exclusiveWaiter  [maxCPUs]bool
	exclusiveOngoing [maxCPUs]bool

	// Under cpu->work_mutex / cpu->lock: the work list, FIFO.
	queue [maxCPUs][maxItems]uint8
	qlen  [maxCPUs]uint8

	// Observers (model bookkeeping, not QEMU state).
	ran     [maxItems]uint8  // times each work item's func ran
	inExec  [maxCPUs]bool    // between cpu_exec_start's return and cpu_exec_end's first step
	active  [maxThreads]bool // between start_exclusive's return and end_exclusive's call
	gen     uint8            // bumped by every exclusive section (linearizability)
	execGen [maxCPUs]uint8   // gen seen when the CPU entered exec

	// m names threads and variables for Vars; it is immutable and shared.
	m *machine
}

func (s *state) Clone() model.State {
	c := *s
	c.mem = s.mem.Clone()
	return &c
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func (s *state) AppendKey(b []byte) []byte {
	b = s.mem.AppendKey(b)
	for i := range s.th {
		t := &s.th[i]
		b = append(b, t.pc, t.sp)
		b = append(b, t.stack[:t.sp]...)
		b = append(b, t.arg, t.iter, t.runningCPUs, t.round, t.depth, t.item, b2u(s.active[i]))
	}
	b = append(b, byte(s.listLock.Holder()+1), byte(s.bql.Holder()+1))
	for c := 0; c < maxCPUs; c++ {
		b = append(b, byte(s.cpuLock[c].Holder()+1),
			b2u(s.hasWaiter[c]), b2u(s.inList[c]), b2u(s.running[c]),
			b2u(s.exclusiveWaiter[c]), b2u(s.exclusiveOngoing[c]),
			b2u(s.inExec[c]), s.execGen[c], s.qlen[c])
		b = append(b, s.queue[c][:s.qlen[c]]...)
		b = appendCond(b, s.cpuCond[c])
		b = appendCond(b, s.haltCond[c])
	}
	b = appendCond(b, s.exclusiveCond)
	b = appendCond(b, s.resumeCond)
	b = appendCond(b, s.workCond)
	b = append(b, b2u(s.workOngoing), s.gen)
	return append(b, s.ran[:]...)
}

func appendCond(b []byte, c model.Cond) []byte {
	var w byte
	for _, t := range c.Waiters() {
		w |= 1 << uint(t)
	}
	return append(b, w)
}

// Vars renders the state for traces.
func (s *state) Vars() []model.Var {
	m := s.m
	out := s.mem.Vars()
	add := func(name, format string, args ...any) {
		out = append(out, model.Var{Name: name, Value: fmt.Sprintf(format, args...)})
	}
	for t, name := range m.threads {
		th := &s.th[t]
		stack := make([]string, th.sp)
		for i := range stack {
			stack[i] = pcName(th.stack[i])
		}
		add(name+".pc", "%s [%s]", pcName(th.pc), strings.Join(stack, " "))
		add(name+".locals", "arg=%d iter=%d running_cpus=%d round=%d exclusive_context_count=%d item=%d",
			th.arg, th.iter, th.runningCPUs, th.round, th.depth, th.item)
	}
	add("qemu_cpu_list_lock", "%s", m.holder(s.listLock))
	add("bql", "%s", m.holder(s.bql))
	add("exclusive_cond", "%s", m.waiters(s.exclusiveCond))
	add("exclusive_resume", "%s", m.waiters(s.resumeCond))
	if !m.v.cpuLock {
		add("qemu_work_cond", "%s", m.waiters(s.workCond))
	} else {
		add("exclusive_work_ongoing", "%v", s.workOngoing)
	}
	for c := 0; c < m.ncpus; c++ {
		p := fmt.Sprintf("cpu%d", c)
		if m.v.cpuLock {
			add(p+"->lock", "%s", m.holder(s.cpuLock[c]))
			add(p+"->cond", "%s", m.waiters(s.cpuCond[c]))
			add(p+"->flags", "running=%v exclusive_waiter=%v exclusive_ongoing=%v",
				s.running[c], s.exclusiveWaiter[c], s.exclusiveOngoing[c])
		} else {
			add(p+"->work_mutex", "%s", m.holder(s.cpuLock[c]))
			add(p+"->has_waiter", "%v", s.hasWaiter[c])
		}
		add(p+"->halt_cond", "%s", m.waiters(s.haltCond[c]))
		items := make([]string, s.qlen[c])
		for i := range items {
			items[i] = m.itemName(int(s.queue[c][i]))
		}
		add(p+"->work_list", "[%s]", strings.Join(items, " "))
		add(p+".in_list", "%v", s.inList[c])
		add(p+".in_exec", "%v", s.inExec[c])
	}
	active := []string{}
	for t, name := range m.threads {
		if s.active[t] {
			active = append(active, name)
		}
	}
	add("exclusive_sections_active", "[%s]", strings.Join(active, " "))
	ran := make([]string, m.nitems)
	for i := range ran {
		ran[i] = fmt.Sprintf("%s:%d", m.itemName(i), s.ran[i])
	}
	add("work_ran", "[%s]", strings.Join(ran, " "))
	add("generation", "%d", s.gen)
	return out
}

func (m *machine) holder(mu model.Mutex) string {
	if mu.Free() {
		return "free"
	}
	return "held by " + m.threads[mu.Holder()]
}

func (m *machine) waiters(c model.Cond) string {
	ws := c.Waiters()
	names := make([]string, len(ws))
	for i, t := range ws {
		names[i] = m.threads[t]
	}
	return "[" + strings.Join(names, " ") + "]"
}
