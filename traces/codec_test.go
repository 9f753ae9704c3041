package traces

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/model"
)

// padded is a racy-counter counterexample with work that does not matter:
// cpu2 finishes both its increments and cpu0 one increment before cpu0 and
// cpu1 race on the last one.
var padded = []model.Choice{{Thread: 2}, {Thread: 2}, {Thread: 2}, {Thread: 2}, {Thread: 0}, {Thread: 0}, {Thread: 0}, {Thread: 1}, {Thread: 0}, {Thread: 1}}

func recordPadded(t *testing.T) *Trace {
	t.Helper()
	tr, err := Record(counterProtocol, "racy", nil, padded)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Violation == nil || tr.Violation.Property != "no-lost-update" || len(tr.Schedule) != len(padded) {
		t.Fatalf("padded trace: violation %v after %d steps, want no-lost-update after %d", tr.Violation, len(tr.Schedule), len(padded))
	}
	return tr
}

func TestRecordFillsDefaultsAndTruncates(t *testing.T) {
	// Two more choices after the violating step: Record cuts them off.
	long := append(append([]model.Choice(nil), padded...), model.Choice{Thread: 1}, model.Choice{Thread: 1})
	tr, err := Record(counterProtocol, "racy", model.Params{"threads": 3}, long)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Schedule) != len(padded) || len(tr.Steps) != len(padded) {
		t.Errorf("schedule not truncated at the violation: %d choices, %d steps, want %d", len(tr.Schedule), len(tr.Steps), len(padded))
	}
	if !reflect.DeepEqual(tr.Params, model.Params{"threads": 3, "incs": 2}) {
		t.Errorf("params = %v, want every parameter with defaults filled in", tr.Params)
	}
	if tr.Steps[0] != (Step{Thread: "cpu2", Label: "counter_inc: load 0"}) {
		t.Errorf("step 1 = %+v", tr.Steps[0])
	}
}

func TestRoundTrip(t *testing.T) {
	tr := recordPadded(t)
	// An alternative and a label needing escapes exercise the encoder.
	tr.Schedule[0].Alt = 2
	tr.Steps[1].Label = "kvm_flush_tlb_others: cmpxchg \"preempted\" -> 3 & <done>\t"
	data, err := Encode(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("}\n")) {
		t.Errorf("encoding does not end in a newline")
	}
	if !bytes.Contains(data, []byte(`-> 3 & <done>`)) {
		t.Errorf("encoding escapes HTML characters in labels:\n%s", data)
	}
	if !bytes.Contains(data, []byte("    {\"thread\":2,\"alt\":2},\n")) {
		t.Errorf("schedule is not one choice per line:\n%s", data)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, tr) {
		t.Errorf("round trip changed the trace:\n got %+v\nwant %+v", back, tr)
	}
	again, err := Encode(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, data) {
		t.Errorf("re-encoding differs:\n%s\n---\n%s", again, data)
	}
}

func TestRoundTripEmpty(t *testing.T) {
	tr := &Trace{Format: Format, Version: 1, Protocol: "p", Variant: "v"}
	data, err := Encode(tr)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"format\": \"protocheck-trace\",\n  \"version\": 1,\n  \"protocol\": \"p\",\n  \"variant\": \"v\",\n  \"params\": {},\n  \"schedule\": [],\n  \"steps\": []\n}\n"
	if string(data) != want {
		t.Errorf("Encode = %q, want %q", data, want)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Schedule) != 0 || len(back.Steps) != 0 || back.Params == nil || back.Violation != nil {
		t.Errorf("Decode = %+v", back)
	}
}

func TestEncodeRejectsInvalid(t *testing.T) {
	tr := recordPadded(t)
	tr.Steps = tr.Steps[1:]
	if _, err := Encode(tr); err == nil || !strings.Contains(err.Error(), "one step per choice") {
		t.Errorf("Encode with a missing step: err = %v", err)
	}
	if _, err := Encode(nil); err == nil {
		t.Errorf("Encode(nil) succeeded")
	}
}

