// Package traces turns a counterexample into data and back: a Trace is a
// protocol, a variant, its parameters and a schedule (the list of choices),
// which is all that is needed to rebuild the execution. The labels stored
// beside the choices are for people and for detecting a trace that no
// longer fits its model; they never drive replay.
//
// The package records a trace from a schedule (Record), writes and reads
// it as versioned, canonical JSON (Encode, Decode, Save, Load), re-applies
// it strictly and says at which step it diverges (Replay), shortens it while
// keeping the violated property (Minimize), and renders it as text for the
// engineer reading the counterexample (Render).
package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/internal/clip"
	"github.com/protocheck/protocheck/model"
)

// Format is the value of every trace file's "format" field, so that a
// trace is recognised as one and other JSON is rejected with a clear error.
const Format = "protocheck-trace"

// Version is the newest trace format version: version 2 adds the lasso of
// a progress violation ("cycle", "fairness"), version 3 the properties left
// out of the search ("without"). A trace is written in the oldest version
// that holds it: one without those fields as version 1, which every
// version reads.
const Version = 3

// A Trace is a counterexample (or any execution) as data.
type Trace struct {
	Format   string         `json:"format"`
	Version  int            `json:"version"`
	Protocol string         `json:"protocol"`
	Variant  string         `json:"variant"`
	Params   model.Params   `json:"params"`   // all of them, defaults included
	Schedule []model.Choice `json:"schedule"` // the choices: all replay needs
	Steps    []Step         `json:"steps"`    // one per choice, checked on replay
	// Cycle, for a progress violation that is a lasso, is the number of
	// steps at the end of the schedule that repeat forever (version 2).
	Cycle int `json:"cycle,omitempty"`
	// Fairness, for a progress violation, is the fairness the cycle was
	// found under and is checked against on replay (version 2).
	Fairness string `json:"fairness,omitempty"`
	// Without names the properties the search left out (explore --without,
	// model.Protocol.Without), sorted; the trace replays only with them
	// left out too (version 3).
	Without   []string         `json:"without,omitempty"`
	Violation *model.Violation `json:"violation,omitempty"`
}

// version is the format version t is written in: the oldest that holds
// it.
func (t *Trace) version() int {
	switch {
	case len(t.Without) > 0:
		return 3
	case t.Cycle != 0 || t.Fairness != "":
		return 2
	}
	return 1
}

// A Step is what a person reads about one choice; replay checks that the
// model still gives the same thread and label.
type Step struct {
	Thread string `json:"thread"` // thread name (Machine.Threads()[choice.Thread])
	Label  string `json:"label"`
}

// Record instantiates p's machine for variant and params (p.Instantiate),
// executes schedule strictly (explorer.Execute) and returns the trace with
// Steps and Violation filled in. The schedule is truncated at the
// violation, so a recorded violation always happens at the trace's end.
// A choice that is not enabled is a *DivergenceError.
//
// A schedule that is a progress counterexample, as the explorer reports
// one in Result.Schedule (with Result.Cycle), is recorded as one, so that
// it replays as the violation it is and never as a clean execution: an
// execution that ends with every thread done and a progress property
// pending (cycle 0), or one whose last state is an earlier state of it,
// with a progress property pending throughout the cycle between them, and
// the cycle fair under weak fairness, the default (a cycle found under
// strong fairness is). The cycle is the longest such, as the explorer's
// is, and the trace says fairness "weak". A pending cycle that is not
// fair under weak fairness (one found with Options.Fairness "none", or
// with a thread exempted from fairness) is refused with an error that
// says so: RecordProgress records it with the fairness it was found under
// (Result.Fairness), as it records any lasso whose cycle and fairness are
// known.
func Record(p *model.Protocol, variant string, params model.Params, schedule []model.Choice) (*Trace, error) {
	if p == nil {
		return nil, errors.New("record: no protocol")
	}
	m, resolved, err := p.Instantiate(variant, params)
	if err != nil {
		return nil, err
	}
	ex, err := explorer.Execute(m, schedule)
	if err != nil {
		return nil, divergence(m, err)
	}
	t := &Trace{
		Format:   Format,
		Protocol: p.Name,
		Variant:  variant,
		Params:   resolved,
		Schedule: make([]model.Choice, len(ex.Steps)),
		Steps:    make([]Step, len(ex.Steps)),
		Without:  slices.Clone(p.LeftOut),
	}
	t.Version = t.version()
	names := m.Threads()
	for i, s := range ex.Steps {
		t.Schedule[i] = s.Choice
		t.Steps[i] = Step{Thread: threadName(names, s.Choice.Thread), Label: s.Label}
	}
	if ex.Violation != nil {
		v := *ex.Violation
		t.Violation = &v
		return t, nil
	}
	return recordLasso(p, m, t, ex)
}

