// Package metricsreporter runs accord-metrics-reporter (app.Run, in-process) against a real control
// plane (test/harness), with metrics.k8s.io served through the apiserver's aggregator
// (test/metricsapi) or a real Prometheus (test/promtest).
package metricsreporter

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/metricsapi"
	"github.com/accord-sched/accord/test/reportertest"
)

var env *harness.Env

func TestMain(m *testing.M) {
	// kube-scheduler (run in-process by the end-to-end test) listens for SIGUSR2; start Go's
	// signal goroutine before the harness takes its goroutine baseline, as it lives on.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	signal.Stop(sig)
	harness.Main(m, &env, harness.Options{})
}

const nsLabel = "test.accord.dev/ns"

// startMetricsAPI serves metrics.k8s.io from the test, registered with the aggregator.
func startMetricsAPI(t *testing.T) *metricsapi.Server {
	t.Helper()
	return metricsapi.StartRegistered(t, env.Config)
}

// startReporter runs the reporter in-process until the test ends.
func startReporter(t *testing.T, config string) {
	t.Helper()
	reportertest.Start(t, env.Config, config)
}

// newNodes creates nodes named <ns>-<name>, labelled for the namespace.
func newNodes(t *testing.T, ns string, names ...string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		spec := harness.NodeSpec{Name: ns + "-" + n, Labels: map[string]string{nsLabel: ns}}
		if _, err := env.Nodes.CreateNode(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
		name := spec.Name
		t.Cleanup(func() {
			_ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = env.Accord.SloV1alpha1().NodeMetrics().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		out = append(out, name)
	}
	if err := env.Nodes.WaitForNodesReady(context.Background(), out...); err != nil {
		t.Fatal(err)
	}
	return out
}

// newPod creates a running pod bound to node.
func newPod(t *testing.T, ns, name, node, cpu string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: node,
		Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	p, err := env.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// zeroWatch fails the test when any NodeMetric of nodes is ever written with a zero or missing
// node usage.
func zeroWatch(t *testing.T, nodes ...string) func() {
	t.Helper()
	w, err := env.Accord.SloV1alpha1().NodeMetrics().Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range nodes {
		want[n] = true
	}
	var mu sync.Mutex
	var bad []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			nm, ok := ev.Object.(*slov1alpha1.NodeMetric)
			if !ok || ev.Type == watch.Deleted || !want[nm.Name] || nm.Status.UpdateTime == nil {
				continue
			}
			cpu, okc := nm.Status.NodeUsage[corev1.ResourceCPU]
			mem, okm := nm.Status.NodeUsage[corev1.ResourceMemory]
			if !okc || !okm || cpu.IsZero() || mem.IsZero() {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s at %s: %v", nm.Name, nm.Status.UpdateTime, nm.Status.NodeUsage))
				mu.Unlock()
			}
		}
	}()
	return func() {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(bad) > 0 {
			t.Errorf("NodeMetrics written with zero usage: %v", bad)
		}
	}
}

func getNM(t *testing.T, name string) *slov1alpha1.NodeMetric {
	t.Helper()
	nm, err := env.Accord.SloV1alpha1().NodeMetrics().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return nm
}

func cpuOf(nm *slov1alpha1.NodeMetric) string {
	if nm == nil {
		return ""
	}
	q := nm.Status.NodeUsage[corev1.ResourceCPU]
	return q.String()
}
