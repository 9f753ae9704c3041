package traces

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/traces/htmltest"
)

// registerProtocol is a test model with a sequential specification, for
// the linearizability view: a writer writes 1 to a register (call and
// store, then return) while a reader reads it (call and load, then
// return). Variant cached returns the value the reader cached before the
// run instead of loading it, so a read that starts after the write has
// returned can still see 0: not linearizable.
var registerProtocol = &model.Protocol{
	Name: "register",
	Variants: []model.Variant{
		{Name: "fresh", Expect: model.ExpectOK},
		{Name: "cached", Expect: model.Linearizability},
	},
	New: func(variant string, _ model.Params) (model.Machine, error) {
		return newRegister(variant == "cached"), nil
	},
}

// registerState is the state of the register model.
type registerState struct {
	Mem  model.Mem
	PC   [2]int
	Read uint64 // the value the reader will return
}

const regX model.Addr = 0

// regInput is an operation on the register: a write of Value, or a read.
type regInput struct {
	Write bool
	Value uint64
}

var registerSpec = &model.Spec{
	Name: "register",
	Model: porcupine.Model{
		Init: func() any { return uint64(0) },
		Step: func(state, input, output any) (bool, any) {
			in, v := input.(regInput), state.(uint64)
			if in.Write {
				return true, in.Value
			}
			if _, pending := output.(model.Pending); pending {
				return true, v
			}
			return output.(uint64) == v, v
		},
		DescribeOperation: func(input, output any) string {
			if in := input.(regInput); in.Write {
				return fmt.Sprintf("write(%d)", in.Value)
			}
			return fmt.Sprintf("read() -> %v", output)
		},
	},
}

func newRegister(cached bool) model.Machine {
	return model.MustNew(model.Def[registerState]{
		Threads: []string{"writer", "reader"},
		Init:    func(s *registerState) { s.Mem = model.NewMem("x") },
		Step: func(s *registerState, t int, x *model.Exec) {
			switch {
			case s.PC[t] >= 2:
				x.Done()
				return
			case t == 0 && s.PC[0] == 0:
				x.Call(0, regInput{Write: true, Value: 1})
				x.Store(s.Mem, regX, 1)
				x.Count(0, 1)
				x.Label("reg_write: store x=1")
			case t == 0:
				x.Return(0, nil)
				x.Label("reg_write: return")
			case s.PC[1] == 0:
				x.Call(1, regInput{})
				if !cached {
					s.Read = x.Load(s.Mem, regX)
				}
				x.Labelf("reg_read: load x=%d", s.Read)
			default:
				x.Return(1, s.Read)
				x.Labelf("reg_read: return %d", s.Read)
			}
			s.PC[t]++
		},
		Metrics: []string{"stores"},
		Spec:    registerSpec,
		Vars: func(s *registerState) []model.Var {
			return append(s.Mem.Vars(),
				model.Var{Name: "writer.pc", Value: fmt.Sprint(s.PC[0])},
				model.Var{Name: "reader.pc", Value: fmt.Sprint(s.PC[1])},
				model.Var{Name: "reader.val", Value: fmt.Sprint(s.Read)})
		},
	})
}

