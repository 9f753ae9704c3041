// Package schedtest drives a model.Machine from a rapid property test: one
// draw per scheduling decision, where 0 means "keep running the thread that
// stepped last" and k > 0 picks another enabled choice. rapid shrinks draws
// towards 0, so a shrunk failing schedule has the fewest context switches.
// The shrunk schedule is plain data (a []model.Choice) that a test can save
// as a protocheck trace; durable regressions are those trace files, never
// rapid's own fail files, which are tied to the exact sequence of draws.
package schedtest

import (
	"github.com/protocheck/protocheck/explorer"
	"github.com/protocheck/protocheck/model"
	"pgregory.net/rapid"
)

// Picker returns an explorer.Picker that draws each decision from t.
func Picker(t *rapid.T) explorer.Picker {
	return func(enabled []model.Choice, prev int) model.Choice {
		// Order the candidates so that index 0 continues the previous
		// thread (its first alternative) when it can.
		first := -1
		for i, c := range enabled {
			if c.Thread == prev {
				first = i
				break
			}
		}
		if first < 0 {
			first = 0
		}
		k := rapid.IntRange(0, len(enabled)-1).Draw(t, "choice")
		if k == 0 {
			return enabled[first]
		}
		if k <= first {
			return enabled[k-1]
		}
		return enabled[k]
	}
}

// Walk runs one execution of m scheduled by t's draws, for at most
// maxSteps steps, and returns it. The caller asserts on its violation.
func Walk(t *rapid.T, m model.Machine, maxSteps int) *explorer.Walk {
	return explorer.RunWalk(m, Picker(t), maxSteps)
}
