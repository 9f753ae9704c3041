package explorer

import (
	"fmt"
	"time"
)

// progress prints one line a second to Options.Progress once a run has
// lasted a second. It needs Options.Clock; without one it does nothing.
type progress struct {
	opts  Options
	start time.Time
	last  time.Time
	tick  int
}

func newProgress(o Options) *progress {
	p := &progress{opts: o}
	if o.Clock != nil {
		p.start = o.Clock()
		p.last = p.start
	}
	return p
}

// report is called often; it looks at the clock every 4096 calls.
func (p *progress) report(states, transitions int64, depth int, frontier int) {
	if p.opts.Clock == nil || p.opts.Progress == nil {
		return
	}
	if p.tick++; p.tick&4095 != 0 {
		return
	}
	now := p.opts.Clock()
	if now.Sub(p.last) < time.Second {
		return
	}
	p.last = now
	el := now.Sub(p.start)
	rate := float64(states) / el.Seconds()
	if p.opts.ProgressJSON {
		fmt.Fprintf(p.opts.Progress, `{"states":%d,"transitions":%d,"frontier":%d,"depth":%d,"states_per_second":%.0f,"elapsed_seconds":%.3f}`+"\n",
			states, transitions, frontier, depth, rate, el.Seconds())
		return
	}
	fmt.Fprintf(p.opts.Progress, "progress: %d states, %d transitions, frontier %d, depth %d, %.0f states/s, %s elapsed\n",
		states, transitions, frontier, depth, rate, el.Round(time.Second))
}

func (p *progress) finish(s *Stats) {
	if p.opts.Clock == nil {
		return
	}
	s.Elapsed = p.opts.Clock().Sub(p.start)
	if s.Elapsed > 0 {
		s.StatesPerSec = float64(s.States) / s.Elapsed.Seconds()
	}
}
