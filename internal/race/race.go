// Package race tells tests whether the race detector is built in, so that
// they can size their work for it: it slows a run about tenfold, and it
// has nothing to check in a search that runs on one goroutine.
package race

import (
	"flag"
	"testing"
)

// Main runs a package's tests (call it from TestMain). Under the race
// detector, unless -run was given, it runs only the tests matching only:
// the ones that start goroutines (a protocol's real implementation, TestImpl*).
// The others explore a model on one goroutine, where the detector finds
// nothing and costs minutes; they run without -race.
func Main(m *testing.M, only string) int {
	if Enabled {
		flag.Parse()
		if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "" {
			if err := f.Value.Set(only); err != nil {
				panic(err)
			}
		}
	}
	return m.Run()
}

// MainSkipping runs a package's tests (call it from TestMain). Under the
// race detector, unless -run or -skip was given, it skips the tests
// matching skip: the ones whose work is a long search that the parallel
// tests elsewhere already cover, and that the detector slows tenfold.
func MainSkipping(m *testing.M, skip string) int {
	if Enabled {
		flag.Parse()
		run, sk := flag.Lookup("test.run"), flag.Lookup("test.skip")
		if run != nil && sk != nil && run.Value.String() == "" && sk.Value.String() == "" {
			if err := sk.Value.Set(skip); err != nil {
				panic(err)
			}
		}
	}
	return m.Run()
}
