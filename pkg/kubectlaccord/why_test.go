package kubectlaccord

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/loadaware"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/nodecrdresourcefit"
)

func TestWhyPending(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "u1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	msg := "0/3 nodes are available: 1 " + nodecrdresourcefit.MissingResourceReason("example.com/gpu") + ", 2 " +
		loadaware.OverThresholdReason(corev1.ResourceCPU) + ". preemption: not eligible."
	older := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e0", Namespace: "default"}, Reason: "FailedScheduling",
		InvolvedObject: corev1.ObjectReference{Name: "web-0", UID: "u1"}, Message: "an older message",
		LastTimestamp: metav1.NewTime(testNow.Add(-time.Minute))}
	latest := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "default"}, Reason: "FailedScheduling",
		InvolvedObject: corev1.ObjectReference{Name: "web-0", UID: "u1"}, Message: msg, LastTimestamp: metav1.NewTime(testNow)}
	mig := &schedv1alpha1.PodMigration{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "default"},
		Spec:   schedv1alpha1.PodMigrationSpec{PodName: "web-0"},
		Status: schedv1alpha1.PodMigrationStatus{Phase: schedv1alpha1.PodMigrationFailed, Reason: "Unschedulable", Message: "0/3 nodes are available"}}
	other := &schedv1alpha1.PodMigration{ObjectMeta: metav1.ObjectMeta{Name: "m2", Namespace: "default"}, Spec: schedv1alpha1.PodMigrationSpec{PodName: "web-1"}}
	res := &schedv1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "default"},
		Spec:   schedv1alpha1.ReservationSpec{Owners: []schedv1alpha1.ReservationOwner{{Pod: &schedv1alpha1.ReservationPodOwner{Name: "web-0"}}}},
		Status: schedv1alpha1.ReservationStatus{Phase: schedv1alpha1.ReservationFailed, Reason: "Unschedulable"}}

	code, out, errOut := runWith(t, []runtime.Object{pod, older, latest}, []runtime.Object{mig, other, res}, nil, "why", "web-0", "-n", "default")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"Pod default/web-0: Pending",
		"Scheduler: " + msg,
		"refused by NodeCRDResourceFit: node(s) do not enable resource example.com/gpu",
		"refused by LoadAware: node(s) are over their cpu usage threshold",
		"PodMigration m1: Failed (Unschedulable): 0/3 nodes are available",
		"Reservation r1: Failed (Unschedulable)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "m2") || strings.Contains(out, "older") {
		t.Errorf("output names another pod's migration or an older event:\n%s", out)
	}
	code, out, _ = runWith(t, []runtime.Object{pod, latest}, nil, nil, "why", "web-0", "-o", "json")
	var rep WhyReport
	if code != ExitOK || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Refusals) != 2 || rep.Descheduler != nil {
		t.Errorf("-o json: exit %d, %+v\n%s", code, rep, out)
	}
}

func TestWhyExitCodes(t *testing.T) {
	if code, _, errOut := runWith(t, nil, nil, nil, "why"); code != ExitUsage || !strings.Contains(errOut, "accepts 1 arg") {
		t.Errorf("no pod: exit %d, stderr %q; want %d", code, errOut, ExitUsage)
	}
	if code, _, errOut := runWith(t, nil, nil, nil, "why", "nope"); code != ExitError || !strings.Contains(errOut, `"nope" not found`) {
		t.Errorf("missing pod: exit %d, stderr %q; want %d", code, errOut, ExitError)
	}
}

// evictedFixture: web-a (controller rs1) was evicted off node-5 by NodeCRDResourceFit, the
// simulation predicting node-2; web-b, of the same ReplicaSet, is its replacement, on node-2.
func evictedFixture(t *testing.T) (gone decision.Decision, ev *corev1.Event, repl *corev1.Pod) {
	t.Helper()
	score := int64(80)
	requested := testNow.Add(-time.Minute)
	gone = decision.Decision{Version: decision.Version, Pod: decision.Pod{Namespace: "demo", Name: "web-a", UID: "uid-a", Node: "node-5",
		Controller: &decision.Controller{Kind: "ReplicaSet", Name: "web", UID: "rs1"}},
		Plugin: "NodeCRDResourceFit", Profile: "accord", Reason: "node-5 no longer offers example.com/memory", Verdict: decision.VerdictEvicted,
		Predictions: []decision.Prediction{{Judge: "SchedulerSimulation", Node: "node-2", Score: &score, CurrentNode: "node-5"}},
		RequestedAt: &requested}
	ev = decisionEvent(t, "e-a", gone, testNow.Add(-50*time.Second))
	yes := true
	repl = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-b", Namespace: "demo", UID: "uid-b", CreationTimestamp: metav1.NewTime(testNow.Add(-55 * time.Second)),
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "rs1", Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: "node-2"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	return gone, ev, repl
}

