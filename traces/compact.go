package traces

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// DefaultLines is the line budget of the summary view: a counterexample
// should be read in one look, on one screen.
const DefaultLines = 40

// RenderSummary writes the text view of a replayed trace within about
// maxLines lines (the header and the violation always show). It shrinks
// the full view (Render) in two stages, each used only if the previous one
// does not fit:
//
//  1. one line per step: the label, followed by the shared-memory words the
//     step wrote ("{st[1].preempted: 1 -> 5}"); the violating step keeps
//     every changed variable;
//  2. the least telling steps are folded, consecutive ones into one
//     "... N steps folded (T xK, ...)" line: each thread's last step, the
//     environment's choices, steps touching what the violation names and
//     shared-memory writes stay longest; the violating step always shows.
//
// Nothing is reordered, so a folded view reads like the full one with
// steps elided; `check replay --full` shows every step.
func RenderSummary(w io.Writer, r *Replayed, maxLines int) error {
	if r == nil || r.Trace == nil || r.Machine == nil || r.Execution == nil {
		return errors.New("render: incomplete replay (need the trace, the machine and the execution)")
	}
	t, m, ex := r.Trace, r.Machine, r.Execution
	if len(ex.States) != len(ex.Steps)+1 {
		return fmt.Errorf("render: the execution has %d states for %d steps", len(ex.States), len(ex.Steps))
	}
	var full strings.Builder
	if err := Render(&full, r); err != nil {
		return err
	}
	if strings.Count(full.String(), "\n") <= maxLines {
		_, err := io.WriteString(w, full.String())
		return err
	}

	names := m.Threads()
	col := minColumn
	for _, n := range names {
		col = max(col, len(n)+2)
	}
	num := max(3, len(strconv.Itoa(len(ex.Steps))))
	prefix := 2 + num + 3
	indent := func(thread int) string {
		if thread < 0 || thread >= len(names) {
			thread = 0
		}
		return strings.Repeat(" ", thread*col)
	}
	v := ex.Violation
	violating := func(i int) bool { return v != nil && ex.ViolationStep == i+1 }

	// Stage 1: one line per step.
	loop := len(ex.Steps) - r.Cycle
	stepLine := func(i int) string {
		s := ex.Steps[i]
		mark := "  "
		switch {
		case violating(i):
			mark = ">>"
		case r.Cycle > 0 && i >= loop:
			mark = " |"
		}
		label := s.Label
		if s.Choice.Alt != 0 {
			label += fmt.Sprintf("  [alt %d]", s.Choice.Alt)
		}
		if !violating(i) {
			written := map[string]bool{}
			for _, a := range s.Footprint {
				if a.Write && a.Addr >= 0 {
					written[a.Object] = true
				}
			}
			var shared []string
			for _, c := range changes(ex.States[i], ex.States[i+1]) {
				if name, _, _ := strings.Cut(c, ":"); written[name] {
					shared = append(shared, c)
				}
			}
			if len(shared) > 0 {
				label += "  {" + strings.Join(shared, "; ") + "}"
			}
		}
		return fmt.Sprintf("%s%*d   %s%s", mark, num, i+1, indent(s.Choice.Thread), label)
	}

	// Stage 2: fold the least telling steps until the view fits. Each step
	// has a weight; the lightest (earliest first, among equals) are folded
	// one by one, and consecutive folded steps share one "..." line. What
	// stays longest: the violating step; each thread's last step (where it
	// stopped, or what it waits on); the environment's choices (a
	// preemption, which waiter a signal woke); steps that touched an
	// object the violation names; steps that wrote shared memory.
	weight := func(i int) int {
		s := ex.Steps[i]
		w := 0
		if violating(i) || r.Cycle > 0 && i >= loop {
			return 1 << 20 // a cycle is never folded: it is the counterexample
		}
		last := true
		for j := i + 1; j < len(ex.Steps); j++ {
			if ex.Steps[j].Choice.Thread == s.Choice.Thread {
				last = false
				break
			}
		}
		if last {
			w += 100
		}
		if s.Choice.Alt != 0 {
			w += 50
		}
		for _, a := range s.Footprint {
			if v != nil && a.Object != "" && strings.Contains(v.Message, a.Object) {
				w += 40
				break
			}
		}
		for _, a := range s.Footprint {
			if a.Write && a.Addr >= 0 {
				w += 10
				break
			}
		}
		return w
	}
	fixed := 4 // header, columns, metrics, last line
	if r.Cycle > 0 {
		fixed++ // the cycle's line
	}
	if v != nil {
		fixed += 1 + len(changes(ex.States[ex.ViolationStep-boolInt(ex.ViolationStep > 0)], ex.States[ex.ViolationStep]))
	}
	folded := make([]bool, len(ex.Steps))
	count := func() int {
		n := fixed
		for i := range ex.Steps {
			if !folded[i] || i == 0 || !folded[i-1] {
				n++
			}
		}
		return n
	}
	order := make([]int, len(ex.Steps))
	weights := make([]int, len(ex.Steps))
	for i := range order {
		order[i], weights[i] = i, weight(i)
	}
	sort.SliceStable(order, func(a, b int) bool { return weights[order[a]] < weights[order[b]] })
	for _, i := range order {
		if count() <= maxLines || violating(i) {
			break
		}
		folded[i] = true
	}
	// A fold of a single step saves nothing: show the step instead.
	for i := range folded {
		if folded[i] && (i == 0 || !folded[i-1]) && (i+1 == len(folded) || !folded[i+1]) {
			folded[i] = false
		}
	}

	b := bufio.NewWriter(w)
	line := func(s string) { b.WriteString(strings.TrimRight(s, " ") + "\n") }
	header(line, t, names, len(ex.Steps), " (summary: check replay --full shows every step and every changed variable)", prefix, col)
	if v != nil && ex.ViolationStep == 0 {
		line(">> initial state: VIOLATION " + v.Error())
	}
	for i := 0; i < len(ex.Steps); i++ {
		if r.Cycle > 0 && i == loop {
			line(cycleLine(num, loop, len(ex.Steps)))
		}
		if folded[i] {
			j := i
			var who []string
			seen := map[int]int{}
			for ; j < len(ex.Steps) && folded[j]; j++ {
				th := ex.Steps[j].Choice.Thread
				if _, ok := seen[th]; !ok {
					who = append(who, names[th])
				}
				seen[th]++
			}
			for k, n := range who {
				for th, name := range names {
					if name == n {
						who[k] = fmt.Sprintf("%s x%d", n, seen[th])
						break
					}
				}
			}
			line(fmt.Sprintf("  %*s   ... %d steps folded (%s)", num, "", j-i, strings.Join(who, ", ")))
			i = j - 1
			continue
		}
		line(stepLine(i))
		if violating(i) {
			at := strings.Repeat(" ", prefix) + indent(ex.Steps[i].Choice.Thread)
			for _, c := range changes(ex.States[i], ex.States[i+1]) {
				line(at + "  " + c)
			}
			line(at + "VIOLATION " + v.Error())
		}
	}
	footer(line, m, ex)
	return b.Flush()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
