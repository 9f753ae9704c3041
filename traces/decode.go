package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/protocheck/protocheck/internal/clip"
	"github.com/protocheck/protocheck/model"
)

// Decode parses a trace file strictly. encoding/json alone is too lenient
// for a file that decides whether a counterexample still holds: it matches
// keys case-insensitively, keeps the last of duplicate keys, reads null as
// "leave the zero value" and ignores what follows the first value. So each
// object is read key by key here, and every field is checked: the format
// and version first (so that another file, or a newer trace, is named as
// such rather than as a list of unknown fields), then unknown, duplicate,
// missing and null fields, then the values. Decode never panics.
func Decode(data []byte) (*Trace, error) {
	t, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("decode trace: %w", err)
	}
	return t, nil
}

func decode(data []byte) (*Trace, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var top json.RawMessage
	if err := dec.Decode(&top); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty input: no trace")
		}
		return nil, syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the trace (at byte %d)", dec.InputOffset())
	}
	fs, err := readObject(top, "the trace")
	if err != nil {
		return nil, err
	}
	t := &Trace{}
	if err := fs.take("format", &t.Format); err != nil {
		return nil, err
	}
	if t.Format != Format {
		return nil, fmt.Errorf("format is %q, not %q: not a protocheck trace", clip.String(t.Format), Format)
	}
	if err := fs.take("version", &t.Version); err != nil {
		return nil, err
	}
	if t.Version < 1 || t.Version > Version {
		return nil, fmt.Errorf("unsupported trace version %d (this protocheck reads versions 1 to %d)", t.Version, Version)
	}
	known := []string{"format", "version", "protocol", "variant", "params", "schedule", "steps", "violation"}
	if t.Version >= 2 {
		known = append(known, "cycle", "fairness")
	}
	if t.Version >= 3 {
		known = append(known, "without")
	}
	if err := fs.only(known...); err != nil {
		return nil, err
	}
	if err := fs.take("protocol", &t.Protocol); err != nil {
		return nil, err
	}
	if err := fs.take("variant", &t.Variant); err != nil {
		return nil, err
	}
	if t.Params, err = decodeParams(fs); err != nil {
		return nil, err
	}
	if t.Schedule, err = decodeSchedule(fs); err != nil {
		return nil, err
	}
	if t.Steps, err = decodeSteps(fs); err != nil {
		return nil, err
	}
	if _, ok := fs.vals["cycle"]; ok {
		if err := fs.take("cycle", &t.Cycle); err != nil {
			return nil, err
		}
	}
	if _, ok := fs.vals["fairness"]; ok {
		if err := fs.take("fairness", &t.Fairness); err != nil {
			return nil, err
		}
	}
	if _, ok := fs.vals["without"]; ok {
		if err := fs.take("without", &t.Without); err != nil || t.Without == nil {
			return nil, fmt.Errorf("the trace: \"without\" must be an array of property names, not %s", describe(fs.vals["without"]))
		}
	}
	if raw, ok := fs.vals["violation"]; ok {
		if t.Violation, err = decodeViolation(raw); err != nil {
			return nil, err
		}
	}
	if err := t.validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// syntaxError words a JSON error for someone holding a damaged file.
func syntaxError(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("truncated JSON: the file ends in the middle of the trace")
	case errors.As(err, &se):
		return fmt.Errorf("malformed JSON at byte %d: %v", se.Offset, err)
	}
	return fmt.Errorf("malformed JSON: %v", err)
}

// fields is one JSON object read key by key, in file order.
type fields struct {
	what string // "the trace", "schedule[3]", for messages
	keys []string
	vals map[string]json.RawMessage
}

// readObject reads raw as a JSON object, rejecting duplicate keys.
func readObject(raw json.RawMessage, what string) (*fields, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s must be a JSON object, not %s", what, describe(raw))
	}
	fs := &fields{what: what, vals: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		k, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%s: expected a key, found %v", what, tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, syntaxError(err)
		}
		if _, dup := fs.vals[k]; dup {
			return nil, fmt.Errorf("%s has the field %q twice", what, clip.String(k))
		}
		fs.keys = append(fs.keys, k)
		fs.vals[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxError(err)
	}
	return fs, nil
}

