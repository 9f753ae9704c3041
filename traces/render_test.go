package traces

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/protocheck/protocheck/model"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenFile compares got with testdata/name, or rewrites the file with
// -update; the diff is then reviewed like code.
func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func render(t *testing.T, tr *Trace) []byte {
	t.Helper()
	r, err := Replay(counterProtocol, tr)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Render(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRenderGolden(t *testing.T) {
	padded := recordPadded(t)
	small, err := Minimize(counterProtocol, padded)
	if err != nil {
		t.Fatal(err)
	}
	clean, err := Record(counterProtocol, "atomic", model.Params{"threads": 2, "incs": 1}, []model.Choice{{Thread: 1}, {Thread: 0}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tr   *Trace
	}{
		{"racy-padded.golden", padded},
		{"racy-minimized.golden", small},
		{"atomic.golden", clean},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := render(t, c.tr)
			if again := render(t, c.tr); !bytes.Equal(got, again) {
				t.Errorf("Render is not deterministic")
			}
			goldenFile(t, c.name, got)
		})
	}
}

func TestRenderIncomplete(t *testing.T) {
	if err := Render(&bytes.Buffer{}, &Replayed{}); err == nil {
		t.Errorf("Render of an empty Replayed succeeded")
	}
	if err := Render(&bytes.Buffer{}, nil); err == nil {
		t.Errorf("Render(nil) succeeded")
	}
}
