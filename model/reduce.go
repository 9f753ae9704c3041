package model

// Optional interfaces a Machine may implement to let the explorer reduce
// the state space. The explorer never assumes them: it type-asserts, and a
// reduction the machine does not support is either skipped (partial-order
// reduction) or refused with an error (symmetry).

// Symmetric is implemented by a machine with interchangeable threads (for
// example vCPUs running identical programs). CanonicalKey appends the key
// of the canonical representative of s's orbit under every permutation of
// interchangeable threads: two states that differ only by such a
// permutation must get the same canonical key, and two states that are not
// so related must get different ones.
//
// The machine promises that the permutations are symmetries: a permuted
// state has the permuted enabled choices and successors, satisfies the same
// invariants, and deadlocks iff the original does. Counterexamples stay
// real executions: the explorer stores and expands actual states and only
// identifies them through their canonical keys.
type Symmetric interface {
	CanonicalKey(s State, b []byte) []byte
}

// Independence is implemented by a machine that allows partial-order
// reduction. The explorer first derives a dependence from footprints: two
// steps of the same thread are dependent, and so are steps whose
// footprints conflict (one writes a memory word or a touched object that
// the other reads or writes). For two steps a and b of different threads,
// enabled in s, whose footprints (as recorded at s) do not conflict, the
// explorer asks Independent(s, a, b); returning true promises that in s:
//
//   - a is still enabled after b, and b after a;
//   - s·a·b and s·b·a have the same key;
//   - each step has the same label, footprint, assertion outcome, events
//     and metric deltas in either order.
//
// A machine whose threads share nothing outside the memory layer except
// through objects its steps Touch (locks, condition variables, TLBs,
// observers that invariants read) can return true: footprints then capture
// every interaction. A machine that keeps shared bookkeeping outside both
// must return false for pairs that update it.
type Independence interface {
	Independent(s State, a, b Choice) bool
}
