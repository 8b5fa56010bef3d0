package crcache

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
)

// TestTypeEventInformers: the scheduler's dynamic informer for ClusterScopedResources keeps typed
// objects without managedFields once a plugin asked the Cache for them (as the Cache's own informer
// does), the hints' conversion takes
// those objects, and no informer is started for NodeMetrics, which no plugin asked for.
func TestTypeEventInformers(t *testing.T) {
	in := csr("n1", "example.com/memory")
	in.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion(schedv1alpha1.SchemeGroupVersion.String())
	u.SetKind("ClusterScopedResource")
	csrGVR, _ := schema.ParseResourceArg(ClusterScopedResourceResource)
	nmGVR, _ := schema.ParseResourceArg(NodeMetricResource)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		*csrGVR: "ClusterScopedResourceList", *nmGVR: "NodeMetricList",
	}, u)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	informer := factory.ForResource(*csrGVR).Informer() // as kube-scheduler does for the hint's event

	c := NewForClient(accordfake.NewSimpleClientset(in.DeepCopy())) //nolint:staticcheck // as TestCacheSharesOneFactoryAndFollowsEvents
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer func() { cancel(); c.Shutdown() }()
	store, err := c.ClusterScopedResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The Cache's own informer drops managedFields too.
	if own, _ := OfferOf(store, "n1"); own == nil || own.ManagedFields != nil {
		t.Fatalf("the Cache's copy: %+v", own)
	}
	if err := c.TypeEventInformers(factory); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }() // the informers stop with ctx; Shutdown waits for them
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the dynamic informer did not sync")
	}
	items := informer.GetStore().List()
	if len(items) != 1 {
		t.Fatalf("store holds %d objects, want 1", len(items))
	}
	got, ok := items[0].(*schedv1alpha1.ClusterScopedResource)
	if !ok {
		t.Fatalf("store holds a %T, want a typed ClusterScopedResource", items[0])
	}
	if got.Name != "n1" || !got.Spec.ResourcesFilter["example.com/memory"] || got.ManagedFields != nil {
		t.Fatalf("converted object %+v", got)
	}
	if hinted, err := ToClusterScopedResource(cache.DeletedFinalStateUnknown{Key: "n1", Obj: got}); err != nil || hinted.Name != "n1" {
		t.Fatalf("ToClusterScopedResource of the stored object: %v, %v", hinted, err)
	}
	for _, a := range dyn.Actions() {
		if a.GetResource() == *nmGVR {
			t.Fatalf("NodeMetrics were %s, though no plugin asked for them", a.GetVerb())
		}
	}
	if err := c.TypeEventInformers(factory); err == nil {
		t.Fatal("typing a started informer succeeded; a started informer takes no transform")
	}
}