func TestDecodeRejects(t *testing.T) {
	good, err := Encode(recordPadded(t))
	if err != nil {
		t.Fatal(err)
	}
	g := string(good)
	replace := func(old, new string) string {
		if !strings.Contains(g, old) {
			t.Fatalf("test setup: %q not in the encoding", old)
		}
		return strings.Replace(g, old, new, 1)
	}
	cases := []struct {
		name, data, want string
	}{
		{"unknown version", replace(`"version": 1`, `"version": 4`), "unsupported trace version 4"},
		{"without in version 2", replace(`"version": 1,`, `"version": 2, "without": ["a"],`), `unknown field "without"`},
		{"without unsorted", replace(`"version": 1,`, `"version": 3, "without": ["b", "a"],`), "without must name properties once each, sorted"},
		{"without twice", replace(`"version": 1,`, `"version": 3, "without": ["a", "a"],`), "without must name properties once each, sorted"},
		{"without null", replace(`"version": 1,`, `"version": 3, "without": null,`), `"without" must be an array of property names`},
		{"a cycle in version 1", replace(`"version": 1,`, `"version": 1, "cycle": 2,`), `unknown field "cycle"`},
		{"a cycle without fairness", replace(`"version": 1,`, `"version": 2, "cycle": 2,`), "a cycle belongs to a progress violation, with its fairness"},
		{"a cycle longer than the schedule", replace(`"version": 1,`, `"version": 2, "cycle": 99, "fairness": "weak",`), "cycle of 99 steps in a schedule of 10"},
		{"unknown fairness", replace(`"version": 1,`, `"version": 2, "fairness": "sometimes",`), `fairness "sometimes" is not a fairness`},
		{"version not a number", replace(`"version": 1`, `"version": "1"`), `"version" must be an integer, not a string`},
		{"wrong format", replace(`"protocheck-trace"`, `"something-else"`), `format is "something-else", not "protocheck-trace"`},
		{"no format", replace(`"format": "protocheck-trace",`, ``), `no "format" field`},
		{"not an object", `[1, 2]`, "the trace must be a JSON object"},
		{"empty", "", "empty input"},
		{"unknown field", replace(`"variant": "racy",`, `"variant": "racy", "seed": 7,`), `unknown field "seed"`},
		{"unknown field in a choice", replace(`{"thread":1}`, `{"thread":1,"cpu":2}`), `schedule[7] has an unknown field "cpu"`},
		{"case-folded field", replace(`"variant": "racy",`, `"Variant": "racy",`), `unknown field "Variant"`},
		{"duplicate field", replace(`"variant": "racy",`, `"variant": "racy", "variant": "atomic",`), `the field "variant" twice`},
		{"missing steps", replace(`"steps"`, `"stepz"`), `unknown field "stepz"`},
		{"missing protocol", replace(`"protocol": "counter",`, ``), `no "protocol" field`},
		{"null params", replace(`"params": {"incs":2,"threads":3}`, `"params": null`), `"params" is null`},
		{"fractional param", replace(`"incs":2`, `"incs": 2.5`), `"incs" must be an integer, not a number (2.5)`},
		{"null violation", replace(`"violation": {`, `"violation": null, "x": {`), `unknown field "x"`},
		{"violation without property", replace(`"property":"no-lost-update",`, ``), `"violation" has no "property" field`},
		{"truncated", g[:len(g)/2], "truncated JSON"},
		{"trailing garbage", g + "garbage", "trailing data after the trace"},
		{"second object", g + "{}", "trailing data after the trace"},
		{"steps/schedule mismatch", replace(`    {"thread":"cpu2","label":"counter_inc: load 0"},`+"\n", ``), "9 steps for 10 choices"},
		{"negative thread", replace(`{"thread":0}`, `{"thread":-1}`), "schedule[4] (step 5): negative thread -1"},
		{"negative alt", replace(`{"thread":0}`, `{"thread":0,"alt":-2}`), "negative alternative -2"},
		{"thread name not a string", replace(`"thread":"cpu2"`, `"thread":2`), `steps[0]: "thread" must be a string, not a number (2)`},
		{"schedule not an array", `{"format":"protocheck-trace","version":1,"protocol":"p","variant":"v","params":{},"schedule":{},"steps":[]}`, `"schedule" must be an array, not an object ({})`},
		{"syntax error", replace(`"steps": [`, `"steps": [,`), "malformed JSON at byte"},
		{"empty protocol", replace(`"protocol": "counter"`, `"protocol": ""`), "protocol is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Decode([]byte(c.data))
			if err == nil {
				t.Fatalf("Decode accepted it: %+v", tr)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

func TestDecodeNullViolation(t *testing.T) {
	tr := &Trace{Format: Format, Version: 1, Protocol: "p", Variant: "v"}
	data, _ := Encode(tr)
	data = bytes.Replace(data, []byte(`"steps": []`), []byte(`"steps": [], "violation": null`), 1)
	if _, err := Decode(data); err == nil || !strings.Contains(err.Error(), `"violation" is null`) {
		t.Errorf("err = %v", err)
	}
}

func TestSaveLoad(t *testing.T) {
	tr := recordPadded(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "racy.trace.json")
	if err := Save(path, tr); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, tr) {
		t.Errorf("Load(Save(t)) differs")
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("Load of a bad file: error %v does not name the file", err)
	}
	missing := filepath.Join(dir, "missing.json")
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	tr, err := Record(counterProtocol, "racy", nil, padded)
	if err != nil {
		f.Fatal(err)
	}
	good, err := Encode(tr)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"format":"protocheck-trace","version":1,"protocol":"p","variant":"v","params":{"a":-1},"schedule":[{"thread":0,"alt":0}],"steps":[{"thread":"\u00e9","label":"\ud800"}]}`))
	f.Add([]byte(`{"format":"protocheck-trace","version":1,"protocol":"p","variant":"v","params":{},"schedule":[],"steps":[],"violation":{"property":"x","message":""}}  `))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Decode(data)
		if err != nil {
			return
		}
		enc, err := Encode(tr)
		if err != nil {
			t.Fatalf("decoded trace does not encode: %v", err)
		}
		back, err := Decode(enc)
		if err != nil {
			t.Fatalf("canonical encoding does not decode: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(back, tr) {
			t.Fatalf("decode(encode(t)) != t:\n%+v\n%+v", back, tr)
		}
		again, err := Encode(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not canonical:\n%s\n---\n%s", enc, again)
		}
	})
}
