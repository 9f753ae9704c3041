package cputlb

import (
	"os"
	"testing"

	"github.com/protocheck/protocheck/internal/race"
)

// Under the race detector only the tests of the real implementation run
// (they start goroutines); the model's tests run without it.
func TestMain(m *testing.M) { os.Exit(race.Main(m, "^TestImpl")) }
