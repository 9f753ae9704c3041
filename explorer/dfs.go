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
//
// A state is expanded when it is entered: every enabled step is run once
// and its successor's encoding, verdict, footprint and metric deltas kept
// in the state's frame; the search then takes the frame's choices in order
// as before, so that counts, counterexamples and the reduction are those
// of a search that stepped each choice when it took it.
func dfs(m model.Machine, opts Options, p *progress, keyOf keyFunc) *Result {
	r := &Result{}
	st := newStepper(m)
	vis := newVisited(opts.Fingerprint, true)
	defer vis.release()
	nm := len(st.props.Metrics)
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
	parentState := m.Init() // the decoded state of a frame, for Independent
	keyState := m.Init()    // a successor decoded for its symmetric key

	type succ struct {
		c          model.Choice
		v          *model.Violation
		f          footprint
		soff, send int
		coff       int // counts[coff:coff+nm]
	}
	type frame struct {
		key    []byte
		succs  []succ
		buf    []byte
		counts []int64
		todo   []int // indices into succs
		next   int
		sleep  []sleeper
		prev   int  // thread of the step that reached s, -1 at the start
		pre    int  // preemptions used to reach s
		prevOn bool // prev can still step in s
	}
	var stack []frame
	var sched []model.Choice
	var vkey, ctx []byte
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
	// expand runs every enabled step of the state encoded as key into f.
	expand := func(f *frame, key []byte) threadSet {
		f.key = append(f.key[:0], key...)
		f.succs, f.buf, f.counts = f.succs[:0], f.buf[:0], f.counts[:0]
		blocked, _ := st.forEach(f.key, func(c model.Choice) bool {
			e := succ{c: c, soff: len(f.buf), coff: len(f.counts)}
			f.buf = st.scratch.AppendKey(f.buf)
			e.send = len(f.buf)
			e.v = st.verdict(f.key, f.buf[e.soff:e.send])
			if por {
				e.f = summarize(st.x.Footprint())
			}
			f.counts = append(f.counts, st.x.Counts()...)
			f.succs = append(f.succs, e)
			return true
		})
		return blocked
	}
	var spare []frame // frames popped, kept for their buffers

	// enter visits the state encoded as enc, reached by sched with sleep
	// set z. It pushes a frame when the state has transitions left to
	// explore, and returns a deadlock.
	enter := func(enc []byte, z []sleeper, prev, pre int) *model.Violation {
		if opts.Symmetry {
			if err := keyState.Decode(enc); err != nil {
				panic(fmt.Sprintf("explorer: %T cannot decode its own encoding: %v", keyState, err))
			}
			vkey = keyOf(keyState, vkey[:0])
		} else {
			vkey = append(vkey[:0], enc...)
		}
		if bounded {
			ctx = binary.AppendUvarint(ctx[:0], uint64(prev+1))
			ctx = binary.AppendUvarint(ctx, uint64(pre))
			vkey = append(vkey, ctx...)
		}
		h := hashKey(vkey)
		slot, idx, seen := vis.find(vkey, h)
		var f frame
		if n := len(spare); n > 0 {
			f, spare = spare[n-1], spare[:n-1]
		}
		f.todo, f.sleep, f.next = f.todo[:0], z, 0
		f.prev, f.pre, f.prevOn = prev, pre, false
		if !seen {
			if vis.n >= opts.MaxStates {
				setCut(fmt.Sprintf("max-states=%d: the state space is larger", opts.MaxStates))
				spare = append(spare, f)
				return nil
			}
			vis.insert(slot, vkey, h, int32(vis.n))
			blocked := expand(&f, enc)
			var stored []model.Choice
			for i, e := range f.succs {
				if asleep(z, e.c) {
					stored = append(stored, e.c)
				} else {
					f.todo = append(f.todo, i)
				}
			}
			if por {
				sleeps = append(sleeps, stored)
				sleepBytes += int64(cap(stored)) * 16
			}
			if len(f.succs) == 0 {
				spare = append(spare, f)
				return st.deadlock(enc, blocked)
			}
		} else {
			if !por {
				spare = append(spare, f)
				return nil
			}
			// Revisit: explore what was asleep before but is awake now, and
			// keep as asleep only what is asleep on both visits.
			stored := sleeps[idx]
			var keep []model.Choice
			var wake []model.Choice
			for _, c := range stored {
				if asleep(z, c) {
					keep = append(keep, c)
				} else {
					wake = append(wake, c)
				}
			}
			if len(wake) == 0 {
				spare = append(spare, f)
				return nil
			}
			sleeps[idx] = keep
			expand(&f, enc)
			for i, e := range f.succs {
				for _, c := range wake {
					if c == e.c {
						f.todo = append(f.todo, i)
					}
				}
			}
		}
		if len(f.todo) == 0 {
			spare = append(spare, f)
			return nil
		}
		if len(stack) >= opts.MaxSteps {
			setCut(fmt.Sprintf("max-steps=%d: executions longer than that were not explored", opts.MaxSteps))
			spare = append(spare, f)
			return nil
		}
		for _, e := range f.succs {
			if e.c.Thread == prev {
				f.prevOn = true
			}
		}
		stack = append(stack, f)
		return nil
	}

	init := m.Init()
	if v := st.checkState(init); v != nil {
		r.Stats.States = 1
		return violation(v)
	}
	var succBuf []byte
	if v := enter(init.AppendKey(nil), nil, -1, 0); v != nil {
		r.Stats.States = int64(vis.n)
		return violation(v)
	}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next >= len(top.todo) {
			spare = append(spare, *top)
			stack = stack[:len(stack)-1]
			if len(sched) > 0 {
				sched = sched[:len(sched)-1]
			}
			continue
		}
		if r.Stats.Transitions&1023 == 1023 {
			if why, v := p.limit(vis.n); why != "" {
				r.Stats.States = int64(vis.n)
				r.Verdict, r.Bound = v, why
				return r
			}
		}
		e := top.succs[top.todo[top.next]]
		c := e.c
		top.next++
		pre := top.pre
		if top.prevOn && c.Thread != top.prev {
			pre++
			if bounded && pre > bound {
				setCut(fmt.Sprintf("preemptions=%d: executions with more preemptions were not explored", bound))
				continue
			}
		}
		r.Stats.Transitions++
		for k, d := range top.counts[e.coff : e.coff+nm] {
			totals[k] += d
		}
		sched = append(sched, c)
		r.Stats.Depth = max(r.Stats.Depth, len(sched))
		if e.v != nil {
			r.Stats.States = int64(vis.n)
			return violation(e.v)
		}
		var z []sleeper
		if por {
			decoded := false
			for _, s := range top.sleep {
				if s.c.Thread == c.Thread || s.f.conflicts(e.f) {
					continue
				}
				if !decoded {
					if err := parentState.Decode(top.key); err != nil {
						panic(fmt.Sprintf("explorer: %T cannot decode its own encoding: %v", parentState, err))
					}
					decoded = true
				}
				if ind.Independent(parentState, s.c, c) {
					z = append(z, s)
				}
			}
			top.sleep = append(top.sleep, sleeper{c, e.f})
		}
		succBuf = append(succBuf[:0], top.buf[e.soff:e.send]...)
		depth := len(stack)
		if v := enter(succBuf, z, c.Thread, pre); v != nil {
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
	r.Metrics = make([]Metric, nm)
	for k, n := range st.props.Metrics {
		r.Metrics[k] = Metric{Name: n, Transitions: totals[k]}
	}
	if r.Stats.States > 0 {
		r.Stats.StoreBytesPerState = float64(vis.bytes()+int64(cap(sleeps))*24+sleepBytes) / float64(r.Stats.States)
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
