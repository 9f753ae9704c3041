// Package beamrun runs the cluster commands' pipelines: on the runner the
// user chose, one at a time, each under a deadline, in a process whose
// logging and temporary files are set up for a command line tool.
package beamrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"   // gs:// for --temp
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // local paths
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"    // s3:// for --temp
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/flink"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/spark"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
)

// Runners are the runner names a command accepts: Prism in process (or
// a Prism job server with --endpoint), Flink and Spark through their
// portable job servers, Dataflow, and any portable job server.
var Runners = []string{"prism", "flink", "spark", "dataflow", "universal"}

// A Runner runs pipelines on one runner.
type Runner struct {
	Name string
	// Timeout bounds each pipeline (0: none): a worker that cannot start
	// or hangs would otherwise keep the driver waiting forever, as the
	// portable runners report no such failure to it.
	Timeout time.Duration
}

// one serialises the pipelines of a process: Prism's in-process job
// server is started lazily by the first one, with a data race, and its
// artifact service writes a map without a lock, so that concurrent jobs
// can crash the process. Parallelism comes from the runner instead.
var one sync.Mutex

// ErrTimeout is the error of a pipeline that did not finish in time.
var ErrTimeout = errors.New("the pipeline did not finish in time")

// Run runs p to completion, or until ctx is done or the timeout expires.
func (r *Runner) Run(ctx context.Context, p *beam.Pipeline) error {
	one.Lock()
	defer one.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var err error
		if r.Name == "prism" {
			_, err = prism.Execute(ctx, p)
		} else {
			_, err = beam.Run(ctx, r.Name, p)
		}
		done <- err
	}()
	var timer <-chan time.Time
	if r.Timeout > 0 {
		t := time.NewTimer(r.Timeout)
		defer t.Stop()
		timer = t.C
	}
	// The pipeline is left to the runner when this returns early: the
	// process is about to report and exit.
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-timer:
		return fmt.Errorf("%w: %s passed (--level-timeout); is a worker unable to start, or stuck?", ErrTimeout, r.Timeout)
	}
}

// DialTimeout bounds CheckEndpoint's connection to a job server.
const DialTimeout = 10 * time.Second

// CheckEndpoint connects once to the job server that runner name would
// use, at endpoint (HOST:PORT, Beam's --endpoint), and closes the
// connection: a server that refuses it or does not answer within
// DialTimeout is reported at once, naming the endpoint. Beam's portable
// runners would otherwise retry the connection silently until
// Runner.Timeout (--level-timeout, an hour by default) and then report a
// pipeline that did not finish. An empty endpoint (Prism in process,
// Dataflow's own API) and one that is not HOST:PORT (a gRPC target with a
// scheme other than dns) are left to the runner.
func CheckEndpoint(ctx context.Context, name, endpoint string) error {
	if endpoint == "" || name == "dataflow" {
		return nil
	}
	addr := strings.TrimPrefix(strings.TrimPrefix(endpoint, "dns:///"), "dns:")
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil
	}
	d := net.Dialer{Timeout: DialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("--endpoint %s: the %s job server cannot be reached: %w (is it running, and is this its address?)", endpoint, name, err)
	}
	return c.Close()
}

// Quiet sets the level of Beam's and Prism's logging, which goes through
// slog's default logger with several lines per job at INFO; a command
// uses Warn, so that stderr shows its progress. beam.Init sets the logger
// up from the level given here, so call Quiet before it.
func Quiet(level slog.Level) {
	beamlog.LogLevel = strings.ToLower(level.String())
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
}

// PrivateTemp points TMPDIR at a private directory for the life of the
// process and returns what removes it: each loopback job leaves an empty
// file in os.TempDir() that nothing removes. Call it after beam.Init,
// which does not return in a worker.
func PrivateTemp() (cleanup func(), err error) {
	tmp, err := os.MkdirTemp("", "protocheck-beam-")
	if err != nil {
		return nil, err
	}
	old, had := os.LookupEnv("TMPDIR")
	os.Setenv("TMPDIR", tmp)
	return func() {
		os.RemoveAll(tmp)
		if had {
			os.Setenv("TMPDIR", old)
		} else {
			os.Unsetenv("TMPDIR")
		}
	}, nil
}
