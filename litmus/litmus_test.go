package litmus_test

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/litmus"
	"github.com/protocheck/protocheck/model/modeltest"
)

func load(t testing.TB, file string) *litmus.Test {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	test, err := litmus.Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	return test
}

func run(t testing.TB, test *litmus.Test, mm string) *litmus.Result {
	t.Helper()
	r, err := litmus.Run(test, mm, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Bounded {
		t.Fatalf("%s under %s: bounded", test.Name, mm)
	}
	return r
}

// unreadableAArch64 lists the tests of kinds.txt the front end cannot read
// and why (docs/weak-memory.md repeats it). Empty: it reads all of them.
var unreadableAArch64 = map[string]string{}

// TestAArch64Catalogue runs every test herdtools7's
// catalogue/aarch64/tests/kinds.txt names under ARMv8 and compares the
// verdict with the kind it gives: Allowed (the exists condition is
// observable), Forbidden (it is not), Required (the forall condition
// holds in every outcome).
func TestAArch64Catalogue(t *testing.T) {
	f, err := os.Open("../testdata/litmus/aarch64/kinds.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var read, agree int
	var disagree []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		name, kind := fields[0], fields[1]
		if why, ok := unreadableAArch64[name]; ok {
			t.Logf("%s: not read: %s", name, why)
			continue
		}
		test := load(t, filepath.Join("../testdata/litmus/aarch64", name+".litmus"))
		r := run(t, test, "armv8")
		read++
		var got string
		switch {
		case test.Cond.Kind == "forall" && r.Validated():
			got = "Required"
		case test.Cond.Kind == "forall":
			got = "NotRequired"
		case r.Observable():
			got = "Allowed"
		default:
			got = "Forbidden"
		}
		if got != kind {
			disagree = append(disagree, name+": herd7 "+kind+", protocheck "+got)
			continue
		}
		agree++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("kinds.txt: %d read, %d agree, %d disagree", read, agree, len(disagree))
	for _, d := range disagree {
		t.Error(d)
	}
	if read < 60 {
		t.Errorf("only %d tests read", read)
	}
}

// A kernel collection: its directory, the tests whose verdict under the
// ARMv8 mapping of the kernel's primitives differs from LKMM's Result
// (with the ARMv8 verdict; docs/weak-memory.md explains each), and those
// the C front end cannot read (with the reason; the test checks that they
// are indeed refused). ARMv8 is only ever stronger: a test LKMM says Never
// is Never on ARMv8 too, which TestKernelLitmus checks for every test.
var kernelCollections = []struct {
	dir        string
	differs    map[string]string
	unreadable map[string]string
}{
	{
		dir: "linux", // tools/memory-model/litmus-tests
		differs: map[string]string{
			// P0's write of x is ordered before its spin_unlock (STLR),
			// which P1's spin_lock (CASA, an acquire) reads; P1's write
			// of z follows, P2's z=2 comes after it in coherence, and
			// P2's smp_mb (DMB ISH) orders its read of x after that: on
			// a multicopy-atomic ARMv8 the cycle is forbidden. LKMM
			// allows it for CPUs that do not take the lock, as PowerPC
			// does.
			"Z6.0+pooncelock+pooncelock+pombonce": "Never",
			// The same cycle with a release-acquire chain in place of
			// the lock: STLR and LDAR order it and the architecture is
			// multicopy atomic; LKMM's release-acquire chains do not
			// reach across a second non-rf link, as on PowerPC.
			"Z6.0+pooncerelease+poacquirerelease+mbonceonce": "Never",
		},
		unreadable: map[string]string{},
	},
	{
		dir: "linux-doc", // Documentation/litmus-tests
		differs: map[string]string{
			// cmpxchg is CASAL on arm64 (LSE): when it fails its read is
			// still an acquire, so P1's read of x is ordered after its
			// read of P0's release write of y. LKMM promises no order
			// for a failed cmpxchg (nor does arm64's LL/SC cmpxchg,
			// whose failing LDXR is not an acquire).
			"cmpxchg-fail-unordered-2": "Never",
		},
		unreadable: map[string]string{
			"Atomic-RMW-ops-are-atomic-WRT-atomic_set": "(void) casts and atomic_add_unless are not read",
			"RCU+sync+free": "synchronize_rcu: RCU grace periods are not modelled",
			"RCU+sync+read": "synchronize_rcu: RCU grace periods are not modelled",
		},
	},
}

// TestKernelLitmus runs the kernel's litmus tests under ARMv8 and compares
// each verdict with its "Result:" line (DEADLOCK, in the kernel's scripts,
// is herd's "Never 0 0": no execution passes the test's filter), or, where
// the architecture is stronger than LKMM, with the collection's differs.
func TestKernelLitmus(t *testing.T) {
	for _, col := range kernelCollections {
		files, err := filepath.Glob(filepath.Join("../testdata/litmus", col.dir, "*.litmus"))
		if err != nil {
			t.Fatal(err)
		}
		var read, agree, differ int
		for _, file := range files {
			name := strings.TrimSuffix(filepath.Base(file), ".litmus")
			if why, ok := col.unreadable[name]; ok {
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := litmus.Parse(file, data); err == nil {
					t.Errorf("%s is listed as not read (%s) but parses", name, why)
				}
				continue
			}
			test := load(t, file)
			if test.Result == "" {
				t.Errorf("%s: no Result: line", name)
				continue
			}
			r := run(t, test, "armv8")
			read++
			got := r.Verdict()
			if got == "Never" && len(r.Outcomes) == 0 {
				got = "DEADLOCK"
			}
			if test.Result == "Never" && got != "Never" {
				t.Errorf("%s: LKMM says Never, ARMv8 %s: the mapping is unsound", name, got)
				continue
			}
			want := test.Result
			if w, ok := col.differs[name]; ok {
				want = w
				differ++
			}
			if got != want {
				t.Errorf("%s: want %s under ARMv8 (LKMM: %s), got %s", name, want, test.Result, got)
				continue
			}
			agree++
		}
		t.Logf("%s: %d files, %d read, %d agree (%d of them where ARMv8 differs from LKMM), %d not read", col.dir, len(files), read, agree, differ, len(col.unreadable))
		if col.dir == "linux" && read < 30 {
			t.Errorf("only %d tests read", read)
		}
		for name := range col.differs {
			if !slices.ContainsFunc(files, func(f string) bool { return filepath.Base(f) == name+".litmus" }) {
				t.Errorf("%s: differs names %s, which is not among the tests", col.dir, name)
			}
		}
	}
}

// TestSCAndTSO pins the outcome sets of the classic shapes under the
// three models: store buffering is the one relaxation of TSO; ARMv8
// allows all four shapes.
func TestSCAndTSO(t *testing.T) {
	for _, c := range []struct {
		file      string
		sc, tso   string
		armv8     string
		scOutcome int
	}{
		{"linux/SB+poonceonces.litmus", "Never", "Sometimes", "Sometimes", 3},
		{"linux/SB+mbonceonces.litmus", "Never", "Never", "Never", 3},
		{"linux/MP+poonceonces.litmus", "Never", "Never", "Sometimes", 3},
		{"linux/LB+poonceonces.litmus", "Never", "Never", "Sometimes", 3},
		{"linux/IRIW+poonceonces+OnceOnce.litmus", "Never", "Never", "Sometimes", 15},
		{"aarch64/R.litmus", "Never", "Sometimes", "Sometimes", 3},
		{"aarch64/2+2W.litmus", "Never", "Never", "Sometimes", 3},
		{"linux/MP+polocks.litmus", "Never", "Never", "Never", 3},
	} {
		test := load(t, "../testdata/litmus/"+c.file)
		for _, mm := range []struct{ model, want string }{{"sc", c.sc}, {"tso", c.tso}, {"armv8", c.armv8}} {
			r := run(t, test, mm.model)
			if got := r.Verdict(); got != mm.want {
				t.Errorf("%s under %s: %s, want %s\n%s", c.file, mm.model, got, mm.want, r.Format())
			}
			if mm.model == "sc" && len(r.Outcomes) != c.scOutcome {
				t.Errorf("%s under sc: %d outcomes, want %d\n%s", c.file, len(r.Outcomes), c.scOutcome, r.Format())
			}
		}
	}
}

// TestOutput pins check litmus's output for one test under each model.
func TestOutput(t *testing.T) {
	test := load(t, "../testdata/litmus/linux/SB+poonceonces.litmus")
	want := map[string]string{
		"sc": `Test SB+poonceonces (C) under sc
Outcomes 3 (13 states, 3 final)
  0:r0=0; 1:r0=1;
  0:r0=1; 1:r0=0;
  0:r0=1; 1:r0=1;
Condition exists (0:r0=0 /\ 1:r0=0): never observable
Observation SB+poonceonces Never 0 3
`,
		"tso": `Test SB+poonceonces (C) under tso
Outcomes 4 (34 states, 4 final)
* 0:r0=0; 1:r0=0;
  0:r0=0; 1:r0=1;
  0:r0=1; 1:r0=0;
  0:r0=1; 1:r0=1;
Condition exists (0:r0=0 /\ 1:r0=0): observable
Observation SB+poonceonces Sometimes 1 3
`,
	}
	for mm, w := range want {
		if got := run(t, test, mm).Format(); got != w {
			t.Errorf("under %s:\n%s\nwant\n%s", mm, got, w)
		}
	}
}

// TestRoundTrip checks that the states of a litmus machine under each
// model decode their own encoding, promises and views included.
func TestRoundTrip(t *testing.T) {
	for _, file := range []string{"aarch64/LB+rel+CAS-ok-RsRs-addr.litmus", "linux/MP+polocks.litmus", "linux/MP+onceassign+derefonce.litmus"} {
		test := load(t, "../testdata/litmus/"+file)
		for _, mm := range litmus.Models {
			m, err := litmus.Build(test, mm)
			if err != nil {
				t.Fatal(err)
			}
			modeltest.RoundTrip(t, m, 12)
		}
	}
}

// TestPromiseFirst checks, on every test of the AArch64 catalogue and the
// kernel's two-thread tests, that
// promising only before any thread steps (the mode check litmus uses)
// finds the same outcomes as promising at any time (Promising-ARM as
// defined).
func TestPromiseFirst(t *testing.T) {
	files, err := filepath.Glob("../testdata/litmus/aarch64/*.litmus")
	if err != nil {
		t.Fatal(err)
	}
	// And the kernel's two-thread tests (three threads with locks take
	// minutes when promises may come at any time).
	kernel, err := filepath.Glob("../testdata/litmus/linux/*.litmus")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range kernel {
		if test := load(t, file); len(test.Threads) <= 2 {
			files = append(files, file)
		}
	}
	for _, file := range files {
		test := load(t, file)
		first, anytime := run(t, test, "armv8"), run(t, test, "armv8-anytime")
		if !slices.Equal(first.Outcomes, anytime.Outcomes) {
			t.Errorf("%s: promise-first outcomes\n%s\ndiffer from promises at any time\n%s", test.Name, first.Format(), anytime.Format())
		}
		if first.States > anytime.States {
			t.Errorf("%s: promise-first explores %d states, more than %d", test.Name, first.States, anytime.States)
		}
	}
}
