package rt

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/protocheck/protocheck/model"
)

// The controlled runtime.
//
// Exactly one goroutine of a run holds the baton at any time: the caller
// of Controlled (the "controller", while the body sets up and while a
// finished run is torn down) or one of the run's threads. The baton moves
// by a send on the receiver's channel (each buffered by one, so a send
// never blocks and every send is matched by exactly one receive), which
// gives the race detector the happens-before edge between consecutive
// steps; all of ctl's fields are only touched by the baton holder.
//
// A thread reaching a primitive records the operation as its pending op
// and calls point. There the scheduling logic runs in that same goroutine
// (decide): it lists the enabled choices of every thread's pending op,
// asks the strategy for one, records the step, and passes the baton to the
// chosen thread, which performs its op and runs on to its next primitive.
// Choosing the thread that is already running costs no channel operation.

// opKind is the kind of a pending op, which decides when it is enabled
// and how a blocked goroutine is described.
type opKind uint8

const (
	opNone opKind = iota
	opLock
	opUnlock
	opWait   // Cond.Wait, first step: release the mutex, join the wait set
	opRelock // Cond.Wait, second step: re-acquire the mutex once woken
	// opSpurious is Cond.WaitSpurious between its two steps, while the
	// goroutine sits in the wait set not woken: its step is the spurious
	// wake-up (leave the wait set, woken by nobody). A Signal or Broadcast
	// that wakes it turns its pending op into opRelock.
	opSpurious
	opSignal
	opBroadcast
	opJoin
	opChoose
	opYield
	opWord
)

// pending is the operation a thread will perform when it is next chosen.
type pending struct {
	kind   opKind
	label  string
	wait   string // opRelock, opSpurious: the label of the Wait step
	relock string // opSpurious: the label of the re-acquire step
	mu     *Mutex
	cond   *Cond
	join   *Thread
	n      int // opChoose: alternatives
}

// ctl is the state of one controlled run.
type ctl struct {
	strategy Strategy
	maxSteps int
	run      *Run
	threads  []*Thread
	cur      int // thread holding the baton; -1: the controller
	prev     int // thread of the previous step; -1 before the first
	home     chan struct{}
	aborting bool
	ended    bool // End was called: the run is over after this step
	env      *Env
	enabled  []model.Choice
	pt       Point
}

// abortPanic is the private sentinel with which a parked goroutine's
// pending primitive panics when its run is torn down; the goroutine's
// wrapper recovers it. It names its run so that a primitive of a finished
// run used from another run is told apart from a tear-down.
type abortPanic struct{ c *ctl }

func (a abortPanic) String() string {
	return "rt: the controlled run is being torn down (this panic unwinds the run's goroutines; it escapes only from a goroutine not started with Env.Go)"
}

// self returns the thread holding the baton, or nil for the controller
// (the body of Controlled before any thread has been scheduled, or the
// caller of Controlled after it returned).
func (c *ctl) self() *Thread {
	if c.aborting {
		// Only a goroutine unwinding from a torn-down run, or a goroutine
		// that is not part of the run at all, can get here.
		panic(abortPanic{c})
	}
	if c.cur < 0 {
		return nil
	}
	return c.threads[c.cur]
}

// chanOf is the baton channel of thread id (or of the controller for -1).
func (c *ctl) chanOf(id int) chan struct{} {
	if id < 0 {
		return c.home
	}
	return c.threads[id].wake
}

func (c *ctl) fail(v *model.Violation) {
	if c.aborting {
		return
	}
	if c.run.Violation == nil {
		c.run.Violation = v
	}
}

func (c *ctl) misuse(err error) {
	if c.aborting {
		return
	}
	if c.run.Err == nil {
		c.run.Err = err
	}
}

// setupMisuse reports a primitive used by the body of Controlled itself.
func (c *ctl) setupMisuse(what, label string) {
	c.misuse(fmt.Errorf("rt: %s (at %q) called outside the run's goroutines (from the body of Controlled, or after it returned): only goroutines started with Env.Go can block or be scheduled; the body may create objects, start goroutines and Store initial values, and words can be read after the run", what, label))
}