// recordLasso returns t, the trace of a clean execution ex, as the
// progress violation it is when its schedule is a lasso (see Record), or
// as it is otherwise.
func recordLasso(p *model.Protocol, m model.Machine, t *Trace, ex *explorer.Execution) (*Trace, error) {
	progress := m.Properties().Progress
	if len(progress) == 0 {
		return t, nil
	}
	n := len(t.Schedule)
	lasso := func(cycle int, fairness string) (*Trace, error) {
		for _, pp := range progress {
			if _, err := explorer.CheckLasso(m, t.Schedule, cycle, pp.Name, fairness); err != nil {
				continue
			}
			// RecordProgress writes the lasso's own message.
			return RecordProgress(p, t.Variant, t.Params, t.Schedule, cycle, &model.Violation{Property: pp.Name}, fairness)
		}
		return nil, nil
	}
	if ex.Terminal {
		if lt, err := lasso(0, explorer.FairnessWeak); lt != nil || err != nil {
			return lt, err
		}
		return t, nil
	}
	last := string(ex.States[n].AppendKey(nil))
	var unfair []int
	for i := 0; i < n; i++ {
		if string(ex.States[i].AppendKey(nil)) != last {
			continue
		}
		if lt, err := lasso(n-i, explorer.FairnessWeak); lt != nil || err != nil {
			return lt, err
		}
		unfair = append(unfair, i)
	}
	for _, i := range unfair {
		for _, pp := range progress {
			if _, err := explorer.CheckLasso(m, t.Schedule, n-i, pp.Name, explorer.FairnessNone); err == nil {
				return nil, fmt.Errorf("record: the schedule is a lasso, steps %d to %d repeating with %s pending throughout, but the cycle is not fair under weak fairness, the one Record assumes: record it with RecordProgress and the fairness it was found under (Result.Fairness, such as %q)", i+1, n, pp.Name, explorer.FairnessNone)
			}
		}
	}
	return t, nil
}

// RecordProgress is Record for a progress violation v found under
// fairness: the schedule is a lasso whose last cycle steps repeat forever
// (or, with cycle 0, an execution that ends with the obligation pending).
// The lasso is checked (explorer.CheckLasso) before it is recorded, with
// the message the explorer gives such a lasso (explorer.LassoMessage),
// whatever v's says: replay checks the recorded message word for word.
func RecordProgress(p *model.Protocol, variant string, params model.Params, schedule []model.Choice, cycle int, v *model.Violation, fairness string) (*Trace, error) {
	if p == nil || v == nil {
		return nil, errors.New("record: no protocol or no violation")
	}
	m, resolved, err := p.Instantiate(variant, params)
	if err != nil {
		return nil, err
	}
	ex, err := explorer.CheckLasso(m, schedule, cycle, v.Property, fairness)
	if err != nil {
		var de *explorer.DivergenceError
		if errors.As(err, &de) {
			return nil, divergence(m, err)
		}
		return nil, fmt.Errorf("record: not a %s counterexample: %w", v.Property, err)
	}
	t := &Trace{
		Format: Format, Protocol: p.Name, Variant: variant, Params: resolved,
		Schedule: append([]model.Choice(nil), schedule...), Steps: make([]Step, len(ex.Steps)),
		Cycle: cycle, Fairness: fairness, Without: slices.Clone(p.LeftOut),
	}
	names := m.Threads()
	for i, s := range ex.Steps {
		t.Steps[i] = Step{Thread: threadName(names, s.Choice.Thread), Label: s.Label}
	}
	msg, err := explorer.LassoMessage(m, schedule, cycle, fairness)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	t.Violation = &model.Violation{Property: v.Property, Message: msg}
	t.Version = t.version()
	return t, nil
}