// htmlOf replays tr on p and renders the page.
func htmlOf(t *testing.T, p *model.Protocol, tr *Trace) []byte {
	t.Helper()
	r, err := Replay(p, tr)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := RenderHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// htmlCases are the pages under test: an invariant violated at a step, a
// deadlock, a linearizability violation, and a clean run.
func htmlCases(t *testing.T) []struct {
	name string
	p    *model.Protocol
	tr   *Trace
} {
	t.Helper()
	rec := func(p *model.Protocol, variant string, params model.Params, sched ...int) *Trace {
		t.Helper()
		cs := make([]model.Choice, len(sched))
		for i, th := range sched {
			cs[i] = model.Choice{Thread: th}
		}
		tr, err := Record(p, variant, params, cs)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	return []struct {
		name string
		p    *model.Protocol
		tr   *Trace
	}{
		{"racy-minimized.html", counterProtocol, rec(counterProtocol, "racy", model.Params{"threads": 2, "incs": 1}, 0, 1, 1, 0)},
		{"abba-minimized.html", locksProtocol, rec(locksProtocol, "abba", model.Params{"rounds": 1}, 0, 1)},
		{"register-cached.html", registerProtocol, rec(registerProtocol, "cached", nil, 0, 0, 1, 1)},
		{"atomic.html", counterProtocol, rec(counterProtocol, "atomic", model.Params{"threads": 2, "incs": 1}, 1, 0)},
	}
}

func TestRenderHTMLGolden(t *testing.T) {
	for _, c := range htmlCases(t) {
		t.Run(c.name, func(t *testing.T) {
			got := htmlOf(t, c.p, c.tr)
			// porcupine finds partial linearizations through a map; a
			// few renderings give the map order a chance to show.
			for range 5 {
				if again := htmlOf(t, c.p, c.tr); !bytes.Equal(got, again) {
					t.Fatalf("RenderHTML is not deterministic")
				}
			}
			checkOffline(t, got)
			goldenFile(t, c.name, got)
		})
	}
}

// nsSVG is the one URL the page may contain: porcupine's SVG namespace,
// an identifier that no browser fetches.
const nsSVG = "http://www.w3.org/2000/svg"

// checkOffline fails if the page could reach the network: a URL other
// than the SVG namespace, or any attribute or CSS construct that loads a
// resource from outside the page.
func checkOffline(t *testing.T, page []byte) {
	t.Helper()
	s := strings.ReplaceAll(string(page), nsSVG, "")
	for _, bad := range []string{"http://", "https://", "//cdn", "src=\"", "href=\"", "url(", "@import", "<link", "fetch(", "XMLHttpRequest"} {
		if strings.Contains(s, bad) {
			i := strings.Index(s, bad)
			t.Errorf("page contains %q (a network reference?) near %q", bad, s[max(0, i-60):min(len(s), i+60)])
		}
	}
}

func TestRenderHTMLContent(t *testing.T) {
	cases := htmlCases(t)
	racy := string(htmlOf(t, cases[0].p, cases[0].tr))
	for _, want := range []string{
		`<h1>counter/racy <span class="steps">4 steps</span></h1>`,
		`<code>incs=1</code>`, `<code>threads=2</code>`,
		`<span class="prop">no-lost-update</span> <span class="where">(at step 4)</span>: 2 increments done but count=1`,
		`<th>cpu0</th><th>cpu1</th>`,
		`<tr id="step-4" data-step="4" class="step violating selected">`,
		// Step 3 is cpu1's store: its label and changes are in cpu1's column.
		"<tr id=\"step-3\" data-step=\"3\" class=\"step\">\n<td class=\"num\">3</td><td></td><td><div class=\"label\">counter_inc: store 1</div><div class=\"chg\">count: <span class=\"old\">0</span> -&gt; 1</div>",
		`<span class="cnt">&#43;1 stores</span>`,
		// The full state after step 4, the changed variables marked.
		`<section class="state" id="state-4" data-step="4">`,
		`<tr class="changed"><td>done</td><td>2</td><td class="old">was 1</td></tr>`,
		`<tr><td>count</td><td>1</td><td class="old"></td></tr>`,
		`<section class="state" id="state-3" data-step="3" hidden>`,
		`<tr><td>stores</td><td class="n">2</td></tr>`,
	} {
		if !strings.Contains(racy, want) {
			t.Errorf("the racy page lacks %q", want)
		}
	}
	if strings.Contains(racy, `id="porcupine"`) {
		t.Errorf("the racy page has a porcupine view, but its violation is not linearizability")
	}

	lin := string(htmlOf(t, cases[2].p, cases[2].tr))
	for _, want := range []string{
		`<span class="prop">linearizability</span> <span class="where">(checked at the end of the run, after step 4)</span>`,
		`<iframe id="porcupine"`, `srcdoc="&lt;!doctype html&gt;`,
		// porcupine's own data, with our operations and step annotations.
		`write(1)`, `read() -\u003e 0`, `reader: reg_read: return 0`,
	} {
		if !strings.Contains(lin, want) {
			t.Errorf("the linearizability page lacks %q", want)
		}
	}

	if clean := string(htmlOf(t, cases[3].p, cases[3].tr)); !strings.Contains(clean, `<strong>no violation</strong>`) {
		t.Errorf("the clean page does not say so")
	}
}

func TestRenderHTMLIncomplete(t *testing.T) {
	if err := RenderHTML(&bytes.Buffer{}, &Replayed{}); err == nil {
		t.Errorf("RenderHTML of an empty Replayed succeeded")
	}
	if err := RenderHTML(&bytes.Buffer{}, nil); err == nil {
		t.Errorf("RenderHTML(nil) succeeded")
	}
}

func TestRenderHTMLInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the page is not tried in a browser")
	}
	bin := htmltest.Chromium(t)
	dir := t.TempDir()
	for _, c := range htmlCases(t)[:3] {
		t.Run(c.name, func(t *testing.T) {
			// Each chromium start takes seconds; the pages are independent.
			t.Parallel()
			page := htmlOf(t, c.p, c.tr)
			path := filepath.Join(dir, c.name)
			if err := os.WriteFile(path, page, 0o644); err != nil {
				t.Fatal(err)
			}
			url := "file://" + path
			last := fmt.Sprint(len(c.tr.Schedule))

			// As opened: the violating (last) step is selected.
			dom := htmltest.DumpDOM(t, bin, url)
			if !strings.Contains(dom, `<table id="swimlane">`) {
				t.Fatalf("no swimlane in the DOM:\n%s", dom)
			}
			if row, state := htmltest.Selection(t, dom); row != last || state != last {
				t.Errorf("on load: row %s and state %s selected, want step %s", row, state, last)
			}

			// A fragment selects a step on load.
			dom = htmltest.DumpDOM(t, bin, url+"#step=1")
			if row, state := htmltest.Selection(t, dom); row != "1" || state != "1" {
				t.Errorf("#step=1: row %s and state %s selected, want step 1", row, state)
			}

			// A click on a row (from a script added to a copy of the
			// page, as a user's click would come) shows that step.
			clicked := htmltest.Click(page, 2)
			cpath := filepath.Join(dir, "clicked-"+c.name)
			if err := os.WriteFile(cpath, clicked, 0o644); err != nil {
				t.Fatal(err)
			}
			dom = htmltest.DumpDOM(t, bin, "file://"+cpath)
			if row, state := htmltest.Selection(t, dom); row != "2" || state != "2" {
				t.Errorf("click on step 2: row %s and state %s selected", row, state)
			}
			// The shown panel is step 2's full state, with what it changed.
			i := strings.Index(dom, `id="state-2"`)
			panel := dom[i:]
			panel = panel[:strings.Index(panel, "</section>")]
			if !strings.Contains(panel, `State after step 2`) || !strings.Contains(panel, `class="changed"`) {
				t.Errorf("step 2's panel does not show the state after step 2 with its changes:\n%s", panel)
			}
		})
	}
}