// spawn implements Env.Go under control.
func (c *ctl) spawn(e *Env, name string, f func()) *Thread {
	if c.aborting {
		// A goroutine unwinding from a torn-down run starts another: it
		// never runs, so that nothing outlives the run.
		return &Thread{e: e, id: -1, name: name, exited: true}
	}
	t := &Thread{e: e, id: len(c.threads), name: name, wake: make(chan struct{}, 1), creator: c.cur, starting: true}
	c.threads = append(c.threads, t)
	if f == nil {
		c.misuse(fmt.Errorf("rt: Go(%q) with a nil function", name))
		t.exited, t.starting = true, false
		return t
	}
	c.cur = t.id
	go c.wrapper(t, f)
	<-c.chanOf(t.creator)
	return t
}

// wrapper runs a thread's function and accounts for its end: a normal
// exit, a panic of the code (a violation), or the tear-down sentinel.
func (c *ctl) wrapper(t *Thread, f func()) {
	defer func() {
		r := recover()
		if r != nil {
			if a, ok := r.(abortPanic); !ok || a.c != c {
				c.fail(panicViolation(t.name, r))
			}
		}
		t.exited = true
		t.pend = pending{}
		switch {
		case c.aborting:
			c.home <- struct{}{}
		case t.starting:
			t.starting = false
			c.cur = t.creator
			c.chanOf(t.creator) <- struct{}{}
		default:
			c.handoff(c.decide())
		}
	}()
	f()
}

// handoff passes the baton to next, or to the controller when the run is
// over.
func (c *ctl) handoff(next *Thread) {
	if next == nil {
		c.home <- struct{}{}
		return
	}
	next.wake <- struct{}{}
}

// point is the scheduling point of thread t, whose pending op is
// recorded. It returns when t has been chosen, with the chosen
// alternative; when the run ends instead, the parked goroutine is resumed
// only to unwind (abortPanic).
func (c *ctl) point(t *Thread) int {
	if t.starting {
		// The first primitive of a new goroutine: back to its creator,
		// whose step is still going on.
		t.starting = false
		c.cur = t.creator
		c.chanOf(t.creator) <- struct{}{}
		<-t.wake
	} else if next := c.decide(); next != t {
		c.handoff(next)
		<-t.wake
	}
	if c.aborting {
		panic(abortPanic{c})
	}
	return t.alt
}

// alts is the number of alternatives of t's pending op now: 0 when t
// cannot step (blocked, or exited).
func (c *ctl) alts(t *Thread) int {
	if t.exited {
		return 0
	}
	p := &t.pend
	switch p.kind {
	case opNone:
		return 0
	case opLock:
		if p.mu.holder == 0 {
			return 1
		}
		return 0
	case opRelock:
		if t.woken && p.mu.holder == 0 {
			return 1
		}
		return 0
	case opJoin:
		if p.join.exited {
			return 1
		}
		return 0
	case opSignal:
		if n := len(p.cond.waiters); n > 0 {
			return n
		}
		return 1
	case opChoose:
		return p.n
	}
	return 1
}

