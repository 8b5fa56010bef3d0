package reservationfirst

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/evictionapi"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
)

type fakeHandle struct {
	framework.Handle
	client kubernetes.Interface
}

func (h fakeHandle) ClientSet() kubernetes.Interface { return h.client }

func testPod(scheduler string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"app": "db"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "set-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "src", SchedulerName: scheduler, TerminationGracePeriodSeconds: ptr.To[int64](10),
			Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}
}

// setup returns the plugin, whose reservations reach phase on node once read, and counters of
// evictions and reservation deletions.
func setup(t *testing.T, phase schedv1alpha1.ReservationPhase, node string) (*Plugin, *k8sfake.Clientset, *accordfake.Clientset) {
	t.Helper()
	pod := testPod(SchedulerName)
	kube := k8sfake.NewClientset(pod)
	accord := accordfake.NewClientset()
	accord.PrependReactor("create", "reservations", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*schedv1alpha1.Reservation).DeepCopy()
		r.Name = "db-0-abcde"
		return true, r, nil
	})
	accord.PrependReactor("get", "reservations", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, &schedv1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "db-0-abcde", Namespace: "ns"},
			Status: schedv1alpha1.ReservationStatus{Phase: phase, NodeName: node, Reason: "Unschedulable", Message: "0/2 nodes are available"}}, nil
	})
	accord.PrependReactor("delete", "reservations", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	h := fakeHandle{client: kube}
	direct, err := evictionapi.New(context.Background(), nil, h)
	if err != nil {
		t.Fatal(err)
	}
	return &Plugin{handle: h, accord: accord, direct: direct.(*evictionapi.EvictionAPI), schedulerNames: []string{SchedulerName}, timeout: 300 * time.Millisecond, poll: 10 * time.Millisecond, margin: TTLMargin}, kube, accord
}

func count(actions []k8stesting.Action, verb, resource, sub string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == sub {
			n++
		}
	}
	return n
}

func TestEvict(t *testing.T) {
	for _, tc := range []struct {
		name        string
		phase       schedv1alpha1.ReservationPhase
		node        string
		wantEvicted bool
	}{
		{"placed on the predicted node", schedv1alpha1.ReservationAvailable, "dst", true},
		{"cannot be placed", schedv1alpha1.ReservationFailed, "", false},
		{"placed on the pod's own node", schedv1alpha1.ReservationAvailable, "src", false},
		{"not placed in time", schedv1alpha1.ReservationPending, "", false},
		{"consumed by a sibling's replacement first", schedv1alpha1.ReservationBound, "dst", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, kube, accord := setup(t, tc.phase, tc.node)
			err := p.Evict(context.Background(), testPod(SchedulerName), framework.EvictOptions{PredictedNode: "dst"})
			evicted := count(kube.Actions(), "create", "pods", "eviction") == 1
			if evicted != tc.wantEvicted || (err == nil) != tc.wantEvicted {
				t.Fatalf("evicted %v, err %v; want evicted %v", evicted, err, tc.wantEvicted)
			}
			deleted := count(accord.Actions(), "delete", "reservations", "")
			if !tc.wantEvicted {
				if !errors.Is(err, ErrNotPlaced) {
					t.Errorf("error %v does not wrap ErrNotPlaced", err)
				}
				if deleted != 1 {
					t.Errorf("the unused reservation was deleted %d times, want once", deleted)
				}
			} else if deleted != 0 {
				t.Errorf("the reservation of an evicted pod was deleted")
			}
		})
	}
}

func TestEvictOtherSchedulerDirectly(t *testing.T) {
	p, kube, accord := setup(t, schedv1alpha1.ReservationFailed, "")
	pod := testPod("default-scheduler")
	if err := p.Evict(context.Background(), pod, framework.EvictOptions{}); err != nil {
		t.Fatal(err)
	}
	if count(kube.Actions(), "create", "pods", "eviction") != 1 || len(accord.Actions()) != 0 {
		t.Errorf("want a direct eviction and no reservation; kube %v accord %v", kube.Actions(), accord.Actions())
	}
}

