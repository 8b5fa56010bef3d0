package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/test/harness"
)

// shippedSchedulerConfig returns the KubeSchedulerConfiguration of the scheduler ConfigMap in
// manifests/ (leader election on; lease timing as shipped), with its Lease moved to namespace and
// clientConnection pointed at kubeconfig.
func shippedSchedulerConfig(t testing.TB, namespace, kubeconfig string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "manifests", "scheduler", "configmap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	cfg := cm.Data["scheduler-config.yaml"]
	for _, field := range []string{"leaseDuration", "renewDeadline", "retryPeriod"} {
		if strings.Contains(cfg, field) {
			t.Fatalf("the shipped scheduler configuration sets %s; read it here instead of kube-scheduler's default", field)
		}
	}
	for old, repl := range map[string]string{
		"resourceNamespace: kube-system": "resourceNamespace: " + namespace,
		"clientConnection:\n":            "clientConnection:\n  kubeconfig: " + kubeconfig + "\n",
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("the shipped scheduler configuration has no %q", old)
		}
		cfg = strings.Replace(cfg, old, repl, 1)
	}
	path := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	acquiredRE   = regexp.MustCompile(`Successfully acquired lease`)
	attemptingRE = regexp.MustCompile(`Attempting to acquire leader lease`)
)

// Two accord-scheduler replicas (the real binary, the ConfigMap's configuration as shipped) share
// the Lease. The leader is killed (SIGKILL) and pods are created while no one leads: the follower
// takes over (figure) and places all of them. Then a clean stop (SIGTERM releases the Lease) of the
// new leader hands over to a third replica (figure), which places the pods created meanwhile.
func TestSchedulerLeaderFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the scheduler binary")
	}
	ctx := context.Background()
	bin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/scheduler")
	c := newCluster(t, "schedfo", "n1", "n2")
	for _, n := range c.nodes {
		csr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true}}}
		if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Create(ctx, csr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Accord.SchedulingV1alpha1().ClusterScopedResources().Delete(context.Background(), n, metav1.DeleteOptions{})
		})
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config=" + shippedSchedulerConfig(t, c.ns, kubeconfig), "--secure-port=0", "--v=2"}

	seq := 0
	pending := func(n int) []string {
		var names []string
		for range n {
			name := fmt.Sprintf("s%02d", seq)
			seq++
			p := c.newPod(name, "", nil)
			p.Spec.SchedulerName = "accord-scheduler"
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}
			if _, err := env.Client.CoreV1().Pods(c.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		}
		return names
	}
	waitScheduled := func(names []string, within time.Duration) {
		t.Helper()
		if err := harness.WaitFor(ctx, within, func(ctx context.Context) (bool, error) {
			for _, n := range names {
				p, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, n, metav1.GetOptions{})
				if err != nil || p.Spec.NodeName == "" {
					return false, err
				}
			}
			return true, nil
		}); err != nil {
			t.Fatalf("pods %v not all scheduled within %s", names, within)
		}
	}
	waitAcquired := func(r *replica, within time.Duration) time.Time {
		t.Helper()
		var at time.Time
		if err := harness.WaitFor(ctx, within, func(context.Context) (bool, error) {
			if ts := r.times(acquiredRE); len(ts) > 0 {
				at = ts[0]
				return true, nil
			}
			return false, nil
		}); err != nil {
			t.Fatalf("scheduler replica %s did not take the Lease within %s:\n%s", r.name, within, r.tail(30))
		}
		return at
	}

	a := startReplica(t, bin, "a", args...)
	waitAcquired(a, 60*time.Second)
	b := startReplica(t, bin, "b", args...)
	waitScheduled(pending(5), 30*time.Second)
	if len(b.times(acquiredRE)) != 0 {
		t.Fatal("both scheduler replicas acquired the Lease")
	}

	killed := time.Now()
	a.stop(t, syscall.SIGKILL)
	during := pending(10) // created while no replica leads
	crash := waitAcquired(b, 60*time.Second).Sub(killed)
	waitScheduled(during, 30*time.Second)

	c3 := startReplica(t, bin, "c", args...)
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return len(c3.times(attemptingRE)) > 0, nil
	}); err != nil {
		t.Fatalf("scheduler replica c does not try for the Lease:\n%s", c3.tail(30))
	}
	stopped := time.Now()
	b.stop(t, syscall.SIGTERM)
	during = pending(10)
	clean := waitAcquired(c3, 60*time.Second).Sub(stopped)
	waitScheduled(during, 30*time.Second)
	c3.stop(t, syscall.SIGTERM)

	// The shipped configuration leaves the lease timing at kube-scheduler's defaults.
	if bound := takeoverBound(15*time.Second, 2*time.Second); crash > bound {
		t.Errorf("scheduler takeover after a crash took %s, more than the lease settings allow (%s)", crash, bound)
	}
	figure(t, "scheduler_takeover_crash", "%.1fs (SIGKILL; target 20s; Lease timing as shipped: kube-scheduler's defaults 15s/10s/2s)", crash.Seconds())
	figure(t, "scheduler_takeover_clean", "%.1fs (SIGTERM, Lease released)", clean.Seconds())
	figure(t, "scheduler_failover_pending", "0 of %d pods left pending (20 created while the Lease changed hands)", seq)
}
