package reservation

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/test/harness"
)

// TestNodeSimulatorHonoursGracePeriod: a pod deleted with a grace period stays Terminating for it,
// then disappears; a StatefulSet's replacement appears only after that; a grace period of 0 is
// instant.
func TestNodeSimulatorHonoursGracePeriod(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t, "grace")
	node := ns + "-n"
	if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: node}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })

	const grace = 2
	labels := map[string]string{"app": "slow"}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](grace),
				Containers: []corev1.Container{{Name: "c", Image: "pause"}},
			}},
		},
	}
	if _, err := env.Client.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var first *corev1.Pod
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, "slow-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		first = p
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	}); err != nil {
		t.Fatalf("waiting for slow-0 to run: %v", err)
	}

	deleted := time.Now()
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, "slow-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Terminating for most of its grace period: the same pod (UID) is still there after 1 s.
	time.Sleep(time.Second)
	p, err := env.Client.CoreV1().Pods(ns).Get(ctx, "slow-0", metav1.GetOptions{})
	if err != nil || p.UID != first.UID || p.DeletionTimestamp == nil {
		t.Fatalf("1 s after the delete, want slow-0 (uid %s) Terminating, got %v (err %v)", first.UID, p, err)
	}
	// Then the StatefulSet recreates it, not before the grace period.
	var replaced time.Duration
	if err := harness.WaitFor(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, "slow-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil || p.UID == first.UID {
			return false, err
		}
		replaced = time.Since(deleted)
		return true, nil
	}); err != nil {
		t.Fatalf("waiting for the StatefulSet to recreate slow-0: %v", err)
	}
	if replaced < grace*time.Second {
		t.Errorf("slow-0 was recreated %s after its delete, before its %d s grace period", replaced, grace)
	}
	t.Logf("slow-0 (grace %d s) recreated %s after its delete", grace, replaced.Round(10*time.Millisecond))

	// A pod whose grace period is 0 goes at once (the apiserver makes it at least 1 s for a pod on a
	// node).
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: ns}, Spec: corev1.PodSpec{
		NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{Name: "c", Image: "pause"}},
	}}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, bare, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, "bare", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitFor(ctx, 5*time.Second, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Pods(ns).Get(ctx, "bare", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("a pod with grace period 0 was not removed: %v", err)
	}
	t.Logf("bare (grace 0) removed %s after its delete", time.Since(start).Round(10*time.Millisecond))
}
