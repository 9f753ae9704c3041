// Package explorer runs a model.Machine through its executions and checks
// its properties: every invariant at every reached state, the assertions
// inside steps, deadlock (a thread not done and none enabled), and, on
// strategies that follow whole executions, linearizability of the
// operation history against the machine's Spec.
//
// Strategies:
//
//   - bfs: exhaustive breadth-first search with an exact visited set keyed
//     by the canonical state encoding. The first violation found is a
//     shortest counterexample. Path-dependent quantities are not checked on
//     one arbitrary path per merged state: metrics are computed exactly
//     over every complete execution by dynamic programming on the state
//     graph (when it is acyclic), and linearizability is left to the
//     strategies that follow whole paths.
//   - random: seeded random walks, each bounded in steps; every walk's
//     history is checked for linearizability. Reproducible from its seed.
//   - paths: stateless depth-first enumeration of every execution (no state
//     merging), for small sizes: every terminal path's history is checked.
//
// All strategies return the same Result. The explorer never reads a clock
// or a global random source on its own: timing statistics and progress
// lines appear only when Options.Clock is set, and never influence a
// verdict, a state count or a trace.
package explorer
