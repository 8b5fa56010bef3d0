package reservation

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
)

var rsGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}

// collectorFor builds a collector over the reservations rs, node n1 and the ReplicaSet "web" (UID
// rs-1), at clock's time.
func collectorFor(t *testing.T, clock *clocktesting.FakeClock, rs ...*schedv1alpha1.Reservation) (*Collector, *accordfake.Clientset) {
	t.Helper()
	objs := make([]runtime.Object, len(rs))
	for i, r := range rs {
		objs[i] = r
	}
	accord := accordfake.NewSimpleClientset(objs...)
	af := accordinformers.NewSharedInformerFactory(accord, 0)
	kf := informers.NewSharedInformerFactory(k8sfake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}), 0)
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	web := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "rs-1"}}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(rsGVK, meta.RESTScopeNamespace)
	c, err := NewCollector(CollectorConfig{Accord: accord, Reservations: af.Scheduling().V1alpha1().Reservations(),
		Nodes: kf.Core().V1().Nodes().Informer(), Metadata: metadatafake.NewSimpleMetadataClient(scheme, web), Mapper: mapper,
		Retention: time.Minute, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	t.Cleanup(c.queue.ShutDown)
	af.Start(ctx.Done())
	kf.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("informers not synced")
	}
	return c, accord
}

func collected(name string, phase schedv1alpha1.ReservationPhase, node string) *schedv1alpha1.Reservation {
	return &schedv1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("u-" + name)},
		Spec:   schedv1alpha1.ReservationSpec{Owners: []schedv1alpha1.ReservationOwner{{Pod: &schedv1alpha1.ReservationPodOwner{Name: "web-1"}}}},
		Status: schedv1alpha1.ReservationStatus{Phase: phase, NodeName: node}}
}

// ownedBy makes r's workload the ReplicaSet web with uid.
func ownedBy(r *schedv1alpha1.Reservation, uid string) *schedv1alpha1.Reservation {
	r.Spec.Owners = append(r.Spec.Owners, schedv1alpha1.ReservationOwner{Controller: &schedv1alpha1.ReservationControllerOwner{Kind: "ReplicaSet", Name: "web", UID: types.UID(uid)}})
	r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: types.UID(uid)}}
	return r
}

func get(t *testing.T, accord *accordfake.Clientset, name string) (*schedv1alpha1.Reservation, error) {
	t.Helper()
	return accord.SchedulingV1alpha1().Reservations("ns").Get(context.Background(), name, metav1.GetOptions{})
}

// TestCollectorDeletesFinishedAfterRetention: a finished reservation is stamped with its completion
// time, kept for the retention, then deleted; a live one is left alone.
func TestCollectorDeletesFinishedAfterRetention(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(now)
	for _, phase := range []schedv1alpha1.ReservationPhase{schedv1alpha1.ReservationBound, schedv1alpha1.ReservationExpired, schedv1alpha1.ReservationFailed} {
		t.Run(string(phase), func(t *testing.T) {
			done := collected("done", phase, "n1")
			c, accord := collectorFor(t, clock, done, collected("live", schedv1alpha1.ReservationAvailable, "n1"))
			after, err := c.sync(context.Background(), cache.ObjectName{Namespace: "ns", Name: "done"})
			if err != nil || after != time.Minute {
				t.Fatalf("first sync: %v, again after %s; want the retention", err, after)
			}
			got, err := get(t, accord, "done")
			if err != nil || got.Status.CompletionTime == nil || !got.Status.CompletionTime.Time.Equal(now) || got.Status.Phase != phase {
				t.Fatalf("after the first sync %+v (%v), want the completion time stamped", got, err)
			}
			// The first sync's write reaches the informer as a watch event: wait for it, so that it
			// cannot land after, and undo, the copies this test puts in the informer's cache below.
			if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				cur, err := c.cfg.Reservations.Lister().Reservations("ns").Get("done")
				return err == nil && cur.Status.CompletionTime != nil, nil
			}); err != nil {
				t.Fatalf("the informer never saw the completion time stamped: %v", err)
			}
			// The informer's copy is stamped 40 s ago: 20 s left; then past the retention: deleted.
			got.Status.CompletionTime = &metav1.Time{Time: now.Add(-40 * time.Second)}
			if err := c.cfg.Reservations.Informer().GetIndexer().Update(got); err != nil {
				t.Fatal(err)
			}
			if after, err := c.sync(context.Background(), cache.ObjectName{Namespace: "ns", Name: "done"}); err != nil || after != 20*time.Second {
				t.Fatalf("within the retention: %v, again after %s; want 20s", err, after)
			}
			got.Status.CompletionTime = &metav1.Time{Time: now.Add(-time.Minute)}
			if err := c.cfg.Reservations.Informer().GetIndexer().Update(got); err != nil {
				t.Fatal(err)
			}
			if _, err := c.sync(context.Background(), cache.ObjectName{Namespace: "ns", Name: "done"}); err != nil {
				t.Fatal(err)
			}
			if _, err := get(t, accord, "done"); !apierrors.IsNotFound(err) {
				t.Fatalf("finished reservation past its retention: %v, want deleted", err)
			}
			if after, err := c.sync(context.Background(), cache.ObjectName{Namespace: "ns", Name: "live"}); err != nil || after != OwnerCheckPeriod {
				t.Fatalf("live reservation: %v, again after %s", err, after)
			}
			if got, err := get(t, accord, "live"); err != nil || got.Status.Phase != schedv1alpha1.ReservationAvailable {
				t.Fatalf("live reservation %+v (%v), want untouched", got, err)
			}
		})
	}
}

