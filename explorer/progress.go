package explorer

import (
	"fmt"
	"runtime/debug"
	"time"
)

// progress prints one line a second to Options.Progress once a run has
// lasted a second. It needs Options.Clock; without one it does nothing.
type progress struct {
	opts  Options
	start time.Time
	last  time.Time
	tick  int
	meter Meter
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

func (p *progress) finish(s *Stats) { p.meter.Finish(s, p.opts.Clock, p.start) }

// afford says why the process cannot take need more bytes without
// reaching Options.MaxMemory, or "" when it can (or there is no limit):
// for what a search allocates after it has stopped checking its limits
// state by state (what names it: "the progress check"). Memory the
// collector has not yet returned counts only until it is returned: the
// measure is taken again after it is, before a "no".
func (p *progress) afford(need int64, what string) string {
	if p.opts.MaxMemory <= 0 {
		return ""
	}
	used := p.meter.Memory()
	if used+need > p.opts.MaxMemory {
		debug.FreeOSMemory()
		used = p.meter.Memory()
	}
	if used+need <= p.opts.MaxMemory {
		return ""
	}
	return fmt.Sprintf("max-memory=%d MiB: %s would need about %d MiB more (%d MiB in use)", p.opts.MaxMemory>>20, what, (need+1<<20-1)>>20, used>>20)
}

// progressBytes estimates what checking one progress property on a graph
// of n states allocates: the pending set and the cycle roots (a bit per
// state each), Tarjan's one int32 per state, and as much again for its
// stacks.
func progressBytes(n int64) int64 { return n/4 + 8*n }

// limit reports whether the search must stop now, why, and with which
// verdict: Options.Stop was closed (Interrupted), or the time or memory
// limit was reached (Bounded). states is the number of states so far.
func (p *progress) limit(states int) (string, Verdict) {
	if p.opts.Stop != nil {
		select {
		case <-p.opts.Stop:
			return fmt.Sprintf("interrupted after %d states", states), Interrupted
		default:
		}
	}
	if p.opts.TimeLimit > 0 && p.opts.Clock().Sub(p.start) >= p.opts.TimeLimit {
		return fmt.Sprintf("time-limit=%s: the search did not finish in time", p.opts.TimeLimit), Bounded
	}
	if used := p.meter.Memory(); p.opts.MaxMemory > 0 && used >= p.opts.MaxMemory {
		return fmt.Sprintf("max-memory=%d MiB: the search would need more memory (%d MiB in use at %d states)", p.opts.MaxMemory>>20, used>>20, states), Bounded
	}
	return "", ""
}