// decisionEvent is the descheduler's Descheduled Event carrying d.
func decisionEvent(t *testing.T, name string, d decision.Decision, at time.Time) *corev1.Event {
	t.Helper()
	js, err := decision.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Pod.Namespace, UID: types.UID("ev-" + name),
		Annotations: map[string]string{decision.Annotation: js}},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: d.Pod.Namespace, Name: d.Pod.Name, UID: types.UID(d.Pod.UID)},
		Reason:         evictions.ReasonDescheduled, ReportingController: decision.ReportingController, EventTime: metav1.NewMicroTime(at)}
}

// TestWhyEvictedPodGone: a Deployment pod the descheduler evicted is gone; why tells its story
// from the decision on its Event: plugin, predicted node, and the replacement and its node.
func TestWhyEvictedPodGone(t *testing.T) {
	_, ev, repl := evictedFixture(t)
	code, out, errOut := runWith(t, []runtime.Object{ev, repl}, nil, nil, "why", "web-a", "-n", "demo")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"Pod demo/web-a: gone (not found)",
		"profile accord, plugin NodeCRDResourceFit (node-5 no longer offers example.com/memory)",
		"verdict: Evicted on node-5",
		"predicted node: node-2 (score 80)",
		"replacement: web-b on node-2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runWith(t, []runtime.Object{ev, repl}, nil, nil, "why", "web-a", "-n", "demo", "-o", "json")
	var rep WhyReport
	if code != ExitOK || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("-o json: exit %d\n%s", code, out)
	}
	if !rep.Gone || len(rep.Decisions) != 1 {
		t.Fatalf("-o json: %+v", rep)
	}
	if d := rep.Decisions[0]; d.Plugin != "NodeCRDResourceFit" || d.Profile != "accord" || d.Verdict != decision.VerdictEvicted ||
		d.PredictedNode != "node-2" || d.ReplacementPod != "web-b" || d.ReplacementNode != "node-2" || d.UID != "uid-a" {
		t.Errorf("-o json decision: %+v", d)
	}
	// The replacement itself, still there, has no decision about it.
	if code, out, _ := runWith(t, []runtime.Object{ev, repl}, nil, nil, "why", "web-b", "-n", "demo"); code != ExitOK || strings.Contains(out, "Descheduler") {
		t.Errorf("why web-b: exit %d\n%s", code, out)
	}
}

// TestWhyDecisionsUntrusted: a decision on an Event of another reportingController, in another
// namespace than its pod's, or malformed is skipped; a gone pod with none is not found (exit 1).
func TestWhyDecisionsUntrusted(t *testing.T) {
	d, ev, repl := evictedFixture(t)
	forged := ev.DeepCopy()
	forged.Name, forged.UID, forged.ReportingController = "e-forged", "ev-forged", "someone-else"
	if code, out, errOut := runWith(t, []runtime.Object{forged, repl}, nil, nil, "why", "web-a", "-n", "demo"); code != ExitError || !strings.Contains(errOut, `"web-a" not found`) {
		t.Errorf("other reportingController: exit %d, stdout %q, stderr %q; want %d not found", code, out, errOut, ExitError)
	}
	elsewhere := ev.DeepCopy()
	elsewhere.Namespace = "other"
	if code, out, errOut := runWith(t, []runtime.Object{elsewhere, repl}, nil, nil, "why", "web-a", "-n", "other"); code != ExitError {
		t.Errorf("Event in another namespace than its pod: exit %d, stdout %q, stderr %q; want %d", code, out, errOut, ExitError)
	}
	malformed := ev.DeepCopy()
	malformed.Name, malformed.UID = "e-bad", "ev-bad"
	malformed.Annotations = map[string]string{decision.Annotation: `{"version":"v1","pod":{"namespace":"demo","name":"web-a","uid":"uid-a"},"plugin":"P","profile":"p","verdict":"Evicted","extra":1}`}
	if code, _, errOut := runWith(t, []runtime.Object{malformed, repl}, nil, nil, "why", "web-a", "-n", "demo"); code != ExitError || !strings.Contains(errOut, `"web-a" not found`) {
		t.Errorf("malformed decision alone: exit %d, stderr %q; want %d not found", code, errOut, ExitError)
	}
	// Next to a good one, the malformed decision is skipped and the good one shown.
	held := d
	held.Verdict, held.Blocker, held.Predictions, held.RequestedAt = decision.VerdictHeld, &decision.Blocker{Gate: "workload budget", Message: "1 of 1 in flight"}, nil, nil
	heldEv := decisionEvent(t, "e-held", held, testNow.Add(-2*time.Minute))
	heldEv.Reason = evictions.ReasonEvictionHeld
	code, out, errOut := runWith(t, []runtime.Object{malformed, ev, heldEv, forged, repl}, nil, nil, "why", "web-a", "-n", "demo", "-o", "json")
	var rep WhyReport
	if code != ExitOK || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	if len(rep.Decisions) != 2 || rep.Decisions[0].Verdict != decision.VerdictHeld || rep.Decisions[0].HeldBy != "workload budget" ||
		rep.Decisions[0].ReplacementPod != "" || rep.Decisions[1].ReplacementNode != "node-2" {
		t.Errorf("decisions %+v, want the held one then the eviction with its replacement", rep.Decisions)
	}
}

