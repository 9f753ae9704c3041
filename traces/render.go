package traces

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// minColumn is the narrowest thread column. Labels are longer than any
// column would be; each label starts at its thread's column and runs on
// unwrapped, which is readable because a line holds a single label.
const minColumn = 16

// Render writes the text view of a replayed trace: a header with the
// protocol, variant and parameters; one numbered line per step with the
// label in the stepping thread's column; under it the variables the step
// changed (old -> new); the violating step marked ">>" with the violation
// under it; and a last line with the violation, or "no violation". The
// output is a function of the trace and the model alone.
func Render(w io.Writer, r *Replayed) error {
	if r == nil || r.Trace == nil || r.Machine == nil || r.Execution == nil {
		return errors.New("render: incomplete replay (need the trace, the machine and the execution)")
	}
	t, m, ex := r.Trace, r.Machine, r.Execution
	if len(ex.States) != len(ex.Steps)+1 {
		return fmt.Errorf("render: the execution has %d states for %d steps", len(ex.States), len(ex.Steps))
	}
	names := m.Threads()
	col := minColumn
	for _, n := range names {
		col = max(col, len(n)+2)
	}
	num := max(3, len(strconv.Itoa(len(ex.Steps))))
	prefix := 2 + num + 3 // marker, step number, gap
	indent := func(thread int) string {
		if thread < 0 || thread >= len(names) {
			thread = 0
		}
		return strings.Repeat(" ", prefix+thread*col)
	}

	b := bufio.NewWriter(w)
	line := func(s string) { b.WriteString(strings.TrimRight(s, " ") + "\n") }

	header(line, t, names, len(ex.Steps), "", prefix, col)

	v := ex.Violation
	if v != nil && ex.ViolationStep == 0 {
		line(">> initial state: VIOLATION " + v.Error())
	}
	loop := len(ex.Steps) - r.Cycle
	for i, s := range ex.Steps {
		mark := "  "
		violating := v != nil && ex.ViolationStep == i+1
		if r.Cycle > 0 && i == loop {
			line(cycleLine(num, loop, len(ex.Steps)))
		}
		switch {
		case violating:
			mark = ">>"
		case r.Cycle > 0 && i >= loop:
			mark = " |"
		}
		label := s.Label
		if s.Choice.Alt != 0 {
			label += fmt.Sprintf("  [alt %d]", s.Choice.Alt)
		}
		at := indent(s.Choice.Thread)
		line(fmt.Sprintf("%s%*d   %s%s", mark, num, i+1, at[prefix:], label))
		for _, c := range changes(ex.States[i], ex.States[i+1]) {
			line(at + "  " + c)
		}
		if violating {
			line(at + "VIOLATION " + v.Error())
		}
	}

	footer(line, m, ex)
	return b.Flush()
}

// cycleLine introduces the steps of a lasso's cycle.
func cycleLine(num, loop, n int) string {
	return fmt.Sprintf("  %*s   -- %s forever: the state after step %d is the state after step %d --", num, "", explorer.Repeating(loop+1, n), n, loop)
}

// header writes the first two lines of a text view: protocol, variant,
// parameters and length; then the thread names over their columns.
func header(line func(string), t *Trace, names []string, steps int, note string, prefix, col int) {
	head := t.Protocol + "/" + t.Variant
	if ps := t.Params.String(); ps != "" {
		head += " " + ps
	}
	line(fmt.Sprintf("%s, %d steps%s", head, steps, note))
	cols := strings.Repeat(" ", prefix)
	for _, n := range names {
		cols += n + strings.Repeat(" ", col-len(n))
	}
	line(cols)
}

// footer writes the last lines of a text view: the metric totals and the
// violation, or "no violation".
func footer(line func(string), m model.Machine, ex *explorer.Execution) {
	if metrics := m.Properties().Metrics; len(metrics) > 0 && len(ex.Totals) == len(metrics) {
		parts := make([]string, len(metrics))
		for i, name := range metrics {
			parts[i] = fmt.Sprintf("%s=%d", name, ex.Totals[i])
		}
		line("metrics: " + strings.Join(parts, " "))
	}
	if v := ex.Violation; v != nil {
		line("violation " + v.Error())
	} else {
		line("no violation")
	}
}

// changes lists the variables that differ between before and after as
// "name: old -> new", in after's variable order.
func changes(before, after model.State) []string {
	old := map[string]string{}
	for _, v := range before.Vars() {
		old[v.Name] = v.Value
	}
	var out []string
	for _, v := range model.Changed(before, after) {
		o, ok := old[v.Name]
		if !ok {
			o = "(none)"
		}
		out = append(out, fmt.Sprintf("%s: %s -> %s", v.Name, o, v.Value))
	}
	return out
}
