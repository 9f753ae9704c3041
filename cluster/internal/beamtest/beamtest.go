// Package beamtest is the TestMain of the packages whose tests run
// pipelines on Prism: Beam's logging quieted to warnings, a private
// temporary directory for the run's files, Beam initialised.
package beamtest

import (
	"log/slog"
	"os"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/protocheck/protocheck/cluster/beamrun"
)

// Main runs m's tests and exits with their code.
func Main(m *testing.M) {
	beamrun.Quiet(slog.LevelWarn)
	cleanup, err := beamrun.PrivateTemp()
	if err != nil {
		panic(err)
	}
	code := ptest.MainRet(m) // flag.Parse and beam.Init
	cleanup()
	os.Exit(code)
}
