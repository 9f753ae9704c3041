package pvflush

import (
	"sort"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// instantiate builds the plain machine of a variant (no TSO wrapper).
func instantiate(t *testing.T, variant string, p model.Params) *machine {
	t.Helper()
	m, _, err := Protocol.Instantiate(variant, p)
	if err != nil {
		t.Fatal(err)
	}
	return m.(*machine)
}

// build builds a variant's machine with edits applied before it is
// wrapped for TSO: the test-only seams, or properties left out.
func build(t *testing.T, variant string, p model.Params, edit func(*machine)) model.Machine {
	t.Helper()
	rp, err := Protocol.Resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMachine(variants[variant], rp)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	if m.tso {
		return model.WithTSO(m, memOf)
	}
	return m
}

// withoutBS1 leaves preempted-not-running out, to see what else a
// schedule breaks.
func withoutBS1(m *machine) {
	var keep []model.Invariant
	for _, inv := range m.props.Invariants {
		if inv.Name != PreemptedNotRunning {
			keep = append(keep, inv)
		}
	}
	m.props.Invariants = keep
}

func exploreWith(t *testing.T, m model.Machine, opts explorer.Options) *explorer.Result {
	t.Helper()
	r, err := explorer.Explore(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func bfs(t *testing.T, m model.Machine) *explorer.Result {
	t.Helper()
	return exploreWith(t, m, explorer.Options{Strategy: explorer.BFS, Workers: 2})
}

func explore(t *testing.T, variant string, p model.Params, strategy string) *explorer.Result {
	t.Helper()
	m, _, err := Protocol.Instantiate(variant, p)
	if err != nil {
		t.Fatal(err)
	}
	opts := explorer.Options{Strategy: strategy}
	if strategy == explorer.BFS {
		opts.Workers = 2
	}
	return exploreWith(t, m, opts)
}

func with(p model.Params, kv ...any) model.Params {
	out := model.Params{}
	for k, v := range p {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(int)
	}
	return out
}

// newExec returns an Exec for running m's steps by hand.
func newExec(m model.Machine) *model.Exec {
	x := model.NewExec(len(m.Properties().Metrics))
	x.SetThreadNames(m.Threads())
	return x
}

// successor runs choice c on a copy of s with labels and events on, and
// returns the successor; x then holds the step's record.
func successor(m model.Machine, s model.State, c model.Choice, x *model.Exec) model.State {
	n := model.Clone(m, s)
	x.SetModes(true, true)
	x.Reset(c.Thread, c.Alt)
	m.Step(n, c.Thread, x)
	return n
}

// reachableStates enumerates every reachable state by plain breadth-first
// search, continuing past failed assertions.
func reachableStates(m model.Machine) []model.State {
	init := m.Init()
	seen := map[string]bool{string(init.AppendKey(nil)): true}
	out := []model.State{init}
	x := newExec(m)
	for i := 0; i < len(out); i++ {
		s := out[i]
		for _, c := range explorer.Enabled(m, s) {
			n := successor(m, s, c, x)
			if k := string(n.AppendKey(nil)); !seen[k] {
				seen[k] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// reachableLabels is the set of labels of every step from every reachable
// state.
func reachableLabels(m model.Machine) map[string]bool {
	init := m.Init()
	seen := map[string]bool{string(init.AppendKey(nil)): true}
	out := map[string]bool{}
	queue := []model.State{init}
	x := newExec(m)
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, c := range explorer.Enabled(m, s) {
			n := successor(m, s, c, x)
			out[x.StepLabel()] = true
			if k := string(n.AppendKey(nil)); !seen[k] {
				seen[k] = true
				queue = append(queue, n)
			}
		}
	}
	return out
}

func filter(labels map[string]bool, sub string) []string {
	var out []string
	for l := range labels {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func containsChoice(cs []model.Choice, c model.Choice) bool {
	for _, d := range cs {
		if d == c {
			return true
		}
	}
	return false
}
