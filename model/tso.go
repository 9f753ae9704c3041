package model

import "fmt"

// StoreBufferThread is the name of the thread WithTSO adds.
const StoreBufferThread = "store buffers"

// WithTSO runs m under x86-TSO. mem returns the Mem inside a state of m
// (a pointer into the state, so that a commit changes it). The result is a
// plain Machine with one more thread, StoreBufferThread, appended after
// m's threads: its choices are {Thread: n, Alt: t}, "commit thread t's
// oldest buffered store", one for each thread t with a non-empty buffer
// (drawn with Exec.ChooseFrom, so each buffer gets weak fairness: a store
// is eventually committed), labelled "store buffer: vCPU0 commits pte[X] =
// 0". It is done when every buffer is empty and never waits: while a store
// is buffered its commit is enabled, so a deadlock report never blames the
// buffers.
//
// Init switches the memory of m's initial state to TSO, with one buffer per
// thread of m named after it, unless m's Init already called EnableTSO
// (which lets a protocol choose shorter names). m's own steps run as they
// are: their Store, Load, locked RMWs and fences follow the TSO rules of
// Mem. A Fence() called without a memory drains the stepping thread's
// buffer at the end of its step.
//
// Invariants, metrics and the spec are m's; a commit step counts nothing
// and records no operation. The explorer, traces, replay, minimization and
// the CLI need nothing else. If m implements Independence, so does the
// result: pairs of m's threads are m's to judge (their footprints carry the
// commits a fence or a locked RMW drains), and a commit step is dependent
// on every other step. Symmetric is not passed on: a permutation of
// threads would have to permute the buffers too.
func WithTSO(m Machine, mem func(State) *Mem) Machine {
	t := &tsoMachine{m: m, mem: mem, inner: m.Threads()}
	t.names = append(append([]string(nil), t.inner...), StoreBufferThread)
	if ind, ok := m.(Independence); ok {
		return &tsoIndependent{tsoMachine: t, ind: ind}
	}
	return t
}

type tsoMachine struct {
	m     Machine
	mem   func(State) *Mem
	inner []string
	names []string
}

func (t *tsoMachine) sbThread() int { return len(t.inner) }

func (t *tsoMachine) Threads() []string { return t.names }

func (t *tsoMachine) Init() State {
	s := t.m.Init()
	if !t.mem(s).TSO() {
		t.mem(s).EnableTSO(t.inner...)
	}
	return s
}

func (t *tsoMachine) Step(s State, u int, x *Exec) {
	if u != t.sbThread() {
		t.m.Step(s, u, x)
		if x.fenceLater && x.outcome == Stepped {
			x.drain(*t.mem(s))
		}
		return
	}
	mem := t.mem(s)
	var set uint64
	for v := 0; v < mem.BufferThreads(); v++ {
		if mem.Buffered(v) > 0 {
			set |= 1 << uint(v)
		}
	}
	if set == 0 {
		x.Done()
		return
	}
	v := x.ChooseFrom(set)
	a, val, _ := x.CommitOldest(*mem, v)
	if x.labelling {
		x.Labelf("store buffer: %s commits %s = %d", mem.threadName(v), mem.Name(a), val)
	}
}

func (t *tsoMachine) Properties() Properties { return t.m.Properties() }

// Unwrap returns the machine WithTSO wrapped.
func (t *tsoMachine) Unwrap() Machine { return t.m }

func (t *tsoMachine) String() string { return fmt.Sprintf("%T under TSO", t.m) }

type tsoIndependent struct {
	*tsoMachine
	ind Independence
}

func (t *tsoIndependent) Independent(s State, a, b Choice) bool {
	if a.Thread == t.sbThread() || b.Thread == t.sbThread() {
		return false
	}
	return t.ind.Independent(s, a, b)
}
