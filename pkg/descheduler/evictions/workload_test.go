package evictions

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func controlledBy(kind, apiVersion, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
}

// A ReplicaSet controlled by another kind than Deployment (an Argo Rollout) belongs to that
// controller's workload, whose replicas are its scale's, or else the sum of its ReplicaSets'; an
// owner of pods of an unknown kind is budgeted on its scale, or else on its live pods.
func TestWorkloadOfOtherControllers(t *testing.T) {
	rsA := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "ro-a", Namespace: "ns", UID: "rs-a",
		OwnerReferences: controlledBy("Rollout", "argoproj.io/v1alpha1", "ro", "rollout")}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3)}}
	rsB := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "ro-b", Namespace: "ns", UID: "rs-b",
		OwnerReferences: controlledBy("Rollout", "argoproj.io/v1alpha1", "ro", "rollout")}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2)}}
	objs := []runtime.Object{rsA, rsB}
	pod := func(name string, owner []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), OwnerReferences: owner}}
	}
	for _, p := range []*corev1.Pod{pod("a1", controlledBy("ReplicaSet", "apps/v1", "ro-a", "rs-a")), pod("a2", controlledBy("ReplicaSet", "apps/v1", "ro-a", "rs-a")),
		pod("b1", controlledBy("ReplicaSet", "apps/v1", "ro-b", "rs-b")),
		pod("c1", controlledBy("CloneSet", "apps.kruise.io/v1alpha1", "cs", "cloneset")), pod("c2", controlledBy("CloneSet", "apps.kruise.io/v1alpha1", "cs", "cloneset"))} {
		objs = append(objs, p)
	}
	for _, tc := range []struct {
		name              string
		scale             ScaleReader
		rollout, cloneSet int
	}{
		{"no scale reader", nil, 5, 2},
		{"scale read", func(_ context.Context, _ string, o metav1.OwnerReference) (int, bool) {
			return map[types.UID]int{"rollout": 8, "cloneset": 6}[o.UID], true
		}, 8, 6},
		{"scale unreadable", func(context.Context, string, metav1.OwnerReference) (int, bool) { return 0, false }, 5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			factory := informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
			src, err := NewInformerWorkloads(factory, tc.scale)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			factory.Start(ctx.Done())
			factory.WaitForCacheSync(ctx.Done())
			w, pods, ok := src.Workload(pod("b1", controlledBy("ReplicaSet", "apps/v1", "ro-b", "rs-b")))
			if !ok || w.Kind != "Rollout" || w.Name != "ro" || w.Replicas != tc.rollout || len(pods) != 3 {
				t.Errorf("Rollout's pod: %v replicas %d, %d pods, ok %v; want Rollout ns/ro, %d replicas, 3 pods", w, w.Replicas, len(pods), ok, tc.rollout)
			}
			w, pods, ok = src.Workload(pod("c1", controlledBy("CloneSet", "apps.kruise.io/v1alpha1", "cs", "cloneset")))
			if !ok || w.Kind != "CloneSet" || w.Replicas != tc.cloneSet || len(pods) != 2 {
				t.Errorf("CloneSet's pod: %v replicas %d, %d pods, ok %v; want %d replicas, 2 pods", w, w.Replicas, len(pods), ok, tc.cloneSet)
			}
		})
	}
}
