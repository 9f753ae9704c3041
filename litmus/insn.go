package litmus

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// An Insn is one instruction of a thread's program, after parsing: the
// C and AArch64 front ends compile to the same instructions.
type Insn struct {
	Kind Kind
	Line int // source line, for messages
	Text string
	// Dst is the register written (-1: none).
	Dst int
	// A, B are the operands (ALU, compare, select, store value, RMW
	// argument and expected value).
	A, B Operand
	// Base and Off give the address: the value of Base plus that of Off.
	Base, Off Operand
	ALU       ALU
	Order     model.Order
	Barrier   model.Barrier
	RMW       model.RMWOp
	NoRet     bool
	Await     bool
	Cond      CondCode
	Target    int  // branch target (an instruction index)
	Wide      bool // a 32-bit W register result is truncated
	// Post is added to the base register after the access (AArch64's
	// post-indexed addressing, [Xn],#imm).
	Post uint64
}

// Kind is an instruction's kind.
type Kind uint8

// The instruction kinds.
const (
	KNop Kind = iota
	KLoad
	KStore
	KRMW
	KFence
	KALU   // Dst = A op B
	KCmp   // flags = A - B
	KCsel  // Dst = Cond ? A : B
	KBr    // branch to Target if Cond holds (on the flags, or on A for CBZ/CBNZ)
	KJump  // branch to Target
	KLocal // no operation, a label
)

// An ALU is an arithmetic operation.
type ALU uint8

// The operations.
const (
	Mov ALU = iota
	Add
	Sub
	And
	Or
	Xor
	Eq
	Ne
)

// A CondCode is a branch or select condition.
type CondCode uint8

// The conditions.
const (
	CondEQ      CondCode = iota // flags: equal
	CondNE                      // flags: not equal
	CondZero                    // A is zero (CBZ; C's if (!r))
	CondNonZero                 // A is not zero (CBNZ; C's if (r))
)

// An Operand is a register or an immediate value.
type Operand struct {
	Reg int // -1: immediate
	Imm uint64
}

func imm(v uint64) Operand { return Operand{Reg: -1, Imm: v} }
func reg(r int) Operand    { return Operand{Reg: r} }

var none = imm(0)

func (o Operand) String() string {
	if o.Reg < 0 {
		return fmt.Sprint(o.Imm)
	}
	return fmt.Sprintf("r%d", o.Reg)
}

func (a ALU) apply(x, y uint64) uint64 {
	switch a {
	case Mov:
		return x
	case Add:
		return x + y
	case Sub:
		return x - y
	case And:
		return x & y
	case Or:
		return x | y
	case Xor:
		return x ^ y
	case Eq:
		if x == y {
			return 1
		}
		return 0
	case Ne:
		if x != y {
			return 1
		}
		return 0
	}
	return 0
}
