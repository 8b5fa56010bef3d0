package server

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestTrimCachedObjects: the pods of the factory's pod informer (registered by kube-scheduler's
// Setup as its own filtered informer, here a plain one) share their common parts and lose their
// managedFields; its nodes lose their managedFields and share equal allocatable lists; a started
// informer refuses the transforms.
func TestTrimCachedObjects(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "web"}, ManagedFields: managed}}
	}
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ManagedFields: managed},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}
	}
	client := fake.NewClientset(pod("a"), pod("b"), node("n1"), node("n2"))
	f := informers.NewSharedInformerFactory(client, 0)
	pods, nodes := f.Core().V1().Pods().Informer(), f.Core().V1().Nodes().Informer()
	if err := trimCachedObjects(f); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.Start(ctx.Done())
	defer func() { cancel(); f.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, nodes.HasSynced) {
		t.Fatal("the informers did not sync")
	}

	a, _, _ := pods.GetStore().GetByKey("ns/a")
	b, _, _ := pods.GetStore().GetByKey("ns/b")
	pa, pb := a.(*corev1.Pod), b.(*corev1.Pod)
	if pa.ManagedFields != nil || reflect.ValueOf(pa.Labels).UnsafePointer() != reflect.ValueOf(pb.Labels).UnsafePointer() {
		t.Errorf("cached pods keep managedFields (%v) or do not share equal labels", pa.ManagedFields)
	}
	n1, _, _ := nodes.GetStore().GetByKey("n1")
	n2, _, _ := nodes.GetStore().GetByKey("n2")
	if n1.(*corev1.Node).ManagedFields != nil {
		t.Error("the cached node kept its managedFields")
	}
	if reflect.ValueOf(n1.(*corev1.Node).Status.Allocatable).UnsafePointer() != reflect.ValueOf(n2.(*corev1.Node).Status.Allocatable).UnsafePointer() {
		t.Error("the cached nodes do not share their equal allocatable lists")
	}
	if err := trimCachedObjects(f); err == nil {
		t.Error("trimCachedObjects on started informers: want an error")
	}
}
