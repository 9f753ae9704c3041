// Package model is protocheck's vocabulary: what a protocol model is made of
// and what the explorer needs to know about it.
//
// A protocol is described by a Protocol (its name, variants and parameters)
// and instantiated as a Machine: a pure, deterministic state machine over a
// set of threads. A State is plain data that can be cloned, compared through
// its canonical key, and shown as named variables. All nondeterminism is an
// explicit Choice made by the explorer: which thread steps and, where the
// protocol branches on its environment (the host preempts a vCPU, a signal
// wakes one of several waiters), which alternative. A step is executed
// through an Exec, which records the step's label (the real function and
// action, "kvm_flush_tlb_others: cmpxchg preempted"), its shared-memory
// footprint, the assertions it checked, the operations it started or
// completed (for linearizability) and the metric events it caused.
//
// Shared words are read and written through the memory layer (Mem and the
// Exec methods Load, Store, CAS, Xchg, FetchOr, FetchAdd, Fence) rather than
// by mutating fields, so that each step's footprint is known and a weaker
// memory model is switched on for every protocol at once: Mem.EnableTSO and
// WithTSO give each thread an x86-TSO store buffer whose commits are choices
// of an extra "store buffers" thread.
// Model-only bookkeeping (observers for properties, abstract TLB contents,
// metrics) stays outside the layer.
//
// Mutex and Cond are the blocking primitives with POSIX semantics; a model
// keeps them in its state and reports who waits for what through Status, so
// that a deadlock names every blocked thread.
//
// The package imports nothing of the project; protocheck's explorer, traces
// and CLI are all written against it, and so can a user's own model (see the
// package example).
package model
