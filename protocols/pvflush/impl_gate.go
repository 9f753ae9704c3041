package pvflush

import (
	"errors"
	"fmt"
	"strings"

	"github.com/protocheck/protocheck/explorer/rt"
	"github.com/protocheck/protocheck/model"
)

// The gate works around two things explorer/rt cannot express and this
// protocol needs, so that a controlled run offers exactly the model's
// (thread, alt) pairs at every step.
//
//  1. Alternatives that change while a goroutine is parked. A vCPU's
//     choices (its program's next step, access, take the IPI, be
//     preempted...) depend on other goroutines: an initiator's send adds
//     "take the IPI", another vCPU's preemption may use up the shared
//     budget and remove "be preempted". rt.Env.Choose fixes its count
//     when the goroutine parks.
//  2. Waiting for a condition that another goroutine sets inside one of
//     its Choose steps. An initiator's csd_lock_wait is blocked until the
//     ack, which the target gives in an alternative of its Choose; an rt
//     Mutex or Cond would need a second scheduling point in the target's
//     step. The same holds for a vCPU with nothing to do (every access
//     done, no preemption left) that an IPI may still wake, and for the
//     RCU-sched grace period, which waits for walkers to leave.
//
// So the code parks at an ordinary rt point (Choose with maxActions
// alternatives, or a Yield) and publishes in the gate how many of them are
// offered now (0: blocked), computed from its own state; Guided's strategy
// adapter drops the others before the wrapped strategy picks, and ends the
// run when every goroutine left is blocked (done, or a deadlock). What rt
// would need instead: a Choose whose count is re-evaluated at every
// decision (0 = not enabled), e.g. Env.ChooseFunc(label, func() int), and
// a goroutine state "done unless woken" that ends a run without a
// deadlock report, as the model's Exec.Done does.
type gate struct {
	at []gatePoint // by thread id
}

// gatePoint is where a goroutine is parked, when it is a gated point.
type gatePoint struct {
	alts  func() int    // alternatives offered now; nil: not a gated point
	waits func() string // why it cannot go on when alts() == 0; "" when done
}

// errQuiescent ends a guided run in which no goroutine can step; the
// adapter's End turns it into a clean end or a deadlock.
var errQuiescent = errors.New("pvflush: every goroutine left is blocked at a gated point")

// link connects a Guided implementation's runs to its strategy adapter:
// the body of each controlled run stores the run's gate here before any
// step, and the adapter reads it at every decision. Both happen on the
// goroutine holding rt's baton, so no lock is needed; one link serves one
// sequence of runs at a time.
type link struct{ g *gate }

// Guided returns the implementation together with a strategy adapter bound
// to it: a controlled run of the implementation under adapt(s) offers s
// exactly the choices the model enables at each step (see gate), and ends
// when the model's run would. Under a plain strategy (Impl, or this
// implementation without the adapter) vCPUs offer up to maxActions
// alternatives, an alternative not offered is a no-op step, and vCPU0's
// csd_lock_wait spins: enough to replay a model trace, not to match the
// model's choices. Use one pair for one sequence of runs at a time.
func Guided() (im *rt.Impl, adapt func(rt.Strategy) rt.Strategy) {
	l := &link{}
	im = &rt.Impl{
		Variants: implVariants(),
		New: func(variant string, p model.Params) (rt.Body, error) {
			return newBody(variant, p, l)
		},
	}
	return im, func(s rt.Strategy) rt.Strategy { return &guided{inner: s, l: l} }
}

// guided is the strategy adapter of Guided.
type guided struct {
	inner rt.Strategy
	l     *link
	buf   []model.Choice
}

func (s *guided) Begin() error {
	s.l.g = nil
	return s.inner.Begin()
}

func (s *guided) Pick(p *rt.Point) (model.Choice, error) {
	g := s.l.g
	if g == nil {
		return s.inner.Pick(p)
	}
	s.buf = s.buf[:0]
	thread, offered := -1, 0
	for _, c := range p.Enabled {
		if c.Thread != thread {
			thread, offered = c.Thread, -1
			if c.Thread < len(g.at) && g.at[c.Thread].alts != nil {
				offered = g.at[c.Thread].alts()
			}
		}
		if offered < 0 || c.Alt < offered {
			s.buf = append(s.buf, c)
		}
	}
	if len(s.buf) == 0 {
		return model.Choice{}, errQuiescent
	}
	q := *p
	q.Enabled = s.buf
	return s.inner.Pick(&q)
}

func (s *guided) End(r *rt.Run) error {
	if errors.Is(r.Err, errQuiescent) {
		r.Err = nil
		if msg := s.blocked(r); msg != "" {
			r.Violation = &model.Violation{Property: model.Deadlock, Message: msg}
		}
	}
	return s.inner.End(r)
}

// blocked describes the goroutines that are blocked and not done, as a
// deadlock report, or returns "" when all of them are done.
func (s *guided) blocked(r *rt.Run) string {
	g := s.l.g
	if g == nil {
		return ""
	}
	var parts []string
	for _, p := range g.at {
		if p.waits != nil {
			if w := p.waits(); w != "" {
				parts = append(parts, w)
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("no goroutine can run after %d steps: %s", len(r.Steps), strings.Join(parts, "; "))
}

func (s *guided) String() string { return "guided(" + s.inner.String() + ")" }
