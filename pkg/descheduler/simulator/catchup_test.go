package simulator

import (
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// An event-triggered controller predicts from its own handler of the ClusterScopedResource
// informer, which may run before the handler that feeds the Accord plugins' NodeIndex. Predict
// waits for the index to hold what the informer holds: the pod is judged on the node's new CR,
// whichever handler ran first. Before, it was judged on the old one (the node still fit, so the
// pod did not move) when the controller's handler ran first, and a seeded simulation did not
// reproduce its trace. The informer's store is set ahead of the index here, as when the
// controller's handler runs first; the index gets the event 10 ms later (synctest's clock).
func TestPredictWaitsForTheNodeIndex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := LoadConfig("../../../manifests/scheduler/config.yaml")
		if err != nil {
			t.Fatal(err)
		}
		withMem := func(n *corev1.Node) {
			n.Status.Allocatable["example.com/memory"] = resource.MustParse("10")
			n.Status.Capacity["example.com/memory"] = resource.MustParse("10")
		}
		cr := func(name string, enabled bool) *schedv1alpha1.ClusterScopedResource {
			return &schedv1alpha1.ClusterScopedResource{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: schedv1alpha1.ClusterScopedResourceSpec{
					ResourcesFilter: map[corev1.ResourceName]bool{"example.com/memory": enabled, corev1.ResourceCPU: true, corev1.ResourceMemory: true},
				},
			}
		}
		p := pod("p", "n1", "100m", func(p *corev1.Pod) {
			p.Spec.SchedulerName = "accord-scheduler"
			p.Spec.Containers[0].Resources.Requests["example.com/memory"] = resource.MustParse("1")
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"example.com/memory": resource.MustParse("1")}
		})
		// n1 has the most room, so the pod stays there while n1's CR offers the resource.
		e := newTestEnv(t, envOptions{config: cfg, quiet: true, accord: []runtime.Object{cr("n1", true), cr("n2", true)}},
			node("n1", "16", withMem), node("n2", "4", withMem), p)
		if pred := e.predict(p); pred.Moves() {
			t.Fatalf("with n1 offering the resource: prediction %+v, want the pod to stay on n1", pred)
		}
		off := cr("n1", false)
		if err := e.accordFactory.Scheduling().V1alpha1().ClusterScopedResources().Informer().GetStore().Update(off.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		var pred Prediction
		done := make(chan struct{})
		go func() {
			defer close(done)
			pred = e.predict(p)
		}()
		time.Sleep(10 * time.Millisecond)
		if _, err := e.accordClient.SchedulingV1alpha1().ClusterScopedResources().Update(e.ctx, off, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		<-done
		if !pred.Moves() || pred.Node != "n2" {
			t.Errorf("after n1's CR stopped offering the resource: prediction %+v, want the pod moved to n2", pred)
		}
		// kube-scheduler's metric recorders end at their next tick after ctx: the bubble waits.
		e.cancel()
		time.Sleep(time.Minute)
	})
}
