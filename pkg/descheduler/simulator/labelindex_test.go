package simulator

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// A tenant's selectors name the keys the index keeps pods by: past maxIndexedKeys, a selector whose
// equality requirements all name new keys is not narrowed, and one that also names an indexed key is
// narrowed by that key without indexing the new one.
func TestLabelIndexKeysBounded(t *testing.T) {
	x := newLabelIndex(nil)
	for i := range maxIndexedKeys {
		if _, ok := x.equalityPairs(labels.SelectorFromSet(labels.Set{fmt.Sprintf("k%02d", i): "v"}), nil); !ok {
			t.Fatalf("selector on key %d of %d not narrowed", i, maxIndexedKeys)
		}
	}
	version := x.keysVersion
	if _, ok := x.equalityPairs(labels.SelectorFromSet(labels.Set{"new": "v"}), nil); ok {
		t.Fatalf("a selector on a key past the %d indexed was narrowed", maxIndexedKeys)
	}
	got, ok := x.equalityPairs(labels.SelectorFromSet(labels.Set{"anew": "v", "k07": "w"}), nil)
	if !ok || len(got) != 1 || got[0] != x.pairHash("k07", "w") {
		t.Fatalf("a selector naming an indexed key (k07) and a new one: pairs %v, narrowed %v; want k07=w's", got, ok)
	}
	if len(x.keys) != maxIndexedKeys || x.keysVersion != version {
		t.Fatalf("%d keys indexed (version %d, was %d); want %d and no change", len(x.keys), x.keysVersion, version, maxIndexedKeys)
	}
}
