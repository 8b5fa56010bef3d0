package crcache

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
)

func csr(name string, enabled ...corev1.ResourceName) *schedv1alpha1.ClusterScopedResource {
	f := map[corev1.ResourceName]bool{}
	for _, e := range enabled {
		f[e] = true
	}
	return &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: f}}
}

// TestCacheSharesOneFactoryAndFollowsEvents: both informers come from one factory and feed one
// NodeIndex, complete when returned, which keeps compiled values and follows creates, updates and
// deletes.
func TestCacheSharesOneFactoryAndFollowsEvents(t *testing.T) {
	// NewClientset tracks field management, which needs OpenAPI models this fake lacks for updates.
	client := accordfake.NewSimpleClientset(csr("n1", "example.com/memory"), &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}) //nolint:staticcheck // see above
	c := NewForClient(client)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); c.Shutdown() }()

	x, err := c.ClusterScopedResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	f1, reg1 := c.factory, c.csrReg
	if d := x.Get("n1"); d == nil || d.CR == nil || d.Offer == nil {
		t.Fatalf("the initial CR is missing or uncompiled: %+v", d)
	} else if _, missing := d.Offer.MissingResource([]corev1.ResourceName{"example.com/memory"}); missing {
		t.Fatal("the compiled offer does not enable example.com/memory")
	}
	metrics, err := c.NodeMetrics(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.ClusterScopedResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.factory != f1 || c.csrReg != reg1 || metrics != x || again != x {
		t.Fatal("a second request built a second factory, handler or index")
	}
	if d := x.Get("n1"); d == nil || d.Metric == nil || d.Load == nil {
		t.Fatalf("the initial NodeMetric is missing or uncompiled: %+v", d)
	}

	if _, err := client.SchedulingV1alpha1().ClusterScopedResources().Update(ctx, csr("n1", "example.com/ssd"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SchedulingV1alpha1().ClusterScopedResources().Create(ctx, csr("n2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.SloV1alpha1().NodeMetrics().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		d1, d2 := x.Get("n1"), x.Get("n2")
		if d1 == nil || d1.Offer == nil || d2 == nil || d2.CR == nil {
			return false, nil
		}
		_, ssd := d1.Offer.MissingResource([]corev1.ResourceName{"example.com/ssd"})
		return !ssd && d1.Metric == nil && d1.Load == nil, nil
	})
	if err != nil {
		t.Fatalf("the index did not follow the events: %v", err)
	}
}

func TestToClusterScopedResource(t *testing.T) {
	typed := csr("n1", "cpu")
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		t.Fatal(err)
	}
	for name, obj := range map[string]any{"typed": typed, "unstructured": &unstructured.Unstructured{Object: raw}} {
		got, err := ToClusterScopedResource(obj)
		if err != nil || got == nil || got.Name != "n1" || !got.Spec.ResourcesFilter["cpu"] {
			t.Errorf("%s: got %+v, %v", name, got, err)
		}
	}
	if got, err := ToClusterScopedResource(nil); got != nil || err != nil {
		t.Errorf("nil: got %v, %v", got, err)
	}
	if _, err := ToClusterScopedResource(&corev1.Pod{}); err == nil {
		t.Error("a Pod converted without error")
	}
}

func TestAwaitResourceVersion(t *testing.T) {
	calls := 0
	ok := AwaitResourceVersion("10", time.Second, func() (string, bool) {
		calls++
		if calls < 3 {
			return "9", true
		}
		return "11", true
	})
	if !ok || calls != 3 {
		t.Fatalf("ok=%v after %d calls, want true after 3", ok, calls)
	}
	if AwaitResourceVersion("10", 20*time.Millisecond, func() (string, bool) { return "", false }) {
		t.Fatal("an absent object counted as caught up")
	}
}

// CaughtUp holds while the NodeIndex holds the very objects the CR informers' stores hold; a store
// ahead of the index (another handler of the informer runs before the index's: a changed CR, a
// deleted NodeMetric) is not caught up, and AwaitCaughtUp waits for the index's handler, gives up
// at its timeout otherwise.
func TestCaughtUp(t *testing.T) {
	client := accordfake.NewSimpleClientset(csr("n1", "example.com/memory"), &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}) //nolint:staticcheck // see TestCacheSharesOneFactoryAndFollowsEvents
	c := NewForClient(client)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); c.Shutdown() }()
	if _, err := c.ClusterScopedResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NodeMetrics(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if !c.AwaitCaughtUp(10 * time.Second) {
		t.Fatal("not caught up after the initial lists")
	}
	crStore := c.factory.Scheduling().V1alpha1().ClusterScopedResources().Informer().GetStore()
	if err := crStore.Update(csr("n1", "example.com/ssd")); err != nil {
		t.Fatal(err)
	}
	if c.CaughtUp() || c.AwaitCaughtUp(20*time.Millisecond) {
		t.Fatal("caught up though the index has not been given the CR the informer's store holds")
	}
	// The event reaches the index (and the store, with the same object).
	if _, err := client.SchedulingV1alpha1().ClusterScopedResources().Update(ctx, csr("n1", "example.com/ssd"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !c.AwaitCaughtUp(10 * time.Second) {
		t.Fatal("not caught up once the index had the CR")
	}
	metricStore := c.factory.Slo().V1alpha1().NodeMetrics().Informer().GetStore()
	old, _, _ := metricStore.GetByKey("n1")
	if err := metricStore.Delete(old); err != nil {
		t.Fatal(err)
	}
	if c.CaughtUp() {
		t.Fatal("caught up though the index still holds a NodeMetric the informer's store no longer does")
	}
}
