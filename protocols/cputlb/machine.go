package cputlb

import (
	"fmt"

	"github.com/protocheck/protocheck/model"
)

// src is the vCPU executing the broadcast invalidate; the others are
// targets.
const src = 0

type machine struct {
	cfg      config
	n        int
	accesses uint8
}

func cpuName(c int) string { return fmt.Sprintf("cpu%d", c) }

func (m *machine) Threads() []string {
	out := make([]string, m.n)
	for c := range out {
		out[c] = cpuName(c)
	}
	return out
}

// Init is the start of the interesting window: every vCPU has used page X
// (its TLB holds X->P), drained its work list and is about to call
// cpu_exec_start; no exclusive section is pending and no exit is requested.
func (m *machine) Init() model.State {
	s := &state{n: uint8(m.n), mem: model.NewMem(memNames(m.n)...)}
	s.mem.Init(wPTE, 1)
	for c := 0; c < m.n; c++ {
		s.cpu[c].tlb = true
	}
	return s
}

func (m *machine) Metrics() []string { return []string{"bql-acquisitions", "kicks"} }

// Enabled lists, per thread, its next step when that step can run: a lock
// step needs the mutex free, a thread in a wait set needs a wake-up first.
func (m *machine) Enabled(st model.State, buf []model.Choice) []model.Choice {
	s := st.(*state)
	for t := 0; t < m.n; t++ {
		v := &s.cpu[t]
		ok := true
		switch v.pc {
		case pcStartLock, pcEndLock, pcExclLock, pcEndExclLock:
			ok = s.listLock.Free()
		case pcStartRelock, pcExclIdleRelock:
			ok = !s.resumeCond.Waiting(t) && s.listLock.Free()
		case pcExclRelock:
			ok = !s.exclCond.Waiting(t) && s.listLock.Free()
		case pcHaltRelock:
			ok = !s.haltCond[t].Waiting(t) && s.cpuLock[t].Free()
		case pcClearExit, pcItemDone:
			ok = s.cpuLock[t].Free()
		case pcGuest:
			// The source's queue_work_on_cpu takes the target's cpu->lock.
			if c := m.lockingQueueStep(t, v); c >= 0 {
				ok = s.cpuLock[c].Free()
			}
		case pcItemBQL:
			ok = s.bql.Free()
		case pcEndSignal:
			for a := 0; a < s.exclCond.SignalAlts(); a++ {
				buf = append(buf, model.Choice{Thread: t, Alt: a})
			}
			continue
		}
		if ok {
			buf = append(buf, model.Choice{Thread: t})
		}
	}
	return buf
}

// Status names what a blocked thread waits for. A vCPU asleep on its
// halt_cond with an empty work list and its guest program finished is done:
// nothing is left for it to do until the next interrupt.
func (m *machine) Status(st model.State, t int) model.Status {
	s := st.(*state)
	v := &s.cpu[t]
	switch v.pc {
	case pcHaltRelock:
		if s.haltCond[t].Waiting(t) {
			if v.qlen == 0 && m.programDone(t, v) {
				return model.Status{Done: true}
			}
			return model.Status{WaitsFor: fmt.Sprintf("%s->halt_cond (halted with %d queued work item(s) and nobody left to kick it)", cpuName(t), v.qlen)}
		}
		return model.Status{WaitsFor: fmt.Sprintf("%s->lock (%s)", cpuName(t), s.cpuLock[t])}
	case pcStartLock, pcEndLock, pcExclLock, pcEndExclLock:
		return model.Status{WaitsFor: "qemu_cpu_list_lock (" + s.listLock.String() + ")"}
	case pcStartRelock, pcExclIdleRelock:
		if s.resumeCond.Waiting(t) {
			return model.Status{WaitsFor: "exclusive_resume (exclusive_idle: pending_cpus == 0)"}
		}
		return model.Status{WaitsFor: "qemu_cpu_list_lock (" + s.listLock.String() + ")"}
	case pcExclRelock:
		if s.exclCond.Waiting(t) {
			return model.Status{WaitsFor: fmt.Sprintf("exclusive_cond (start_exclusive: pending_cpus == 1, it is %d)", s.mem.Peek(wPending))}
		}
		return model.Status{WaitsFor: "qemu_cpu_list_lock (" + s.listLock.String() + ")"}
	case pcItemBQL:
		return model.Status{WaitsFor: "the BQL (" + s.bql.String() + ")"}
	case pcClearExit, pcItemDone:
		return model.Status{WaitsFor: fmt.Sprintf("%s->lock (%s)", cpuName(t), s.cpuLock[t])}
	case pcGuest:
		if c := m.lockingQueueStep(t, v); c >= 0 {
			return model.Status{WaitsFor: fmt.Sprintf("%s->lock (%s)", cpuName(c), s.cpuLock[c])}
		}
	}
	return model.Status{}
}

// lockingQueueStep is the target whose cpu->lock thread t's next step
// acquires in queue_work_on_cpu, or -1.
func (m *machine) lockingQueueStep(t int, v *vcpu) int {
	if t != src || v.guest != gQueue {
		return -1
	}
	return int(v.idx)
}

// Step applies choice c: thread c.Thread takes its next step.
func (m *machine) Step(st model.State, c model.Choice, x *model.Exec) model.State {
	s := st.Clone().(*state)
	t := c.Thread
	switch s.cpu[t].pc {
	case pcStart, pcStartCheck, pcStartLock, pcStartWaiter, pcStartRelock, pcStartRewait, pcStartUnlock:
		m.stepExecStart(s, t, x)
	case pcExec, pcGuest:
		m.stepExec(s, t, x)
	case pcEnd, pcEndCheck, pcEndLock, pcEndWaiter, pcEndSignal, pcEndUnlock:
		m.stepExecEnd(s, t, c.Alt, x)
	case pcClearExit, pcIdle, pcHaltRelock:
		m.stepIdle(s, t, x)
	case pcItemBQL, pcItemRun, pcItemUnBQL, pcItemDone:
		m.stepWork(s, t, x)
	default:
		m.stepExclusive(s, t, x)
	}
	return s
}
