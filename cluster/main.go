// Command cluster explores protocheck's protocols as Apache Beam
// pipelines, with check explore's flags, output and exit codes:
//
//	go run . explore PROTOCOL/VARIANT [key=value ...] [--runner prism|flink|spark|dataflow|universal] [--endpoint HOST:PORT] [--temp DIR]
//
// The same binary is the workers' program on a cluster: the runner
// starts it with Beam's worker flags, and beam.Init then runs the SDK
// harness and never returns.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/protocheck/protocheck/cluster/beamrun"
	"github.com/protocheck/protocheck/cluster/command"
)

func main() {
	// Flags before the subcommand are Beam's (a worker's); the
	// subcommand parses its own and Beam's options after it.
	flag.Parse()
	beamrun.Quiet(slog.LevelWarn)
	beam.Init()
	cleanup, err := beamrun.PrivateTemp()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", command.Name, err)
		os.Exit(2)
	}
	code := command.Main(flag.Args(), os.Stdout, os.Stderr)
	cleanup()
	os.Exit(code)
}
