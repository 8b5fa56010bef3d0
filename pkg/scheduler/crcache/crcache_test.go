package crcache

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
)

func csr(name string, enabled ...corev1.ResourceName) *schedv1alpha1.ClusterScopedResource {
	f := map[corev1.ResourceName]bool{}
	for _, e := range enabled {
		f[e] = true
	}
	return &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: f}}
}

// TestCacheSharesOneFactoryAndFollowsEvents: both stores come from one factory, are complete when
// returned, keep compiled values, and follow creates, updates and deletes.
func TestCacheSharesOneFactoryAndFollowsEvents(t *testing.T) {
	// NewClientset tracks field management, which needs OpenAPI models this fake lacks for updates.
	client := accordfake.NewSimpleClientset(csr("n1", "example.com/memory"), &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}) //nolint:staticcheck // see above
	c := NewForClient(client)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); c.Shutdown() }()

	csrs, err := c.ClusterScopedResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	f1 := c.factory
	metrics, err := c.NodeMetrics(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.ClusterScopedResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.factory != f1 || again.m != csrs.m {
		t.Fatal("a second request built a second factory or store")
	}
	if got, offer := offerOf(csrs, "n1"); got == nil || offer == nil {
		t.Fatal("the initial CR is missing or uncompiled")
	} else if _, missing := offer.MissingResource([]corev1.ResourceName{"example.com/memory"}); missing {
		t.Fatal("the compiled offer does not enable example.com/memory")
	}
	if m, load := loadOf(metrics, "n1"); m == nil || load == nil {
		t.Fatal("the initial NodeMetric is missing or uncompiled")
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
		_, offer := offerOf(csrs, "n1")
		_, ssd := offer.MissingResource([]corev1.ResourceName{"example.com/ssd"})
		return !ssd && csrs.Get("n2") != nil && metrics.Get("n1") == nil, nil
	})
	if err != nil {
		t.Fatalf("the stores did not follow the events: %v", err)
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

// TestStoreWatch: a watcher first sees every stored object, then each Put and Remove, in order,
// with the derived value.
func TestStoreWatch(t *testing.T) {
	s := NewOfferStore()
	s.Put(csr("n1", "cpu"))
	type call struct {
		name     string
		present  bool
		compiled bool
	}
	var calls []call
	s.Watch(func(name string, obj *schedv1alpha1.ClusterScopedResource, derived any) {
		_, compiled := derived.(*constraints.Offer)
		calls = append(calls, call{name, obj != nil, compiled})
	})
	s.Put(csr("n2"))
	s.Remove("n1")
	s.Remove("absent")
	want := []call{{"n1", true, true}, {"n2", true, true}, {"n1", false, false}}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("calls = %v, want %v", calls, want)
	}
}

// TestReadMostlyStoreFollowsChanges: a read-mostly store answers from its copy between changes and
// never returns a value older than the last Put or Remove that returned.
func TestReadMostlyStoreFollowsChanges(t *testing.T) {
	s := NewOfferStore()
	s.Put(csr("n1", "cpu"))
	for range 2 { // the first read takes the copy, the second uses it
		if got := s.Get("n1"); got == nil || !got.Spec.ResourcesFilter["cpu"] {
			t.Fatalf("Get(n1) = %v", got)
		}
	}
	if s.m.snap.Load() == nil {
		t.Fatal("no copy taken after a read")
	}
	s.Put(csr("n1", "memory"))
	if got, offer := offerOf(s, "n1"); got == nil || !got.Spec.ResourcesFilter["memory"] {
		t.Fatalf("after an update: %v", got)
	} else if _, missing := offer.MissingResource([]corev1.ResourceName{"memory"}); missing {
		t.Fatal("after an update: the derived Offer is the old one")
	}
	s.Remove("n1")
	if got := s.Get("n1"); got != nil {
		t.Fatalf("after a remove: %v", got)
	}
}
