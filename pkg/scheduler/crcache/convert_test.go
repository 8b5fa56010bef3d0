package crcache

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
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
		objs = append(objs, unstructuredOf(t, o, schedv1alpha1.SchemeGroupVersion.WithKind("ClusterScopedResource")))
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
	u := unstructuredOf(t, in, schedv1alpha1.SchemeGroupVersion.WithKind("Reservation"))
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

// TestCacheKeepsTheEventInformersObject: when the scheduler's dynamic informer delivers a
// NodeMetric's new resourceVersion before the Cache's informer does (it converts its own typed copy
// then), the Cache's informer, and so the NodeIndex, keeps that object instead of its own decoded
// one: one object per resourceVersion, whichever watch comes first. A resourceVersion the dynamic
// informer does not hold yet is kept as decoded.
func TestCacheKeepsTheEventInformersObject(t *testing.T) {
	nmGVR, _ := schema.ParseResourceArg(NodeMetricResource)
	toUnstructured := func(m *slov1alpha1.NodeMetric) *unstructured.Unstructured {
		return unstructuredOf(t, m, slov1alpha1.SchemeGroupVersion.WithKind("NodeMetric"))
	}
	v1 := metricObj("n1", "1")
	v1.UID = "uid-n1"
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{*nmGVR: "NodeMetricList"}, toUnstructured(v1))
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	informer := factory.ForResource(*nmGVR).Informer()
	typedClient := accordfake.NewSimpleClientset(v1.DeepCopy()) //nolint:staticcheck // as TestCacheSharesOneFactoryAndFollowsEvents
	c := NewForClient(typedClient)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer func() { cancel(); c.Shutdown() }()
	x, err := c.NodeMetrics(ctx, nil)
	if err != nil {
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
	held := func() *slov1alpha1.NodeMetric {
		item, _, _ := informer.GetStore().GetByKey("n1")
		m, _ := item.(*slov1alpha1.NodeMetric)
		return m
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}

	// Resource version 2 reaches the dynamic informer first: it converts its own copy.
	v2 := v1.DeepCopy()
	v2.ResourceVersion = "2"
	v2.Status.NodeUsage = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	if _, err := dyn.Resource(*nmGVR).Update(ctx, toUnstructured(v2), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the dynamic informer's resourceVersion 2", func() bool { m := held(); return m != nil && m.ResourceVersion == "2" })
	converted := held()
	if d := x.Get("n1"); d == nil || d.Metric == converted {
		t.Fatal("the Cache holds the dynamic informer's object before its own informer saw it")
	}
	// Then the Cache's informer: it keeps the dynamic informer's object.
	if _, err := typedClient.SloV1alpha1().NodeMetrics().Update(ctx, v2.DeepCopy(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the Cache's resourceVersion 2", func() bool { d := x.Get("n1"); return d != nil && d.Metric.ResourceVersion == "2" })
	if got := x.Get("n1").Metric; got != converted {
		t.Error("the Cache decoded resourceVersion 2 after the dynamic informer: want the dynamic informer's object, not a second copy")
	}
	if item, _, _ := c.factory.Slo().V1alpha1().NodeMetrics().Informer().GetStore().GetByKey("n1"); item != any(converted) {
		t.Error("the Cache's informer store does not hold the dynamic informer's object the index holds")
	}
	if load := x.Get("n1").Load; load == nil {
		t.Error("the adopted NodeMetric was not compiled")
	}

	// Resource version 3 reaches the Cache first: its own object, which the dynamic informer then
	// takes (TypeEventInformers' direction).
	v3 := v2.DeepCopy()
	v3.ResourceVersion = "3"
	if _, err := typedClient.SloV1alpha1().NodeMetrics().Update(ctx, v3.DeepCopy(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the Cache's resourceVersion 3", func() bool { return x.Get("n1").Metric.ResourceVersion == "3" })
	own := x.Get("n1").Metric
	if own == held() {
		t.Fatal("the Cache kept the dynamic informer's object for a resourceVersion that informer does not hold")
	}
	if _, err := dyn.Resource(*nmGVR).Update(ctx, toUnstructured(v3), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the dynamic informer's resourceVersion 3", func() bool { m := held(); return m != nil && m.ResourceVersion == "3" })
	if held() != own {
		t.Error("the dynamic informer converted resourceVersion 3, which the Cache held: want the Cache's object")
	}
}

// unstructuredOf is obj as a dynamic informer lists it: unstructured, with its apiVersion and kind.
func unstructuredOf(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u
}