// decide ends the current step: it returns the thread that takes the next
// step, with its alternative set and the step recorded, or nil when the
// run is over (everyone exited, deadlock, a failure, the step bound).
func (c *ctl) decide() *Thread {
	r := c.run
	if r.Violation != nil || r.Err != nil {
		return nil
	}
	if c.ended {
		r.Ended = true
		return nil
	}
	c.enabled = c.enabled[:0]
	for _, t := range c.threads {
		for a, n := 0, c.alts(t); a < n; a++ {
			c.enabled = append(c.enabled, model.Choice{Thread: t.id, Alt: a})
		}
	}
	if len(c.enabled) == 0 {
		if msg := c.blocked(); msg != "" {
			r.Violation = &model.Violation{Property: model.Deadlock, Message: msg}
		}
		return nil
	}
	if len(r.Schedule) >= c.maxSteps {
		r.BoundHit = true
		r.Bound = c.boundMessage()
		if f := c.owes(); f != nil {
			// The baton holder calls it: no goroutine of the code runs.
			// It calls it as the controller, as if after the run, so that
			// a Word it loads is read, not a step of its own.
			cur := c.cur
			c.cur = -1
			v := f()
			c.cur = cur
			if v != nil {
				r.Bound += fmt.Sprintf("; still owed: %s: %s", v.Property, v.Message)
			}
		}
		return nil
	}
	p := &c.pt
	p.Step, p.Prev, p.Enabled = len(r.Schedule), c.prev, c.enabled
	ch, err := c.strategy.Pick(p)
	if err != nil {
		r.Err = err
		return nil
	}
	if !containsChoice(c.enabled, ch) {
		r.Err = fmt.Errorf("rt: step %d: strategy %s chose %s, which is not enabled (enabled: %s)", p.Step+1, c.strategy, ch, c.describeEnabled())
		return nil
	}
	t := c.threads[ch.Thread]
	t.alt = ch.Alt
	r.Schedule = append(r.Schedule, ch)
	r.Steps = append(r.Steps, Step{Thread: t.name, Label: t.pend.label})
	c.prev, c.cur = t.id, t.id
	return t
}

func containsChoice(cs []model.Choice, c model.Choice) bool {
	for _, e := range cs {
		if e == c {
			return true
		}
	}
	return false
}

// describeEnabled lists the enabled choices with their threads and labels.
func (c *ctl) describeEnabled() string {
	var b strings.Builder
	for i, ch := range c.enabled {
		if i > 0 {
			b.WriteString(", ")
		}
		t := c.threads[ch.Thread]
		fmt.Fprintf(&b, "%s (%s %q)", ch, t.name, t.pend.label)
	}
	return b.String()
}

// blocked describes every thread that has not exited and what it waits
// for, in thread order, or returns "" when all have exited.
func (c *ctl) blocked() string {
	var parts []string
	for _, t := range c.threads {
		if t.exited {
			continue
		}
		parts = append(parts, c.waitsFor(t))
	}
	if len(parts) == 0 {
		return ""
	}
	return "no goroutine can run: " + strings.Join(parts, "; ")
}

func (c *ctl) holderName(m *Mutex) string {
	h := c.threads[m.holder-1]
	if h.exited {
		return h.name + ", which has exited"
	}
	return h.name
}

func (c *ctl) waitsFor(t *Thread) string {
	p := &t.pend
	switch p.kind {
	case opLock:
		return fmt.Sprintf("%s waits for %s held by %s (Mutex.Lock at %q)", t.name, p.mu.name, c.holderName(p.mu), p.label)
	case opRelock:
		if !t.woken {
			return fmt.Sprintf("%s waits on %s (Cond.Wait at %q)", t.name, p.cond.name, p.wait)
		}
		return fmt.Sprintf("%s was woken on %s and waits for %s held by %s (Cond.Wait at %q)", t.name, p.cond.name, p.mu.name, c.holderName(p.mu), p.wait)
	case opJoin:
		return fmt.Sprintf("%s waits for %s to exit (Thread.Join at %q)", t.name, p.join.name, p.label)
	}
	return fmt.Sprintf("%s is stuck at %q", t.name, p.label)
}

// boundMessage explains a run cut by maxSteps. A run that long is most
// often a goroutine spinning on a word nobody will change, so it names the
// most frequent step among the last ones.
func (c *ctl) boundMessage() string {
	steps := c.run.Steps
	from := len(steps) - 64
	if from < 0 {
		from = 0
	}
	type key struct{ thread, label string }
	count := map[key]int{}
	best, bestN := key{}, 0
	for _, s := range steps[from:] {
		k := key{s.Thread, s.Label}
		count[k]++
		// Ties go to the step seen first, so map order never shows.
		if count[k] > bestN {
			best, bestN = k, count[k]
		}
	}
	msg := fmt.Sprintf("max-steps=%d reached before every goroutine exited", c.maxSteps)
	if bestN > 1 {
		msg += fmt.Sprintf("; %d of the last %d steps are %s at %q: a spin loop or livelock (a goroutine waiting for a change that can only come from a goroutine that is not scheduled)?", bestN, len(steps)-from, best.thread, best.label)
	}
	return msg
}

