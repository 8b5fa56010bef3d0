package crdcheck

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestDiscover(t *testing.T) {
	d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	d.Resources = []*metav1.APIResourceList{{
		GroupVersion: "scheduling.accord.dev/v1alpha1",
		APIResources: []metav1.APIResource{{Name: "clusterscopedresources", Kind: "ClusterScopedResource"}},
	}}
	served, err := Discover(d)
	if err != nil {
		t.Fatal(err)
	}
	if !served.Serves(ClusterScopedResources()) || served.Serves(NodeMetrics()) {
		t.Fatalf("served = %v, want ClusterScopedResources only", served)
	}
	err = Require(served, NodeMetrics(), `plugin "LowNodeLoad" (profile "p")`)
	if !IsMissing(err) {
		t.Fatalf("Require = %v, want a MissingError", err)
	}
	for _, want := range []string{"nodemetrics.slo.accord.dev", `plugin "LowNodeLoad"`, "kubectl apply -f manifests/crds/"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	if err := Require(nil, NodeMetrics(), "x"); err != nil {
		t.Errorf("a nil Availability serves everything, got %v", err)
	}
}

// WaitForSync says, while it waits, which informer has not synced, and gives up at its deadline
// with an error that names it.
func TestWaitForSyncNamesWhatIsNotSynced(t *testing.T) {
	var reasons []string
	start := time.Now()
	err := WaitForSync(context.Background(), SyncOptions{
		Timeout: 300 * time.Millisecond, LogInterval: 100 * time.Millisecond, What: "test",
		OnWaiting: func(r string) { reasons = append(reasons, r) },
	}, nil,
		Informer{Name: "slo/v1alpha1.NodeMetric", HasSynced: func() bool { return false }},
		Informer{Name: "core/v1.Pod", HasSynced: func() bool { return true }})
	if err == nil || !strings.Contains(err.Error(), "slo/v1alpha1.NodeMetric") || strings.Contains(err.Error(), "core/v1.Pod") {
		t.Fatalf("err = %v, want one naming the NodeMetric informer only", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the wait took %s past a 300ms deadline", took)
	}
	if len(reasons) == 0 || !strings.Contains(reasons[0], "slo/v1alpha1.NodeMetric") {
		t.Fatalf("OnWaiting reasons = %q", reasons)
	}
	if err := WaitForSync(context.Background(), SyncOptions{Timeout: time.Second}, nil,
		Informer{Name: "ok", HasSynced: func() bool { return true }}); err != nil {
		t.Fatalf("synced informers: %v", err)
	}
}
