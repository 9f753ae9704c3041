package cputlb

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

// TestEncodingRoundTrips: along random executions of one variant per
// shape of the encoding (with and without each environment thread, one to
// three targets, one and two sources, one to three accesses, two dirty
// syncs), every state round-trips through its encoding and steps the same
// (successor and label) from a decoded copy as from itself, so the
// encoding misses nothing a step reads.
func TestEncodingRoundTrips(t *testing.T) {
	shapes := []struct {
		variant string
		p       model.Params
	}{
		{"synced-fixed", nil},
		{"synced-no-bql", model.Params{"cpus": 3, "accesses": 3, "migration": 2, "commit": 0}},
		{"synced-no-bql-fixed", model.Params{"sources": 2, "cpus": 3, "migration": 2}},
		{"commit-direct", model.Params{"sources": 2, "cpus": maxCPUs, "migration": 0}},
		{"no-kick", model.Params{"cpus": maxCPUs, "accesses": 3, "commit": 0}},
		{"non-synced", nil},
	}
	for _, sh := range shapes {
		m, params, err := Protocol.Instantiate(sh.variant, sh.p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%s/%v", sh.variant, params), func(t *testing.T) {
			modeltest.RoundTrip(t, m, 120)
		})
	}
}

// TestKeySize pins the size of an encoding: one byte per memory word (the
// PTEs and pending_cpus, three per vCPU, one more per vCPU for
// memory_dispatch with the main loop and for wi.done with migration, the
// dirty bit and D with migration, the map with the main loop), 18 per
// vCPU, 3 per environment thread and 6 for the global locks, condition
// variables and observers: 63 bytes at the default size.
func TestKeySize(t *testing.T) {
	for n := 2; n <= maxCPUs; n++ {
		for _, env := range []struct{ mig, commit int }{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
			m, _, err := Protocol.Instantiate("synced", model.Params{"cpus": n, "migration": env.mig, "commit": env.commit})
			if err != nil {
				t.Fatal(err)
			}
			words := 1 + 1 + 3*n + env.commit*(n+1) + env.mig*(n+2)
			want := words + cpuKeyLen*n + (env.mig+env.commit)*envKeyLen + globalKeyLen
			if got := len(m.Init().AppendKey(nil)); got != want {
				t.Errorf("cpus=%d migration=%d commit=%d: key of %d bytes, want %d", n, env.mig, env.commit, got, want)
			}
		}
	}
	m, _, _ := Protocol.Instantiate("synced", nil)
	if got := len(m.Init().AppendKey(nil)); got != 63 {
		t.Errorf("default: key of %d bytes, want 63", got)
	}
}

// TestCopyFrom: copying a state (model.Copier, which the explorer uses
// instead of decoding for each step) into a state that held another gives
// the same encoding and variables, and shares no memory with the source:
// stepping the copy leaves the source as it was.
func TestCopyFrom(t *testing.T) {
	for _, p := range []model.Params{nil, {"cpus": 3, "sources": 2, "migration": 0, "commit": 0}} {
		m, _, err := Protocol.Instantiate("synced", p)
		if err != nil {
			t.Fatal(err)
		}
		states := reachable(m, 3000)
		dst := m.Init().(*state)
		x := model.NewExec(len(m.Properties().Metrics))
		for i, s := range states {
			dst.CopyFrom(states[(i*7+3)%len(states)])
			dst.CopyFrom(s)
			key := s.AppendKey(nil)
			if got := dst.AppendKey(nil); !bytes.Equal(got, key) || model.Describe(dst) != model.Describe(s) {
				t.Fatalf("state %d: the copy is encoded %q, the state %q", i, got, key)
			}
			for th := range m.Threads() {
				dst.CopyFrom(s)
				x.Reset(th, -1)
				m.Step(dst, th, x)
				if got := s.AppendKey(nil); !bytes.Equal(got, key) {
					t.Fatalf("state %d: a step of %s on the copy changed the source", i, m.Threads()[th])
				}
			}
		}
	}
}

// TestDecodeRefusesCorruptEncodings: an encoding with a byte set to a
// value no state has (a pc, a work item or a lock holder out of range) or
// of the wrong length is an error, never a panic or a state with a
// different encoding.
func TestDecodeRefusesCorruptEncodings(t *testing.T) {
	m, _, err := Protocol.Instantiate("synced", model.Params{"cpus": 3})
	if err != nil {
		t.Fatal(err)
	}
	states := reachable(m, 500)
	s := m.Init()
	refused := 0
	for _, st := range states {
		key := st.AppendKey(nil)
		for i := range key {
			bad := append([]byte(nil), key...)
			bad[i] = 0xff
			if err := s.Decode(bad); err != nil {
				refused++
				continue
			}
			if got := s.AppendKey(nil); !bytes.Equal(got, bad) {
				t.Fatalf("byte %d set to 0xff: decoded to a state encoded %q, not %q", i, got, bad)
			}
		}
		if err := s.Decode(append(key, 0)); err == nil {
			t.Fatal("an encoding with a byte too many decodes")
		}
	}
	if refused == 0 {
		t.Fatal("no corrupt encoding was refused")
	}
}
