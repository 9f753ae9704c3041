// Package model is protocheck's vocabulary: what a protocol model is made of
// and what the explorer needs to know about it.
//
// A protocol is described by a Protocol (its name, variants, parameters,
// verification matrix and performance claims) and instantiated as a
// Machine: a pure, deterministic state machine over a set of threads. A
// State is plain data with a canonical encoding, which is the form the
// explorer stores it in (Decode is its inverse), and named variables for
// traces.
//
// A step is one function, Machine.Step(s, t, x), and it is the one source
// of truth about itself: through the Exec it says whether thread t can
// take it here (Block, or a blocking primitive such as Lock), whether t
// has nothing left to do (Done), which alternatives the environment has
// (Choose, ChooseFrom, Signal: the host preempts the vCPU or not, a signal
// wakes one of several waiters), and what it did: its label (the real
// function and action, "kvm_flush_tlb_others: cmpxchg preempted"), its
// shared-memory footprint, the assertions it checked, the operations it
// started or completed (for linearizability) and the metric events it
// caused. All nondeterminism is an explicit Choice made by the explorer:
// which thread steps, and which alternative.
//
// The granularity rule: one step per shared-memory access, lock acquire or
// release, condition-variable wait, signal or broadcast, atomic
// read-modify-write, IPI send or ack, or TLB fill, use or flush; purely
// local computation folds into the adjacent step. A coarser step hides
// interleavings (and with them bugs) and needs a reason that holds in the
// real code (interrupts or preemption off, a lock held), written where it
// is folded; a finer one only costs states. The same steps, with the same
// labels, are the yield points of a protocol's real implementation under
// explorer/rt, so that a model trace replays on the code and a run of the
// code is checked against the model.
//
// Shared words are read and written through the memory layer (Mem and the
// Exec methods Load, Store, CAS, Xchg, FetchOr, FetchAdd, Fence) rather than
// by mutating fields, so that each step's footprint is known and a weaker
// memory model is switched on for every protocol at once: Mem.EnableTSO and
// WithTSO give each thread an x86-TSO store buffer whose commits are choices
// of an extra "store buffers" thread; WithARMv8 runs the ARMv8 model of
// Promising-ARM (armv8.go), whose extra "promises" thread lets a thread
// write ahead of its program; WithARMv8NoPromises is the mode for
// protocols that loop (armv8compact.go: no promises, the messages nobody
// can read dropped after each step, and lock words, LockWord and
// UnlockWord, through which a Mutex orders its critical sections). LoadDep, StoreDep, Atomic, Barrier and Branch
// say what the ARMv8 model needs beyond SC (acquire and release, the
// kernel's barriers, the dependency a loaded value carries) and mean their
// plain counterparts under SC and TSO. Model-only bookkeeping (observers
// for properties, abstract TLB contents, metrics) stays outside the layer.
//
// Mutex and Cond are the blocking primitives with POSIX semantics, kept in
// the state; a step that cannot proceed blocks, and its label says what it
// waits for, so that a deadlock names every blocked thread.
//
// Properties are invariants (checked at every state), assertions inside
// steps, deadlock, progress (an obligation is eventually discharged, under
// weak fairness), and linearizability of operation histories against a
// Spec.
//
// The quickest model is a Def: a plain state struct (encoded by a Codec),
// an Init and a Step. The package imports nothing of the project;
// protocheck's explorer, traces and CLI are all written against it, and so
// can a user's own model (see the examples of package explorer).
package model
