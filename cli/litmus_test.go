package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/cli"
)

// check litmus: 0 when the tests ran (whatever their condition), 2 on a
// file that cannot be read or parsed, naming the file and line, or a bad
// flag; 3 when --max-states cut a search short.
func TestLitmusCommand(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.litmus")
	if err := os.WriteFile(bad, []byte("C bad\n{}\nP0(int *x)\n{\n\tFOO(x);\n}\nexists (x=1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := "../testdata/litmus/linux/SB+poonceonces.litmus"
	for _, c := range []struct {
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{[]string{"litmus", sb}, cli.ExitOK, []string{"under armv8", "Condition exists (0:r0=0 /\\ 1:r0=0): observable", "Observation SB+poonceonces Sometimes 1 3"}, ""},
		{[]string{"litmus", "--model", "sc", sb}, cli.ExitOK, []string{"never observable", "Observation SB+poonceonces Never 0 3"}, ""},
		{[]string{"litmus", "--model", "tso", sb, "../testdata/litmus/aarch64/MP.litmus"}, cli.ExitOK, []string{"Observation SB+poonceonces Sometimes", "Observation MP Never"}, ""},
		{[]string{"litmus", "--max-states", "5", sb}, cli.ExitIncomplete, []string{"(the search was cut short)"}, ""},
		{[]string{"litmus", bad}, cli.ExitUsage, nil, bad + `:5: P0: unsupported primitive "FOO"`},
		{[]string{"litmus", "--model", "power", sb}, cli.ExitUsage, nil, "--model power: sc, tso or armv8"},
		{[]string{"litmus"}, cli.ExitUsage, nil, "no file"},
		{[]string{"litmus", "no-such-file.litmus"}, cli.ExitUsage, nil, "no-such-file.litmus"},
	} {
		code, out, stderr := check(t, c.args...)
		if code != c.code {
			t.Errorf("check %s: exit %d, want %d\n%s%s", strings.Join(c.args, " "), code, c.code, out, stderr)
			continue
		}
		for _, w := range c.stdout {
			if !strings.Contains(out, w) {
				t.Errorf("check %s: stdout lacks %q:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
		if !strings.Contains(stderr, c.stderr) {
			t.Errorf("check %s: stderr %q lacks %q", strings.Join(c.args, " "), stderr, c.stderr)
		}
	}
}
