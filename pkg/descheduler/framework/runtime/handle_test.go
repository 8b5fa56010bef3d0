package runtime_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
)

// PodsAssignedToNode lists a node's pods by namespace and name, whatever order the index keeps
// them in (a set, iterated in map order): plugins sort them by priority, stably, so among pods
// they rank alike the caps go to the same pods from run to run. Before, the order changed from
// call to call and a seeded simulation did not reproduce its trace.
func TestPodsAssignedToNodeInNameOrder(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{fwruntime.NodeNameIndex: func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}})
	var want []string
	for _, ns := range []string{"a", "b"} {
		for i := range 20 {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p%02d", i)}, Spec: corev1.PodSpec{NodeName: "n1"}}
			if err := indexer.Add(p); err != nil {
				t.Fatal(err)
			}
			want = append(want, ns+"/"+p.Name)
		}
	}
	for range 10 {
		pods, err := fwruntime.PodsAssignedToNode(indexer, "n1", nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range pods {
			got = append(got, p.Namespace+"/"+p.Name)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("PodsAssignedToNode: %v, want %v", got, want)
		}
	}
}
