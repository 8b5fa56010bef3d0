package kubectlaccord

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
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
