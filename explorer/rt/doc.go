// Package rt is the runtime of protocheck's real implementations: the few
// primitives that the real concurrent code of a protocol (a protocol
// package's impl.go) is written with, in two modes behind one API.
//
//   - Real (Real): thin wrappers over sync and sync/atomic, for running the
//     code under the Go scheduler and the race detector. No allocation and
//     no scheduling per operation, except where a goroutine blocks: there
//     the runtime counts it, so that a deadlock of the code is reported
//     (who waits for what) instead of ending the process.
//   - Controlled (Controlled, Explore): every primitive is a scheduling
//     point; exactly one goroutine runs at a time, and a Strategy decides
//     which one takes the next step: Random, PCT (probabilistic
//     concurrency testing), DFS (bounded exhaustive enumeration, run after
//     run) or Replay (a given schedule). Deadlocks, failed run-time
//     assertions and panics are reported with the schedule that produced
//     them, which replays them exactly.
//
// The point of the package is one vocabulary from model to code: the real code
// yields at the same points, with the same labels, as the model's steps,
// and a schedule means the same on both, so a counterexample found on the
// model is replayed on the real code (and the other way round).
//
// # Writing the code under test
//
// Everything shared goes through an *Env: goroutines (Env.Go), locks
// (Env.Mutex), condition variables (Env.Cond), shared words (Env.Word8,
// Env.Word32, Env.Word64: Load, Store, CAS, Swap, Or, Add), explicit
// scheduling points (Env.Yield, for a TLB use or an IPI send that the
// code has no primitive for), environment choices (Env.Choose: does the
// host preempt the vCPU) and run-time assertions (Env.Fail). Every
// operation takes a label that names the real function and the action,
// exactly as the model labels the step: "kvm_flush_tlb_others: cmpxchg
// st[1].preempted". Labels are fixed strings: they are known before the
// operation runs, so they cannot contain the value it reads.
//
//	func flushOthers(e *rt.Env, st []*rt.Word8, ...) {
//		for i, p := range st {
//			old := p.CAS("kvm_flush_tlb_others: cmpxchg preempted", preempted, preempted|flushOnEnter)
//			...
//		}
//	}
//
// Local computation (anything not through the Env) folds into the step of
// the primitive before it; code must not share memory outside the Env,
// block outside it (channels, sync, time.Sleep), or start goroutines with
// a bare go statement: the scheduler cannot see those, and a run that
// depends on them is not reproducible.
//
// # Steps, choices and labels
//
// The scheduler decides before each primitive operation executes which
// goroutine performs its next operation: every goroutine that has not
// exited is parked at its pending operation, whose label is known, and
// the strategy picks one of the enabled ones. The operation and its label
// form one step, and the goroutine's local code after it, up to its next
// primitive, belongs to that step too. A step is recorded as
// model.Choice{Thread, Alt}: Thread is the goroutine's index in creation
// order (name the goroutines as the model's Threads()), and Alt is the
// alternative where the operation has several: the result of Choose (n
// alternatives), or which waiter a Cond.Signal wakes (alternative i wakes
// the i-th waiter in increasing thread order, as model.Exec.Signal; one
// alternative, waking nobody, when none waits). Every other operation has
// the single alternative 0. Run.Schedule lists the choices and Run.Steps
// their goroutines and labels.
//
// An operation is enabled when it can proceed: Mutex.Lock when the mutex
// is free; the second step of Cond.Wait (RelockLabel) when the goroutine
// has been woken and the mutex is free; Thread.Join when the joined
// goroutine has exited; everything else always. Cond.Wait is two steps,
// as in model.Cond: the first releases the mutex and joins the wait set,
// the second re-acquires the mutex (WaitAs names it as the model does).
// Spurious wake-ups happen only where the code asks for them
// (Cond.WaitSpurious: one more step, enabled while the goroutine waits
// unwoken, that leaves the wait set as if woken by nobody).
// Starting a goroutine is not a step: Env.Go runs the new goroutine at
// once, inside the creator's step, up to its first primitive. Exiting is
// not a step either.
//
// A run ends when every goroutine has exited; when the code calls Env.End
// (code that never ends by itself, such as a vCPU whose guest never
// halts, ends a run once it has met every obligation: Run.Ended); when goroutines remain and
// none is enabled (a deadlock: the Violation, with property
// model.Deadlock, says who waits for what: `vcpu1 waits on cpu->cond
// (Cond.Wait at "qemu_cond_wait: ...")`); at the end of the step in which
// the code called Env.Fail or panicked, or misused a mutex (PropMutex);
// when the strategy has no valid choice (Run.Err, for instance a replay
// that does not fit); or after maxSteps steps (Run.BoundHit: neither pass
// nor failure; the message names the likely cause, usually a spin loop).
// Goroutines still parked when a run ends are unwound: their pending
// primitive panics with a private value that the goroutine's wrapper
// recovers, so deferred calls run and no goroutine outlives the run.
//
// # Running
//
// A test hands the code's setup to Controlled or Explore as a body that
// creates objects and starts goroutines (the body itself must not block
// or take steps; it may Store initial values):
//
//	body := func(e *rt.Env) {
//		m := e.Mutex("bql")
//		...
//		e.Go("vcpu0", func() { vcpuLoop(e, 0, m, ...) })
//		e.Go("vcpu1", func() { vcpuLoop(e, 1, m, ...) })
//	}
//	sum, err := rt.Explore(rt.PCT(seed, 3), 1000, 10000, body)
//	if err != nil { t.Fatal(err) }
//	if sum.Failure != nil { t.Fatalf("%s\n%s", sum, sum.Failure) }
//
// Explore stops at the first failing run and replays its schedule to
// prove that it reproduces. DFS(bound) enumerates every schedule with at
// most bound preemptions and sets Summary.Exhausted when done, which is a
// proof within that bound; Random and PCT sample, seeded from the seed
// and the run index. The same strategy and seed give the same runs, byte
// for byte (Run.String). In real mode the same code runs under the Go
// scheduler: e := rt.Real(seed), start the goroutines, then e.Wait()
// returns the first violation (a *model.Violation) or misuse. There, Yield
// does nothing, Choose draws from the seeded generator (which goroutine
// gets which draw is up to the Go scheduler), and a mutex misuse or a
// panic is reported by Wait instead of crashing the process. So is a
// deadlock: once every goroutine left waits in Mutex.Lock, Cond.Wait or
// Thread.Join for something none of them will do, Wait returns a
// model.Deadlock violation naming each one and what it waits for, and the
// goroutines are unwound. The count is exact (the goroutine that
// satisfies a wait uncounts it), so a run is never reported for being
// slow. A busy-wait that never ends blocks in no primitive: WaitTimeout
// adds a watchdog for it, which reports what Env.OnCut says the run still
// owes (a progress obligation), when the code gave it one. Env.End makes
// every goroutine unwind at its next Yield, Choose or wait, and Wait
// return without a violation. A mutex waited for is handed over in FIFO
// order, and a Cond wakes its waiters in FIFO order, without spurious
// wake-ups.
//
// # Debugging failures
//
// Print the failing run: Run.String lists the outcome, the goroutines,
// the schedule ("0 1 1 2.1 0"), and every step with its goroutine and
// label, which reads like the model's counterexample. Then:
//
//   - Replay it: Controlled(Replay(run.Schedule), maxSteps, body) runs the
//     same execution again, so a fmt.Println or a debugger breakpoint in
//     the code sees exactly the failing interleaving. ReplayExpect also
//     checks every label; a *ReplayError names the first step where the
//     code and the schedule part ways (a choice not enabled, a different
//     label, an early or late end), and the enabled choices there.
//   - Compare with the model: explorer.Execute(machine, run.Schedule)
//     replays the real code's schedule on the model, and
//     ReplayExpect(result.Schedule, result.Labels) a model counterexample
//     on the real code. A label mismatch means the two disagree on the
//     granularity or the order of steps, usually the first thing to fix.
//   - A deadlock report lists every goroutine that has not exited and what
//     it waits for: a mutex and its holder, a condition variable (a lost
//     wake-up, or a signal consumed by the wrong waiter: look at the Alt
//     of the Signal steps), or a goroutine to exit. In real mode the
//     holder of a mutex is not known (finding out would cost every Lock):
//     the report lists the waits; the controlled mode, which knows every
//     holder, names it, with a schedule that replays.
//   - A bound hit is a run longer than maxSteps: most often a goroutine
//     spinning on a word that only an unscheduled goroutine can change.
//     PCT and DFS keep running the highest-priority or current goroutine,
//     so a spin loop that is fine under a fair scheduler hits the bound;
//     check that the loop's load is a primitive (so the waiting goroutine
//     can be preempted at all) and that maxSteps fits the configuration.
//   - "uncontrolled nondeterminism" (from Explore or DFS) means the same
//     choices did not give the same run: the code shares or blocks outside
//     the Env, iterates over a map, reads the clock or a global random
//     source. That is a bug of the harness, not of the protocol.
//   - Shrink the schedule: fewer preemptions are easier to read. DFS with
//     bound 0, 1, 2... finds a counterexample with the fewest preemptions,
//     and a schedule is plain data that a minimizer can edit and Replay
//     can check.
//
// # Not supported
//
// Memory models weaker than sequential consistency (every word operation
// is a seq-cst atomic), spurious wake-ups outside WaitSpurious, fairness,
// timeouts, and
// goroutines, channels or locks outside the Env. A goroutine that blocks
// outside the Env hangs the controlled run, as under loom; in real mode it
// is not counted as waiting, so a deadlock it takes part in is only seen
// by WaitTimeout's watchdog.
package rt
