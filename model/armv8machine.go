package model

import (
	"cmp"
	"fmt"
	"slices"
)

// PromiseThread is the name of the thread WithARMv8 adds.
const PromiseThread = "promises"

// CertifyLimit bounds the states of one certification (WithARMv8): a
// thread run alone from a state until its promises are fulfilled. A
// certification that reaches it fails the step with the property
// "memory" rather than drop an execution silently.
const CertifyLimit = 100000

// WithARMv8 runs m under the ARMv8 memory model (armv8.go). mem returns
// the Mem inside a state of m. The result is a plain Machine with one more
// thread, PromiseThread, appended after m's threads: its choices are the
// promises some thread of m can make in that state, "P0 promises x = 1",
// each a write the thread performs on some run of its own from that state
// (a new message, not a fulfilled promise) and can fulfil on some such
// run once promised (it is certified). A promise enters memory at once;
// the thread fulfils it later with a write of the same word and value.
//
// After each step of a thread with outstanding promises the thread must
// still be able to fulfil them running alone; when it cannot, the state
// is stuck (Mem.Stuck): every thread is done there, and no execution ends
// in it. An execution is complete when every thread of m is done and no
// promise is outstanding; the litmus front end counts only those.
// Invariants are m's and are checked at every state, stuck ones and those
// with promises outstanding included; a protocol judged under ARMv8
// should check what it means at complete states only.
//
// Init switches the memory of m's initial state to ARMv8, with one thread
// state per thread of m named after it, unless m's Init already called
// EnableARMv8. m's steps run as they are: Load, Store, CAS and the others
// follow the ARMv8 rules (a plain access; a read-modify-write that is
// acquire and release followed by DMB ISH, as Linux maps its
// value-returning atomics; Fence is DMB ISH), and LoadDep, StoreDep,
// Atomic, Barrier and Branch give the finer vocabulary. Under ARMv8 a step
// draws at most once, so it makes at most one access that can read or
// write in more than one place.
func WithARMv8(m Machine, mem func(State) *Mem) Machine {
	return withARMv8(m, mem, false)
}

// WithARMv8PromiseFirst is WithARMv8 with every promise made before any
// thread of m steps. Its complete executions end in the same final states
// as WithARMv8's (promising each message of an execution at the start,
// in timestamp order, leaves every thread able to replay its own steps,
// its earlier writes now fulfilling promises, and each promise is
// certified by the replay of its thread's steps up to it; package litmus
// checks the two modes agree on herdtools7's AArch64 catalogue), with far
// fewer intermediate states; the
// intermediate states themselves are not those of WithARMv8 (memory holds
// every promised write from the start). It is the mode for questions about
// final outcomes, such as a litmus test's condition.
func WithARMv8PromiseFirst(m Machine, mem func(State) *Mem) Machine {
	return withARMv8(m, mem, true)
}

func withARMv8(m Machine, mem func(State) *Mem, first bool) Machine {
	a := &armMachine{m: m, mem: mem, inner: m.Threads(), first: first, props: m.Properties()}
	a.names = append(append([]string(nil), a.inner...), PromiseThread)
	return a
}

type armMachine struct {
	m     Machine
	mem   func(State) *Mem
	inner []string
	names []string
	first bool // promises only before any thread of m steps
	// noPromises: WithARMv8NoPromises (no promise thread; the messages
	// are compacted after each step).
	noPromises bool
	keepAll    bool // no compaction (a test's reference)
	props      Properties
}

func (a *armMachine) Threads() []string { return a.names }

func (a *armMachine) Init() State {
	s := a.m.Init()
	if !a.mem(s).ARMv8() {
		a.mem(s).EnableARMv8(a.inner...)
	}
	return s
}

func (a *armMachine) Properties() Properties { return a.props }

// Unwrap returns the machine WithARMv8 wrapped.
func (a *armMachine) Unwrap() Machine { return a.m }

func (a *armMachine) String() string { return fmt.Sprintf("%T under ARMv8", a.m) }

func (a *armMachine) Step(s State, t int, x *Exec) {
	mem := a.mem(s)
	if mem.Stuck() {
		x.Done()
		return
	}
	if a.noPromises {
		a.innerStep(s, t, x)
		if x.outcome == Stepped && !a.keepAll {
			a.mem(s).arm.compact(func(t int) uint32 { return a.nextLock(s, t, x) })
		}
		return
	}
	if t < len(a.inner) {
		a.innerStep(s, t, x)
		if x.outcome == Stepped {
			a.mem(s).arm.started = true
		}
		if x.outcome == Stepped && a.mem(s).Promises(t) > 0 {
			ok, err := a.certified(s, t)
			if err != nil {
				x.Fail("memory", "%v", err)
			}
			if !ok {
				a.mem(s).arm.stuck = true
			}
		}
		return
	}
	if a.first && mem.arm.started {
		x.Done()
		return
	}
	cands, err := a.promises(s)
	if err != nil {
		x.Fail("memory", "%v", err)
	}
	if len(cands) == 0 {
		x.Done()
		return
	}
	if len(cands) > MaxAlternatives {
		x.Fail("memory", "%d promises are possible here, more than %d", len(cands), MaxAlternatives)
		cands = cands[:MaxAlternatives]
	}
	c := cands[x.pick(len(cands))]
	mem = a.mem(s)
	am := mem.arm
	am.msgs = append(am.msgs, armMsg{c.addr, c.val, c.t})
	mem.words[c.addr] = c.val
	th := &am.th[c.t]
	th.prom = append(th.prom, uint32(len(am.msgs)))
	x.access(*mem, OpStore, c.addr, false, true)
	if x.labelling {
		x.Labelf("promise: %s promises %s = %d", mem.threadName(c.t), mem.Name(c.addr), c.val)
	}
}

