package e500mc

import (
	"fmt"
	"slices"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// TestSymmetryAgreesWithBFS: with CPU symmetry, bfs gives every variant
// the same verdict as plain bfs, with a shortest counterexample of the
// same length that replays, and fewer states (exact counts pinned for the
// correct variants).
func TestSymmetryAgreesWithBFS(t *testing.T) {
	type want struct{ plain, sym int64 }
	sizes := []struct {
		params model.Params
		states map[string]want // variants ok at this size
	}{
		// No VMM: oldpir-zero's bug needs one.
		{model.Params{"cycles": 0}, map[string]want{
			"per-lpid": {229589, 114796}, "per-cpu": {245891, 122947}, "oldpir-zero": {211097, 203667}}},
		// Too few loads and guest operations for most bugs: those variants
		// are pinned as ok.
		{model.Params{"cpus": 3, "loads": 2, "ops": 1}, map[string]want{
			"per-lpid": {116139, 25233}, "per-cpu": {119793, 26451}, "oldpir-only": {101875, 22486},
			"no-oldpir": {116403, 25321}, "oldpir-zero": {111801, 60776}, "preempt-window": {143530, 32084}}},
	}
	for _, size := range sizes {
		for _, v := range Protocol.Variants {
			if v.Fixed["threads"] == 2 && size.params["cpus"]%2 == 1 {
				continue // two threads per core need an even number of CPUs
			}
			name := fmt.Sprintf("%s %v", v.Name, size.params)
			m := machineFor(t, v.Name, size.params)
			plain := explore(t, m, explorer.Options{})
			sym := explore(t, m, explorer.Options{Symmetry: true})
			dsym := explore(t, m, explorer.Options{Strategy: explorer.DFS, Symmetry: true})
			// Symmetry checks no progress property: where plain bfs
			// proves everything, the reduced searches prove everything
			// but host-flush-returns, and say so (partial).
			agrees := func(r *explorer.Result) bool {
				if plain.OK() {
					return r.Verdict == explorer.Partial && r.CleanExcept(HostFlushReturns)
				}
				return r.Verdict == plain.Verdict
			}
			if !agrees(dsym) || dsym.Verdict == explorer.Partial && dsym.Stats.States != sym.Stats.States {
				t.Errorf("%s: dfs with symmetry says %s, bfs with symmetry %s", name, dsym, sym)
			}
			if !agrees(sym) {
				t.Errorf("%s: symmetry says %s, plain bfs %s", name, sym, plain)
				continue
			}
			if w, ok := size.states[v.Name]; ok {
				if !plain.OK() || plain.Stats.States != w.plain || sym.Stats.States != w.sym {
					t.Errorf("%s: plain %s, symmetry %s; want ok with %d and %d states", name, plain, sym, w.plain, w.sym)
				}
				continue
			}
			if plain.Verdict != explorer.Violation {
				t.Errorf("%s: plain bfs %s (symmetry %d states), no expectation", name, plain, sym.Stats.States)
				continue
			}
			if sym.Violation.Property != plain.Violation.Property || len(sym.Schedule) != len(plain.Schedule) {
				t.Errorf("%s: symmetry finds %s in %d steps, plain bfs %s in %d", name, sym.Violation.Property, len(sym.Schedule), plain.Violation.Property, len(plain.Schedule))
			}
			// oldpir-zero's group fixes CPU0 and e6500-one-lpid's is the
			// identity (symmetry.go): no reduction before the violation.
			if sym.Stats.States >= plain.Stats.States && v.Name != "oldpir-zero" && v.Name != "e6500-one-lpid" {
				t.Errorf("%s: symmetry explores %d states before the violation, plain bfs %d", name, sym.Stats.States, plain.Stats.States)
			}
			ex, err := explorer.Execute(m, sym.Schedule)
			if err != nil || ex.Violation == nil || ex.Violation.Property != plain.Violation.Property {
				t.Errorf("%s: the symmetric counterexample does not replay: %v", name, err)
			}
		}
	}
}

// permuteCPUs returns π(s): CPU c becomes CPU pi[c], with its record and
// per-CPU words, and every CPU id stored in the state (a vCPU's cpu, an
// oldpir holding a valid PIR) is renamed.
func permuteCPUs(m *machine, s *state, pi [maxCPUs]int8) *state {
	n := s.clone()
	for c := 0; c < m.cfg.cpus; c++ {
		d := int(pi[c])
		n.cpus[d] = s.cpus[c]
		for l := 1; l <= m.cfg.lpids; l++ {
			*m.tlbAt(n, d, l) = *m.tlbAt(s, c, l)
		}
		for l := 1; l <= m.cfg.lpids; l++ {
			n.mem.Init(m.lastOfLPID[d][l], s.mem.Peek(m.lastOfLPID[c][l]))
		}
		if m.cfg.cond == condPerCPU {
			n.mem.Init(m.lastOnCPU[d], s.mem.Peek(m.lastOnCPU[c]))
		}
	}
	n.host.ipi = 0
	for c := 0; c < m.cfg.cpus; c++ {
		if s.host.ipi&(1<<uint(c)) != 0 {
			n.host.ipi |= 1 << uint(pi[c])
		}
	}
	for v := 0; v < m.nslots; v++ {
		if c := s.vcpus[v].cpu; c >= 0 {
			n.vcpus[v].cpu = pi[c]
		}
		if o := s.mem.Peek(m.oldpir[v]); o < uint64(m.cfg.cpus) {
			n.mem.Init(m.oldpir[v], uint64(pi[o]))
		}
	}
	return n
}

// permuteChoice renames the CPU a choice refers to: its thread, or the
// CPU of a VMM teardown. The host MM's choices (VM slots) name no CPU.
func permuteChoice(m *machine, s *state, c model.Choice, pi [maxCPUs]int8) model.Choice {
	if c.Thread == m.mm {
		return c
	}
	if c.Thread == m.vmm {
		if s.vmm.phase == phaseDestroy {
			k, cpu := c.Alt/m.cfg.cpus, c.Alt%m.cfg.cpus
			c.Alt = k*m.cfg.cpus + int(pi[cpu])
		}
		return c
	}
	c.Thread = int(pi[c.Thread])
	return c
}

// successor runs choice c of m on a copy of s with x and returns the
// successor; x then holds the step's record.
func successor(m model.Machine, s model.State, c model.Choice, x *model.Exec) model.State {
	n := model.Clone(m, s)
	x.Reset(c.Thread, c.Alt)
	m.Step(n, c.Thread, x)
	return n
}

func newExec(m model.Machine) *model.Exec {
	x := model.NewExec(len(m.Properties().Metrics))
	x.SetThreadNames(m.Threads())
	return x
}

// reachable returns the states of m reachable from the initial state, in
// bfs order, at most limit of them (0: all).
func reachable(m model.Machine, limit int) []model.State {
	init := m.Init()
	seen := map[string]bool{string(init.AppendKey(nil)): true}
	out := []model.State{init}
	x := newExec(m)
	for i := 0; i < len(out); i++ {
		for _, c := range explorer.Enabled(m, out[i]) {
			n := successor(m, out[i], c, x)
			if k := string(n.AppendKey(nil)); !seen[k] {
				if len(out) == limit {
					return out
				}
				seen[k] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// TestSymmetryIsABisimulation checks symmetry.go's argument on every
// reachable state, for every permutation of the group: π(s) has the same
// canonical key, the permuted enabled choices, and, for each choice, the
// permuted successor with the same assertion outcome and metric deltas;
// and every state with the same canonical key is such a permutation.
func TestSymmetryIsABisimulation(t *testing.T) {
	for _, c := range []struct {
		variant string
		params  model.Params
	}{
		{"per-lpid", model.Params{"loads": 2, "ops": 1, "cycles": 0}},
		{"per-cpu", model.Params{"cpus": 3, "loads": 2, "ops": 1, "cycles": 0}},
		{"preempt-window", model.Params{"cpus": 3, "loads": 2, "ops": 1, "cycles": 0}},
		{"oldpir-zero", model.Params{"cpus": 3, "loads": 2, "ops": 1, "unmaps": 0}},
		// e6500: renaming CPUs across cores too (thread-specific tags).
		{"per-lpid", model.Params{"cpus": 4, "threads": 2, "loads": 2, "ops": 1, "cycles": 0}},
		{"per-lpid", model.Params{"tlbivax": 1, "loads": 2, "ops": 2, "cycles": 0}},
	} {
		m := machineFor(t, c.variant, c.params).(*machine)
		name := fmt.Sprintf("%s %v", c.variant, c.params)
		fixed := m.fixedCPU()
		var group [][maxCPUs]int8
		for _, p := range cpuPerms[m.cfg.cpus] {
			if fixed < 0 || p[fixed] == int8(fixed) {
				group = append(group, p)
			}
		}
		if len(group) < 2 {
			t.Fatalf("%s: trivial group", name)
		}
		x := newExec(m)
		byCanon := map[string][]*state{}
		for _, ms := range reachable(m, 0) {
			s := ms.(*state)
			canon := string(m.CanonicalKey(s, nil))
			byCanon[canon] = append(byCanon[canon], s)
			en := explorer.Enabled(m, s)
			for _, pi := range group[1:] {
				ps := permuteCPUs(m, s, pi)
				if string(m.CanonicalKey(ps, nil)) != canon {
					t.Fatalf("%s: permutation %v changes the canonical key of\n%s", name, pi[:m.cfg.cpus], model.Describe(s))
				}
				pen := explorer.Enabled(m, ps)
				if len(en) != len(pen) {
					t.Fatalf("%s: %d choices, %d after permutation", name, len(en), len(pen))
				}
				for _, ch := range en {
					pc := permuteChoice(m, s, ch, pi)
					if !slices.Contains(pen, pc) {
						t.Fatalf("%s: choice %v has no permuted counterpart %v", name, ch, pc)
					}
					n := successor(m, s, ch, x)
					v, counts := x.Violation(), fmt.Sprint(x.Counts())
					pn := successor(m, ps, pc, x)
					pv := x.Violation()
					if string(permuteCPUs(m, n.(*state), pi).AppendKey(nil)) != string(pn.AppendKey(nil)) ||
						(v == nil) != (pv == nil) || v != nil && v.Property != pv.Property || counts != fmt.Sprint(x.Counts()) {
						t.Fatalf("%s: step %v and its permutation %v disagree at\n%s", name, ch, pc, model.Describe(s))
					}
				}
			}
		}
		// Equal canonical keys only for states in one orbit.
		for _, states := range byCanon {
			if len(states) < 2 {
				continue
			}
			var orbit []string
			for _, pi := range group {
				orbit = append(orbit, string(permuteCPUs(m, states[0], pi).AppendKey(nil)))
			}
			for _, s := range states[1:] {
				if !slices.Contains(orbit, string(s.AppendKey(nil))) {
					t.Fatalf("%s: two states share a canonical key outside one orbit", name)
				}
			}
		}
	}
}

// TestOldpirZeroBreaksCPU0Symmetry: with oldpir-zero and the VMM, a
// created vCPU's oldpir names CPU0, so swapping CPU0 with another CPU is
// not a symmetry; the machine keeps CPU0 fixed (and at cpus=2 its group
// is trivial: the same state count as plain bfs).
func TestOldpirZeroBreaksCPU0Symmetry(t *testing.T) {
	m := machineFor(t, "oldpir-zero", nil).(*machine)
	if m.fixedCPU() != 0 {
		t.Fatalf("oldpir-zero with cycles=1 does not fix CPU0")
	}
	if m := machineFor(t, "oldpir-zero", model.Params{"cycles": 0}).(*machine); m.fixedCPU() != -1 {
		t.Fatalf("oldpir-zero without the VMM fixes CPU%d", m.fixedCPU())
	}
	// A state right after a vCPU creation: the swap of CPU0 and CPU1 is
	// not equivariant there (searched at a size small enough to walk).
	m = machineFor(t, "oldpir-zero", model.Params{"loads": 1, "ops": 0, "unmaps": 0}).(*machine)
	x := newExec(m)
	for _, ms := range reachable(m, 0) {
		s := ms.(*state)
		if s.vmm.phase != phaseCreateVCPU {
			continue
		}
		ch := model.Choice{Thread: m.vmm}
		pi := [maxCPUs]int8{1, 0, 2, 3}
		n := successor(m, s, ch, x)
		pn := successor(m, permuteCPUs(m, s, pi), ch, x)
		if string(permuteCPUs(m, n.(*state), pi).AppendKey(nil)) == string(pn.AppendKey(nil)) {
			t.Fatalf("swapping CPU0 and CPU1 commutes with vCPU creation in oldpir-zero")
		}
		return
	}
	t.Fatal("no vCPU creation reached")
}
