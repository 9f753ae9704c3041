package explorer

import (
	"encoding/binary"
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// footprint summarises a step's shared accesses as read and write sets,
// each a 64-bit Bloom-like mask: [0] over memory words (address mod 64),
// [1] over touched objects (name hash mod 64). Two words or objects that
// share a bit are taken to be the same, which can only add dependence.
// Fences are ignored: under sequential consistency they order nothing, and
// under the store-buffer mode every store a fence or locked operation
// drains (and every commit step) is recorded as a write of its word
// (model.OpCommit), which is what makes it conflict.
type footprint struct{ r, w [2]uint64 }

func summarize(acc []model.Access) footprint {
	var f footprint
	for _, a := range acc {
		var k int
		var bit uint
		switch {
		case a.Op == model.OpFence:
			continue
		case a.Addr >= 0:
			k, bit = 0, uint(a.Addr)&63
		default:
			k, bit = 1, uint(strHash(a.Object))&63
		}
		if a.Read {
			f.r[k] |= 1 << bit
		}
		if a.Write {
			f.w[k] |= 1 << bit
		}
	}
	return f
}

// conflicts reports whether one footprint writes what the other reads or
// writes.
func (f footprint) conflicts(g footprint) bool {
	for k := 0; k < 2; k++ {
		if f.w[k]&(g.r[k]|g.w[k]) != 0 || g.w[k]&f.r[k] != 0 {
			return true
		}
	}
	return false
}

func strHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h ^ h>>29
}

// A sleeping transition, with its footprint where it was last executed
// (unchanged since: the steps it slept through are independent of it).
type sleeper struct {
	c model.Choice
	f footprint
}