// only rejects the first key (in file order) that is not one of known.
func (fs *fields) only(known ...string) error {
	for _, k := range fs.keys {
		ok := false
		for _, n := range known {
			ok = ok || k == n
		}
		if !ok {
			return fmt.Errorf("%s has an unknown field %q (fields: %s)", fs.what, clip.String(k), strings.Join(known, ", "))
		}
	}
	return nil
}

// raw returns a required field's value, which must not be null.
func (fs *fields) raw(name string) (json.RawMessage, error) {
	v, ok := fs.vals[name]
	if !ok {
		return nil, fmt.Errorf("%s has no %q field", fs.what, name)
	}
	if string(v) == "null" {
		return nil, fmt.Errorf("%s: %q is null", fs.what, name)
	}
	return v, nil
}

// take decodes a required string or integer field into dst.
func (fs *fields) take(name string, dst any) error {
	v, err := fs.raw(name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(v, dst); err != nil {
		kind := "a string"
		if _, isInt := dst.(*int); isInt {
			kind = "an integer"
		}
		return fmt.Errorf("%s: %q must be %s, not %s", fs.what, name, kind, describe(v))
	}
	return nil
}

// array decodes a required field as a JSON array of raw elements.
func (fs *fields) array(name string) ([]json.RawMessage, error) {
	v, err := fs.raw(name)
	if err != nil {
		return nil, err
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(v, &elems); err != nil {
		return nil, fmt.Errorf("%s: %q must be an array, not %s", fs.what, name, describe(v))
	}
	return elems, nil
}

func decodeParams(fs *fields) (model.Params, error) {
	v, err := fs.raw("params")
	if err != nil {
		return nil, err
	}
	obj, err := readObject(v, `"params"`)
	if err != nil {
		return nil, err
	}
	out := model.Params{}
	for _, k := range obj.keys {
		var n int
		if err := obj.take(k, &n); err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, nil
}

func decodeSchedule(fs *fields) ([]model.Choice, error) {
	elems, err := fs.array("schedule")
	if err != nil {
		return nil, err
	}
	out := make([]model.Choice, len(elems))
	for i, e := range elems {
		obj, err := readObject(e, fmt.Sprintf("schedule[%d]", i))
		if err != nil {
			return nil, err
		}
		if err := obj.only("thread", "alt"); err != nil {
			return nil, err
		}
		if err := obj.take("thread", &out[i].Thread); err != nil {
			return nil, err
		}
		if _, ok := obj.vals["alt"]; ok {
			if err := obj.take("alt", &out[i].Alt); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func decodeSteps(fs *fields) ([]Step, error) {
	elems, err := fs.array("steps")
	if err != nil {
		return nil, err
	}
	out := make([]Step, len(elems))
	for i, e := range elems {
		obj, err := readObject(e, fmt.Sprintf("steps[%d]", i))
		if err != nil {
			return nil, err
		}
		if err := obj.only("thread", "label"); err != nil {
			return nil, err
		}
		if err := obj.take("thread", &out[i].Thread); err != nil {
			return nil, err
		}
		if err := obj.take("label", &out[i].Label); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func decodeViolation(raw json.RawMessage) (*model.Violation, error) {
	if string(raw) == "null" {
		return nil, errors.New(`the trace: "violation" is null (leave it out when there is none)`)
	}
	obj, err := readObject(raw, `"violation"`)
	if err != nil {
		return nil, err
	}
	if err := obj.only("property", "message"); err != nil {
		return nil, err
	}
	v := &model.Violation{}
	if err := obj.take("property", &v.Property); err != nil {
		return nil, err
	}
	if err := obj.take("message", &v.Message); err != nil {
		return nil, err
	}
	return v, nil
}

// describe names the kind of a JSON value for an error message, with a
// short excerpt so the reader can find it.
func describe(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	kind := "a number"
	switch {
	case s == "":
		return "nothing"
	case s == "null":
		return "null"
	case s == "true" || s == "false":
		kind = "a boolean"
	case s[0] == '"':
		kind = "a string"
	case s[0] == '{':
		kind = "an object"
	case s[0] == '[':
		kind = "an array"
	}
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return kind + " (" + s + ")"
}