// validate checks what Decode guarantees of every trace it returns, so that
// Encode never writes a file Decode would refuse and Replay can trust the
// shape of a trace built in memory.
func (t *Trace) validate() error {
	switch {
	case t == nil:
		return errors.New("no trace")
	case t.Format != Format:
		return fmt.Errorf("format is %q, not %q: not a protocheck trace", clip.String(t.Format), Format)
	case t.Version < 1 || t.Version > Version:
		return fmt.Errorf("unsupported trace version %d (this protocheck reads versions 1 to %d)", t.Version, Version)
	case t.Version < 2 && (t.Cycle != 0 || t.Fairness != ""):
		return fmt.Errorf("a version %d trace cannot hold a cycle or a fairness (version 2 can)", t.Version)
	case t.Version < 3 && len(t.Without) > 0:
		return fmt.Errorf("a version %d trace cannot say which properties were left out (version 3 can)", t.Version)
	case !slices.IsSorted(t.Without) || len(slices.Compact(slices.Clone(t.Without))) != len(t.Without) || slices.Contains(t.Without, ""):
		return fmt.Errorf("without must name properties once each, sorted, got %s", clip.String(fmt.Sprintf("%q", t.Without)))
	case t.Cycle < 0 || t.Cycle > len(t.Schedule):
		return fmt.Errorf("cycle of %d steps in a schedule of %d", t.Cycle, len(t.Schedule))
	case t.Fairness != "" && explorer.CheckFairness(t.Fairness) != nil:
		return fmt.Errorf("fairness %q is not a fairness: %q, %q or %q, optionally followed by per-thread exceptions (\"weak,vcpu0=strong\")", clip.String(t.Fairness), explorer.FairnessWeak, explorer.FairnessStrong, explorer.FairnessNone)
	case t.Cycle > 0 && (t.Violation == nil || t.Fairness == ""):
		return errors.New("a cycle belongs to a progress violation, with its fairness")
	case t.Protocol == "":
		return errors.New("protocol is empty")
	case t.Variant == "":
		return errors.New("variant is empty")
	case len(t.Steps) != len(t.Schedule):
		return fmt.Errorf("the trace has %d steps for %d choices in its schedule; there must be one step per choice", len(t.Steps), len(t.Schedule))
	}
	for i, c := range t.Schedule {
		if c.Thread < 0 {
			return fmt.Errorf("schedule[%d] (step %d): negative thread %d", i, i+1, c.Thread)
		}
		if c.Alt < 0 {
			return fmt.Errorf("schedule[%d] (step %d): negative alternative %d", i, i+1, c.Alt)
		}
	}
	if t.Violation != nil && t.Violation.Property == "" {
		return errors.New("violation has an empty property")
	}
	return nil
}

