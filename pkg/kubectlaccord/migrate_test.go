package kubectlaccord

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
)

// followed makes the fake API name a created PodMigration web-0-x and answer its gets with statuses
// in turn (the last one repeats); created receives the migration as created.
func followed(created **schedv1alpha1.PodMigration, statuses ...schedv1alpha1.PodMigrationStatus) func(*kubefake.Clientset, *accordfake.Clientset) {
	return func(_ *kubefake.Clientset, a *accordfake.Clientset) {
		a.PrependReactor("create", "podmigrations", func(act k8stesting.Action) (bool, runtime.Object, error) {
			m := act.(k8stesting.CreateAction).GetObject().(*schedv1alpha1.PodMigration).DeepCopy()
			m.Name, m.Namespace = m.GenerateName+"x", act.GetNamespace()
			*created = m
			return true, m, nil
		})
		i := 0
		a.PrependReactor("get", "podmigrations", func(k8stesting.Action) (bool, runtime.Object, error) {
			m := (*created).DeepCopy()
			m.Status = statuses[min(i, len(statuses)-1)]
			i++
			return true, m, nil
		})
	}
}

func TestMigrateWaitFailed(t *testing.T) {
	var created *schedv1alpha1.PodMigration
	res := &schedv1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "default"},
		Status: schedv1alpha1.ReservationStatus{Phase: schedv1alpha1.ReservationFailed, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 node(s) are over their cpu usage threshold."}}
	code, out, errOut := runWith(t, nil, []runtime.Object{res}, followed(&created,
		schedv1alpha1.PodMigrationStatus{},
		schedv1alpha1.PodMigrationStatus{Phase: schedv1alpha1.PodMigrationPending, Reason: "Reserving", SourceNode: "node-1", TargetNode: "node-3", ReservationName: "r1"},
		schedv1alpha1.PodMigrationStatus{Phase: schedv1alpha1.PodMigrationFailed, Reason: "ReservationNotPlaced", Message: "the reservation could not be placed", ReservationName: "r1"},
	), "migrate", "web-0", "-n", "default", "--to", "node-3", "--wait")
	if code != ExitMigrationFailed {
		t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr: %s", code, ExitMigrationFailed, out, errOut)
	}
	if created == nil || created.Spec.PodName != "web-0" || created.Spec.TargetNode != "node-3" || created.Namespace != "default" {
		t.Errorf("created %+v, want podName web-0, targetNode node-3 in default", created)
	}
	for _, want := range []string{"podmigration.scheduling.accord.dev/web-0-x created", "Pending (Reserving): node-1 -> node-3",
		"Reservation r1: Failed (Unschedulable): 0/3 nodes are available: 3 node(s) are over their cpu usage threshold."} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "PodMigration web-0-x Failed (ReservationNotPlaced): the reservation could not be placed") {
		t.Errorf("stderr lacks the failure reason: %q", errOut)
	}
}

func TestMigrateWaitSucceeded(t *testing.T) {
	var created *schedv1alpha1.PodMigration
	code, out, errOut := runWith(t, nil, nil, followed(&created,
		schedv1alpha1.PodMigrationStatus{Phase: schedv1alpha1.PodMigrationRunning, Reason: "Evicted", SourceNode: "node-1", TargetNode: "node-2"},
		schedv1alpha1.PodMigrationStatus{Phase: schedv1alpha1.PodMigrationSucceeded, ReplacementPod: "web-0", ReplacementNode: "node-2"},
	), "migrate", "web-0", "--wait")
	if code != ExitOK || !strings.Contains(out, "Succeeded: replacement web-0 on node-2") {
		t.Errorf("exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	if code, out, _ := runWith(t, nil, nil, followed(&created, schedv1alpha1.PodMigrationStatus{}), "migrate", "web-0"); code != ExitOK || strings.Contains(out, "Pending") {
		t.Errorf("without --wait: exit %d, want 0 and no following:\n%s", code, out)
	}
}
