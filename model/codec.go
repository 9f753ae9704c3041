package model

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unsafe"
)

// A Codec gives a plain struct type S the three things a State needs:
// a canonical encoding (Append), its inverse (Decode) and a list of named
// variables (Vars), so that a model's state is an ordinary struct and
// nothing about it is written by hand.
//
// S may contain booleans, sized and unsized integers, arrays and nested
// structs of those, slices of those, and the model types Mem, Mutex and
// Cond; unexported fields are encoded too. Anything else (pointers, maps,
// strings, floats, interfaces, channels, functions) is refused by
// NewCodec: a state is plain data, and a float or a pointer has no
// canonical encoding.
//
// The encoding copies the bytes of each field (padding excluded), so it
// is compact and needs no per-field formatting; adjacent fields are copied
// together. Slices are prefixed with their length. The byte order is the
// machine's: encodings are compared and hashed inside one run, never
// stored in files (a trace file holds only the choices).
type Codec[S any] struct {
	ops  []codecOp
	typ  reflect.Type
	size uintptr
}

type opKind uint8

const (
	opBytes opKind = iota // copy n bytes at off
	opMem                 // a Mem at off
	opSlice               // a slice at off
)

type codecOp struct {
	kind  opKind
	off   uintptr
	n     uintptr
	slice *sliceCodec
}

// sliceCodec encodes the elements of a slice type.
type sliceCodec struct {
	typ  reflect.Type // the slice type
	elem uintptr      // element size
	flat bool         // elements are plain bytes without padding: one copy
	ops  []codecOp    // per element, at offset 0
}

var (
	memType   = reflect.TypeOf(Mem{})
	mutexType = reflect.TypeOf(Mutex{})
	condType  = reflect.TypeOf(Cond{})
)

// NewCodec builds the codec of S, or says which field S cannot have.
func NewCodec[S any]() (*Codec[S], error) {
	t := reflect.TypeOf((*S)(nil)).Elem()
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("codec: a state must be a struct, not %s", t)
	}
	ops, err := plan(t, 0, t.Name())
	if err != nil {
		return nil, err
	}
	return &Codec[S]{ops: ops, typ: t, size: t.Size()}, nil
}

// MustCodec is NewCodec for package-level variables: it panics on a type
// NewCodec refuses.
func MustCodec[S any]() *Codec[S] {
	c, err := NewCodec[S]()
	if err != nil {
		panic(err)
	}
	return c
}

