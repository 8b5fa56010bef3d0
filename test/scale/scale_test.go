package scale

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	"github.com/accord-sched/accord/test/harness"
)

// TestScale builds kube-scheduler, accord-scheduler and accord-descheduler, starts a control plane
// with the population of the size (see scaleSize) and prints the FIGURE lines of issue #10: (a)
// kube-scheduler with its default profile, then accord-scheduler with the Accord profile, each
// binding the same number of pending pods; (b) one dry-run descheduler cycle with default caps (and without, if asked). It
// asserts what must hold at any speed: every pod bound by both, a cycle completed that simulated
// candidates and would evict pods.
func TestScale(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and starts a control plane")
	}
	sz, big := scaleSize(t)
	ctx := context.Background()
	var refBin, schedBin, deschedBin string
	if sz.runs("scheduler") {
		// The reference is kube-scheduler itself, built from the k8s.io/kubernetes module accord-
		// scheduler is built on (v1.36.3), not accord-scheduler with the default profile: accord-
		// scheduler's command also changes how kube-scheduler's informers keep pods and nodes.
		refBin = harness.BuildBinary(t, "k8s.io/kubernetes/cmd/kube-scheduler")
		schedBin = harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/scheduler")
	}
	if sz.runs("descheduler") {
		deschedBin = harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/descheduler")
	}

	c := startCluster(t, ctx, sz.Nodes)
	client, accord, kubeconfig := c.client, c.accord, c.kubeconfig

	// (a) The scheduler: the reference first, then the Accord profile, on the same nodes.
	refConfig, accordConfig := schedulerConfigs(t, kubeconfig)
	if sz.runs("scheduler") {
		runSchedulers(t, ctx, client, accord, refBin, schedBin, refConfig, accordConfig, sz)
	}
	if !sz.runs("descheduler") {
		return
	}

	// (b) The descheduler over bound pods, 1% of the nodes (at least one) no longer offering memory.
	ns := "bound"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := createBoundPods(ctx, client, ns, "accord-scheduler", sz.BoundPods, sz.Nodes); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bound Running pods created in %s", sz.BoundPods, time.Since(start).Round(time.Millisecond))
	violating := max(sz.Nodes/100, 1)
	for i := 0; i < violating; i++ {
		// Light nodes (not a multiple of 5), so LowNodeUtilization does not also pick them.
		if err := disableMemory(ctx, accord, i*5+1); err != nil {
			t.Fatal(err)
		}
	}
	if dir := pprofDir(); dir != "" {
		profileDescheduler(t, ctx, deschedBin, kubeconfig, accordConfig, dir)
	}
	variants := []struct{ name, limits string }{{"default-caps", ""}}
	if sz.Uncapped {
		variants = append(variants, struct{ name, limits string }{"uncapped", "maxNoOfPodsToEvictPerNode: 1000000\nmaxNoOfPodsToEvictTotal: 1000000"})
	}
	var capped deschedRun
	for _, v := range variants {
		if err := refreshNodeMetrics(ctx, accord, sz.Nodes); err != nil {
			t.Fatal(err)
		}
		r := runDescheduler(t, ctx, deschedBin, kubeconfig, accordConfig, v.name, v.limits)
		perSec, perCand, perSim := 0.0, 0.0, 0.0
		if r.Simulated > 0 {
			perSec = float64(r.Simulated) / r.Cycle.Seconds()
			perCand = r.Cycle.Seconds() * 1000 / float64(r.Simulated)
			perSim = r.Simulation.Seconds() * 1000 / float64(r.Simulated)
		}
		figure(t, "descheduler %s nodes=%d pods=%d (%d nodes violating NodeCRDResourceFit): cycle %.2fs, wall %.1fs, %d candidates simulated (%d admitted, %d dry-run evictions), %.0f candidates/s (%.2f ms of cycle per candidate, %.2f ms simulating), CPU %.1fs, peak RSS %.0f MiB, %d GCs during the cycle (%.0f ms marking)",
			r.Variant, sz.Nodes, sz.BoundPods, violating, r.Cycle.Seconds(), r.Wall.Seconds(), r.Simulated, r.Admitted, r.DryRun, perSec, perCand, perSim, r.CPU.Seconds(), mib(r.PeakRSS), r.GCs, r.GCMark.Seconds()*1000)
		if r.Simulated == 0 || r.DryRun == 0 {
			t.Errorf("descheduler %s: %d candidates simulated, %d dry-run evictions: the population must give it work", r.Variant, r.Simulated, r.DryRun)
		}
		if v.name == "default-caps" {
			capped = r
		} else if r.Simulated < capped.Simulated {
			t.Errorf("uncapped cycle simulated %d candidates, fewer than the capped one's %d", r.Simulated, capped.Simulated)
		}
	}
	if !big {
		t.Log("smoke size; run `make bench-scale` for the cluster-scale figures")
	}
}

