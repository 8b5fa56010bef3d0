package fake

import (
	"testing"
)

// TestClusterGuardsCachedPods: a plugin that writes to a pod it read from the informer (here
// through the Handle, as plugins read) is caught: Guard.Written names the pod, and Start's cleanup
// fails the test with it. The write is undone before the end so that this test passes.
func TestClusterGuardsCachedPods(t *testing.T) {
	c := NewCluster(Node("n1", nil, 4, 8), Pod("ns", "p", "n1", 100))
	h, err := NewHandle(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	pods, err := h.GetPodsAssignedToNode("n1", nil)
	if err != nil || len(pods) != 1 {
		t.Fatalf("pods %v, err %v", pods, err)
	}
	if w := c.Guard.Written(); len(w) > 0 {
		t.Fatalf("nothing written yet, Written = %v", w)
	}
	pods[0].OwnerReferences[0].Name = "written-by-a-plugin"
	if w := c.Guard.Written(); len(w) != 1 || w[0] != "*v1.Pod ns/p" {
		t.Fatalf("Written = %v, want [*v1.Pod ns/p]", w)
	}
	pods[0].OwnerReferences[0].Name = "rs"
}