// TestCollectorFailsOnDeletedNode: an Available reservation whose node is gone fails at once, with
// the node named; one on an existing node does not.
func TestCollectorFailsOnDeletedNode(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	c, accord := collectorFor(t, clock, collected("gone", schedv1alpha1.ReservationAvailable, "n2"), collected("here", schedv1alpha1.ReservationAvailable, "n1"))
	for _, n := range []string{"gone", "here"} {
		if _, err := c.sync(context.Background(), cache.ObjectName{Namespace: "ns", Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := get(t, accord, "gone")
	if got.Status.Phase != schedv1alpha1.ReservationFailed || got.Status.Reason != ReasonNodeDeleted || !strings.Contains(got.Status.Message, "node n2") || got.Status.CompletionTime == nil {
		t.Errorf("reservation on a deleted node: %+v, want Failed/%s naming n2", got.Status, ReasonNodeDeleted)
	}
	if got, _ := get(t, accord, "here"); got.Status.Phase != schedv1alpha1.ReservationAvailable {
		t.Errorf("reservation on an existing node: %+v, want Available", got.Status)
	}
}

// TestCollectorFreesWhenTheWorkloadIsGone: a live reservation whose ReplicaSet no longer exists
// (or exists under another UID) fails with reason OwnerGone; one whose ReplicaSet exists holds.
func TestCollectorFreesWhenTheWorkloadIsGone(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	c, accord := collectorFor(t, clock,
		ownedBy(collected("orphan", schedv1alpha1.ReservationAvailable, "n1"), "rs-0"),
		ownedBy(collected("pending-orphan", schedv1alpha1.ReservationPending, ""), "rs-0"),
		ownedBy(collected("owned", schedv1alpha1.ReservationAvailable, "n1"), "rs-1"))
	for _, n := range []string{"orphan", "pending-orphan", "owned"} {
		if _, err := c.sync(context.Background(), cache.ObjectName{Namespace: "ns", Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"orphan", "pending-orphan"} {
		got, _ := get(t, accord, n)
		if got.Status.Phase != schedv1alpha1.ReservationFailed || got.Status.Reason != ReasonOwnerGone || !strings.Contains(got.Status.Message, "ReplicaSet web was deleted") {
			t.Errorf("%s: %+v, want Failed/%s naming ReplicaSet web", n, got.Status, ReasonOwnerGone)
		}
	}
	if got, _ := get(t, accord, "owned"); got.Status.Phase != schedv1alpha1.ReservationAvailable {
		t.Errorf("reservation of an existing ReplicaSet: %+v, want Available", got.Status)
	}
}

func TestCollectorRetentionBound(t *testing.T) {
	if _, err := NewCollector(CollectorConfig{Accord: accordfake.NewSimpleClientset(), Reservations: accordinformers.NewSharedInformerFactory(accordfake.NewSimpleClientset(), 0).Scheduling().V1alpha1().Reservations(),
		Nodes: informers.NewSharedInformerFactory(k8sfake.NewClientset(), 0).Core().V1().Nodes().Informer(), Retention: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "--reservation-retention=1ms: must be at least 1s") {
		t.Errorf("err = %v", err)
	}
}
