// Package scheduler runs accord-scheduler in-process against a real control plane (embedded etcd,
// kube-apiserver, workload controllers and simulated nodes from test/harness) and checks the
// scheduling scenarios of NodeCRDResourceFit and LoadAware end to end.
package scheduler

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/scheduler/server"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/inprocess"
)

var env *harness.Env

func TestMain(m *testing.M) {
	// kube-scheduler listens for SIGUSR2 (to dump its cache); Go's signal-watching goroutine, once
	// started, lives as long as the process. Start it before the harness takes its goroutine
	// baseline, so it is not mistaken for a leak of the in-process scheduler.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	signal.Stop(sig)
	harness.Main(m, &env, harness.Options{})
}

// sampleConfig is the configuration the playground uses; the tests run the scheduler with it.
func sampleConfig(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "manifests", "scheduler", "config.yaml")
}

// startScheduler runs accord-scheduler in-process with the sample configuration until the test ends.
func startScheduler(t *testing.T) {
	t.Helper()
	startSchedulerWith(t, sampleConfig(t))
}

// startSchedulerWith runs accord-scheduler in-process with the KubeSchedulerConfiguration at
// config (its clientConnection.kubeconfig is replaced) until the test ends.
func startSchedulerWith(t *testing.T, config string) {
	t.Helper()
	inprocess.Scheduler(t, env, config)
}

// testNodes creates simulated nodes named prefix-<random>-<i> and removes them when the test ends
// (the control plane outlives a test, and -count=2 runs every test twice against it).
func testNodes(t *testing.T, prefix string, alloc corev1.ResourceList, n int) []string {
	t.Helper()
	ctx := context.Background()
	run := rand.String(5)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%s-%d", prefix, run, i+1)
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{
			Name:        names[i],
			Labels:      map[string]string{"accord.test/node": names[i]},
			Allocatable: alloc,
		}); err != nil {
			t.Fatalf("creating node %s: %v", names[i], err)
		}
	}
	t.Cleanup(func() {
		for _, name := range names {
			_ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := env.Nodes.WaitForNodesReady(waitCtx, names...); err != nil {
		t.Fatalf("nodes not Ready: %v", err)
	}
	return names
}

func createCR(t *testing.T, node string, filter map[corev1.ResourceName]bool, score map[corev1.ResourceName]schedv1alpha1.ResourceScore) *schedv1alpha1.ClusterScopedResource {
	t.Helper()
	client := env.Accord.SchedulingV1alpha1().ClusterScopedResources()
	cr, err := client.Create(context.Background(), &schedv1alpha1.ClusterScopedResource{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec:       schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: filter, ResourcesScore: score},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ClusterScopedResource %s: %v", node, err)
	}
	t.Cleanup(func() { _ = client.Delete(context.Background(), node, metav1.DeleteOptions{}) })
	return cr
}

func setNodeMetric(t *testing.T, node string, cpu, memory string) {
	t.Helper()
	ctx := context.Background()
	client := env.Accord.SloV1alpha1().NodeMetrics()
	m, err := client.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		m, err = client.Create(ctx, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
		if err == nil {
			t.Cleanup(func() { _ = client.Delete(context.Background(), node, metav1.DeleteOptions{}) })
		}
	}
	if err != nil {
		t.Fatalf("NodeMetric %s: %v", node, err)
	}
	now := metav1.Now()
	m.Status.UpdateTime = &now
	m.Status.NodeUsage = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
	}
	if _, err := client.UpdateStatus(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating NodeMetric %s status: %v", node, err)
	}
}

type podOpt func(*corev1.Pod)

func onNode(node string) podOpt {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"accord.test/node": node} }
}

func createPod(t *testing.T, ns, name string, requests corev1.ResourceList, opts ...podOpt) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			SchedulerName: server.SchedulerName,
			Containers: []corev1.Container{{
				Name:      "app",
				Image:     "registry.invalid/app:1",
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: extendedOnly(requests)},
			}},
		},
	}
	for _, o := range opts {
		o(pod)
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
}

// extendedOnly returns the extended resources of requests: the API requires their limits to equal
// their requests.
func extendedOnly(requests corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range requests {
		if strings.Contains(string(name), "/") {
			out[name] = q
		}
	}
	return out
}

// waitBound waits until the pod is bound and returns its node.
func waitBound(t *testing.T, ns, name string, timeout time.Duration) string {
	t.Helper()
	var node string
	err := harness.WaitFor(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not bound: %v", ns, name, err)
	}
	return node
}

// waitFailedScheduling waits for a FailedScheduling event of the pod whose note contains want, and
// checks the pod is still unbound.
func waitFailedScheduling(t *testing.T, ns, name, want string) string {
	t.Helper()
	var note string
	err := harness.WaitFor(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		evs, err := env.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == name && e.Reason == "FailedScheduling" && strings.Contains(e.Note, want) {
				note = e.Note
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no FailedScheduling event for %s/%s mentioning %q: %v", ns, name, want, err)
	}
	p, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" {
		t.Fatalf("pod %s/%s was bound to %s, want it Pending", ns, name, p.Spec.NodeName)
	}
	return note
}
