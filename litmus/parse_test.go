package litmus_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/protocheck/protocheck/litmus"
)

// TestParseErrors: bad input is an error naming the file and line, never
// a panic.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"", "f.litmus:1: empty file"},
		{"X86 SB\n{}\n", `f.litmus:1: unsupported architecture "X86"`},
		{"C t\n{}\nP0(int *x)\n{\n\tFOO(x);\n}\nexists (x=1)\n", `f.litmus:5: P0: unsupported primitive "FOO"`},
		{"C t\n{}\nP0(int *x)\n{\n\tWRITE_ONCE(*x, 1);\n}\n", "f.litmus:6: no condition"},
		{"C t\n{}\nP0(int *x)\n{\n\tr0 = READ_ONCE(*x);\n}\nexists (x=1)\n", `f.litmus:5: P0: assignment to "r0", which is not a local variable`},
		{"C t\n{}\nP0(int *x)\n{\n\tWRITE_ONCE(*x, 1);\n}\nexists (0:r9=1)\n", "f.litmus:7: P0 has no variable r9"},
		{"C t\n(* not closed\n", "f.litmus:2: comment (* not closed"},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n LDXR W0,[X1] ;\nexists (0:X0=1)\n", `f.litmus:6: P0: "LDXR W0,[X1]": unsupported instruction "LDXR"`},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n B.EQ nowhere ;\nexists (0:X0=1)\n", `f.litmus:6: P0: no label "nowhere"`},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n L: ;\n LDR W0,[X1] ;\n CBNZ W0,L ;\nexists (0:X0=1)\n", `f.litmus:8: P0: a branch back to "L" (loops are not supported)`},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 | P1 ;\n NOP | NOP | NOP ;\nexists (0:X0=1)\n", "f.litmus:6: expected 2 columns, one a thread (P0 | P1), found 3"},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 | P1 | P2 ;\n NOP | NOP | NOP ;\n LDR W0,[X1] | NOP ;\nexists (0:X0=1)\n", "f.litmus:7: expected 3 columns, one a thread (P0 | P1 | P2), found 2"},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 | P1 ;\n LDR W0,[X1] ;\nexists (0:X0=1)\n", "f.litmus:6: expected 2 columns, one a thread (P0 | P1), found 1"},
		{"AArch64 t\n{\n0:X1=x;\n", "f.litmus:2: initial state { not closed"},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n CSEL W0,W1,W2,GT ;\nexists (0:X0=1)\n", `unsupported condition "GT"`},
		{"AArch64 t\n{\n0:X1=x;\n\n5:X2=y;\n}\n P0 ;\n LDR W0,[X1] ;\nexists (0:X0=1)\n", "f.litmus:5: thread 5 does not exist"},
		// Numbers that do not fit 64 bits are out of range, not names.
		{"AArch64 t\n{\nx=18446744073709551616;\n0:X1=x;\n}\n P0 ;\n LDR W0,[X1] ;\nexists (0:X0=1)\n", "f.litmus:3: number 18446744073709551616 is out of range (values are 64 bits)"},
		{"AArch64 t\n{\n0:X1=x;\n0:X2=-9223372036854775809;\n}\n P0 ;\n LDR W0,[X1] ;\nexists (0:X0=1)\n", "f.litmus:4: number -9223372036854775809 is out of range"},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n MOV X0,#0x10000000000000000 ;\n STR X0,[X1] ;\nexists (x=1)\n", `f.litmus:6: P0: "MOV X0,#0x10000000000000000": number 0x10000000000000000 is out of range`},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n LDR W0,[X1] ;\nexists (0:X0=99999999999999999999)\n", "f.litmus:7: number 99999999999999999999 is out of range"},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n LDR W0,[X1] ;\nexists (99999999999999999999:X0=1)\n", `f.litmus:7: thread 99999999999999999999 does not exist`},
		{"AArch64 t\n{\n0:X1=x;\n7=1;\n}\n P0 ;\n LDR W0,[X1] ;\nexists (0:X0=1)\n", `f.litmus:4: expected a location, found "7"`},
		{"C t\n{\n\tint x = 18446744073709551616;\n}\nP0(int *x)\n{\n\tWRITE_ONCE(*x, 1);\n}\nexists (x=1)\n", "f.litmus:3: number 18446744073709551616 is out of range"},
		{"C t\n{}\nP0(int *x)\n{\n\tWRITE_ONCE(*x, 9223372036854775808000);\n}\nexists (x=1)\n", "f.litmus:5: P0: number 9223372036854775808000 is out of range"},
		{"C t\n{}\nP0(int *x)\n{\n\tWRITE_ONCE(*x, 1);\n}\nexists (x=-18446744073709551615)\n", "f.litmus:7: number -18446744073709551615 is out of range"},
	} {
		_, err := litmus.Parse("f.litmus", []byte(c.src))
		if err == nil {
			t.Errorf("%q: no error, want %q", c.src, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %q, want %q", c.src, err, c.want)
		}
	}
}

// TestParseNumbers: a value may use all 64 bits, written unsigned or as
// a negative number down to -2^63.
func TestParseNumbers(t *testing.T) {
	src := "AArch64 t\n{\nx=0xffffffffffffffff; y=-1; z=-9223372036854775808; w=18446744073709551615;\n0:X1=x;\n}\n P0 ;\n LDR X0,[X1] ;\nexists (0:X0=-1)\n"
	test, err := litmus.Parse("f.litmus", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"x": ^uint64(0), "y": ^uint64(0), "z": 1 << 63, "w": ^uint64(0)}
	for i, l := range test.Locs {
		if v, ok := want[l]; ok && test.Init[i] != v {
			t.Errorf("%s = %#x, want %#x", l, test.Init[i], v)
		}
	}
	if got := test.Cond.Expr.Value; got != ^uint64(0) {
		t.Errorf("condition's value %#x, want %#x", got, ^uint64(0))
	}
}

// FuzzParse: whatever the input, Parse returns a test or an error, and a
// test it returns runs (under a small bound) without a panic.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"aarch64", "linux"} {
		files, _ := filepath.Glob(filepath.Join("../testdata/litmus", dir, "*.litmus"))
		for i, file := range files {
			if i%8 != 0 {
				continue
			}
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		test, err := litmus.Parse("fuzz.litmus", data)
		if err != nil {
			return
		}
		for _, mm := range litmus.Models {
			if _, err := litmus.Run(test, mm, 2000); err != nil {
				return
			}
		}
	})
}