// The primitives under control. Each records its pending op, calls
// point, and performs its effect once chosen.

func (c *ctl) lock(m *Mutex, label string) {
	t := c.self()
	if t == nil {
		c.setupMisuse("Mutex.Lock", label)
		return
	}
	if m.holder == t.id+1 {
		c.fail(mutexViolation("%s locks %s, which it already holds (at %q)", t.name, m.name, label))
	}
	t.pend = pending{kind: opLock, label: label, mu: m}
	c.point(t)
	m.holder = t.id + 1
}

func (c *ctl) unlock(m *Mutex, label string) {
	t := c.self()
	if t == nil {
		c.setupMisuse("Mutex.Unlock", label)
		return
	}
	t.pend = pending{kind: opUnlock, label: label, mu: m}
	c.point(t)
	if m.holder != t.id+1 {
		c.fail(mutexViolation("%s unlocks %s, which it does not hold (%s; at %q)", t.name, m.name, c.mutexState(m), label))
		return
	}
	m.holder = 0
}

func (c *ctl) mutexState(m *Mutex) string {
	if m.holder == 0 {
		return "free"
	}
	return "held by " + c.threads[m.holder-1].name
}

func (c *ctl) wait(cv *Cond, label, relock, spurious string, canSpurious bool) {
	t := c.self()
	if t == nil {
		c.setupMisuse("Cond.Wait", label)
		return
	}
	m := cv.m
	t.pend = pending{kind: opWait, label: label, mu: m, cond: cv}
	c.point(t)
	if m.holder != t.id+1 {
		c.fail(mutexViolation("%s waits on %s without holding %s (%s; at %q)", t.name, cv.name, m.name, c.mutexState(m), label))
		return
	}
	m.holder = 0
	cv.waiters = insertSorted(cv.waiters, t.id)
	t.woken = false
	if canSpurious {
		t.pend = pending{kind: opSpurious, label: spurious, wait: label, relock: relock, mu: m, cond: cv}
		c.point(t)
		if t.pend.kind == opSpurious {
			// The spurious wake-up was taken: leave the wait set, woken
			// by nobody; the re-acquire step follows.
			cv.waiters = removeInt(cv.waiters, t.id)
			t.woken = true
			t.pend = pending{kind: opRelock, label: relock, wait: label, mu: m, cond: cv}
			c.point(t)
		}
		// Otherwise a Signal or Broadcast woke t (wake turned its pending
		// op into opRelock) and the step just taken was the re-acquire.
	} else {
		t.pend = pending{kind: opRelock, label: relock, wait: label, mu: m, cond: cv}
		c.point(t)
	}
	t.woken = false
	m.holder = t.id + 1
}

