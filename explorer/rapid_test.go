package explorer_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
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
	Mem model.Mem
	PC  []uint8
	Reg []uint64
}

// machine is p as a model: an await blocks until its word holds the
// value it waits for.
func (p *prog) machine() model.Machine {
	names := make([]string, len(p.threads))
	for i := range names {
		names[i] = fmt.Sprint("T", i)
	}
	words := make([]string, p.words)
	for i := range words {
		words[i] = fmt.Sprint("w", i)
	}
	return model.MustNew(model.Def[progState]{
		Threads: names,
		Init: func(s *progState) {
			s.Mem = model.NewMem(words...)
			s.PC = make([]uint8, len(p.threads))
			s.Reg = make([]uint64, len(p.threads))
		},
		Step: func(s *progState, t int, x *model.Exec) {
			if int(s.PC[t]) == len(p.threads[t]) {
				x.Done()
				return
			}
			in := p.threads[t][s.PC[t]]
			switch in.op {
			case 'l':
				s.Reg[t] = x.Load(s.Mem, in.addr)
			case 's':
				x.Store(s.Mem, in.addr, in.v)
				x.Count(0, 1)
			case 'S':
				x.Store(s.Mem, in.addr, s.Reg[t]+1)
				x.Count(0, 1)
			case 'c':
				s.Reg[t] = x.CAS(s.Mem, in.addr, in.v, in.w)
			case 'a':
				s.Reg[t] = x.FetchAdd(s.Mem, in.addr, in.v)
			case 'w':
				if x.Load(s.Mem, in.addr) != in.v {
					x.Block()
					x.Label("await")
					return
				}
			}
			x.Label(in.String())
			s.PC[t]++
		},
		Invariants: []model.InvariantOf[progState]{{Name: "forbidden", Check: func(s *progState) string {
			if s.Mem.Peek(model.Addr(p.badWord)) == p.badVal {
				return "forbidden value"
			}
			return ""
		}}},
		Metrics: []string{"stores"},
		Vars:    func(s *progState) []model.Var { return s.Mem.Vars() },
		// Independent: every interaction goes through the memory layer.
		Independent: func(*progState, model.Choice, model.Choice) bool { return true },
	})
}

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

// naive enumerates the reachable states recursively with a map, running
// the steps through modeltest.Successors rather than the explorer: the
// verdict ("ok", or the first violated property it meets), every property
// violated somewhere in the space, and the state count.
func naive(m model.Machine) (string, map[string]bool, int) {
	seen := map[string]bool{}
	violated := map[string]bool{}
	verdict := "ok"
	violate := func(property string) {
		violated[property] = true
		if verdict == "ok" {
			verdict = property
		}
	}
	invs := m.Properties().Invariants
	var visit func(s model.State)
	visit = func(s model.State) {
		k := string(s.AppendKey(nil))
		if seen[k] {
			return
		}
		seen[k] = true
		for _, inv := range invs {
			if inv.Check(s) != "" {
				violate(inv.Name)
			}
		}
		succs, _, blocked := modeltest.Successors(m, s)
		if len(succs) == 0 && slices.Contains(blocked, true) {
			violate(model.Deadlock)
		}
		for _, n := range succs {
			switch {
			case n.Breach != "":
				violate(model.ModelError)
			case n.Violation != nil:
				violate(n.Violation.Property)
			default:
				visit(n.State)
			}
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
		m := p.machine()
		verdict, violated, states := naive(m)
		var bfsTrans int64
		for _, o := range configs {
			r, err := explorer.Explore(m, o)
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
	want, _, _ := naive(p.machine())
	r, err := explorer.Explore(p.machine(), explorer.Options{Strategy: explorer.DFS})
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
