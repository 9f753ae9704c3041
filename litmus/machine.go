package litmus

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/protocheck/protocheck/model"
)

// Machine compiles t to a model.Machine under sequential consistency: one
// thread per program, a step per memory access or barrier with the
// register computation around it folded in. Run it under TSO or ARMv8
// with model.WithTSO or model.WithARMv8 and MemOf.
func Machine(t *Test) model.Machine {
	names := make([]string, len(t.Threads))
	for i, th := range t.Threads {
		names[i] = th.Name
	}
	return &machine{t: t, names: names}
}

// MemOf returns the memory of a state of a Machine.
func MemOf(s model.State) *model.Mem { return &s.(*state).mem }

type machine struct {
	t     *Test
	names []string
}

func (m *machine) Threads() []string { return m.names }

func (m *machine) Properties() model.Properties {
	return model.Properties{Assertions: []string{"litmus", "memory"}}
}

// state is a litmus machine's state: memory, and per thread its program
// counter, registers with the dependency each value carries, and flags.
type state struct {
	m    *machine
	mem  model.Mem
	pc   []int
	regs [][]uint64
	deps [][]model.Dep
}

// The flags of a thread are its register len(Regs) (the difference a
// compare left) and their dependency.
func (m *machine) Init() model.State {
	s := &state{m: m, mem: model.NewMem(m.t.Locs...)}
	for i, v := range m.t.Init {
		s.mem.Init(model.Addr(i), v)
	}
	s.pc = make([]int, len(m.t.Threads))
	for _, th := range m.t.Threads {
		r := append(append([]uint64(nil), th.RegInit...), 0)
		s.regs = append(s.regs, r)
		s.deps = append(s.deps, make([]model.Dep, len(r)))
	}
	return s
}

func (s *state) AppendKey(b []byte) []byte {
	b = s.mem.AppendKey(b)
	for t := range s.pc {
		b = binary.AppendUvarint(b, uint64(s.pc[t]))
		for i, v := range s.regs[t] {
			b = binary.AppendUvarint(b, v)
			b = s.deps[t][i].AppendKey(b)
		}
	}
	return b
}

func (s *state) Decode(b []byte) error {
	b, err := s.mem.DecodeFrom(b)
	if err != nil {
		return err
	}
	var n int
	for t := range s.pc {
		var v uint64
		if v, n = binary.Uvarint(b); n <= 0 || v > uint64(len(s.m.t.Threads[t].Code)) {
			return errors.New("litmus: bad program counter")
		}
		s.pc[t], b = int(v), b[n:]
		for i := range s.regs[t] {
			if s.regs[t][i], n = binary.Uvarint(b); n <= 0 {
				return errors.New("litmus: bad register")
			}
			b = b[n:]
			if s.deps[t][i], b, err = model.DecodeDep(b); err != nil {
				return err
			}
		}
	}
	if len(b) != 0 {
		return errors.New("litmus: trailing bytes")
	}
	return nil
}

func (s *state) Vars() []model.Var {
	vs := s.mem.Vars()
	for t, th := range s.m.t.Threads {
		vs = append(vs, model.Var{Name: th.Name + ".pc", Value: strconv.Itoa(s.pc[t])})
		for i, r := range th.Regs {
			v := s.m.t.FormatValue(s.regs[t][i])
			if d := s.deps[t][i]; !d.IsZero() {
				v += " (dep " + d.String() + ")"
			}
			vs = append(vs, model.Var{Name: fmt.Sprintf("%d:%s", t, r), Value: v})
		}
	}
	return vs
}

func (s *state) get(t int, o Operand) (uint64, model.Dep) {
	if o.Reg < 0 {
		return o.Imm, model.Dep{}
	}
	return s.regs[t][o.Reg], s.deps[t][o.Reg]
}

func (s *state) set(t, r int, v uint64, d model.Dep, wide bool) {
	if r < 0 {
		return
	}
	if !wide && v < LocBase {
		v &= 0xffffffff
	}
	s.regs[t][r], s.deps[t][r] = v, d
}

// Step runs the local instructions up to the thread's next memory access
// or barrier, that access, and the local instructions after it.
func (m *machine) Step(ms model.State, t int, x *model.Exec) {
	s := ms.(*state)
	code := m.t.Threads[t].Code
	if s.pc[t] >= len(code) {
		x.Done()
		return
	}
	s.local(t, x)
	if s.pc[t] < len(code) {
		in := &code[s.pc[t]]
		if !s.access(t, in, x) {
			return // blocked
		}
		if in.Post != 0 {
			s.regs[t][in.Base.Reg] += in.Post
		}
		s.pc[t]++
		s.local(t, x)
	}
	if x.Labelling() && x.StepLabel() == "" {
		x.Label(m.names[t] + ": local")
	}
}

