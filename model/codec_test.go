package model_test

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/protocheck/protocheck/model"
)

// padded has three bytes of padding between A and B.
type padded struct {
	A uint8
	B int32
}

type level int16 // a named integer type

// every has a field of every kind a Codec supports.
type every struct {
	Flag    bool
	I       int
	I8      int8
	I16     int16
	I32     int32
	I64     int64
	U       uint
	U8      uint8
	U16     uint16
	U32     uint32
	U64     uint64
	Level   level
	Arr     [3]uint8
	Empty   [0]int64
	Nested  padded
	Structs [2]padded // padding inside: copied element by element
	Words   []uint16  // flat elements: one copy
	Items   []padded  // padded elements: field by field
	Mem     model.Mem
	Mu      model.Mutex
	Cv      model.Cond
	hidden  uint8 // unexported fields are state too
}

func newEvery() every { return every{Mem: model.NewMem("x", "y")} }

// full fills every field with a value that is not zero.
func full(x *model.Exec) every {
	e := newEvery()
	e.Flag, e.I, e.I8, e.I16, e.I32, e.I64 = true, -1, -2, -300, -70000, -1<<40
	e.U, e.U8, e.U16, e.U32, e.U64 = 1, 2, 300, 70000, 1<<40
	e.Level = 7
	e.Arr = [3]uint8{1, 2, 3}
	e.Nested = padded{A: 4, B: -5}
	e.Structs = [2]padded{{A: 6, B: 7}, {A: 8, B: 9}}
	e.Words = []uint16{10, 11, 12}
	e.Items = []padded{{A: 13, B: 14}}
	e.hidden = 15
	x.Reset(1, -1)
	x.Store(e.Mem, 1, 1<<20)
	x.Reset(2, -1)
	x.Lock(&e.Mu, "mu")
	x.Wait(&e.Cv, "cv", &e.Mu, "mu")
	x.Reset(0, -1)
	x.Lock(&e.Mu, "mu")
	return e
}

func TestCodecRoundTripsEveryFieldKind(t *testing.T) {
	c, err := model.NewCodec[every]()
	if err != nil {
		t.Fatal(err)
	}
	x := model.NewExec(0)
	e := full(x)
	enc := c.Append([]byte("head"), &e)
	if string(enc[:4]) != "head" {
		t.Fatalf("Append does not append: %q", enc)
	}
	enc = enc[4:]

	back := newEvery()
	if err := c.Decode(enc, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, e) {
		t.Fatalf("decode(encode(s)) differs:\n got %+v\nwant %+v", back, e)
	}
	if again := c.Append(nil, &back); string(again) != string(enc) {
		t.Fatalf("re-encoding differs: %q, want %q", again, enc)
	}

	threads := []string{"T0", "T1", "T2"}
	var got []string
	for _, v := range c.Vars(&back, threads) {
		got = append(got, v.Name+"="+v.Value)
	}
	want := []string{
		"Flag=true", "I=-1", "I8=-2", "I16=-300", "I32=-70000", "I64=-1099511627776",
		"U=1", "U8=2", "U16=300", "U32=70000", "U64=1099511627776", "Level=7",
		"Arr=[1 2 3]", "Empty=[]",
		"Nested.A=4", "Nested.B=-5",
		"Structs[0].A=6", "Structs[0].B=7", "Structs[1].A=8", "Structs[1].B=9",
		"Words=[10 11 12]", "Items[0].A=13", "Items[0].B=14",
		"x=0", "y=1048576",
		"Mu=held by T0", "Cv=waiters {T2}", "hidden=15",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Vars:\n got %q\nwant %q", got, want)
	}
}

// The encoding copies field bytes, never padding, so states that differ
// only in padding are the same state; and fields are not formatted.
func TestCodecSkipsPadding(t *testing.T) {
	c := model.MustCodec[padded]()
	a, b := padded{A: 1, B: 2}, padded{A: 1, B: 2}
	*(*byte)(unsafe.Add(unsafe.Pointer(&b), 1)) = 0xff // a padding byte
	ea, eb := c.Append(nil, &a), c.Append(nil, &b)
	if len(ea) != 5 || string(ea) != string(eb) {
		t.Fatalf("encodings %q and %q: want the same 5 bytes (1 + 4, no padding)", ea, eb)
	}
}

