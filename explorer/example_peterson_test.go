package explorer_test

import (
	"fmt"

	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
)

// Peterson's lock for two threads, looping forever: flag[me] = 1; turn =
// other; wait while flag[other] && turn == other; critical section;
// flag[me] = 0. The || bug waits while either holds.
type peterson struct {
	Mem model.Mem
	PC  [2]uint8 // 0 flag, 1 turn, 2 read flag, 3 read turn, 4 critical section, 5 release
}

const flag0, turn = model.Addr(0), model.Addr(2)

func petersonLock(or, tso, fence bool) model.Machine {
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

// Peterson's lock: safety under SC and x86-TSO, with and without the
// fence, and progress (liveness) under weak fairness.
func Example_peterson() {
	for _, c := range []struct {
		name           string
		or, tso, fence bool
		fairness       string
	}{
		{"sc", false, false, false, ""},
		{"sc, no fairness", false, false, false, explorer.FairnessNone},
		{"sc, ||", true, false, false, ""},
		{"tso", false, true, false, ""},
		{"tso, fence", false, true, true, ""},
	} {
		r, err := explorer.Explore(petersonLock(c.or, c.tso, c.fence), explorer.Options{Fairness: c.fairness})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s\n", c.name, r)
	}
	// Output:
	// sc: ok: 40 states, 80 transitions, depth 8
	// sc, no fairness: violation: 40 states, 80 transitions, depth 8; P0-enters: never discharged: steps 4 to 5 repeat forever with it pending throughout (without fairness; stepping in the cycle: P0)
	// sc, ||: violation: 20 states, 40 transitions, depth 7; P0-enters: never discharged: steps 5 to 6 repeat forever with it pending throughout (a fair cycle: every thread that could step throughout it steps in it; stepping in the cycle: P0, P1)
	// tso: violation: 141 states, 296 transitions, depth 8; mutual-exclusion: both threads are in the critical section
	// tso, fence: ok: 78 states, 200 transitions, depth 10
}
