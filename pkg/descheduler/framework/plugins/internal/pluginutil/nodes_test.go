package pluginutil

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestCycleNodes(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	add := func(name, zone string) {
		if err := indexer.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": zone}}}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(c *CycleNodes) []string {
		nodes, err := c.List()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range nodes {
			out = append(out, n.Name)
		}
		slices.Sort(out)
		return out
	}
	add("a", "1")
	add("b", "2")
	c := NewCycleNodes(corelisters.NewNodeLister(indexer), labels.SelectorFromSet(labels.Set{"zone": "1"}))

	// Outside a cycle every List reads the lister.
	if got := names(c); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("outside a cycle: %v, want [a] (the selector's nodes)", got)
	}
	add("c", "1")
	if got := names(c); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("outside a cycle, after a node was added: %v, want [a c]", got)
	}

	// Inside a cycle the first List's answer stands until End.
	c.Begin()
	if got := names(c); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("first List of the cycle: %v", got)
	}
	add("d", "1")
	if got := names(c); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("later in the cycle: %v, want the cycle's list [a c]", got)
	}
	c.End()
	if got := names(c); !slices.Equal(got, []string{"a", "c", "d"}) {
		t.Fatalf("after the cycle: %v, want [a c d]", got)
	}

	// A new cycle lists afresh.
	c.Begin()
	add("e", "1")
	if got := names(c); !slices.Equal(got, []string{"a", "c", "d", "e"}) {
		t.Fatalf("next cycle: %v, want [a c d e]", got)
	}
	if NewCycleNodes(corelisters.NewNodeLister(indexer), nil).sel.String() != labels.Everything().String() {
		t.Error("a nil selector must select every node")
	}
}