// TestWhyEventsForbidden: listing the namespace's Events is refused: exit 3 naming it.
func TestWhyEventsForbidden(t *testing.T) {
	_, ev, repl := evictedFixture(t)
	code, _, errOut := runWith(t, []runtime.Object{ev, repl}, nil, func(k *kubefake.Clientset, _ *accordfake.Clientset) {
		k.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("RBAC: access denied"))
		})
	}, "why", "web-a", "-n", "demo")
	if code != ExitForbidden || !strings.Contains(errOut, `RBAC verb "list" on events`) {
		t.Errorf("exit %d, stderr %q; want %d naming list on events", code, errOut, ExitForbidden)
	}
}

// TestWhyReservationConsumer: two pods of one ReplicaSet evicted in the same second, each through a
// reservation; each is matched with the pod that consumed its own reservation, not with the oldest
// replacement.
func TestWhyReservationConsumer(t *testing.T) {
	d, ev, repl := evictedFixture(t)
	d.Reservation = &decision.Reservation{Name: "web-a-r", Node: "node-2"}
	ev = decisionEvent(t, "e-a", d, testNow.Add(-50*time.Second))
	d2 := d
	d2.Pod.Name, d2.Pod.UID, d2.Reservation = "web-c", "uid-c", &decision.Reservation{Name: "web-c-r", Node: "node-2"}
	ev2 := decisionEvent(t, "e-c", d2, testNow.Add(-50*time.Second))
	later := repl.DeepCopy()
	later.Name, later.UID, later.CreationTimestamp = "web-d", "uid-d", metav1.NewTime(repl.CreationTimestamp.Add(time.Second))
	bound := func(name, pod string) *schedv1alpha1.Reservation {
		return &schedv1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo"},
			Status: schedv1alpha1.ReservationStatus{Phase: schedv1alpha1.ReservationBound, NodeName: "node-2",
				BoundPod: &schedv1alpha1.ReservationBoundPod{Name: pod, UID: types.UID("uid-" + pod)}}}
	}
	for _, c := range []struct{ pod, want string }{{"web-a", "web-d"}, {"web-c", "web-b"}} {
		code, out, errOut := runWith(t, []runtime.Object{ev, ev2, repl, later},
			[]runtime.Object{bound("web-a-r", "web-d"), bound("web-c-r", "web-b")}, nil, "why", c.pod, "-n", "demo", "-o", "json")
		var rep WhyReport
		if code != ExitOK || json.Unmarshal([]byte(out), &rep) != nil {
			t.Fatalf("why %s: exit %d, stderr %q\n%s", c.pod, code, errOut, out)
		}
		if len(rep.Decisions) != 1 || rep.Decisions[0].ReplacementPod != c.want {
			t.Errorf("why %s: decisions %+v, want replacement %s (its reservation's consumer)", c.pod, rep.Decisions, c.want)
		}
	}
}
