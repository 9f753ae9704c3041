package jsoncombine

import (
	"strings"
	"testing"
)

type counts struct{ N map[string]int }

func (c *counts) merge(b *counts) {
	for k, v := range b.N {
		if c.N == nil {
			c.N = map[string]int{}
		}
		c.N[k] += v
	}
}

func TestMergeFoldsAndReportsMalformedInput(t *testing.T) {
	a := Encode(&counts{N: map[string]int{"x": 1}})
	b := Encode(&counts{N: map[string]int{"x": 2, "y": 3}})
	got, err := Merge(a, b, "count", (*counts).merge)
	if err != nil || got != `{"N":{"x":3,"y":3}}` {
		t.Errorf("Merge = %s, %v", got, err)
	}
	if _, err := Merge(a, "{", "count", (*counts).merge); err == nil || !strings.Contains(err.Error(), "a malformed count") {
		t.Errorf("malformed input: %v", err)
	}
}
