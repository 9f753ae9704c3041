// Package peterson is Peterson's mutual-exclusion lock for two threads as
// a protocheck model: a runnable example of a user's own model, checked
// for safety under sequential consistency and x86-TSO (with and without
// the fence the lock needs there) and for progress under weak fairness,
// with the || bug that livelocks it. It is used by the examples of this
// package and of package cli, and by the README.
package peterson

import "github.com/protocheck/protocheck/model"

// Peterson's lock for two threads, looping forever: flag[me] = 1; turn =
// other; wait while flag[other] && turn == other; critical section;
// flag[me] = 0. The || bug waits while either holds.
type peterson struct {
	Mem model.Mem
	PC  [2]uint8 // 0 flag, 1 turn, 2 read flag, 3 read turn, 4 critical section, 5 release
}

const flag0, turn = model.Addr(0), model.Addr(2)

func Lock(or, tso, fence bool) model.Machine {
	m := model.MustNew(model.Def[peterson]{
		Threads: []string{"P0", "P1"},
		Init:    func(s *peterson) { s.Mem = model.NewMem("flag[0]", "flag[1]", "turn") },
		Step: func(s *peterson, t int, x *model.Exec) {
			me, other := flag0+model.Addr(t), flag0+model.Addr(1-t)
			switch s.PC[t] {
			case 0:
				x.Store(s.Mem, me, 1)
				x.Labelf("flag[%d] = 1", t)
			case 1:
				x.Store(s.Mem, turn, uint64(1-t))
				if fence {
					x.Fence(s.Mem)
				}
				x.Labelf("turn = %d", 1-t)
			case 2:
				f := x.Load(s.Mem, other)
				x.Labelf("read flag[%d] = %d", 1-t, f)
				switch {
				case or && f == 1:
					return // ||: flag[other] alone keeps it waiting
				case !or && f == 0:
					s.PC[t] = 3 // &&: enter without reading turn
				}
			case 3:
				tv := x.Load(s.Mem, turn)
				x.Labelf("read turn = %d", tv)
				if tv == uint64(1-t) {
					s.PC[t] = 2 // spin
					return
				}
			case 4:
				x.Touch("critical section", true)
				x.Label("critical section")
			case 5:
				x.Store(s.Mem, me, 0)
				x.Labelf("flag[%d] = 0", t)
				s.PC[t] = 0
				return
			}
			s.PC[t]++
		},
		Invariants: []model.InvariantOf[peterson]{{Name: "mutual-exclusion", Check: func(s *peterson) string {
			if s.PC[0] == 5 && s.PC[1] == 5 {
				return "both threads are in the critical section"
			}
			return ""
		}}},
		Progress: []model.ProgressOf[peterson]{{Name: "P0-enters", Pending: func(s *peterson) bool { return s.PC[0] >= 1 && s.PC[0] <= 3 }}},
	})
	if tso {
		m = model.WithTSO(m, func(s model.State) *model.Mem { return &model.StateOf[peterson](s).Mem })
	}
	return m
}

// Protocol offers the lock's versions as variants, for traces and for the
// check command (cli.Registry).
var Protocol = &model.Protocol{
	Name:        "peterson",
	Description: "Peterson's lock for two threads, looping forever",
	Source:      "G. L. Peterson, Myths about the mutual exclusion problem, IPL 12(3), 1981",
	Variants: []model.Variant{
		{Name: "sc", Expect: model.ExpectOK, Description: "sequential consistency"},
		{Name: "or", Expect: "P0-enters", Description: "waits while flag[other] || turn == other: both can spin forever"},
		{Name: "tso", Expect: "mutual-exclusion", Description: "x86-TSO without a fence: a store waits in the buffer past the other's read"},
		{Name: "tso-fence", Expect: model.ExpectOK, Description: "x86-TSO with mfence after the stores"},
	},
	New: func(variant string, _ model.Params) (model.Machine, error) {
		return Lock(variant == "or", variant == "tso" || variant == "tso-fence", variant == "tso-fence"), nil
	},
}
