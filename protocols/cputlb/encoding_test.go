package cputlb

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/protocheck/protocheck/model"
	"github.com/protocheck/protocheck/model/modeltest"
)

// TestEncodingRoundTrips: along random executions of every variant, each
// at one size (one to three targets, one to three accesses), every state
// round-trips through its encoding and steps the same (successor and
// label) from a decoded copy as from itself, so the encoding misses
// nothing a step reads.
func TestEncodingRoundTrips(t *testing.T) {
	sizes := map[string]model.Params{
		"synced":           {"cpus": maxCPUs, "accesses": 2},
		"synced-no-bql":    {"cpus": 3, "accesses": 3},
		"non-synced":       {"cpus": 2, "accesses": 1},
		"synced-no-tb-end": {"cpus": 3, "accesses": 1},
		"no-kick":          {"cpus": maxCPUs, "accesses": 3},
	}
	for _, v := range Protocol.Variants {
		p := sizes[v.Name]
		m, _, err := Protocol.Instantiate(v.Name, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%s/cpus=%d,accesses=%d", v.Name, p["cpus"], p["accesses"]), func(t *testing.T) {
			modeltest.RoundTrip(t, m, 200)
		})
	}
}

// TestKeySize pins the size of an encoding: one byte per memory word
// (two, plus three per vCPU), 15 per vCPU and 5 for the global locks,
// condition variables and the observer: 61 bytes with three vCPUs.
func TestKeySize(t *testing.T) {
	for n := 2; n <= maxCPUs; n++ {
		m, _, err := Protocol.Instantiate("synced", model.Params{"cpus": n})
		if err != nil {
			t.Fatal(err)
		}
		want := (2 + 3*n) + cpuKeyLen*n + 5
		if got := len(m.Init().AppendKey(nil)); got != want {
			t.Errorf("cpus=%d: key of %d bytes, want %d", n, got, want)
		}
	}
}

// TestCopyFrom: copying a state (model.Copier, which the explorer uses
// instead of decoding for each step) into a state that held another gives
// the same encoding and variables, and shares no memory with the source:
// stepping the copy leaves the source as it was.
func TestCopyFrom(t *testing.T) {
	for _, p := range []model.Params{nil, {"cpus": 3, "accesses": 1}} {
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