// dfs explores the state space depth-first with a visited set, optional
// sleep-set partial-order reduction and an optional preemption bound. See
// the package documentation for why the reduction is sound.
func dfs(m model.Machine, opts Options, p *progress, keyOf keyFunc) *Result {
	r := &Result{}
	st := newStepper(m)
	vis := newVisited(opts.Fingerprint)
	nm := len(m.Metrics())
	totals := make([]int64, nm)
	ind, por := m.(model.Independence)
	bounded := opts.Preemptions != 0
	bound := max(opts.Preemptions, 0)
	// Sleep sets are stored per state as choices of the first concrete
	// state met; with symmetry a later visit reaches another member of
	// the orbit, where a choice of a permuted thread names another step,
	// so a step could be skipped. Symmetry therefore turns them off
	// (translating choices through the permutation would keep them).
	por = por && !opts.NoReduction && !bounded && !opts.Symmetry
	var sleeps [][]model.Choice // per state index: its stored sleep set (por)
	var sleepBytes int64

	type frame struct {
		s      model.State
		todo   []model.Choice
		next   int
		sleep  []sleeper
		prev   int  // thread of the step that reached s, -1 at the start
		pre    int  // preemptions used to reach s
		prevOn bool // prev can still step in s
	}
	var stack []frame
	var sched []model.Choice
	var key, ctx []byte
	var enabled []model.Choice
	cut := ""
	setCut := func(s string) {
		if cut == "" {
			cut = s
		}
	}
	violation := func(v *model.Violation) *Result {
		r.Verdict, r.Violation = Violation, v
		r.Schedule = append([]model.Choice(nil), sched...)
		return r
	}

	// enter visits s, reached by sched with sleep set z. It pushes a frame
	// when s has transitions left to explore, and returns a deadlock.
	enter := func(s model.State, z []sleeper, prev, pre int) *model.Violation {
		key = keyOf(s, key[:0])
		if bounded {
			ctx = binary.AppendUvarint(ctx[:0], uint64(prev+1))
			ctx = binary.AppendUvarint(ctx, uint64(pre))
			key = append(key, ctx...)
		}
		h := hashKey(key)
		slot, idx, seen := vis.find(key, h)
		var todo []model.Choice
		if !seen {
			if vis.n >= opts.MaxStates {
				setCut(fmt.Sprintf("max-states=%d: the state space is larger", opts.MaxStates))
				return nil
			}
			vis.insert(slot, key, h, int32(vis.n))
			enabled = m.Enabled(s, enabled[:0])
			var stored []model.Choice
			for _, c := range enabled {
				if asleep(z, c) {
					stored = append(stored, c)
				} else {
					todo = append(todo, c)
				}
			}
			if por {
				sleeps = append(sleeps, stored)
				sleepBytes += int64(cap(stored)) * 16
			}
			if len(enabled) == 0 {
				return st.deadlock(s)
			}
		} else {
			if !por {
				return nil
			}
			// Revisit: explore what was asleep before but is awake now, and
			// keep as asleep only what is asleep on both visits.
			stored := sleeps[idx]
			var keep []model.Choice
			for _, c := range stored {
				if asleep(z, c) {
					keep = append(keep, c)
				} else {
					todo = append(todo, c)
				}
			}
			if len(todo) == 0 {
				return nil
			}
			sleeps[idx] = keep
			enabled = m.Enabled(s, enabled[:0])
		}
		if len(todo) == 0 {
			return nil
		}
		if len(stack) >= opts.MaxSteps {
			setCut(fmt.Sprintf("max-steps=%d: executions longer than that were not explored", opts.MaxSteps))
			return nil
		}
		prevOn := false
		for _, c := range enabled {
			if c.Thread == prev {
				prevOn = true
			}
		}
		stack = append(stack, frame{s: s, todo: todo, sleep: z, prev: prev, pre: pre, prevOn: prevOn})
		if len(stack)-1 > r.Stats.Depth {
			r.Stats.Depth = len(stack) - 1
		}
		return nil
	}

	init := m.Init()
	if v := st.checkState(init); v != nil {
		r.Stats.States = 1
		return violation(v)
	}
	if v := enter(init, nil, -1, 0); v != nil {
		r.Stats.States = int64(vis.n)
		return violation(v)
	}
	interrupted := false
	for n := 1; len(stack) > 0; n++ {
		if n&4095 == 0 && stopRequested(opts.Stop) {
			interrupted = true
			break
		}
		top := &stack[len(stack)-1]
		if top.next >= len(top.todo) {
			stack = stack[:len(stack)-1]
			if len(sched) > 0 {
				sched = sched[:len(sched)-1]
			}
			continue
		}
		c := top.todo[top.next]
		top.next++
		pre := top.pre
		if top.prevOn && c.Thread != top.prev {
			pre++
			if bounded && pre > bound {
				setCut(fmt.Sprintf("preemptions=%d: executions with more preemptions were not explored", bound))
				continue
			}
		}
		succ, v := st.step(top.s, c)
		r.Stats.Transitions++
		for k, d := range st.x.Counts() {
			totals[k] += d
		}
		sched = append(sched, c)
		if v != nil {
			r.Stats.States = int64(vis.n)
			return violation(v)
		}
		var z []sleeper
		if por {
			f := summarize(st.x.Footprint())
			for _, e := range top.sleep {
				if e.c.Thread != c.Thread && !e.f.conflicts(f) && ind.Independent(top.s, e.c, c) {
					z = append(z, e)
				}
			}
			top.sleep = append(top.sleep, sleeper{c, f})
		}
		depth := len(stack)
		if v := enter(succ, z, c.Thread, pre); v != nil {
			r.Stats.States = int64(vis.n)
			return violation(v)
		}
		if len(stack) == depth { // nothing pushed
			sched = sched[:len(sched)-1]
		}
		p.report(int64(vis.n), r.Stats.Transitions, len(stack), len(stack))
	}
	r.Stats.States = int64(vis.n)
	r.Verdict = OK
	if cut != "" {
		r.Verdict, r.Bound = Bounded, cut
	}
	if interrupted {
		r.Verdict, r.Bound = Interrupted, ""
	}
	r.Metrics = make([]Metric, nm)
	for k, n := range m.Metrics() {
		r.Metrics[k] = Metric{Name: n, Transitions: totals[k]}
	}
	if r.Stats.States > 0 {
		r.Stats.BytesPerState = float64(vis.bytes()+int64(cap(sleeps))*24+sleepBytes) / float64(r.Stats.States)
	}
	if opts.Fingerprint {
		fingerprintStats(&r.Stats, vis)
	}
	return r
}

func asleep(z []sleeper, c model.Choice) bool {
	for _, e := range z {
		if e.c == c {
			return true
		}
	}
	return false
}
