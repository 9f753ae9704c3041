package traces

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// The page is one template with its CSS and JavaScript inline, so that
// the file written by RenderHTML is the whole counterexample: it can be
// attached to a bug report or opened from a mail client with no network
// and nothing beside it.
//
//go:embed html/page.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"join": func(s []string) string { return strings.Join(s, ", ") },
}).Parse(pageSource))

// RenderHTML writes one self-contained HTML page for a replayed trace: a
// header with the protocol, variant, parameters and verdict (the violated
// property and its message); a swimlane table with one column per thread
// and one row per step, the label in the stepping thread's column with the
// variables the step changed (old -> new) and its metric events; the
// violating step highlighted; a side panel with the full state after the
// selected step (every variable, the ones the step changed highlighted, the
// status of every thread and the step's footprint), selected by clicking a
// row, by the slider, by the arrow keys or by "#step=N" in the URL; and the
// metric totals. When the violated property is linearizability, the
// operation history is rebuilt from the execution and porcupine's own
// visualization of it is embedded in an iframe (srcdoc), so the page stays
// one file.
//
// The page loads nothing from the network and is a function of the trace
// and the model alone: the same replay always gives the same bytes.
func RenderHTML(w io.Writer, r *Replayed) error {
	if r == nil || r.Trace == nil || r.Machine == nil || r.Execution == nil {
		return errors.New("render html: incomplete replay (need the trace, the machine and the execution)")
	}
	ex := r.Execution
	if len(ex.States) != len(ex.Steps)+1 {
		return fmt.Errorf("render html: the execution has %d states for %d steps", len(ex.States), len(ex.Steps))
	}
	p, err := buildPage(r)
	if err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	// Rendered into a buffer first so that a template error never leaves
	// half a page in the caller's file.
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// htmlPage is everything the template shows, computed in Go so that the
// template only lays it out.
type htmlPage struct {
	Title    string // protocol/variant
	Params   []htmlKV
	Steps    int
	Threads  []string
	Verdict  string // "VIOLATION" or "no violation"
	Violated bool
	Property string
	Message  string
	Where    string // where the violation was found, in words
	Rows     []htmlRow
	States   []htmlState
	Selected int // the step shown first: the violating one, else the last
	Metrics  []htmlKV
	Lin      *htmlLin
}

type htmlKV struct {
	Name  string
	Value string
}

// An htmlRow is one row of the swimlane: step 0 is the initial state and
// has no thread (-1).
type htmlRow struct {
	Step      int
	Thread    int
	Label     string
	Alt       int
	Changes   []htmlVar
	Counts    []string // "+1 stores"
	Violating bool
	// InCycle marks the steps of a lasso's cycle; CycleStart the first.
	InCycle, CycleStart bool
}

// An htmlVar is a variable of a state; Old is its value before the step
// when the step changed it.
type htmlVar struct {
	Name    string
	Value   string
	Old     string
	Changed bool
}

// An htmlState is the side panel's content for one step.
type htmlState struct {
	Step      int
	Title     string
	Label     string
	Vars      []htmlVar
	Threads   []htmlKV // thread name, status
	Footprint []string
	Counts    []string
	Violating bool
	Violation string
}

// htmlLin is porcupine's view of a non-linearizable history.
type htmlLin struct {
	Note   string // what the view shows, or why it is missing
	Doc    string // porcupine's page, shown in an iframe; "" when missing
	Height int    // iframe height in pixels
}

func buildPage(r *Replayed) (*htmlPage, error) {
	t, m, ex := r.Trace, r.Machine, r.Execution
	names := m.Threads()
	p := &htmlPage{
		Title:    t.Protocol + "/" + t.Variant,
		Params:   sortedParams(t.Params),
		Steps:    len(ex.Steps),
		Threads:  names,
		Verdict:  "no violation",
		Selected: len(ex.Steps),
	}
	v := ex.Violation
	if v != nil {
		p.Verdict, p.Violated = "VIOLATION", true
		p.Property, p.Message = v.Property, v.Message
		p.Selected = ex.ViolationStep
		switch {
		case r.Cycle > 0:
			p.Where = fmt.Sprintf("a cycle: %s forever (the state after step %d is the state after step %d)", explorer.Repeating(len(ex.Steps)-r.Cycle+1, len(ex.Steps)), len(ex.Steps), len(ex.Steps)-r.Cycle)
		case v.Property == model.Deadlock || v.Property == model.Linearizability:
			// Both are judged on the whole run, so the last step is
			// marked, but it is not that step's fault alone.
			p.Where = fmt.Sprintf("checked at the end of the run, after step %d", ex.ViolationStep)
		case ex.ViolationStep == 0:
			p.Where = "in the initial state"
		default:
			p.Where = fmt.Sprintf("at step %d", ex.ViolationStep)
		}
	} else if !ex.Terminal {
		p.Where = "the run stops here with threads still able to step"
	}

	metrics := m.Properties().Metrics
	counts := func(deltas []int64) []string {
		var out []string
		for i, d := range deltas {
			if d != 0 && i < len(metrics) {
				out = append(out, fmt.Sprintf("%+d %s", d, metrics[i]))
			}
		}
		return out
	}
	if len(ex.Totals) == len(metrics) {
		for i, name := range metrics {
			p.Metrics = append(p.Metrics, htmlKV{Name: name, Value: fmt.Sprint(ex.Totals[i])})
		}
	}

	for i := 0; i <= len(ex.Steps); i++ {
		violating := v != nil && ex.ViolationStep == i
		row := htmlRow{Step: i, Thread: -1, Label: "initial state", Violating: violating}
		if loop := len(ex.Steps) - r.Cycle; r.Cycle > 0 && i > loop {
			row.InCycle, row.CycleStart = true, i == loop+1
		}
		st := htmlState{Step: i, Title: "initial state", Violating: violating}
		var before model.State
		if i > 0 {
			s := ex.Steps[i-1]
			before = ex.States[i-1]
			row.Thread, row.Label, row.Alt = s.Choice.Thread, s.Label, s.Choice.Alt
			row.Counts = counts(s.Counts)
			st.Title = fmt.Sprintf("after step %d (%s)", i, threadName(names, s.Choice.Thread))
			st.Label = s.Label
			if s.Choice.Alt != 0 {
				st.Label += fmt.Sprintf("  [alt %d]", s.Choice.Alt)
			}
			st.Counts = row.Counts
			for _, a := range s.Footprint {
				st.Footprint = append(st.Footprint, a.String())
			}
		}
		st.Vars = stateVars(before, ex.States[i])
		for _, x := range st.Vars {
			if x.Changed {
				row.Changes = append(row.Changes, x)
			}
		}
		for th, status := range explorer.Statuses(m, ex.States[i]) {
			st.Threads = append(st.Threads, htmlKV{Name: names[th], Value: describeStatus(status)})
		}
		if violating {
			st.Violation = v.Error()
		}
		p.Rows = append(p.Rows, row)
		p.States = append(p.States, st)
	}

	if v != nil && v.Property == model.Linearizability {
		p.Lin = linearizabilityView(r)
	}
	return p, nil
}

// stateVars lists after's variables in its order, marking the ones that
// differ from before (all of them are unmarked for the initial state,
// where before is nil: nothing changed them).
func stateVars(before, after model.State) []htmlVar {
	vars := after.Vars()
	out := make([]htmlVar, len(vars))
	if before == nil {
		for i, x := range vars {
			out[i] = htmlVar{Name: x.Name, Value: x.Value}
		}
		return out
	}
	// A slice of pairs searched linearly, not a map, keeps the code free of
	// map iteration; states have tens of variables.
	old := before.Vars()
	for i, x := range vars {
		o, found := "(none)", false
		for _, y := range old {
			if y.Name == x.Name {
				o, found = y.Value, true
				break
			}
		}
		out[i] = htmlVar{Name: x.Name, Value: x.Value, Old: o, Changed: !found || o != x.Value}
	}
	return out
}

// describeStatus says what a thread can do in a state, as its step says
// when run there: a thread that can step is running, whatever it might
// wait for later.
func describeStatus(s explorer.Status) string {
	switch {
	case s.Enabled:
		return "running"
	case s.Done:
		return "done"
	case s.WaitsFor != "":
		return "waits for " + s.WaitsFor
	}
	return "waits for nothing it can name"
}

func sortedParams(ps model.Params) []htmlKV {
	keys := ps.Keys()
	out := make([]htmlKV, len(keys))
	for i, k := range keys {
		out[i] = htmlKV{Name: k, Value: fmt.Sprint(ps[k])}
	}
	return out
}

// linearizabilityView rebuilds the run's operation history exactly as
// explorer.Execute records it (the events of step i at logical time i,
// pending operations completed at the end) and renders porcupine's
// visualization of it. A failure here only loses the view, not the page:
// the note says why.
func linearizabilityView(r *Replayed) *htmlLin {
	m, ex := r.Machine, r.Execution
	props := m.Properties()
	spec := props.Spec
	if spec == nil {
		return &htmlLin{Note: "The model has no sequential specification, so there is no history to show."}
	}
	var hist model.History
	for i, s := range ex.Steps {
		if err := hist.Record(int64(i), s.Events); err != nil {
			return &htmlLin{Note: fmt.Sprintf("The history is malformed at step %d (%v); porcupine cannot show it.", i+1, err)}
		}
	}
	ops := hist.Operations()
	if len(ops) == 0 {
		return &htmlLin{Note: "The run recorded no operations."}
	}
	res, info := porcupine.CheckOperationsVerbose(spec.Model, ops, 0)
	canonicalPartials(info)
	// A row of step numbers under the clients, so that an operation's
	// ends can be matched with the swimlane's rows; the tooltip has the
	// label.
	names := m.Threads()
	steps := make([]porcupine.Annotation, len(ex.Steps))
	for i, s := range ex.Steps {
		steps[i] = porcupine.Annotation{
			Tag:         "step",
			Start:       int64(2 * i),
			End:         int64(2*i + 1),
			Description: fmt.Sprint(i + 1),
			Details:     threadName(names, s.Choice.Thread) + ": " + s.Label,
		}
	}
	info.AddAnnotations(steps)
	var b bytes.Buffer
	if err := porcupine.Visualize(spec.Model, info, &b); err != nil {
		return &htmlLin{Note: "porcupine could not render the history: " + err.Error()}
	}
	clients := 0
	for _, op := range ops {
		clients = max(clients, op.ClientId+1)
	}
	note := fmt.Sprintf("porcupine's view of the %d operations of the run against the specification %q, in logical time; the row \"step\" numbers the swimlane's steps (hover for the label). Red marks the operations that no linearization can place.", len(ops), spec.Name)
	if res != porcupine.Illegal {
		note = fmt.Sprintf("porcupine finds this history %s although the run reported a linearizability violation: the specification or the recorded history disagree with the checker's run.", res)
	}
	return &htmlLin{Note: note, Doc: b.String(), Height: 180 + 70*clients}
}

// canonicalPartials sorts porcupine's partial linearizations in place
// (longest first, then by operation ids). porcupine collects them through
// a map, so their order, and with it the visualization's bytes, would
// otherwise change from run to run. PartialLinearizations returns the
// info's own slices, which is what lets this reach inside.
func canonicalPartials(info porcupine.LinearizationInfo) {
	for _, partition := range info.PartialLinearizations() {
		sort.SliceStable(partition, func(i, j int) bool {
			a, b := partition[i], partition[j]
			if len(a) != len(b) {
				return len(a) > len(b)
			}
			return slices.Compare(a, b) < 0
		})
	}
}
