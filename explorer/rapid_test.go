package explorer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"pgregory.net/rapid"
)

// prog is a small random model: each thread runs a straight-line program
// of loads, stores, compare-and-swaps, fetch-adds and awaits on a few
// shared words; the invariant forbids one value in one word. All sharing
// goes through the memory layer (pc and register are thread-local, and an
// await loads the word it waits on), so the model declares every pair of
// non-conflicting steps independent: partial-order reduction is on.
type prog struct {
	words   int
	threads [][]instr
	badWord int
	badVal  uint64
}

type instr struct {
	op   byte // 'l' load, 's' store, 'c' cas, 'a' fetch-add, 'w' await, 'S' store reg+1
	addr model.Addr
	v, w uint64
}

func (i instr) String() string { return fmt.Sprintf("%c%d:%d/%d", i.op, i.addr, i.v, i.w) }

type progState struct {
	mem model.Mem
	pc  []uint8
	reg []uint64
}

func (s *progState) Clone() model.State {
	return &progState{mem: s.mem.Clone(), pc: append([]uint8(nil), s.pc...), reg: append([]uint64(nil), s.reg...)}
}
func (s *progState) AppendKey(b []byte) []byte {
	b = s.mem.AppendKey(b)
	for i := range s.pc {
		b = append(b, s.pc[i], byte(s.reg[i]))
	}
	return b
}
func (s *progState) Vars() []model.Var { return s.mem.Vars() }

