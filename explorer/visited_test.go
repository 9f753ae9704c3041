package explorer

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// The visited set agrees with a map on random keys of every length class,
// across shard growth: each key stored once gets the next index, find
// returns it, and key(i) and a keyView give its bytes back.
func TestVisitedMatchesAMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fp := rapid.Bool().Draw(t, "fingerprint")
		v := newVisited(fp, true)
		defer v.release()
		want := map[string]int32{}
		var order []string
		n := rapid.IntRange(1, 3000).Draw(t, "n")
		for i := 0; i < n; i++ {
			var key []byte
			if len(order) > 0 && rapid.IntRange(0, 3).Draw(t, "again") == 0 {
				key = []byte(order[rapid.IntRange(0, len(order)-1).Draw(t, "which")])
			} else {
				size := rapid.SampledFrom([]int{0, 1, 7, 8, 30, 200, 5000}).Draw(t, "size")
				key = []byte(fmt.Sprintf("%d:%0*d", size, size, i))
			}
			h := hashKey(key)
			p, idx, ok := v.find(key, h)
			if w, seen := want[string(key)]; seen != ok || ok && w != idx {
				t.Fatalf("key %q: find says (%d, %v), want (%d, %v)", key, idx, ok, w, seen)
			}
			if !ok {
				idx = int32(len(order))
				v.insert(p, key, h, idx)
				want[string(key)] = idx
				order = append(order, string(key))
			}
		}
		if fp {
			return
		}
		view := v.view()
		for i, k := range order {
			if string(v.key(int32(i))) != k || string(view.key(i)) != k {
				t.Fatalf("key(%d) = %q, view %q, want %q", i, v.key(int32(i)), view.key(i), k)
			}
		}
	})
}

// The longest key the set supports is stored and found, even as the first
// key of its arena chunk.
func TestVisitedStoresTheLongestKey(t *testing.T) {
	v := newVisited(false, false)
	defer v.release()
	key := make([]byte, maxKeyLen)
	for i := range key {
		key[i] = byte(i)
	}
	h := hashKey(key)
	p, _, ok := v.find(key, h)
	if ok {
		t.Fatal("found in an empty set")
	}
	v.insert(p, key, h, 0)
	if _, idx, ok := v.find(key, h); !ok || idx != 0 || string(v.key(0)) != string(key) {
		t.Fatalf("find = (%d, %v)", idx, ok)
	}
}
