// Package litmus reads litmus tests and runs them under protocheck's
// memory models: the C format of herdtools7 and of the Linux kernel's
// tools/memory-model/litmus-tests, and herdtools7's AArch64 format, as far
// as the kernel's barriers, acquire and release, the LSE atomics and
// address, data, control and pick dependencies go.
//
// Parse turns a file into a Test; Machine compiles it to a model.Machine,
// one thread per program, each step a memory access or barrier with the
// register computation around it; Run explores every execution under
// "sc", "tso" or "armv8" (model.WithTSO, model.WithARMv8PromiseFirst)
// with the explorer's bfs expansion and returns the outcomes of the
// complete executions and whether the test's condition holds. The C
// primitives compile to the instructions arm64 uses for them (see
// parseC). check litmus (package cli) prints a Result's Format.
//
// The tests in testdata/litmus agree with herd7's verdicts: every test of
// herdtools7's catalogue/aarch64/tests/kinds.txt, and every kernel litmus
// test's Result it reads but three, where ARMv8 is stronger than LKMM
// (docs/weak-memory.md says which and why, and what is not read).
package litmus
