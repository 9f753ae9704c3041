package exclusive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unsafe"

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
	// runningCPUs is start_exclusive's local running_cpus (upstream);
	// for the I/O thread on seed 001's branch, which never calls
	// start_exclusive, the cursor of pause_all_vcpus's inner
	// CPU_FOREACH(cs) kick loop.
	runningCPUs uint8
	// round counts the TBs this vCPU's guest has executed (it halts after
	// the tbs parameter's); for the I/O thread, the actions of its script
	// begun.
	round uint8
	// queued counts the safe work items this vCPU has queued from its TBs.
	queued uint8
	// flags: tHalted (cpu->halted, written and read only by the vCPU's own
	// thread), tPtwDone (exclusive-from-exec's TB has run), tAtomic (the
	// vCPU is on cpu_exec_step_atomic's path: cpu_exec returned
	// EXCP_ATOMIC, or the serial TB is running), tAtomicDone (its guest's
	// one atomic instruction has been executed).
	flags uint8
	// depth is exclusive_context_count (upstream's nesting counter).
	depth uint8
	// item is the work item being processed or waited for.
	item uint8
}

// state is one global state. Shared words that the upstream protocol reads
// without a lock (pending_cpus, cpu->running, wi->done) live in mem; fields
// that the code only touches under a lock are plain fields (in vars) next
// to that lock; observers for the properties are kept apart at the end.
type state struct {
	vars
	mem model.Mem
	// m names threads and variables for Vars and sizes the encoding; it is
	// immutable and shared.
	m *machine
}

// vars is every field of a state but the memory and the machine: plain
// data without pointers, so that CopyFrom copies it in one move.
type vars struct {
	th [maxThreads]thread

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

	// spurUsed: the threads that have had their one spurious wake-up
	// (spurious=1), a bit each.
	spurUsed uint8

	// The run state of the CPUs (hotplug-thread=1, pause=1), under the BQL
	// (upstream) or cpu->lock (seed 001's branch): ctl[c] is cpu->stop,
	// cpu->stopped, cpu->unplug and cpu->created of CPU c, and whether
	// its thread has been created (cStarted: qemu_thread_create); paused
	// is the run state set by vm_stop (!runstate_is_running()).
	ctl           [maxCPUs]uint8
	paused        bool
	qemuCPUCond   model.Cond // qemu_cpu_cond (upstream; seed 001's branch uses cpu->cond)
	qemuPauseCond model.Cond // qemu_pause_cond (upstream)

	// Observers (model bookkeeping, not QEMU state).
	ran     [maxItems]uint8  // times each work item's func ran
	inExec  [maxCPUs]bool    // between cpu_exec_start's return and cpu_exec_end's first step
	active  [maxThreads]bool // between start_exclusive's return and end_exclusive's call
	gen     uint8            // bumped by every exclusive section (linearizability)
	execGen [maxCPUs]uint8   // gen seen when the CPU entered exec
}

// The encoding (AppendKey, Decode) is the form in which the explorer
// stores a state, so it is compact: one byte per field, and only for the
// threads, CPUs and work items of the instance (the arrays are sized for
// the largest instance), the call stack up to sp and each work list up to
// its length. A CPU's booleans share one byte, a mutex is its holder + 1
// and a condition variable the set of its waiters, one bit per thread.
// Slots beyond those are zero in every state or never read (a popped
// stack slot), so two states with the same encoding are the same state.

// CopyFrom makes s a copy of src (model.Copier): the explorer decodes a
// state once per expansion and copies it for each step it tries. Every
// field is plain data but the memory, whose buffers s keeps.
func (s *state) CopyFrom(src model.State) {
	o := src.(*state)
	s.vars = o.vars
	s.mem.CopyFrom(o.mem)
}

// Thread flags.
const (
	tHalted = 1 << iota
	tPtwDone
	tAtomic
	tAtomicDone
	tAll = 1<<iota - 1
)

// The run state of a CPU (vars.ctl).
const (
	cStop = 1 << iota
	cStopped
	cUnplug
	cCreated
	cStarted
	cAll = 1<<iota - 1
)

