package metricsource

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
)

func TestResourceMetrics(t *testing.T) {
	ctx := context.Background()
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	// The fake's tracker would file these under the kinds' guessed plurals; the API's resources
	// are "nodes" and "pods".
	c := metricsfake.NewSimpleClientset()
	gv := metricsv1beta1.SchemeGroupVersion
	add := func(resource string, obj runtime.Object, ns string) {
		if err := c.Tracker().Create(gv.WithResource(resource), obj, ns); err != nil {
			t.Fatal(err)
		}
	}
	add("nodes", &metricsv1beta1.NodeMetrics{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Usage: rl("1500m", "2Gi")}, "")
	for _, pm := range []*metricsv1beta1.PodMetrics{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Containers: []metricsv1beta1.ContainerMetrics{
		{Name: "a", Usage: rl("100m", "100Mi")}, {Name: "b", Usage: rl("250m", "50Mi")}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "partial"}, Containers: []metricsv1beta1.ContainerMetrics{
			{Name: "a", Usage: rl("100m", "100Mi")}, {Name: "b", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
	} {
		add("pods", pm, pm.Namespace)
	}
	rm := NewResourceMetrics(c)
	nodes, err := rm.NodeUsages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := MilliValues(nodes["n1"].Usage, corev1.ResourceCPU); !ok || m[corev1.ResourceCPU] != 1500 {
		t.Fatalf("n1 = %v", nodes["n1"])
	}
	p, err := rm.PodUsage(ctx, "ns", "p")
	if err != nil {
		t.Fatal(err)
	}
	m, ok := MilliValues(p.Usage, corev1.ResourceCPU, corev1.ResourceMemory)
	if !ok || m[corev1.ResourceCPU] != 350 || m[corev1.ResourceMemory] != 150*(1<<20)*1000 {
		t.Fatalf("pod usage = %v", p.Usage)
	}
	// A resource one container does not report is absent, not understated.
	partial, err := rm.PodUsage(ctx, "ns", "partial")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := partial.Usage[corev1.ResourceMemory]; ok {
		t.Fatalf("memory reported by one container of two must be absent: %v", partial.Usage)
	}
	if _, err := rm.PodUsage(ctx, "ns", "missing"); err == nil {
		t.Fatal("want an error for a pod without metrics")
	}
	all, err := rm.PodUsages(ctx, "")
	if err != nil || len(all) != 2 || all[types.NamespacedName{Namespace: "ns", Name: "p"}].Usage == nil {
		t.Fatalf("PodUsages = %v, %v", all, err)
	}
}