// local runs register instructions and branches until a memory access,
// a barrier or the end.
func (s *state) local(t int, x *model.Exec) {
	code := s.m.t.Threads[t].Code
	flags := len(s.m.t.Threads[t].Regs)
	for steps := 0; s.pc[t] < len(code); steps++ {
		if steps > 10*len(code)+10 {
			x.Fail("litmus", "%s loops without a memory access", s.m.names[t])
			return
		}
		in := &code[s.pc[t]]
		switch in.Kind {
		case KNop, KLocal:
		case KALU:
			a, da := s.get(t, in.A)
			b, db := s.get(t, in.B)
			s.set(t, in.Dst, in.ALU.apply(a, b), da.Join(db), in.Wide)
		case KCmp:
			a, da := s.get(t, in.A)
			b, db := s.get(t, in.B)
			s.regs[t][flags], s.deps[t][flags] = a-b, da.Join(db)
		case KCsel:
			var v uint64
			var d model.Dep
			if s.cond(t, in) {
				v, d = s.get(t, in.A)
			} else {
				v, d = s.get(t, in.B)
			}
			// herd: the flags reach the result as a pick dependency,
			// which orders later writes only.
			s.set(t, in.Dst, v, d.Join(s.deps[t][flags].Ctrl()), in.Wide)
		case KBr:
			var d model.Dep
			if in.Cond == CondEQ || in.Cond == CondNE {
				d = s.deps[t][flags]
			} else {
				_, d = s.get(t, in.A)
			}
			x.Branch(s.mem, d)
			if s.cond(t, in) {
				s.pc[t] = in.Target
				continue
			}
		case KJump:
			s.pc[t] = in.Target
			continue
		default:
			return
		}
		s.pc[t]++
	}
}

func (s *state) cond(t int, in *Insn) bool {
	flags := len(s.m.t.Threads[t].Regs)
	switch in.Cond {
	case CondEQ:
		return s.regs[t][flags] == 0
	case CondNE:
		return s.regs[t][flags] != 0
	}
	a, _ := s.get(t, in.A)
	if in.Cond == CondZero {
		return a == 0
	}
	return a != 0
}

// address resolves an instruction's address to a location.
func (s *state) address(t int, in *Insn, x *model.Exec) (model.Addr, model.Dep, bool) {
	b, db := s.get(t, in.Base)
	o, do := s.get(t, in.Off)
	a := b + o
	if a < LocBase || a >= LocBase+uint64(len(s.m.t.Locs)) {
		x.Fail("litmus", "%s, line %d: %s: address %s is not a location", s.m.names[t], in.Line, in.Text, s.m.t.FormatValue(a))
		return 0, model.Dep{}, false
	}
	return model.Addr(a - LocBase), db.Join(do), true
}

// access runs a memory access or barrier; false when the step blocks.
func (s *state) access(t int, in *Insn, x *model.Exec) bool {
	name := s.m.names[t]
	switch in.Kind {
	case KFence:
		x.Barrier(s.mem, in.Barrier)
		x.Labelf("%s: %s", name, in.Text)
		return true
	case KLoad:
		a, da, ok := s.address(t, in, x)
		if !ok {
			return true
		}
		v, d := x.LoadDep(s.mem, a, in.Order, da)
		s.set(t, in.Dst, v, d, in.Wide)
		x.Labelf("%s: %s: read %s = %s", name, in.Text, s.mem.Name(a), s.m.t.FormatValue(v))
		return true
	case KStore:
		a, da, ok := s.address(t, in, x)
		if !ok {
			return true
		}
		v, dv := s.get(t, in.A)
		if !in.Wide && v < LocBase {
			v &= 0xffffffff
		}
		x.StoreDep(s.mem, a, v, in.Order, da, dv)
		x.Labelf("%s: %s: write %s = %s", name, in.Text, s.mem.Name(a), s.m.t.FormatValue(v))
		return true
	case KRMW:
		a, da, ok := s.address(t, in, x)
		if !ok {
			return true
		}
		arg, dArg := s.get(t, in.A)
		exp, dExp := s.get(t, in.B)
		old, d, wrote := x.Atomic(s.mem, a, model.RMW{
			Op: in.RMW, Arg: arg, Expect: exp, Order: in.Order, NoRet: in.NoRet, Await: in.Await,
			Addr: da, ArgDep: dArg, ExpectDep: dExp,
		})
		if x.Outcome() == model.Blocked {
			x.Labelf("%s: %s: waits for %s = %s", name, in.Text, s.mem.Name(a), s.m.t.FormatValue(exp))
			return false
		}
		s.set(t, in.Dst, old, d, in.Wide)
		if wrote {
			x.Labelf("%s: %s: read %s = %s, wrote", name, in.Text, s.mem.Name(a), s.m.t.FormatValue(old))
		} else {
			x.Labelf("%s: %s: read %s = %s, no write", name, in.Text, s.mem.Name(a), s.m.t.FormatValue(old))
		}
		return true
	}
	return true
}