// CPU flags in the encoding.
const (
	fHasWaiter = 1 << iota
	fInList
	fRunning
	fExclusiveWaiter
	fExclusiveOngoing
	fInExec
	fAll = 1<<iota - 1
)

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func mutexByte(mu model.Mutex) byte { return byte(mu.Holder() + 1) }

// condByte is the wait set of c, whose waiters are threads of the
// machine (at most maxThreads, so a byte holds it).
func condByte(c *model.Cond) byte { return byte(c.Set()) }

// cpuFlags is CPU c's booleans as one byte. Written as one test per flag
// it is small enough to be inlined, and compiles without branches.
func (s *state) cpuFlags(c int) byte {
	var f byte
	if s.hasWaiter[c] {
		f |= fHasWaiter
	}
	if s.inList[c] {
		f |= fInList
	}
	if s.running[c] {
		f |= fRunning
	}
	if s.exclusiveWaiter[c] {
		f |= fExclusiveWaiter
	}
	if s.exclusiveOngoing[c] {
		f |= fExclusiveOngoing
	}
	if s.inExec[c] {
		f |= fInExec
	}
	return f
}

func (s *state) AppendKey(b []byte) []byte {
	m := s.m
	n := len(m.threads)
	b = s.mem.AppendKey(b)
	// The fields are written at running offsets into room for the longest
	// encoding of any machine (keyRoom), through pointers to fixed-size
	// arrays, so that no write is bounds-checked: a call stack and a work
	// list each as one word whose bytes past sp or qlen the next field
	// overwrites, a thread's bytes two words at a time. This encoding is
	// run for every successor the explorer generates; a copy of a
	// variable length would be a call to the runtime. sp and qlen are
	// clamped to their maxima (a valid state never exceeds them), so that
	// no state can write past the room. Like any append, it may write past
	// the returned length, in b's spare capacity.
	off := len(b)
	b = slices.Grow(b, keyRoom)
	k := unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), off)
	i := uintptr(0)
	for t := 0; t < n; t++ {
		// A thread is its bytes in field order: pc, sp and the stack up
		// to sp, then arg...item and whether it is active.
		th := &s.th[t]
		tb := th.bytes()
		binary.LittleEndian.PutUint64(word(k, i), binary.LittleEndian.Uint64(tb[:8]))
		i += 2 + uintptr(min(th.sp, maxStack))
		binary.LittleEndian.PutUint64(word(k, i), binary.LittleEndian.Uint64(tb[threadArg:]))
		word(k, i+8)[0] = b2u(s.active[t])
		i += 9
	}
	g := (*[8]byte)(unsafe.Add(k, i))
	g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7] = mutexByte(s.listLock), mutexByte(s.bql),
		condByte(&s.exclusiveCond), condByte(&s.resumeCond), condByte(&s.workCond),
		b2u(s.workOngoing), s.gen, s.spurUsed
	i += 8
	for c := 0; c < m.ncpus; c++ {
		w := (*[6 + maxItems]byte)(unsafe.Add(k, i))
		w[0], w[1], w[2], w[3], w[4], w[5] = mutexByte(s.cpuLock[c]), s.cpuFlags(c), s.execGen[c],
			condByte(&s.cpuCond[c]), condByte(&s.haltCond[c]), s.qlen[c]
		binary.LittleEndian.PutUint64(w[6:], binary.LittleEndian.Uint64(s.queue[c][:]))
		i += 6 + uintptr(min(s.qlen[c], maxItems))
	}
	binary.LittleEndian.PutUint64(word(k, i), binary.LittleEndian.Uint64(s.ran[:]))
	i += uintptr(m.nitems)
	if m.extras {
		// hotplug-thread=1 and pause=1 only, so that the other machines'
		// encodings stay as they were.
		e := (*[3 + maxCPUs]byte)(unsafe.Add(k, i))
		e[0], e[1], e[2] = condByte(&s.qemuCPUCond), condByte(&s.qemuPauseCond), b2u(s.paused)
		copy(e[3:], s.ctl[:])
		i += 3 + uintptr(m.ncpus)
	}
	return b[:off+int(i)]
}

// keyRoom is the room AppendKey writes in and Decode reads from: the
// longest encoding of the largest machine, without the memory, and a word
// past it for the work-item counts, written as one word.
const keyRoom = maxThreads*(11+maxStack) + 8 + maxCPUs*(6+maxItems) + maxItems + 3 + maxCPUs + 8

