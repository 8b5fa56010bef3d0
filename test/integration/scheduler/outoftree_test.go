package scheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/cmd/examples/out-of-tree-scheduler/preferlabeled"
	"github.com/accord-sched/accord/test/harness"
)

// TestOutOfTreeSchedulerExampleRuns builds the scheduler guide's example (accord-scheduler plus
// PreferLabeled, cmd/examples/out-of-tree-scheduler) and runs it against the control plane with a
// profile that enables PreferLabeled: of two nodes that score alike otherwise (a tie kube-scheduler
// breaks at random), the pod lands on the labelled one.
func TestOutOfTreeSchedulerExampleRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/examples/out-of-tree-scheduler")
	ns := env.CreateNamespace(t, "oot-sched")
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	plain, preferred := ns+"-plain", ns+"-preferred"
	for _, n := range []harness.NodeSpec{
		{Name: plain, Labels: map[string]string{"test.accord.dev/ns": ns}},
		{Name: preferred, Labels: map[string]string{"test.accord.dev/ns": ns, preferlabeled.Label: "true"}},
	} {
		if _, err := env.Nodes.CreateNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
	}
	if err := env.Nodes.WaitForNodesReady(ctx, plain, preferred); err != nil {
		t.Fatal(err)
	}
	schedulerName := ns + "-scheduler"
	config := filepath.Join(dir, "config.yaml")
	doc := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q}
leaderElection: {leaderElect: false}
profiles:
- schedulerName: %s
  plugins:
    score:
      enabled: [{name: %s, weight: 50}]
`, kubeconfig, schedulerName, preferlabeled.Name)
	if err := os.WriteFile(config, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	harness.StartBinary(t, ctx, bin, "--config="+config, "--secure-port=0")
	pod, err := env.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{SchedulerName: schedulerName, NodeSelector: map[string]string{"test.accord.dev/ns": ns},
			Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var node string
	err = harness.WaitFor(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
		got, err := env.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = got.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		t.Fatalf("the example scheduler did not bind the pod: %v", err)
	}
	if node != preferred {
		t.Errorf("pod bound to %s, want the labelled %s", node, preferred)
	}
}
