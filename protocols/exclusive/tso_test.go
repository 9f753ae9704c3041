package exclusive

import (
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// Upstream under x86-TSO (memory=1): with its smp_mb() pairs and its
// locked mutex operations the store buffers break nothing, exhaustively at
// the default size: bfs proves every property; dfs, which keeps no state
// graph, every property but the progress ones, which it says it did not
// check (partial).
func TestUpstreamCorrectUnderTSO(t *testing.T) {
	for _, strategy := range []string{explorer.BFS, explorer.DFS} {
		m, r := explore(t, "upstream", model.Params{"memory": 1}, explorer.Options{Strategy: strategy})
		clean := r.OK()
		if strategy == explorer.DFS {
			clean = r.Verdict == explorer.Partial && r.CleanExcept(progressNames(m)...)
		}
		if !clean || r.Stats.States != 196343 || r.Stats.Transitions != 744837 {
			t.Errorf("upstream memory=1 %s: %s; want ok (dfs: all but progress) with 196343 states, 744837 transitions", strategy, r)
		}
	}
}

// progressNames names m's progress properties: what dfs and symmetry
// reduction leave unchecked.
func progressNames(m model.Machine) []string {
	var out []string
	for _, p := range m.Properties().Progress {
		out = append(out, p.Name)
	}
	return out
}

// V-A1, found: without the smp_mb() of cpu_exec_start and
// start_exclusive, each side's store stays in its store buffer while it
// loads the other side's word, so both read the old value: start_exclusive
// does not count the vCPU, the vCPU takes the fast path, and it executes
// guest code during the exclusive section. No commit step is needed: the
// two stores are still buffered when the section starts.
func TestNoSmpMbBreaksMutualExclusion(t *testing.T) {
	m, r := explore(t, "no-smp-mb", nil, explorer.Options{Strategy: explorer.BFS})
	if r.Verdict != explorer.Violation || r.Violation.Property != PropMutualExclusion || len(r.Schedule) != 34 {
		t.Fatalf("no-smp-mb: %s in %d steps; want mutual-exclusion in 34", r, len(r.Schedule))
	}
	keys := []string{
		"vcpu0: start_exclusive: atomic_set(pending_cpus, 1) (no smp_mb())",      // buffered
		"vcpu0: start_exclusive: atomic_read(cpu1->running) = false",             // not counted
		"vcpu0: start_exclusive: atomic_set(pending_cpus, running_cpus + 1 = 1)", // buffered too
		"vcpu1: cpu_exec_start: atomic_set(cpu1->running, true)",                 // buffered
		"vcpu1: cpu_exec_start: (no smp_mb()) atomic_read(pending_cpus) = 0: fast path, cpu1 enters cpu_exec",
		"vcpu0: start_exclusive: pending_cpus = 1: qemu_mutex_unlock(qemu_cpu_list_lock); the exclusive section starts",
	}
	i := 0
	for k, l := range r.Labels {
		if i < len(keys) && m.Threads()[r.Schedule[k].Thread]+": "+l == keys[i] {
			i++
		}
		if strings.HasPrefix(l, "store buffer:") {
			t.Errorf("step %d commits a buffered store: %s", k+1, l)
		}
	}
	if i < len(keys) {
		t.Fatalf("the counterexample lacks, in order, %q:\n%s", keys[i], strings.Join(r.Labels, "\n"))
	}

	// At the violation vcpu1's store of cpu1->running is still buffered:
	// memory says false, vcpu1 itself reads true.
	ex, err := explorer.Execute(m, r.Schedule)
	if err != nil {
		t.Fatal(err)
	}
	if ex.ViolationStep != len(r.Schedule) {
		t.Fatalf("the counterexample replays to a violation at step %d of %d", ex.ViolationStep, len(r.Schedule))
	}
	st := ex.States[len(ex.States)-1].(*state)
	run1 := st.m.aRunning[1]
	if st.mem.Peek(run1) != 0 || st.mem.PeekThread(1, run1) != 1 || st.mem.Buffered(1) != 1 {
		t.Errorf("cpu1->running: memory %d, vcpu1's view %d, %d buffered; want 0, 1, 1",
			st.mem.Peek(run1), st.mem.PeekThread(1, run1), st.mem.Buffered(1))
	}
}

// The barrier is what matters, and only under TSO: the same code without
// smp_mb() run sequentially consistent explores exactly upstream's states.
func TestNoSmpMbCorrectUnderSC(t *testing.T) {
	_, params, err := Protocol.Instantiate("upstream", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMachine(flags{noSmpMb: true}, params)
	if err != nil {
		t.Fatal(err)
	}
	m.tso = false
	r, err := explorer.Explore(m, explorer.Options{Strategy: explorer.BFS})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != explorer.OK || r.Stats.States != bfsWant["upstream"].states || r.Stats.Transitions != bfsWant["upstream"].transitions {
		t.Errorf("no-smp-mb under SC: %s; want upstream's ok with %d states", r, bfsWant["upstream"].states)
	}
}

// The defaults build the plain, sequentially consistent machine; memory=1
// and no-smp-mb (whatever memory says) add the store buffers. The real
// implementation refuses both.
func TestMemoryParam(t *testing.T) {
	m, params, err := Protocol.Instantiate("upstream", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*machine); !ok || params["memory"] != 0 {
		t.Fatalf("defaults: %T %v", m, params)
	}
	for _, c := range []struct {
		variant string
		p       model.Params
	}{{"upstream", model.Params{"memory": 1}}, {"no-smp-mb", nil}, {"cpu-lock", model.Params{"memory": 1}}} {
		m, _, err := Protocol.Instantiate(c.variant, c.p)
		if err != nil {
			t.Fatal(err)
		}
		if th := m.Threads(); th[len(th)-1] != model.StoreBufferThread {
			t.Errorf("%s %v: threads %v, want the store buffers last", c.variant, c.p, th)
		}
		_, params, _ := Protocol.Instantiate(c.variant, c.p)
		if _, err := Impl.New(c.variant, params); err == nil || !strings.Contains(err.Error(), "sequentially consistent") {
			t.Errorf("Impl.New(%s, %v): %v; want a refusal", c.variant, params, err)
		}
	}
}

// Under TSO every other variant keeps its verdict and its shortest
// counterexample's length: the store buffers change nothing their bugs
// depend on.
func TestTSOKeepsVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("explores every variant")
	}
	for _, v := range Protocol.Variants {
		if v.Name == "upstream" {
			continue // TestUpstreamCorrectUnderTSO
		}
		_, r := explore(t, v.Name, model.Params{"memory": 1}, explorer.Options{Strategy: explorer.BFS})
		want := bfsWant[v.Name]
		found := model.ExpectOK
		if r.Violation != nil {
			found = r.Violation.Property
		}
		if found != v.Expect || (want.property != "" && len(r.Schedule) != want.steps) {
			t.Errorf("%s under TSO: %s in %d steps, want %s in %d", v.Name, found, len(r.Schedule), v.Expect, want.steps)
		}
	}
}
