package reservation

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/frameworks"
)

// TestPlacerFailsAReservationWhoseNodeStopsFitting: a reservation placed on a node that then stops
// passing the profile's Filter for its pod (here a NoSchedule taint; in test/simulation the node's
// ClusterScopedResource) before an owner is placed there is Failed, reason NodeNoLongerFits: the
// reservation-first eviction that waits for it must not go (its replacement would find no place).
// A change that leaves the pod fitting (a label) keeps it Available, even on a node whose only
// free room is the reservation's own (the check does not count the reservation against itself).
func TestPlacerFailsAReservationWhoseNodeStopsFitting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("110")}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	r := &schedv1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{Name: "web-a-1", Namespace: "ns", UID: "uid-web-a-1", CreationTimestamp: metav1.NewTime(time.Now())},
		Spec: schedv1alpha1.ReservationSpec{Template: corev1.PodTemplateSpec{Spec: cpuSpec("1")},
			Owners: []schedv1alpha1.ReservationOwner{{Pod: &schedv1alpha1.ReservationPodOwner{Name: "web-a", UID: "web-a-uid"}}},
			TTL:    &metav1.Duration{Duration: time.Hour}},
	}
	kc := kubefake.NewClientset(node)
	ac := accordfake.NewSimpleClientset(r)
	f := informers.NewSharedInformerFactory(kc, 0)
	af := accordinformers.NewSharedInformerFactory(ac, 0)
	crs := crcache.NewForFactory(af, nil)
	rsvInf, err := crs.Reservations(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := latest.Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := cfg.Profiles[0]
	prof.Plugins.MultiPoint.Enabled = append(prof.Plugins.MultiPoint.Enabled, schedconfig.Plugin{Name: Name})
	reg, err := frameworks.Registry(frameworkruntime.Registry{Name: NewFactory(crs)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlacer(ctx, PlacerConfig{Profiles: []schedconfig.KubeSchedulerProfile{prof}, ComponentConfigVersion: cfg.APIVersion,
		Registry: reg, Client: kc, InformerFactory: f, Reservations: rsvInf, Ledger: LedgerOf(crs), Accord: ac, CRs: crs})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	af.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	status := func(want schedv1alpha1.ReservationPhase) *schedv1alpha1.Reservation {
		t.Helper()
		var cur *schedv1alpha1.Reservation
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			cur, err = ac.SchedulingV1alpha1().Reservations("ns").Get(ctx, r.Name, metav1.GetOptions{})
			return err == nil && cur.Status.Phase == want, nil
		}); err != nil {
			t.Fatalf("reservation not %s within 10s: %+v", want, cur.Status)
		}
		return cur
	}
	if got := status(schedv1alpha1.ReservationAvailable); got.Status.NodeName != "n1" {
		t.Fatalf("placed on %q, want n1", got.Status.NodeName)
	}
	update := func(change func(n *corev1.Node)) {
		t.Helper()
		n, err := kc.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(n)
		if _, err := kc.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update(func(n *corev1.Node) { n.Labels = map[string]string{"rack": "r1"} })
	// The label's recheck has run once the placer's queue is empty again.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		p.recheckMu.Lock()
		defer p.recheckMu.Unlock()
		return len(p.recheck) == 0 && p.queue.Len() == 0, nil
	}); err != nil {
		t.Fatal("the placer did not check the reservation again after the node's label changed")
	}
	if cur := status(schedv1alpha1.ReservationAvailable); cur.Status.Reason != ReasonPlaced {
		t.Fatalf("after a label change: %+v, want still Available (Placed)", cur.Status)
	}
	update(func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
	})
	if cur := status(schedv1alpha1.ReservationFailed); cur.Status.Reason != ReasonNodeNoLongerFits || cur.Status.NodeName != "n1" {
		t.Fatalf("after a NoSchedule taint: %+v, want Failed (%s) on n1", cur.Status, ReasonNodeNoLongerFits)
	}
}
