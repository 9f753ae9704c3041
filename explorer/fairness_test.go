package explorer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"pgregory.net/rapid"
)

// toggle: a toggler flips a flag on and off for ever; the waiter can take
// its step only while the flag is on. The waiter is enabled infinitely
// often but never continuously: weak fairness lets it be passed over for
// ever, strong fairness does not.
type toggleState struct {
	Flag, Took bool
}

func toggle() model.Machine { return toggleIdling(false) }

// toggleIdling(true) lets the toggler also stay with the flag off (a step
// that touches it): a cycle of those never enables the waiter, so it is
// fair even to a strongly fair waiter, although the component it lies in
// (with the flag on too) is not.
func toggleIdling(idle bool) model.Machine {
	return model.MustNew(model.Def[toggleState]{
		Threads: []string{"toggler", "waiter"},
		Init:    func(*toggleState) {},
		Step: func(s *toggleState, t int, x *model.Exec) {
			switch {
			case t == 0 && idle && !s.Flag && x.Choose(2) == 1:
				x.Touch("flag", true)
				x.Label("leaves the flag off")
			case t == 0:
				s.Flag = !s.Flag
				x.Touch("flag", true)
				x.Labelf("flag = %v", s.Flag)
			case s.Took:
				x.Done()
			case !s.Flag:
				x.Block()
				x.Label("waits for the flag")
			default:
				s.Took = true
				x.Touch("took", true)
				x.Label("takes it")
			}
		},
		Progress: []model.ProgressOf[toggleState]{{Name: "waiter-proceeds", Pending: func(s *toggleState) bool { return !s.Took }}},
	})
}

