package informertransform

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/tools/cache"
)

func sharerNode(name, memory string) *corev1.Node {
	list := func() corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse(memory),
			corev1.ResourcePods: resource.MustParse("110")}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Status: corev1.NodeStatus{Capacity: list(), Allocatable: list(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

// TestNodeSharerKeepsEverything: a node comes out of the transform equal to what went in but for
// its managedFields; a tombstone and another kind of object pass unchanged.
func TestNodeSharerKeepsEverything(t *testing.T) {
	var _ cache.TransformFunc = NewNodeSharer().Transform
	s := NewNodeSharer()
	for i := range 2 { // the second node takes the shared copies
		node := sharerNode("n1", "32Gi")
		want := node.DeepCopy()
		want.ManagedFields = nil
		got, err := s.Transform(node)
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("node %d changed beyond managedFields:\n%s", i, diff.Diff(want, got))
		}
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "n1", Obj: sharerNode("n1", "32Gi")}
	if got, err := s.Transform(tomb); err != nil || !equality.Semantic.DeepEqual(got, tomb) {
		t.Errorf("a tombstone must pass unchanged: got %v, %v", got, err)
	}
	pod := fullPod()
	if got, _ := s.Transform(pod); got.(*corev1.Pod).ManagedFields != nil {
		t.Error("a pod must lose its managedFields")
	}
}

// TestNodeSharerSharesEqualLists: nodes with equal capacity and allocatable lists hold one copy of
// each; a node whose lists differ keeps its own; nodes without lists stay without.
func TestNodeSharerSharesEqualLists(t *testing.T) {
	s := NewNodeSharer()
	transform := func(n *corev1.Node) *corev1.Node {
		t.Helper()
		got, err := s.Transform(n)
		if err != nil {
			t.Fatal(err)
		}
		return got.(*corev1.Node)
	}
	a, b := transform(sharerNode("a", "32Gi")), transform(sharerNode("b", "32Gi"))
	if !same(a.Status.Capacity, b.Status.Capacity) || !same(a.Status.Allocatable, b.Status.Allocatable) {
		t.Error("nodes with equal lists hold copies of their own")
	}
	if !same(a.Status.Capacity, a.Status.Allocatable) {
		t.Error("a node's equal capacity and allocatable are two copies")
	}
	if same(a.Labels, b.Labels) {
		t.Error("the labels of two nodes were shared (they differ)")
	}
	c := transform(sharerNode("c", "64Gi"))
	if same(a.Status.Allocatable, c.Status.Allocatable) || c.Status.Allocatable.Memory().String() != "64Gi" {
		t.Errorf("a node with other lists took the shared ones: %v", c.Status.Allocatable)
	}
	// The same quantity in another format is another list (its String differs): kept as it came.
	d := sharerNode("d", "32Gi")
	d.Status.Allocatable[corev1.ResourceMemory] = *resource.NewQuantity(32<<30, resource.DecimalSI)
	if got := transform(d); same(a.Status.Allocatable, got.Status.Allocatable) {
		t.Error("a list whose quantities print differently was shared")
	}
	empty := transform(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "e"}})
	if empty.Status.Capacity != nil || empty.Status.Allocatable != nil {
		t.Errorf("a node without lists got some: %+v", empty.Status)
	}
}