// word is the 8 bytes at k+i. The callers keep i+8 within keyRoom.
func word(k unsafe.Pointer, i uintptr) []byte { return (*[8]byte)(unsafe.Add(k, i))[:] }

// firstBytes is the little-endian word of w's first 8 bytes with all but
// the first n (at most 8) cleared: a field of n bytes read as one word.
func firstBytes(w []byte, n uint) uint64 {
	return binary.LittleEndian.Uint64(w) & (^uint64(0) >> (64 - 8*n))
}

// Decode reads a state encoded by AppendKey (of the same machine) into s.
// Like AppendKey, it reads a call stack or a work list as one word, masked
// to its length, from a copy of the encoding in room of keyRoom zero
// bytes, so that no read is bounds-checked and none needs a length test
// of its own. An encoding cut short is refused by its length at the end:
// the bytes read past it are zeros, which make every field that starts
// beyond the cut, or whose length byte lies beyond it, at least as long as
// the cut leaves, so the fields read add up to more than the bytes given.
func (s *state) Decode(b []byte) error {
	m := s.m
	n := len(m.threads)
	b, err := s.mem.DecodeFrom(b)
	if err != nil {
		return err
	}
	if len(b) > m.keyMax {
		return fmt.Errorf("exclusive: a state encoding of %d bytes past the memory, longer than this machine's %d", len(b), m.keyMax)
	}
	var room [keyRoom]byte
	copy(room[:], b)
	k := unsafe.Pointer(&room)
	i := uintptr(0)
	for t := 0; t < n; t++ {
		h := word(k, i)
		pc, sp := h[0], h[1]
		if pc >= numPCs || sp > maxStack {
			return fmt.Errorf("exclusive: %s at pc %d with %d frames", m.threads[t], pc, sp)
		}
		v := (*[9]byte)(unsafe.Add(k, i+2+uintptr(sp)))
		if f := v[threadFlags-threadArg]; f > tAll {
			return fmt.Errorf("exclusive: %s with flags %#x", m.threads[t], f)
		}
		// pc, sp and the stack up to sp, the slots past sp zero; then
		// arg...item.
		th := &s.th[t]
		tb := th.bytes()
		binary.LittleEndian.PutUint64(tb[:8], firstBytes(h, 2+uint(sp)))
		binary.LittleEndian.PutUint64(tb[threadArg:], binary.LittleEndian.Uint64(v[:8]))
		s.active[t] = v[8] != 0
		i += 11 + uintptr(sp)
	}
	g := (*[8]byte)(unsafe.Add(k, i))
	if !(m.mutexFrom(g[0], &s.listLock) && m.mutexFrom(g[1], &s.bql) &&
		m.condFrom(g[2], &s.exclusiveCond) && m.condFrom(g[3], &s.resumeCond) && m.condFrom(g[4], &s.workCond)) {
		return errSync
	}
	if int(g[7]) >= 1<<uint(n) {
		return fmt.Errorf("exclusive: spurious wake-ups used by threads %#x of %d", g[7], n)
	}
	s.workOngoing, s.gen, s.spurUsed = g[5] != 0, g[6], g[7]
	i += 8
	for c := 0; c < m.ncpus; c++ {
		w := (*[6 + maxItems]byte)(unsafe.Add(k, i))
		q := w[5]
		if w[1] > fAll || q > maxItems {
			return fmt.Errorf("exclusive: cpu%d: flags %#x, %d work items", c, w[1], q)
		}
		if !(m.mutexFrom(w[0], &s.cpuLock[c]) && m.condFrom(w[3], &s.cpuCond[c]) && m.condFrom(w[4], &s.haltCond[c])) {
			return errSync
		}
		f := w[1]
		s.hasWaiter[c], s.inList[c], s.running[c] = f&fHasWaiter != 0, f&fInList != 0, f&fRunning != 0
		s.exclusiveWaiter[c], s.exclusiveOngoing[c], s.inExec[c] = f&fExclusiveWaiter != 0, f&fExclusiveOngoing != 0, f&fInExec != 0
		s.execGen[c] = w[2]
		s.qlen[c] = q
		binary.LittleEndian.PutUint64(s.queue[c][:], firstBytes(w[6:], uint(q)))
		i += 6 + uintptr(q)
	}
	extra := 0
	if m.extras {
		extra = 3 + m.ncpus
	}
	switch end := int(i) + m.nitems + extra; {
	case end > len(b):
		return errTruncated
	case end < len(b):
		return fmt.Errorf("exclusive: %d bytes of work-item counts and run state, want %d", len(b)-int(i), m.nitems+extra)
	}
	binary.LittleEndian.PutUint64(s.ran[:], firstBytes(word(k, i), uint(m.nitems)))
	i += uintptr(m.nitems)
	if m.extras {
		e := (*[3 + maxCPUs]byte)(unsafe.Add(k, i))
		if !(m.condFrom(e[0], &s.qemuCPUCond) && m.condFrom(e[1], &s.qemuPauseCond)) {
			return errSync
		}
		if e[2] > 1 {
			return fmt.Errorf("exclusive: run state %d", e[2])
		}
		s.paused = e[2] != 0
		for c := 0; c < m.ncpus; c++ {
			if e[3+c] > cAll {
				return fmt.Errorf("exclusive: cpu%d: run state %#x", c, e[3+c])
			}
			s.ctl[c] = e[3+c]
		}
	}
	return nil
}