// A strongly fair waiter proceeds where a weakly fair one need not: the
// same model is violated under weak fairness (a lasso of the toggler
// flipping the flag for ever) and clean under strong fairness, of every
// thread or of the waiter alone; the weak lasso does not check as a
// strongly fair one.
func TestStrongFairnessOfAThread(t *testing.T) {
	weak, err := explorer.Explore(toggle(), explorer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if weak.Verdict != explorer.Violation || weak.Violation.Property != "waiter-proceeds" || weak.Cycle != 2 || len(weak.Schedule) != 2 {
		t.Fatalf("weak: %s, schedule %v, cycle %d; want the 2-step lasso of the toggler", weak, weak.Schedule, weak.Cycle)
	}
	for _, f := range []string{explorer.FairnessStrong, "weak,waiter=strong", "none,waiter=strong"} {
		r, err := explorer.Explore(toggle(), explorer.Options{Fairness: f})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != explorer.OK {
			t.Errorf("fairness %s: %s, want ok", f, r)
		}
	}
	if _, err := explorer.CheckLasso(toggle(), weak.Schedule, weak.Cycle, "waiter-proceeds", "weak,waiter=strong"); err == nil || !strings.Contains(err.Error(), "waiter, strongly fair, can step in some state of it but never does") {
		t.Errorf("the weak lasso under a strongly fair waiter: %v", err)
	}
	// The toggler alone strongly fair changes nothing: the waiter is the
	// one passed over.
	r, err := explorer.Explore(toggle(), explorer.Options{Fairness: "weak,toggler=strong"})
	if err != nil || r.Verdict != explorer.Violation || !strings.Contains(r.Violation.Message, "a fair cycle under fairness weak,toggler=strong") {
		t.Errorf("weak,toggler=strong: %v %v", r, err)
	}
	// Strong fairness removes the states where the waiter is enabled and
	// looks again at what is left: the toggler idling with the flag off.
	r, err = explorer.Explore(toggleIdling(true), explorer.Options{Fairness: "weak,waiter=strong"})
	if err != nil || r.Verdict != explorer.Violation || r.Cycle != 1 || len(r.Schedule) != 1 {
		t.Errorf("an idling toggler, strongly fair waiter: %v (schedule %v, cycle %d), want the 1-step lasso of idling", r, r.Schedule, r.Cycle)
	}
	for _, bad := range []string{"fair", "weak,nobody=strong", "weak,waiter=sometimes", "weak,waiter=strong,waiter=weak"} {
		if _, err := explorer.Explore(toggle(), explorer.Options{Fairness: bad}); err == nil {
			t.Errorf("fairness %q accepted", bad)
		}
	}
}

// naiveLasso decides progress under per-thread fairness kinds ("weak",
// "strong", "none"; named alternatives weakly fair when named) by brute
// force, and measures the shortest lasso: for each reachable pending node
// s, a breadth-first search of (node, nodes visited, edges taken) finds
// the shortest closed walk from s that stays in pending nodes and is fair
// by its exact sets of nodes and edges; the lasso is bfs's distance to s
// plus that walk. It returns whether a fair lasso exists and the least
// length, or terminal true when a pending node with every thread done is
// reachable (the explorer reports that first, with no cycle).
func (g *graphModel) naiveLasso(kinds []string, named bool) (violates, terminal bool, shortest int) {
	dist := make([]int, g.nodes)
	for i := range dist {
		dist[i] = -1
	}
	dist[0] = 0
	queue := []int{0}
	for i := 0; i < len(queue); i++ {
		n := queue[i]
		for _, mv := range g.moves[n] {
			for _, to := range mv {
				if dist[to] < 0 {
					dist[to] = dist[n] + 1
					queue = append(queue, to)
				}
			}
		}
	}
	for n := 0; n < g.nodes; n++ {
		if dist[n] < 0 || !g.pending[n] {
			continue
		}
		allDone := true
		for _, mv := range g.moves[n] {
			allDone = allDone && mv == nil
		}
		if allDone {
			return true, true, 0
		}
	}
	edge := func(n, th, a int) int { return (n*g.threads+th)*2 + a }
	fair := func(nodes, edges int) bool {
		for th := 0; th < g.threads; th++ {
			always, some, taken := true, false, false
			for n := 0; n < g.nodes; n++ {
				if nodes&(1<<n) == 0 {
					continue
				}
				en := len(g.moves[n][th]) > 0
				always, some = always && en, some || en
				for a := range g.moves[n][th] {
					taken = taken || edges&(1<<edge(n, th, a)) != 0
				}
			}
			if kinds[th] == "weak" && always && !taken || kinds[th] == "strong" && some && !taken {
				return false
			}
			for a := 0; a < 2 && named; a++ {
				offered, took := true, false
				for n := 0; n < g.nodes; n++ {
					if nodes&(1<<n) == 0 {
						continue
					}
					offered = offered && g.named[n][th] && a < len(g.moves[n][th])
					took = took || g.named[n][th] && edges&(1<<edge(n, th, a)) != 0
				}
				if offered && !took {
					return false
				}
			}
		}
		return true
	}
	shortest = -1
	for s := 0; s < g.nodes; s++ {
		if dist[s] < 0 || !g.pending[s] {
			continue
		}
		type walk struct{ n, nodes, edges, len int }
		seen := map[[3]int]bool{}
		q := []walk{{s, 1 << s, 0, 0}}
		found := -1
		for i := 0; i < len(q) && found < 0; i++ {
			w := q[i]
			for th, mv := range g.moves[w.n] {
				for a, to := range mv {
					if !g.pending[to] {
						continue
					}
					next := walk{to, w.nodes | 1<<to, w.edges | 1<<edge(w.n, th, a), w.len + 1}
					if to == s && fair(next.nodes, next.edges) {
						found = next.len
						break
					}
					k := [3]int{next.n, next.nodes, next.edges}
					if !seen[k] {
						seen[k] = true
						q = append(q, next)
					}
				}
				if found >= 0 {
					break
				}
			}
		}
		if found >= 0 && (shortest < 0 || dist[s]+found < shortest) {
			shortest = dist[s] + found
		}
	}
	return shortest >= 0, false, shortest
}

// The progress check agrees with naiveLasso on random small graphs under
// weak, strong and mixed fairness and without, and the lasso it reports
// is a shortest one (prefix plus cycle) and re-executes as one.
func TestProgressFindsShortestLassosUnderAnyFairness(t *testing.T) {
	outcomes := map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		g := drawGraph(t)
		for _, spec := range []string{"weak", "strong", "none", "weak,T0=strong", "none,T1=strong", "strong,T0=none"} {
			kinds := []string{"", ""}
			base, _, _ := strings.Cut(spec, ",")
			for th := range kinds {
				kinds[th] = base
				if strings.Contains(spec, fmt.Sprintf("T%d=", th)) {
					_, k, _ := strings.Cut(spec[strings.Index(spec, fmt.Sprintf("T%d=", th)):], "=")
					kinds[th], _, _ = strings.Cut(k, ",")
				}
			}
			if g.threads < 2 && strings.Contains(spec, "T1") {
				continue
			}
			m := g.machine()
			r, err := explorer.Explore(m, explorer.Options{Fairness: spec})
			if err != nil {
				t.Fatal(err)
			}
			if r.Violation != nil && r.Violation.Property == model.Deadlock {
				continue
			}
			want, terminal, shortest := g.naiveLasso(kinds[:g.threads], base != "none")
			got := r.Violation != nil && r.Violation.Property == "leaves"
			if got != want {
				t.Fatalf("fairness %s: explorer says %v (%s), brute force says %v; graph %+v", spec, got, r, want, g)
			}
			outcomes[fmt.Sprintf("%s %v", base, got)]++
			if !got || terminal {
				continue
			}
			if len(r.Schedule) != shortest {
				t.Fatalf("fairness %s: a lasso of %d steps (cycle %d: %v), the shortest has %d; graph %+v", spec, len(r.Schedule), r.Cycle, r.Schedule, shortest, g)
			}
			if _, err := explorer.CheckLasso(m, r.Schedule, r.Cycle, "leaves", spec); err != nil {
				t.Fatalf("fairness %s: the lasso %v (cycle %d) does not check: %v", spec, r.Schedule, r.Cycle, err)
			}
		}
	})
	for _, o := range []string{"weak true", "weak false", "strong true", "strong false", "none true"} {
		if outcomes[o] == 0 {
			t.Errorf("no random graph gave %s: %v", o, outcomes)
		}
	}
}
