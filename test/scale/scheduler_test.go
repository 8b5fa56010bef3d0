package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/accord-sched/accord/test/harness"
)

// schedRun is what one scheduler run measured.
type schedRun struct {
	Profile      string
	Pods         int
	PodsPerSec   float64       // from the first bind to the last
	CPU          time.Duration // of the whole process, start to last bind
	WindowCPU    time.Duration // from the first bind to the last
	PeakRSS      int64         // VmHWM at the last bind
	FirstBindLag time.Duration // from the process start to the first bind (informer sync included)
}

// sampleSchedulerConfig returns manifests/scheduler/config.yaml, decoded.
func sampleSchedulerConfig(t *testing.T) map[string]any {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "manifests", "scheduler", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("manifests/scheduler/config.yaml: %v", err)
	}
	return cfg
}

// schedulerConfigs writes the two configurations the benchmark compares and returns their paths:
// the reference (kube-scheduler's default profile, no Accord plugin) and the Accord profile of
// manifests/scheduler/config.yaml as shipped. Both get kubeconfig and client QPS/burst 5000, so
// neither is throttled by its client.
func schedulerConfigs(t *testing.T, kubeconfig string) (reference, accord string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, cfg map[string]any) string {
		cfg["clientConnection"] = map[string]any{"kubeconfig": kubeconfig, "qps": 5000, "burst": 5000}
		cfg["leaderElection"] = map[string]any{"leaderElect": false}
		// The shipped configuration turns pprof off; with --config, kube-scheduler takes it from the
		// file, not from --profiling (pprofArgs).
		cfg["enableProfiling"] = pprofDir() != ""
		b, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	accord = write("accord.yaml", sampleSchedulerConfig(t))
	ref := sampleSchedulerConfig(t)
	ref["profiles"] = []any{map[string]any{"schedulerName": corev1.DefaultSchedulerName}}
	reference = write("reference.yaml", ref)
	return reference, accord
}

// bindWatch counts the pods of a namespace that get a node, and when the first and last did.
type bindWatch struct {
	mu          sync.Mutex
	bound       map[string]bool
	first, last time.Time
	firstCPU    time.Duration
	pid         int
	onFirst     func() // called (under mu) at the first bind
}

func (w *bindWatch) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bound[p.Name] {
		return
	}
	w.bound[p.Name] = true
	if w.first.IsZero() {
		w.first = now
		if w.pid != 0 {
			w.firstCPU, _ = procCPU(w.pid)
		}
		if w.onFirst != nil {
			w.onFirst()
		}
	}
	w.last = now
}

func (w *bindWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.bound)
}

// podBatch is a set of pending pods a scheduler run binds: n pods in namespace ns matching selector
// (empty: every pod of ns), made by create.
type podBatch struct {
	ns, selector string
	n            int
	create       func(ctx context.Context) error
}

// pendingBatch is pods pending pods of the population for schedulerName in a fresh namespace
// named after the profile.
func pendingBatch(t *testing.T, ctx context.Context, client kubernetes.Interface, pop population, profile, schedulerName string, pods int) podBatch {
	t.Helper()
	ns := fmt.Sprintf("sched-%s", profile)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	return podBatch{ns: ns, n: pods, create: func(ctx context.Context) error {
		return createPendingPods(ctx, client, pop, ns, schedulerName, pods)
	}}
}

// runScheduler creates pods pending pods of the population for schedulerName in a fresh namespace,
// starts the scheduler binary with config, waits until every pod is bound and measures the process.
// It deletes the pods before returning, so the next run starts from the same cluster.
func runScheduler(t *testing.T, ctx context.Context, client kubernetes.Interface, pop population, bin, config, profile, schedulerName string, nodes, pods int) schedRun {
	t.Helper()
	return runSchedulerOn(t, ctx, client, pop, bin, config, profile, nodes, pendingBatch(t, ctx, client, pop, profile, schedulerName, pods))
}