// runSchedulers binds sz.Pods pending pods with kube-scheduler (refBin) and its default profile
// (refConfig), then with accord-scheduler (schedBin) and the Accord profile (accordConfig), and
// prints their figures and ratios.
func runSchedulers(t *testing.T, ctx context.Context, client kubernetes.Interface, accord accordclient.Interface, refBin, schedBin, refConfig, accordConfig string, sz size) {
	t.Helper()
	var runs []schedRun
	for _, c := range []struct{ bin, profile, config, schedulerName string }{
		{refBin, "kube-scheduler-default", refConfig, corev1.DefaultSchedulerName},
		{schedBin, "accord", accordConfig, "accord-scheduler"},
	} {
		// LoadAware ignores a NodeMetric older than 180 s: every run starts with fresh ones.
		if err := refreshNodeMetrics(ctx, accord, sz.Nodes); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, runScheduler(t, ctx, client, c.bin, c.config, c.profile, c.schedulerName, sz.Nodes, sz.Pods))
	}
	ref, acc := runs[0], runs[1]
	if ref.PodsPerSec <= 0 || acc.PodsPerSec <= 0 {
		t.Fatalf("no throughput measured: %+v", runs)
	}
	figure(t, "scheduler ratio accord/kube-scheduler-default nodes=%d pods=%d: throughput %.2fx, CPU %.2fx (%.2fx while binding), peak RSS %.2fx",
		sz.Nodes, sz.Pods, acc.PodsPerSec/ref.PodsPerSec, ratio(acc.CPU, ref.CPU), ratio(acc.WindowCPU, ref.WindowCPU), float64(acc.PeakRSS)/float64(ref.PeakRSS))
	t.Log("the reference is kube-scheduler v1.36.3 (k8s.io/kubernetes/cmd/kube-scheduler) with its default profile")

	// An A/B of two builds on the same cluster and minute: the figures of one run to the next
	// differ by more than most changes do.
	if base := os.Getenv("ACCORD_SCALE_SCHEDULER_BASELINE"); base != "" {
		if err := refreshNodeMetrics(ctx, accord, sz.Nodes); err != nil {
			t.Fatal(err)
		}
		b := runScheduler(t, ctx, client, base, accordConfig, "accord-baseline", "accord-scheduler", sz.Nodes, sz.Pods)
		if b.PodsPerSec <= 0 {
			t.Fatalf("no throughput measured for the baseline %s: %+v", base, b)
		}
		figure(t, "scheduler ratio accord/accord-baseline nodes=%d pods=%d: throughput %.2fx, CPU %.2fx (%.2fx while binding), peak RSS %.2fx (baseline: %s)",
			sz.Nodes, sz.Pods, acc.PodsPerSec/b.PodsPerSec, ratio(acc.CPU, b.CPU), ratio(acc.WindowCPU, b.WindowCPU), float64(acc.PeakRSS)/float64(b.PeakRSS), base)
	}
}

// figure prints a measured figure on its own line (make bench-scale greps for FIGURE).
func figure(t *testing.T, format string, args ...any) {
	t.Helper()
	line := "FIGURE " + fmt.Sprintf(format, args...)
	fmt.Println(line)
	t.Log(line)
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return a.Seconds() / b.Seconds()
}