func (p *prog) Threads() []string {
	out := make([]string, len(p.threads))
	for i := range out {
		out[i] = fmt.Sprint("T", i)
	}
	return out
}
func (p *prog) Init() model.State {
	names := make([]string, p.words)
	for i := range names {
		names[i] = fmt.Sprint("w", i)
	}
	return &progState{mem: model.NewMem(names...), pc: make([]uint8, len(p.threads)), reg: make([]uint64, len(p.threads))}
}
func (p *prog) Metrics() []string { return []string{"stores"} }
func (p *prog) Spec() *model.Spec { return nil }
func (p *prog) Status(s model.State, t int) model.Status {
	ps := s.(*progState)
	if int(ps.pc[t]) == len(p.threads[t]) {
		return model.Status{Done: true}
	}
	return model.Status{WaitsFor: "await"}
}
func (p *prog) enabled(ps *progState, t int) bool {
	if int(ps.pc[t]) == len(p.threads[t]) {
		return false
	}
	in := p.threads[t][ps.pc[t]]
	return in.op != 'w' || ps.mem.Peek(in.addr) == in.v
}
func (p *prog) Enabled(s model.State, buf []model.Choice) []model.Choice {
	ps := s.(*progState)
	for t := range p.threads {
		if p.enabled(ps, t) {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}
func (p *prog) Step(s model.State, c model.Choice, x *model.Exec) model.State {
	n := s.Clone().(*progState)
	t := c.Thread
	in := p.threads[t][n.pc[t]]
	switch in.op {
	case 'l':
		n.reg[t] = x.Load(n.mem, in.addr)
	case 's':
		x.Store(n.mem, in.addr, in.v)
		x.Count(0, 1)
	case 'S':
		x.Store(n.mem, in.addr, n.reg[t]+1)
		x.Count(0, 1)
	case 'c':
		n.reg[t] = x.CAS(n.mem, in.addr, in.v, in.w)
	case 'a':
		n.reg[t] = x.FetchAdd(n.mem, in.addr, in.v)
	case 'w':
		x.Load(n.mem, in.addr)
	}
	x.Label(in.String())
	n.pc[t]++
	return n
}
func (p *prog) Invariants() []model.Invariant {
	return []model.Invariant{{Name: "forbidden", Check: func(s model.State) string {
		if s.(*progState).mem.Peek(model.Addr(p.badWord)) == p.badVal {
			return "forbidden value"
		}
		return ""
	}}}
}

// Independent: every interaction goes through the memory layer.
func (p *prog) Independent(model.State, model.Choice, model.Choice) bool { return true }

func drawProg(t *rapid.T) *prog {
	p := &prog{words: rapid.IntRange(1, 3).Draw(t, "words")}
	n := rapid.IntRange(1, 3).Draw(t, "threads")
	for i := 0; i < n; i++ {
		k := rapid.IntRange(0, 4).Draw(t, "len")
		var th []instr
		for j := 0; j < k; j++ {
			th = append(th, instr{
				op:   rapid.SampledFrom([]byte("lscawS")).Draw(t, "op"),
				addr: model.Addr(rapid.IntRange(0, p.words-1).Draw(t, "addr")),
				v:    uint64(rapid.IntRange(0, 2).Draw(t, "v")),
				w:    uint64(rapid.IntRange(0, 2).Draw(t, "w")),
			})
		}
		p.threads = append(p.threads, th)
	}
	p.badWord = rapid.IntRange(0, p.words-1).Draw(t, "badWord")
	p.badVal = uint64(rapid.IntRange(1, 4).Draw(t, "badVal"))
	return p
}

// naive enumerates the reachable states recursively with a map: the
// verdict ("ok", or the first violated property it meets), every property
// violated somewhere in the space, and the state count.
func naive(m model.Machine) (string, map[string]bool, int) {
	seen := map[string]bool{}
	violated := map[string]bool{}
	verdict := "ok"
	invs := m.Invariants()
	var visit func(s model.State)
	visit = func(s model.State) {
		k := string(s.AppendKey(nil))
		if seen[k] {
			return
		}
		seen[k] = true
		for _, inv := range invs {
			if inv.Check(s) != "" {
				violated[inv.Name] = true
				if verdict == "ok" {
					verdict = inv.Name
				}
			}
		}
		en := m.Enabled(s, nil)
		if len(en) == 0 {
			for t := range m.Threads() {
				if !m.Status(s, t).Done {
					violated[model.Deadlock] = true
					if verdict == "ok" {
						verdict = model.Deadlock
					}
				}
			}
		}
		for _, c := range en {
			visit(m.Step(s, c, model.NewExec(len(m.Metrics()))))
		}
	}
	visit(m.Init())
	return verdict, violated, len(seen)
}

// The optimised explorer agrees with the naive one on random small
// models: a violation is found iff one is reachable, and a clean space has
// the same number of states under every configuration (sleep sets prune
// transitions, not states).
func TestExplorerAgreesWithNaiveEnumeration(t *testing.T) {
	configs := []explorer.Options{
		{},
		{Workers: 2},
		{Workers: 3},
		{Fingerprint: true},
		{Strategy: explorer.DFS},
		{Strategy: explorer.DFS, NoReduction: true},
		{Strategy: explorer.DFS, Fingerprint: true},
	}
	var pruned, total int64
	rapid.Check(t, func(rt *rapid.T) {
		p := drawProg(rt)
		verdict, violated, states := naive(p)
		var bfsTrans int64
		for _, o := range configs {
			r, err := explorer.Explore(p, o)
			if err != nil {
				rt.Fatal(err)
			}
			name := fmt.Sprintf("%s workers=%d fp=%v noreduction=%v", r.Strategy, o.Workers, o.Fingerprint, o.NoReduction)
			if verdict == "ok" {
				if r.Verdict != explorer.OK || r.Stats.States != int64(states) {
					rt.Fatalf("%s: %s, naive: ok with %d states (%v)", name, r, states, p.threads)
				}
			} else if r.Verdict != explorer.Violation || !violated[r.Violation.Property] {
				// Which property is met first depends on the search order;
				// it must be one the naive search finds violated.
				rt.Fatalf("%s: %s, naive: %s, violated somewhere: %v (%v)", name, r, verdict, violated, p.threads)
			}
			if o.Strategy == "" && o.Workers == 0 && !o.Fingerprint {
				bfsTrans = r.Stats.Transitions
			}
			if verdict == "ok" && o.Strategy == explorer.DFS && !o.NoReduction && !o.Fingerprint {
				pruned += bfsTrans - r.Stats.Transitions
				total += bfsTrans
			}
		}
	})
	t.Logf("sleep sets pruned %d of %d transitions on clean models", pruned, total)
}

// A deadlock hidden behind interleavings is found by dfs with sleep sets.
func TestSleepSetsKeepDeadlocks(t *testing.T) {
	// T0 waits for w0==1, then sets w1=1; T1 waits for w1==1 first: a
	// deadlock unless T2 sets w0 first... T2 sets w0=1 only after reading 0.
	p := &prog{words: 2, badWord: 0, badVal: 9, threads: [][]instr{
		{{op: 'w', addr: 0, v: 1}, {op: 's', addr: 1, v: 1}},
		{{op: 'w', addr: 1, v: 1}},
		{{op: 'c', addr: 0, v: 0, w: 2}, {op: 'c', addr: 0, v: 2, w: 1}},
		{{op: 's', addr: 0, v: 3}},
	}}
	want, _, _ := naive(p)
	r, err := explorer.Explore(p, explorer.Options{Strategy: explorer.DFS})
	if err != nil {
		t.Fatal(err)
	}
	if want != model.Deadlock || r.Violation == nil || r.Violation.Property != model.Deadlock {
		t.Fatalf("naive %s, dfs %s", want, r)
	}
	if !strings.Contains(r.Violation.Message, "T0") {
		t.Errorf("deadlock message %q", r.Violation.Message)
	}
}