// runSchedulerOn creates the batch's pods, starts the scheduler binary with config, waits until
// every pod of the batch is bound and measures the process; it deletes the batch's pods before
// returning.
func runSchedulerOn(t *testing.T, ctx context.Context, client kubernetes.Interface, pop population, bin, config, profile string, nodes int, b podBatch) schedRun {
	t.Helper()
	ns, pods := b.ns, b.n
	start := time.Now()
	if err := b.create(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d pending pods created in %s", profile, pods, time.Since(start).Round(time.Millisecond))

	w := &bindWatch{bound: map[string]bool{}}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = b.selector }))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() { close(stop); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("pod informer did not sync")
	}
	if n := w.count(); n != 0 {
		t.Fatalf("%d pods of %s bound before the scheduler started", n, ns)
	}

	pctx, kill := context.WithCancel(ctx)
	defer kill()
	args := []string{"--config=" + config, "--secure-port=0"}
	dir, port := pprofDir(), 0
	if dir != "" {
		port = harness.FreePort(t)
		args = append(args[:1], pprofArgs(port)...)
	}
	started := time.Now()
	cmd, _ := harness.StartProcess(t, pctx, bin, args...)
	w.mu.Lock()
	w.pid = cmd.Process.Pid
	profiled := make(chan error, 1)
	if dir != "" {
		secs := profileSeconds(t)
		w.onFirst = func() {
			go func() {
				profiled <- fetchProfile(ctx, port, fmt.Sprintf("profile?seconds=%d", int(secs.Seconds())), dir, profile+".cpu.pprof")
			}()
		}
	}
	w.mu.Unlock()
	// A deadline generous for a loaded machine: 10 pods/s, and two minutes for the informers.
	deadline := 2*time.Minute + time.Duration(pods)*100*time.Millisecond
	err := harness.WaitFor(ctx, deadline, func(context.Context) (bool, error) {
		if procExited(cmd.Process.Pid) {
			return false, fmt.Errorf("the %s scheduler exited", profile)
		}
		return w.count() == pods, nil
	})
	if err != nil {
		t.Fatalf("%s: %d of %d pods bound: %v", profile, w.count(), pods, err)
	}
	cpu, err := procCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	rss, err := procPeakRSS(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if dir != "" {
		if err := fetchProfile(ctx, port, "heap", dir, profile+".heap.pprof"); err != nil {
			t.Errorf("heap profile of %s: %v", profile, err)
		}
		if err := <-profiled; err != nil {
			t.Errorf("CPU profile of %s: %v", profile, err)
		}
		t.Logf("%s: profiles in %s", profile, dir)
	}
	kill()
	_ = cmd.Wait()

	w.mu.Lock()
	r := schedRun{Profile: profile, Pods: pods, CPU: cpu, WindowCPU: cpu - w.firstCPU, PeakRSS: rss, FirstBindLag: w.first.Sub(started)}
	if span := w.last.Sub(w.first); span > 0 && pods > 1 {
		r.PodsPerSec = float64(pods-1) / span.Seconds()
	}
	w.mu.Unlock()

	// The figure is printed before the clean-up, which a loaded apiserver may make slow.
	figure(t, "scheduler %s population=%s nodes=%d pods=%d: %.0f pods/s, CPU %.1fs (%.1fs while binding), peak RSS %.0f MiB, first bind %.1fs after start",
		r.Profile, pop, nodes, r.Pods, r.PodsPerSec, r.CPU.Seconds(), r.WindowCPU.Seconds(), mib(r.PeakRSS), r.FirstBindLag.Seconds())
	// Delete the pods; a DeleteCollection of thousands of pods can outlast the apiserver's request
	// timeout, so it is repeated until none is left.
	zero := int64(0)
	if err := harness.WaitFor(ctx, 10*time.Minute, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: b.selector})
		if err != nil || len(l.Items) > 0 {
			if err := client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: b.selector}); err != nil {
				t.Logf("deleting the pods of %s (retried): %v", ns, err)
			}
			return false, nil
		}
		return true, nil
	}); err != nil {
		t.Fatalf("pods of %s not deleted: %v", ns, err)
	}
	return r
}
