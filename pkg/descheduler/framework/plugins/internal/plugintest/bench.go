package plugintest

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
)

var everything = labels.Everything()

func sortNodes(nodes []*corev1.Node) {
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
}

// NewFromCaches returns an Env whose informer caches are filled directly with objs and crs, without
// going through the fake clientset's tracker or starting informers: the way to build 5000-node,
// 100k-pod clusters for benchmarks. Evictions still go to the fake clientset (the pods are not in
// its tracker, so use DryRun or expect Failed outcomes).
func NewFromCaches(t testing.TB, opts Options, objs []runtime.Object, crs []runtime.Object) *Env {
	t.Helper()
	c := fake.NewCluster()
	e := newEnv(t, c, opts)
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Node:
			err = c.Factory.Core().V1().Nodes().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			err = c.Factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *corev1.Namespace:
			err = c.Factory.Core().V1().Namespaces().Informer().GetIndexer().Add(o)
		default:
			t.Fatalf("NewFromCaches: unsupported %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range crs {
		var err error
		switch o.(type) {
		case *schedCSR:
			err = c.CRs.Scheduling().V1alpha1().ClusterScopedResources().Informer().GetIndexer().Add(o)
		case *sloNodeMetric:
			err = c.CRs.Slo().V1alpha1().NodeMetrics().Informer().GetIndexer().Add(o)
		default:
			t.Fatalf("NewFromCaches: unsupported %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return e
}

type (
	schedCSR      = schedv1alpha1.ClusterScopedResource
	sloNodeMetric = slov1alpha1.NodeMetric
)
