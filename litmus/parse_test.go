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
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n L0: NOP ;\n L0: LDR W0,[X1] ;\nexists (0:X0=1)\n", `f.litmus:7: P0: "L0: LDR W0,[X1]": label "L0" defined twice`},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n 0: LDR W0,[X1] ;\nexists (0:X0=1)\n", `f.litmus:6: P0: "0: LDR W0,[X1]": bad label "0"`},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n L0: LDR W0,[X1] ;\n CBNZ W0,L0 ;\nexists (0:X0=1)\n", `f.litmus:7: P0: a branch back to "L0" (loops are not supported)`},
		// An address register nothing sets holds 0, no location.
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n LDR W0,[X5] ;\nexists (0:X0=1)\n", `f.litmus:6: P0: "LDR W0,[X5]": X5 is not initialised (an address register needs a location in the initial state, as 0:X5=x)`},
		{"AArch64 t\n{\n0:X1=x;\n1:X1=x;\n}\n P0 | P1 ;\n MOV W0,#1 | LDR W0,[X1] ;\n L0: STR W0,[X1] | STR W0,[W2,#4] ;\nexists (1:X0=1)\n", `f.litmus:8: P1: "STR W0,[W2,#4]": X2 is not initialised`},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n LDR W0,[X1] ;\n SWP W0,W2,[X3,X4] ;\nexists (0:X0=1)\n", `f.litmus:7: P0: "SWP W0,W2,[X3,X4]": X3 is not initialised`},
		{"AArch64 t\n{\n0:X1=x;\n}\n P0 ;\n LDR W0,[XZR] ;\nexists (0:X0=1)\n", `f.litmus:6: P0: "LDR W0,[XZR]": the zero register is not an address`},
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

// TestParseLabels: herd7 reads a label before an instruction in the same
// cell ("L0: STR W2,[X3]") as well as alone; either way it names the
// next instruction, and a cell may carry several.
func TestParseLabels(t *testing.T) {
	src := `AArch64 t
{
0:X1=x; 0:X3=y; x=1;
}
 P0              ;
 LDR W0,[X1]     ;
 CBNZ W0,L0      ;
 MOV W2,#1       ;
 L0: L1: STR W2,[X3] ;
 CBZ W0,L2       ;
 MOV W4,#1       ;
 L2:             ;
exists (y=1)
`
	test, err := litmus.Parse("f.litmus", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	code := test.Threads[0].Code
	if len(code) != 6 {
		t.Fatalf("%d instructions, want 6", len(code))
	}
	if code[1].Target != 3 || code[3].Text != "STR W2,[X3]" || code[3].Line != 9 {
		t.Errorf("CBNZ to %d, instruction 3 %q on line %d; want 3, \"STR W2,[X3]\", 9", code[1].Target, code[3].Text, code[3].Line)
	}
	if code[4].Target != 6 {
		t.Errorf("CBZ to %d, want 6 (the end)", code[4].Target)
	}
	// x is 1: the branch skips the MOV, and y stays 0.
	r, err := litmus.Run(test, "sc", 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Observable() || len(r.Outcomes) != 1 {
		t.Errorf("outcomes %v, want y=0 only", r.Outcomes)
	}
}

// TestParseAddrRegs: an address register is set by the initial state or
// by an earlier instruction (a pointer read from memory, a computed
// address), or the offset register may hold the address.
func TestParseAddrRegs(t *testing.T) {
	src := `AArch64 t
{
x=y; 0:X1=x; 0:X6=y;
}
 P0              ;
 LDR X2,[X1]     ;
 LDR W3,[X2]     ;
 ADD X4,X1,#0    ;
 STR W3,[X4]     ;
 LDR W5,[X7,X6]  ;
exists (0:X3=0)
`
	test, err := litmus.Parse("f.litmus", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r, err := litmus.Run(test, "sc", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Validated() {
		t.Errorf("outcomes %v, want 0:X3=0", r.Outcomes)
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