// AppendKey and Decode move a work list as one uint64, and a thread as
// its bytes: pc, sp and a stack of four in the first word, arg...item in
// the second. This fails to compile when the sizes or the layout change.
var _ = [1]int{}[maxStack-4] + [1]int{}[maxItems-8] +
	[1]int{}[unsafe.Sizeof(thread{})-threadSize] + [1]int{}[unsafe.Offsetof(thread{}.arg)-threadArg] +
	[1]int{}[unsafe.Offsetof(thread{}.flags)-threadFlags] + [1]int{}[unsafe.Offsetof(thread{}.item)-(threadSize-1)]

// The layout of a thread: its size and the offsets of arg and flags.
const (
	threadSize  = 14
	threadArg   = 2 + maxStack
	threadFlags = threadArg + 5
)

// bytes is th's memory: every field of a thread is a byte, so it has no
// padding, and the encoding moves it a word at a time (it is written for
// every successor the explorer generates).
func (th *thread) bytes() *[threadSize]byte { return (*[threadSize]byte)(unsafe.Pointer(th)) }

var (
	errTruncated = errors.New("exclusive: truncated state encoding")
	errSync      = errors.New("exclusive: state encoding: a mutex held by no thread of the machine, or a waiter that is not one")
)

// mutexFrom sets *mu to the mutex encoded as v (its holder + 1), if that
// is free or held by a thread of the machine.
func (m *machine) mutexFrom(v byte, mu *model.Mutex) bool {
	if int(v) > len(m.threads) {
		return false
	}
	*mu = model.HeldMutex(int(v) - 1)
	return true
}

// condFrom sets *c to the condition variable encoded as v (its wait set),
// if every waiter is a thread of the machine.
func (m *machine) condFrom(v byte, c *model.Cond) bool {
	if int(v) >= 1<<uint(len(m.threads)) {
		return false
	}
	*c = model.CondWith(uint64(v))
	return true
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
		add(name+".locals", "arg=%d iter=%d running_cpus=%d round=%d exclusive_context_count=%d item=%d queued=%d",
			th.arg, th.iter, th.runningCPUs, th.round, th.depth, th.item, th.queued)
		if t < m.nvthreads {
			add(name+".halted", "%v", th.flags&tHalted != 0)
		}
		if m.spurious {
			add(name+".spurious_wakeup_used", "%v", s.spurUsed&(1<<uint(t)) != 0)
		}
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
	if m.extras {
		add("qemu_cpu_cond", "%s", m.waiters(s.qemuCPUCond))
		add("qemu_pause_cond", "%s", m.waiters(s.qemuPauseCond))
		add("runstate", "%s", map[bool]string{false: "running", true: "paused"}[s.paused])
		for c := 0; c < m.ncpus; c++ {
			f := s.ctl[c]
			add(fmt.Sprintf("cpu%d->run_state", c), "stop=%v stopped=%v unplug=%v created=%v",
				f&cStop != 0, f&cStopped != 0, f&cUnplug != 0, f&cCreated != 0)
		}
	}
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