func TestReservationFor(t *testing.T) {
	pod := testPod(SchedulerName)
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}},
		}}}}
	r := ReservationFor(pod, "dst", PlacementTimeout+TTLMargin)
	terms := r.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i, term := range terms {
		if len(term.MatchFields) != 1 || term.MatchFields[0].Operator != corev1.NodeSelectorOpIn || term.MatchFields[0].Values[0] != "dst" || len(term.MatchExpressions) != 1 {
			t.Errorf("term %d = %+v, want its expression and metadata.name In [dst]", i, term)
		}
	}
	if pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields != nil {
		t.Error("the pod's own affinity was modified")
	}
	if r.Spec.Template.Spec.NodeName != "" || r.Namespace != "ns" || r.GenerateName != "db-0-" || r.Labels[LabelPodUID] != "uid-1" {
		t.Errorf("unexpected reservation %+v", r.ObjectMeta)
	}
	if len(r.Spec.Owners) != 2 || r.Spec.Owners[0].Pod.Name != "db-0" || r.Spec.Owners[1].Controller.UID != "set-uid" {
		t.Errorf("owners = %+v", r.Spec.Owners)
	}
	if len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != "set-uid" {
		t.Errorf("owner references = %+v", r.OwnerReferences)
	}
	if want := 10*time.Second + PlacementTimeout + TTLMargin; r.Spec.TTL.Duration != want {
		t.Errorf("TTL %s, want %s", r.Spec.TTL.Duration, want)
	}
	// A day-long grace period does not hold room for a day: the TTL stops at the CRD's ceiling.
	long := testPod(SchedulerName)
	long.Spec.TerminationGracePeriodSeconds = ptr.To[int64](86400)
	if got := ReservationFor(long, "dst", PlacementTimeout+TTLMargin).Spec.TTL.Duration; got != schedv1alpha1.MaxReservationTTL {
		t.Errorf("TTL for a 24h grace period %s, want the ceiling %s", got, schedv1alpha1.MaxReservationTTL)
	}
	// Without a prediction: anywhere but the pod's node.
	r = ReservationFor(testPod(SchedulerName), "", PlacementTimeout+TTLMargin)
	f := r.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields
	if len(f) != 1 || f[0].Operator != corev1.NodeSelectorOpNotIn || f[0].Values[0] != "src" {
		t.Errorf("without a prediction, match fields %+v, want metadata.name NotIn [src]", f)
	}
}

// TestRequireReservationRefusesOtherSchedulers: PodMigration asks for the reservation path; a pod
// of a scheduler not in schedulerNames is then not evicted at all.
func TestRequireReservationRefusesOtherSchedulers(t *testing.T) {
	p, kube, accord := setup(t, schedv1alpha1.ReservationAvailable, "dst")
	err := p.Evict(context.Background(), testPod("default-scheduler"), framework.EvictOptions{PredictedNode: "dst", RequireReservation: true})
	if !errors.Is(err, ErrNotPlaced) || !strings.Contains(err.Error(), `"default-scheduler"`) {
		t.Fatalf("error %v, want ErrNotPlaced naming the scheduler", err)
	}
	if len(kube.Actions()) != 0 || len(accord.Actions()) != 0 {
		t.Errorf("want nothing written; kube %v accord %v", kube.Actions(), accord.Actions())
	}
}

// TestSchedulerNamesArg: a renamed profile takes the reservation path once named in schedulerNames.
func TestSchedulerNamesArg(t *testing.T) {
	p, kube, accord := setup(t, schedv1alpha1.ReservationAvailable, "dst")
	p.schedulerNames = []string{"accord-renamed"}
	if err := p.Evict(context.Background(), testPod("accord-renamed"), framework.EvictOptions{PredictedNode: "dst"}); err != nil {
		t.Fatal(err)
	}
	if count(accord.Actions(), "create", "reservations", "") != 1 || count(kube.Actions(), "create", "pods", "eviction") != 1 {
		t.Errorf("want a reservation then an eviction; kube %v accord %v", kube.Actions(), accord.Actions())
	}
}

func TestArgs(t *testing.T) {
	a := &ReservationFirstArgs{}
	a.SetDefaults()
	if !slices.Equal(a.SchedulerNames, []string{SchedulerName}) || a.PlacementTimeout.Duration != PlacementTimeout || a.TTLMargin.Duration != TTLMargin {
		t.Fatalf("defaults %+v", a)
	}
	if errs := a.Validate(field.NewPath("args")); len(errs) != 0 {
		t.Fatalf("defaults invalid: %v", errs)
	}
	bad := &ReservationFirstArgs{SchedulerNames: []string{"ok", "NOT OK", "ok"},
		PlacementTimeout: &metav1.Duration{}, TTLMargin: &metav1.Duration{Duration: time.Millisecond}}
	got := bad.Validate(field.NewPath("args")).ToAggregate().Error()
	for _, want := range []string{"args.schedulerNames[1]", "args.schedulerNames[2]: Duplicate", "args.placementTimeout", "args.ttlMargin"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors %q do not name %s", got, want)
		}
	}
}

// The plugin first looks at its reservation one poll interval after creating it, even when the
// placer was quicker: a look at once raced the placement (on synctest's clock both happen at one
// instant, so the pod was evicted then or a poll later, as the goroutines ran, and a seeded
// simulation did not reproduce its trace).
func TestFirstLookAfterAPollInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, kube, _ := setup(t, schedv1alpha1.ReservationAvailable, "dst")
		start := time.Now()
		if err := p.Evict(context.Background(), testPod(SchedulerName), framework.EvictOptions{PredictedNode: "dst"}); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != p.poll || count(kube.Actions(), "create", "pods", "eviction") != 1 {
			t.Fatalf("evicted after %s, want once after one poll interval (%s)", got, p.poll)
		}
	})
}
