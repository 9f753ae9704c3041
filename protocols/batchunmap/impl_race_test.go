//go:build race

package batchunmap

// raceEnabled: the race detector slows a controlled run about tenfold, so
// the conformance test does fewer runs to stay within CI's budget.
const raceEnabled = true
