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
// does): the Cache's own object where it holds the same resourceVersion, a converted one otherwise.
// The hints' conversion takes those objects, and no informer is started for NodeMetrics, which no
// plugin asked for.
func TestTypeEventInformers(t *testing.T) {
	in := csr("n1", "example.com/memory")
	in.UID, in.ResourceVersion = "uid-n1", "7"
	in.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	// n2 at a newer resourceVersion than the Cache's.
	in2 := csr("n2", "example.com/memory")
	in2.UID, in2.ResourceVersion = "uid-n2", "9"
	cached2 := in2.DeepCopy()
	cached2.ResourceVersion = "8"
	var objs []runtime.Object
	for _, o := range []*schedv1alpha1.ClusterScopedResource{in, in2} {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: content}
		u.SetAPIVersion(schedv1alpha1.SchemeGroupVersion.String())
		u.SetKind("ClusterScopedResource")
		objs = append(objs, u)
	}
	csrGVR, _ := schema.ParseResourceArg(ClusterScopedResourceResource)
	nmGVR, _ := schema.ParseResourceArg(NodeMetricResource)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		*csrGVR: "ClusterScopedResourceList", *nmGVR: "NodeMetricList",
	}, objs...)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	informer := factory.ForResource(*csrGVR).Informer() // as kube-scheduler does for the hint's event

	c := NewForClient(accordfake.NewSimpleClientset(in.DeepCopy(), cached2)) //nolint:staticcheck // as TestCacheSharesOneFactoryAndFollowsEvents
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer func() { cancel(); c.Shutdown() }()
	x, err := c.ClusterScopedResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	cached := func(name string) *schedv1alpha1.ClusterScopedResource {
		if d := x.Get(name); d != nil {
			return d.CR
		}
		return nil
	}
	// The Cache's own informer drops managedFields too.
	if own := cached("n1"); own == nil || own.ManagedFields != nil {
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
	typed := func(name string) *schedv1alpha1.ClusterScopedResource {
		item, _, _ := informer.GetStore().GetByKey(name)
		got, ok := item.(*schedv1alpha1.ClusterScopedResource)
		if !ok {
			t.Fatalf("store holds a %T for %s, want a typed ClusterScopedResource", item, name)
		}
		if got.Name != name || !got.Spec.ResourcesFilter["example.com/memory"] || got.ManagedFields != nil {
			t.Fatalf("converted object %+v", got)
		}
		return got
	}
	got := typed("n1")
	if got != cached("n1") {
		t.Error("n1 is at the Cache's resourceVersion: the dynamic informer must hold the Cache's object, not a second copy")
	}
	if got2 := typed("n2"); got2 == cached("n2") || got2.ResourceVersion != "9" {
		t.Errorf("n2 is newer than the Cache's copy: want it converted, got resourceVersion %s", got2.ResourceVersion)
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

// TestTypeEventInformersReservations: once the Reservation plugin asked the Cache for Reservations,
// the scheduler's dynamic informer for them keeps the Cache's typed object (same namespace, name and
// resourceVersion) instead of nested maps.
func TestTypeEventInformersReservations(t *testing.T) {
	in := &schedv1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r1", UID: "uid-r1", ResourceVersion: "3"},
		Spec: schedv1alpha1.ReservationSpec{Owners: []schedv1alpha1.ReservationOwner{{Pod: &schedv1alpha1.ReservationPodOwner{Name: "web-0"}}}}}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion(schedv1alpha1.SchemeGroupVersion.String())
	u.SetKind("Reservation")
	gvr, _ := schema.ParseResourceArg(ReservationResource)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{*gvr: "ReservationList"}, u)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	informer := factory.ForResource(*gvr).Informer()

	c := NewForClient(accordfake.NewSimpleClientset(in.DeepCopy())) //nolint:staticcheck // as TestCacheSharesOneFactoryAndFollowsEvents
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer func() { cancel(); c.Shutdown() }()
	if _, err := c.Reservations(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.TypeEventInformers(factory); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the dynamic informer did not sync")
	}
	item, _, _ := informer.GetStore().GetByKey("ns/r1")
	got, ok := item.(*schedv1alpha1.Reservation)
	if !ok {
		t.Fatalf("store holds a %T, want a typed Reservation", item)
	}
	own, _, _ := c.ReservationInformer().Informer().GetStore().GetByKey("ns/r1")
	if got != own {
		t.Error("r1 is at the Cache's resourceVersion: the dynamic informer must hold the Cache's object, not a second copy")
	}
}