// nextLock is the lock word thread t's next step in s takes or waits to
// take with LockWord before any other access, plus one (0: none): the
// step is run on a scratch copy of s, kept in x for the next time.
func (a *armMachine) nextLock(s State, t int, x *Exec) uint32 {
	if x.armScratchOf != a {
		x.armScratchOf, x.armScratch, x.armExec = a, a.m.Init(), NewExec(len(a.props.Metrics))
	}
	scratch, y := x.armScratch, x.armExec
	if c, ok := scratch.(Copier); ok {
		c.CopyFrom(s)
	} else if err := scratch.Decode(s.AppendKey(nil)); err != nil {
		return 0
	}
	y.Reset(t, -1)
	a.m.Step(scratch, t, y)
	return y.acquireFirst
}

// innerStep runs thread t of m, with a Fence() without a memory as DMB ISH
// at the end of the step.
func (a *armMachine) innerStep(s State, t int, x *Exec) {
	a.m.Step(s, t, x)
	if x.fenceLater && x.outcome == Stepped {
		mem := a.mem(s)
		if t < len(mem.arm.th) {
			mem.arm.barrier(t, BarrierFull)
		}
	}
}

type promiseCand struct {
	t    int
	addr Addr
	val  uint64
}

// promises lists the certified promises of every thread in s, by thread,
// then word, then value.
func (a *armMachine) promises(s State) ([]promiseCand, error) {
	var out []promiseCand
	for t := range a.inner {
		var writes []freshWrite
		err := a.local(s, t, func(x *Exec, _ State) bool {
			for _, w := range x.fresh {
				if !slices.Contains(writes, w) {
					writes = append(writes, w)
				}
			}
			return false
		})
		if err != nil {
			return out, err
		}
		slices.SortFunc(writes, func(p, q freshWrite) int {
			if c := cmp.Compare(p.addr, q.addr); c != 0 {
				return c
			}
			return cmp.Compare(p.val, q.val)
		})
		for _, w := range writes {
			c := a.clone(s)
			mem := a.mem(c)
			am := mem.arm
			am.msgs = append(am.msgs, armMsg{w.addr, w.val, t})
			mem.words[w.addr] = w.val
			am.th[t].prom = append(am.th[t].prom, uint32(len(am.msgs)))
			ok, err := a.certified(c, t)
			if err != nil {
				return out, err
			}
			if ok {
				out = append(out, promiseCand{t, w.addr, w.val})
			}
		}
	}
	return out, nil
}

// certified reports whether thread t, running alone from s, can reach a
// state with no outstanding promise.
func (a *armMachine) certified(s State, t int) (bool, error) {
	if a.mem(s).Promises(t) == 0 {
		return true, nil
	}
	found := false
	err := a.local(s, t, func(_ *Exec, n State) bool {
		found = a.mem(n).Promises(t) == 0
		return found
	})
	return found, err
}

// local runs thread t alone from s through every alternative of its
// steps (depth first, each state once), calling visit after each step
// with the step's Exec and its successor (a scratch state, valid until
// visit returns); visit returning true stops the search.
func (a *armMachine) local(s State, t int, visit func(*Exec, State) bool) error {
	x := NewExec(len(a.m.Properties().Metrics))
	scratch := a.Init()
	start := s.AppendKey(nil)
	seen := map[string]bool{string(start): true}
	stack := [][]byte{start}
	for len(stack) > 0 {
		key := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for alt := -1; ; {
			if err := scratch.Decode(key); err != nil {
				return err
			}
			x.Reset(t, alt)
			a.innerStep(scratch, t, x)
			if x.outcome != Stepped {
				break
			}
			set, took, _ := x.Offered()
			if visit(x, scratch) {
				return nil
			}
			if k := scratch.AppendKey(nil); !seen[string(k)] {
				seen[string(k)] = true
				if len(seen) > CertifyLimit {
					return fmt.Errorf("certification of %s's promises passed %d states", a.inner[t], CertifyLimit)
				}
				stack = append(stack, k)
			}
			// The next alternative the step offered, if any.
			next := -1
			for b := took + 1; b < 64; b++ {
				if set&(1<<uint(b)) != 0 {
					next = b
					break
				}
			}
			if next < 0 {
				break
			}
			alt = next
		}
	}
	return nil
}

// clone copies s, a state of the wrapped machine, through its encoding.
func (a *armMachine) clone(s State) State {
	c := a.Init()
	if err := c.Decode(s.AppendKey(nil)); err != nil {
		panic(fmt.Sprintf("model: a state of %T does not decode its own encoding: %v", a.m, err))
	}
	return c
}