func removeInt(s []int, v int) []int {
	for i, x := range s {
		if x == v {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// wake marks waiter w as woken by a Signal or Broadcast; a waiter that
// could wake spuriously now waits to re-acquire the mutex instead.
func (c *ctl) wake(w int) {
	th := c.threads[w]
	th.woken = true
	if th.pend.kind == opSpurious {
		th.pend = pending{kind: opRelock, label: th.pend.relock, wait: th.pend.wait, mu: th.pend.mu, cond: th.pend.cond}
	}
}

func insertSorted(s []int, v int) []int {
	i := len(s)
	for i > 0 && s[i-1] > v {
		i--
	}
	s = append(s, 0)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

func (c *ctl) signal(cv *Cond, label string, all bool) []int {
	t := c.self()
	if t == nil {
		c.setupMisuse("Cond.Signal", label)
		return nil
	}
	kind := opSignal
	if all {
		kind = opBroadcast
	}
	t.pend = pending{kind: kind, label: label, cond: cv}
	alt := c.point(t)
	if len(cv.waiters) == 0 {
		return nil
	}
	if all {
		woken := append([]int(nil), cv.waiters...)
		for _, w := range cv.waiters {
			c.wake(w)
		}
		cv.waiters = cv.waiters[:0]
		return woken
	}
	w := cv.waiters[alt]
	c.wake(w)
	cv.waiters = append(cv.waiters[:alt], cv.waiters[alt+1:]...)
	return []int{w}
}

func (c *ctl) join(target *Thread, label string) {
	t := c.self()
	if t == nil {
		c.setupMisuse("Thread.Join", label)
		return
	}
	if target.e.c != c {
		c.misuse(fmt.Errorf("rt: %s joins %s, a goroutine of another Env (at %q)", t.name, target.name, label))
	}
	if target == t {
		c.fail(&model.Violation{Property: model.Deadlock, Message: fmt.Sprintf("%s joins itself (at %q)", t.name, label)})
	}
	t.pend = pending{kind: opJoin, label: label, join: target}
	c.point(t)
}

func (c *ctl) choose(label string, n int) int {
	t := c.self()
	if t == nil {
		c.setupMisuse("Env.Choose", label)
		return 0
	}
	if n < 1 {
		c.misuse(fmt.Errorf("rt: %s: Choose(%q, %d): n must be at least 1", t.name, label, n))
		n = 1
	}
	t.pend = pending{kind: opChoose, label: label, n: n}
	return c.point(t)
}

// owes is the function given to Env.OnCut, or nil.
func (c *ctl) owes() func() *model.Violation {
	if c.env == nil {
		return nil
	}
	return c.env.owes
}

// end implements Env.End under control.
func (c *ctl) end() {
	if c.aborting {
		return
	}
	if c.self() == nil {
		c.setupMisuse("Env.End", "")
		return
	}
	// A replay runs as long as its schedule: the schedule, not the code,
	// says where a counterexample ends.
	if _, replay := c.strategy.(*replayStrategy); replay {
		return
	}
	c.ended = true
}

func (c *ctl) yield(label string) {
	t := c.self()
	if t == nil {
		c.setupMisuse("Env.Yield", label)
		return
	}
	t.pend = pending{kind: opYield, label: label}
	c.point(t)
}

// word is the scheduling point of a shared-word operation; in the body of
// Controlled it is an initialisation, not a step.
func (c *ctl) word(label string) {
	t := c.self()
	if t == nil {
		return
	}
	t.pend = pending{kind: opWord, label: label}
	c.point(t)
}

// stop tears the run down once the baton is back with the controller:
// every goroutine that has not exited is resumed with the abort sentinel
// and waited for, one at a time, so that none outlives the run.
func (c *ctl) stop() {
	c.aborting = true
	c.cur = -1
	for i := 0; i < len(c.threads); i++ {
		t := c.threads[i]
		if t.exited {
			continue
		}
		c.run.Parked++
		t.wake <- struct{}{}
		<-c.home
	}
	for _, t := range c.threads {
		if !t.exited {
			c.run.Leaked++
		}
	}
	// From now on the caller of Controlled is the only goroutine left: it
	// may read the words to check the final state.
	c.aborting = false
}

func mutexViolation(format string, args ...any) *model.Violation {
	return &model.Violation{Property: PropMutex, Message: fmt.Sprintf(format, args...)}
}

// panicViolation describes a panic of the code under test with the
// frames of its stack. Only function names and file:line are kept (no
// addresses, goroutine ids or directories), so that the same run gives
// the same message byte for byte.
func panicViolation(who string, r any) *model.Violation {
	var pcs [32]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	var b strings.Builder
	fmt.Fprintf(&b, "%s panicked: %v", who, r)
	shown := 0
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") && !strings.HasPrefix(f.Function, "github.com/protocheck/protocheck/explorer/rt.") {
			fmt.Fprintf(&b, "\n\t%s (%s:%d)", f.Function, filepath.Base(f.File), f.Line)
			if shown++; shown == 8 {
				break
			}
		}
		if !more {
			break
		}
	}
	return &model.Violation{Property: PropPanic, Message: b.String()}
}