// Decode reuses the memory of the state it overwrites: a slice with
// enough capacity keeps its array, a Mem keeps its words; a longer slice
// gets a new array.
func TestCodecDecodeReusesMemory(t *testing.T) {
	c := model.MustCodec[every]()
	src := newEvery()
	src.Words = []uint16{1, 2}
	enc := c.Append(nil, &src)

	dst := newEvery()
	dst.Words = make([]uint16, 5, 8)
	words := unsafe.SliceData(dst.Words)
	if err := c.Decode(enc, &dst); err != nil {
		t.Fatal(err)
	}
	if len(dst.Words) != 2 || cap(dst.Words) != 8 || unsafe.SliceData(dst.Words) != words {
		t.Errorf("Words: len %d cap %d, same array %v: want the array reused", len(dst.Words), cap(dst.Words), unsafe.SliceData(dst.Words) == words)
	}
	src.Words = []uint16{1, 2, 3, 4, 5, 6, 7, 8, 9}
	if err := c.Decode(c.Append(nil, &src), &dst); err != nil || !reflect.DeepEqual(dst.Words, src.Words) {
		t.Errorf("a longer slice: %v %v", dst.Words, err)
	}
	if &dst.Words[0] == &src.Words[0] {
		t.Errorf("decoding shares the source's array")
	}
}

func TestCodecDecodeRejectsMalformed(t *testing.T) {
	c := model.MustCodec[every]()
	e := full(model.NewExec(0))
	enc := c.Append(nil, &e)
	for k := 0; k < len(enc); k++ {
		dst := newEvery()
		if err := c.Decode(enc[:k], &dst); err == nil {
			t.Fatalf("the first %d of %d bytes decode", k, len(enc))
		} else if !strings.Contains(err.Error(), "model_test.every") {
			t.Fatalf("error %q does not name the type", err)
		}
	}
	dst := newEvery()
	if err := c.Decode(append(enc, 0), &dst); err == nil || !strings.Contains(err.Error(), "1 bytes left over") {
		t.Errorf("a byte too many: %v", err)
	}
	type small struct{ S []uint64 }
	cs := model.MustCodec[small]()
	var s small
	if err := cs.Decode([]byte{0xff, 0xff, 0xff, 0x7f}, &s); err == nil || !strings.Contains(err.Error(), "bad slice length") {
		t.Errorf("a slice longer than the input: %v", err)
	}
}

// A state is plain data: NewCodec refuses every other kind of field and
// says which field, of which type, and why.
func TestCodecRefusesWhatIsNotPlainData(t *testing.T) {
	type withPtr struct{ P *int }
	type withMap struct{ M map[int]int }
	type withString struct{ S string }
	type withFloat struct{ F float64 }
	type withFloat32 struct{ F float32 }
	type withComplex struct{ C complex128 }
	type withAny struct{ A any }
	type withChan struct{ C chan int }
	type withFunc struct{ F func() }
	type withUintptr struct{ U uintptr }
	type deepInArray struct{ A [2]struct{ S string } }
	type deepInSlice struct{ L [][]*int }
	type deepInStruct struct{ N struct{ M map[string]bool } }
	for _, c := range []struct {
		err  error
		want string
	}{
		{codecErr[withPtr](), "withPtr.P has type *int"},
		{codecErr[withMap](), "withMap.M has type map[int]int"},
		{codecErr[withString](), "withString.S has type string"},
		{codecErr[withFloat](), "withFloat.F has type float64"},
		{codecErr[withFloat32](), "withFloat32.F has type float32"},
		{codecErr[withComplex](), "withComplex.C has type complex128"},
		{codecErr[withAny](), "withAny.A has type interface {}"},
		{codecErr[withChan](), "withChan.C has type chan int"},
		{codecErr[withFunc](), "withFunc.F has type func()"},
		{codecErr[withUintptr](), "withUintptr.U has type uintptr"},
		{codecErr[deepInArray](), "deepInArray.A[].S has type string"},
		{codecErr[deepInSlice](), "deepInSlice.L[][] has type *int"},
		{codecErr[deepInStruct](), "deepInStruct.N.M has type map[string]bool"},
		{codecErr[int](), "a state must be a struct, not int"},
	} {
		if c.err == nil {
			t.Errorf("accepted; want %q", c.want)
			continue
		}
		if !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %q does not say %q", c.err, c.want)
		}
		if !strings.Contains(c.want, "must be a struct") && !strings.Contains(c.err.Error(), "plain data with a canonical encoding") {
			t.Errorf("error %q does not say why", c.err)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "withPtr.P") {
			t.Errorf("MustCodec of a pointer field: %v", r)
		}
	}()
	type withPtr2 = withPtr
	model.MustCodec[withPtr2]()
}

func codecErr[S any]() error {
	_, err := model.NewCodec[S]()
	return err
}
