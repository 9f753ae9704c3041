// Package explorer runs a model.Machine through its executions and checks
// its properties: every invariant at every reached state, the assertions
// inside steps and the step contract, deadlock (a thread blocked and none
// enabled), progress properties under weak fairness by default, or the
// strong or per-thread fairness Options.Fairness names (bfs, see
// liveness.go and fairness.go), and, on strategies that follow whole executions,
// linearizability of the operation history against the machine's Spec.
//
// The enabled choices of a state are never declared: the explorer runs
// every thread's step on a scratch copy of the state and sees whether it
// happened, blocked or found nothing to do, and which alternatives it drew
// (stepper, in step.go). States at rest are their canonical encodings.
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
//   - dfs: exhaustive depth-first search with a visited set, sleep-set
//     partial-order reduction for machines that implement
//     model.Independence, and an optional preemption bound. Its
//     counterexample is not shortest (the CLI minimizes it); it reports
//     metric totals over the transitions it took, not per execution.
//   - random: seeded random walks, each bounded in steps; every walk's
//     history is checked for linearizability. Reproducible from its seed.
//   - random-threads: random, but each step first picks a thread uniformly
//     among those that can step, then one of its choices: a thread with
//     many alternatives no longer starves the others.
//   - pct: probabilistic concurrency testing with bug depth Options.Depth
//     (Burckhardt et al., ASPLOS 2010); walk i is reproducible from
//     (Seed, i).
//   - paths: stateless depth-first enumeration of every execution (no state
//     merging), for small sizes: every terminal path's history is checked.
//
// All strategies return the same Result. The explorer never reads a clock
// or a global random source on its own: timing statistics and progress
// lines appear only when Options.Clock is set, and never influence a
// verdict, a state count or a trace.
//
// # Verdicts
//
// A Result is a proof only when its verdict is OK, which Result.OK
// checks: an exhaustive strategy (bfs, dfs, paths) explored everything,
// found no violation, and checked every property the machine declares,
// but those the caller skipped on request (Options.NoProgress,
// Result.Skipped). Anything less has a verdict of its own, so that a test
// asserting Verdict == OK, or r.OK(), fails on it:
//
//   - Partial: every state explored and no violation, but a property the
//     search could not check (Result.Unchecked says which and why):
//     progress properties under dfs and paths, which keep no state graph,
//     and under symmetry reduction; a check after the search that would
//     pass Options.MaxMemory. A livelock explored with dfs is Partial.
//   - Bounded: an exhaustive search cut short by a limit (Result.Bound
//     names it), or any clean run of a sampling strategy (random,
//     random-threads, pct), which is never exhaustive.
//   - Violation and Interrupted.
//
// Result.String names the bound and every property not checked; a
// progress violation's Result.Fairness is the fairness its lasso is fair
// under.
//
// # Visited sets
//
// bfs and dfs store visited states in an open-addressing hash table (a
// fixed 64-bit wyhash-style hash of the key) over an arena of key bytes:
// no allocation per state and no pointers for the garbage collector to
// scan. With Options.Fingerprint only the 64-bit hash is stored (8 bytes a
// slot); Stats then carries TLC's two estimates of the probability that a
// collision hid a state. With Options.Symmetry the key is the machine's
// model.Symmetric canonical key, so one state per orbit is expanded.
// Per-state bookkeeping (parent, choice) lives in columns of fixed-size
// chunks, or in a file beside the level files (see Memory). Stats.BytesPerState is the peak memory of the process over the
// states; StoreBytesPerState the search structures' own share.
//
// # Memory
//
// A bfs level is read back from the visited set when the set holds each
// state's own encoding (exact mode without symmetry), so a state is stored
// once; otherwise (fingerprints, symmetry) levels are kept in memory or,
// with Options.SpillDir, in temporary files read back once, in order, as
// TLC keeps its queue of states on disk. The per-state bookkeeping is a
// parent index and a packed choice (6 bytes a state), which only a
// counterexample's schedule reads: with level files it goes to a file
// too, read back by the few lookups a schedule makes (parents.go).
// Nothing per transition is kept unless Options.Metrics or a progress
// property needs the state graph. The progress check's graph (succs.go)
// is compressed: a state names its list of choices, one of a few hundred
// distinct ones, by a varint id, and its successors are varint deltas
// from its own index and from each other (about 2 bytes an edge on
// pvflush, where columns of targets and choices took 6). With level files
// it is written to a file during the search and read back after it, once
// the visited set has been released: the table and the graph are never
// in memory together. Measured on pvflush/fixed vcpus=5 --fingerprint
// (38 M states, 224 M transitions, two workers, three alternating pairs
// against the columns and the parents in memory, on a shared 2-core
// machine): peak RSS 73 -> 29 bytes a state with flush-returns checked,
// and 21 -> 14.7 with --no-progress (the table's 8-byte slots at its load
// factor, and little else); user CPU 83-98 s -> 74-81 s with progress,
// which now costs 1.28-1.37 times the CPU of --no-progress instead of
// 1.46-1.59. The visited table's large shards live outside the Go
// heap and are returned to the system as soon as they are replaced, so the
// collector's slack never doubles a large search's footprint. Stats says
// both what the search's structures hold (StoreBytesPerState) and what the
// process held at its peak (PeakMemory, BytesPerState), and
// Options.MaxMemory stops a search with the verdict bounded before it
// outgrows the machine.
//
// # Limits
//
// Options.MaxStates stops bfs at once, in merge order, so a capped run is
// the same for any number of workers; MaxSteps bounds depth; TimeLimit and
// MaxMemory stop a search within a thousand states of the limit, and a
// closed Options.Stop interrupts it. Each says why in Result.Bound, and a
// search that stopped early never claims a property it did not finish
// checking (Result.Unchecked). MaxMemory holds after the search too: the
// per-execution metric summary (Options.Metrics) and the progress check,
// which allocate once the states are all explored, are weighed against it
// first, and one that would pass it is not run (Result.Unchecked says so,
// and the verdict is Partial).
//
// # Parallel bfs and determinism
//
// With Options.Workers > 1, bfs starts that many goroutines per level to
// expand states; they are the only goroutines in the package. Expansion
// (enabled choices, each step, the invariants of each successor, its key
// and hash) is a pure function of the state, computed with a per-worker
// Exec into a per-chunk buffer. The chunks are merged strictly in level
// order, one at a time, by whichever worker finds the next one expanded
// and no merge under way (there is no merging goroutine of its own, which
// on two cores would compete with the two workers for the processors):
// merging does everything that depends on order (deduplication, state
// indices and parents, the first violation, bounds, metrics) exactly as
// the one-worker search does, which expands 32 states and then merges
// them. The merged sequence of records is therefore the same
// for any number of workers and any scheduling, and so is the Result:
// verdict, counts, counterexample (the first in sequential bfs order,
// i.e. the lowest (parent, choice) pair of the shortest ones) and metrics.
// Only timing differs, and so does where a level is cut into chunks:
// an eighth of each worker's share of the states not yet claimed, between
// 16 and 256, so that the last chunks of a level, while the other workers
// wait for it to end, are short. A chunk's successor records are 32
// bytes without pointers: they are written on one core and read on the
// core that merges them. Workers may expand a little past a violation;
// that work is discarded. What each worker writes for every step (its
// scratch states and Exec, the headers of the chunk it fills) is
// allocated apart from the other workers' (spare objects between them,
// padding after them): written in one cache line, they would make each
// core wait for the other's copy of it.
//
// # Partial-order reduction in dfs
//
// dfs uses sleep sets (Godefroid 1996) with state caching: a state is
// stored with the sleep set it was first explored with; a later visit
// with sleep set Z explores the transitions that were asleep before but
// are not in Z, and the stored set becomes the intersection. Two steps are
// independent when they belong to different threads, their footprints
// (model.Exec's record of memory words and touched objects read and
// written) do not conflict, and the machine, through model.Independence,
// confirms that they commute at that state. The machine's answer is what
// covers everything footprints cannot see: enabling conditions checked in
// a step's blocking, and bookkeeping kept outside the memory layer (observers,
// abstract TLBs). A machine that does not implement the interface gets no
// reduction at all, so protocol models are never reduced on the strength
// of footprints alone.
//
// Why this is sound for the properties dfs checks:
//
//   - Sleep sets prune transitions, never states: every reachable state is
//     visited (with the revisit rule above under state caching), so every
//     invariant, including one over observers outside the memory layer,
//     is checked at every reachable state, and every deadlock (a reachable
//     state with no enabled choice) is found. The tests check exactly this
//     against a naive enumeration: same state count.
//   - An assertion inside a step (Exec.Fail) belongs to a transition. A
//     transition t asleep at s was executed from an earlier state s0, and
//     s is reached from s0 by steps independent of t; independence
//     promises that t's assertion outcome is the same at each of those
//     states, so it was checked when t ran at s0.
//   - Linearizability and per-execution metrics are path properties: dfs
//     does not claim them (as bfs does not check histories).
//
// A preemption bound turns the sleep sets off: their naive combination
// with bounding can miss executions within the bound. The search state is
// then (state, last thread, preemptions used), and Stats.States counts
// such pairs.
package explorer