// Encode returns the canonical JSON form of t: indented, one schedule entry
// and one step per line, keys in a fixed order (params sorted by name),
// ending in a newline. The same trace always gives the same bytes, so
// trace files diff well and golden tests compare them byte for byte.
func Encode(t *Trace) ([]byte, error) {
	if err := t.validate(); err != nil {
		return nil, fmt.Errorf("encode trace: %w", err)
	}
	var b bytes.Buffer
	field := func(name string, v any, last bool) error {
		b.WriteString("  ")
		if err := writeJSON(&b, name); err != nil {
			return err
		}
		b.WriteString(": ")
		if err := writeJSON(&b, v); err != nil {
			return err
		}
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
		return nil
	}
	b.WriteString("{\n")
	for _, f := range []struct {
		name string
		v    any
	}{{"format", t.Format}, {"version", t.Version}, {"protocol", t.Protocol}, {"variant", t.Variant}} {
		if err := field(f.name, f.v, false); err != nil {
			return nil, err
		}
	}
	b.WriteString("  \"params\": ")
	if err := writeParams(&b, t.Params); err != nil {
		return nil, err
	}
	b.WriteString(",\n  \"schedule\": ")
	if err := writeList(&b, len(t.Schedule), func(i int) any { return t.Schedule[i] }); err != nil {
		return nil, err
	}
	b.WriteString(",\n  \"steps\": ")
	if err := writeList(&b, len(t.Steps), func(i int) any { return t.Steps[i] }); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		v    any
		set  bool
	}{{"cycle", t.Cycle, t.Cycle != 0}, {"fairness", t.Fairness, t.Fairness != ""}, {"without", t.Without, len(t.Without) > 0}, {"violation", t.Violation, t.Violation != nil}} {
		if !f.set {
			continue
		}
		b.WriteString(",\n")
		if err := field(f.name, f.v, true); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // field ends the line; the next one starts with ","
	}
	b.WriteByte('\n')
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// writeParams writes params as one compact JSON object with the keys
// sorted, so that map order never reaches the file.
func writeParams(b *bytes.Buffer, p model.Params) error {
	b.WriteByte('{')
	for i, k := range p.Keys() {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeJSON(b, k); err != nil {
			return err
		}
		fmt.Fprintf(b, ":%d", p[k])
	}
	b.WriteByte('}')
	return nil
}

// writeList writes a JSON array with one compact element per line.
func writeList(b *bytes.Buffer, n int, elem func(int) any) error {
	if n == 0 {
		b.WriteString("[]")
		return nil
	}
	b.WriteString("[\n")
	for i := 0; i < n; i++ {
		b.WriteString("    ")
		if err := writeJSON(b, elem(i)); err != nil {
			return err
		}
		if i < n-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("  ]")
	return nil
}

// writeJSON writes v compactly without HTML escaping: labels are full of
// "->" and "&", which are valid JSON as they are and unreadable as \u003e.
func writeJSON(b *bytes.Buffer, v any) error {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
	return nil
}

// Load reads and decodes the trace file at path, which must be a regular
// file: a FIFO, a device or a socket is refused before it is opened (a
// FIFO with no writer would block the open, and nothing else, a signal
// included, would end it).
func Load(path string) (*Trace, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, clip.PathError(err) // names the file already
	}
	if !fi.Mode().IsRegular() {
		kind := "not a regular file"
		switch m := fi.Mode(); {
		case m.IsDir():
			kind = "a directory"
		case m&os.ModeNamedPipe != 0:
			kind = "a named pipe (FIFO)"
		case m&os.ModeSocket != 0:
			kind = "a socket"
		case m&os.ModeDevice != 0:
			kind = "a device"
		}
		return nil, fmt.Errorf("%s: %s, not a trace file: a trace is read from a regular file", clip.String(path), kind)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, clip.PathError(err) // names the file already
	}
	t, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", clip.String(path), err)
	}
	return t, nil
}

// Save writes t's canonical encoding to path.
func Save(path string, t *Trace) error {
	data, err := Encode(t)
	if err != nil {
		return fmt.Errorf("%s: %w", clip.String(path), err)
	}
	return clip.PathError(os.WriteFile(path, data, 0o644))
}

// Labels returns the label of every step, in order: what a replay of the
// trace on the real code must see (conform.Target.ReplayModel).
func (t *Trace) Labels() []string {
	out := make([]string, len(t.Steps))
	for i, s := range t.Steps {
		out[i] = s.Label
	}
	return out
}