// TestCanonicalPartials checks that porcupine's view is a function of the
// history when there are many partial linearizations, which porcupine
// gathers in map order: three concurrent writes, then three concurrent
// reads that each see a different one of them, so that each read has its
// own longest partial linearization.
func TestCanonicalPartials(t *testing.T) {
	var ops []porcupine.Operation
	for c := range 3 {
		ops = append(ops,
			porcupine.Operation{ClientId: c, Input: regInput{Write: true, Value: uint64(c + 1)}, Call: 0, Return: 10},
			porcupine.Operation{ClientId: 3 + c, Input: regInput{}, Output: uint64(c + 1), Call: 20, Return: 30})
	}
	view := func() []byte {
		res, info := porcupine.CheckOperationsVerbose(registerSpec.Model, ops, 0)
		if res != porcupine.Illegal {
			t.Fatalf("the history is %s, want illegal", res)
		}
		if n := len(info.PartialLinearizations()[0]); n < 2 {
			t.Fatalf("%d partial linearizations: too few to test their order", n)
		}
		canonicalPartials(info)
		var b bytes.Buffer
		if err := porcupine.Visualize(registerSpec.Model, info, &b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	first := view()
	for range 20 {
		if !bytes.Equal(view(), first) {
			t.Fatalf("porcupine's view changes from run to run")
		}
	}
}