// plan returns the operations that encode a value of type t at offset
// base, merging adjacent byte copies.
func plan(t reflect.Type, base uintptr, path string) ([]codecOp, error) {
	var ops []codecOp
	add := func(op codecOp) {
		if n := len(ops); op.kind == opBytes && n > 0 && ops[n-1].kind == opBytes && ops[n-1].off+ops[n-1].n == op.off {
			ops[n-1].n += op.n
			return
		}
		ops = append(ops, op)
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		add(codecOp{kind: opBytes, off: base, n: t.Size()})
	case reflect.Array:
		if t.Len() == 0 {
			break
		}
		sub, err := plan(t.Elem(), 0, path+"[]")
		if err != nil {
			return nil, err
		}
		if flat(sub, t.Elem().Size()) {
			add(codecOp{kind: opBytes, off: base, n: t.Size()})
			break
		}
		for i := 0; i < t.Len(); i++ {
			for _, op := range sub {
				op.off += base + uintptr(i)*t.Elem().Size()
				add(op)
			}
		}
	case reflect.Struct:
		if t == memType {
			add(codecOp{kind: opMem, off: base})
			break
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			sub, err := plan(f.Type, base+f.Offset, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			for _, op := range sub {
				add(op)
			}
		}
	case reflect.Slice:
		sub, err := plan(t.Elem(), 0, path+"[]")
		if err != nil {
			return nil, err
		}
		sc := &sliceCodec{typ: t, elem: t.Elem().Size(), ops: sub, flat: flat(sub, t.Elem().Size())}
		add(codecOp{kind: opSlice, off: base, slice: sc})
	default:
		return nil, fmt.Errorf("codec: %s has type %s: a state holds booleans, integers, arrays, structs, slices, Mem, Mutex and Cond only (plain data with a canonical encoding)", path, t)
	}
	return ops, nil
}

// flat reports whether ops copy a whole value of the given size as bytes.
func flat(ops []codecOp, size uintptr) bool {
	return size == 0 || len(ops) == 1 && ops[0].kind == opBytes && ops[0].off == 0 && ops[0].n == size
}

// Append appends the canonical encoding of *s.
func (c *Codec[S]) Append(b []byte, s *S) []byte {
	return appendOps(b, c.ops, unsafe.Pointer(s))
}

func appendOps(b []byte, ops []codecOp, p unsafe.Pointer) []byte {
	for i := range ops {
		op := &ops[i]
		at := unsafe.Add(p, op.off)
		switch op.kind {
		case opBytes:
			b = append(b, unsafe.Slice((*byte)(at), op.n)...)
		case opMem:
			b = (*Mem)(at).AppendKey(b)
		case opSlice:
			h := (*sliceHeader)(at)
			b = appendUvarint(b, uint64(h.len))
			sc := op.slice
			if sc.flat {
				b = append(b, unsafe.Slice((*byte)(h.data), uintptr(h.len)*sc.elem)...)
				continue
			}
			for j := 0; j < h.len; j++ {
				b = appendOps(b, sc.ops, unsafe.Add(h.data, uintptr(j)*sc.elem))
			}
		}
	}
	return b
}

// Copy sets *dst to a copy of *src sharing no memory with it: the bytes of
// plain fields, the words and buffers of each Mem, the elements of each
// slice (dst's buffers are reused).
func (c *Codec[S]) Copy(dst, src *S) {
	copyOps(c.ops, unsafe.Pointer(dst), unsafe.Pointer(src))
}

func copyOps(ops []codecOp, dst, src unsafe.Pointer) {
	for i := range ops {
		op := &ops[i]
		d, s := unsafe.Add(dst, op.off), unsafe.Add(src, op.off)
		switch op.kind {
		case opBytes:
			copy(unsafe.Slice((*byte)(d), op.n), unsafe.Slice((*byte)(s), op.n))
		case opMem:
			(*Mem)(d).CopyFrom(*(*Mem)(s))
		case opSlice:
			sh, dh := (*sliceHeader)(s), (*sliceHeader)(d)
			sc := op.slice
			if dh.cap < sh.len {
				v := reflect.NewAt(sc.typ, d).Elem()
				v.Set(reflect.MakeSlice(sc.typ, sh.len, sh.len))
			}
			dh.len = sh.len
			if sc.flat {
				size := uintptr(sh.len) * sc.elem
				copy(unsafe.Slice((*byte)(dh.data), size), unsafe.Slice((*byte)(sh.data), size))
				continue
			}
			for j := 0; j < sh.len; j++ {
				copyOps(sc.ops, unsafe.Add(dh.data, uintptr(j)*sc.elem), unsafe.Add(sh.data, uintptr(j)*sc.elem))
			}
		}
	}
}

// sliceHeader is the layout of a Go slice.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// Decode overwrites *s with the state encoded in b. Slices keep their
// capacity; a Mem keeps its layout (word names, TSO), which must be the
// encoded memory's, as when s was built by the machine's Init.
func (c *Codec[S]) Decode(b []byte, s *S) error {
	rest, err := decodeOps(b, c.ops, unsafe.Pointer(s))
	if err != nil {
		return fmt.Errorf("decode %s: %w", c.typ, err)
	}
	if len(rest) != 0 {
		return fmt.Errorf("decode %s: %d bytes left over", c.typ, len(rest))
	}
	return nil
}

func decodeOps(b []byte, ops []codecOp, p unsafe.Pointer) ([]byte, error) {
	for i := range ops {
		op := &ops[i]
		at := unsafe.Add(p, op.off)
		switch op.kind {
		case opBytes:
			if uintptr(len(b)) < op.n {
				return nil, fmt.Errorf("truncated encoding")
			}
			copy(unsafe.Slice((*byte)(at), op.n), b)
			b = b[op.n:]
		case opMem:
			var err error
			if b, err = (*Mem)(at).DecodeFrom(b); err != nil {
				return nil, err
			}
		case opSlice:
			n, k := binary.Uvarint(b)
			sc := op.slice
			if k <= 0 || sc.elem > 0 && n > uint64(len(b)) {
				return nil, fmt.Errorf("bad slice length")
			}
			b = b[k:]
			h := (*sliceHeader)(at)
			if uint64(h.cap) < n {
				v := reflect.NewAt(sc.typ, at).Elem()
				v.Set(reflect.MakeSlice(sc.typ, int(n), int(n)))
			}
			h.len = int(n)
			if sc.flat {
				size := uintptr(n) * sc.elem
				if uintptr(len(b)) < size {
					return nil, fmt.Errorf("truncated encoding")
				}
				copy(unsafe.Slice((*byte)(h.data), size), b)
				b = b[size:]
				continue
			}
			for j := 0; j < h.len; j++ {
				var err error
				if b, err = decodeOps(b, sc.ops, unsafe.Add(h.data, uintptr(j)*sc.elem)); err != nil {
					return nil, err
				}
			}
		}
	}
	return b, nil
}

// Vars lists the fields of *s as variables: "Field" for a scalar or an
// array of scalars ("[0 1 2]"), "Field[i].Sub" and "Field.Sub" for arrays
// of structs and nested structs, the words and store buffers of a Mem by
// their names, a Mutex as "free" or "held by T" and a Cond as its waiters,
// naming threads with threads.
func (c *Codec[S]) Vars(s *S, threads []string) []Var {
	v := reflect.NewAt(c.typ, unsafe.Pointer(s)).Elem()
	var out []Var
	for i := 0; i < v.NumField(); i++ {
		out = appendVars(out, c.typ.Field(i).Name, v.Field(i), threads)
	}
	return out
}

func appendVars(out []Var, name string, v reflect.Value, threads []string) []Var {
	thread := func(t int) string {
		if t >= 0 && t < len(threads) {
			return threads[t]
		}
		return strconv.Itoa(t)
	}
	switch v.Type() {
	case memType:
		return append(out, (*Mem)(unsafe.Pointer(v.UnsafeAddr())).Vars()...)
	case mutexType:
		m := *(*Mutex)(unsafe.Pointer(v.UnsafeAddr()))
		if m.Free() {
			return append(out, Var{Name: name, Value: "free"})
		}
		return append(out, Var{Name: name, Value: "held by " + thread(m.Holder())})
	case condType:
		c := *(*Cond)(unsafe.Pointer(v.UnsafeAddr()))
		var ws []string
		for _, t := range c.Waiters() {
			ws = append(ws, thread(t))
		}
		return append(out, Var{Name: name, Value: "waiters {" + strings.Join(ws, ", ") + "}"})
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			out = appendVars(out, name+"."+v.Type().Field(i).Name, v.Field(i), threads)
		}
		return out
	case reflect.Array, reflect.Slice:
		if scalar(v.Type().Elem()) {
			parts := make([]string, v.Len())
			for i := range parts {
				parts[i] = scalarText(v.Index(i))
			}
			return append(out, Var{Name: name, Value: "[" + strings.Join(parts, " ") + "]"})
		}
		for i := 0; i < v.Len(); i++ {
			out = appendVars(out, fmt.Sprintf("%s[%d]", name, i), v.Index(i), threads)
		}
		return out
	}
	return append(out, Var{Name: name, Value: scalarText(v)})
}

func scalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func scalarText(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	}
	return strconv.FormatUint(v.Uint(), 10)
}
