package reliability

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/pkg/scheduler/server"
	"github.com/accord-sched/accord/test/harness"
)

// The kube-apiserver of a control plane of its own is stopped for 3 s and started again on the same
// etcd and address while accord-scheduler and accord-descheduler (in-process, each with its own
// context) run against it: neither stops, the scheduler places the pods created after the restart,
// and the descheduler acts on a CR change made after it. The descheduler (cycles every second, event
// mode on) takes no decision on its caches from the outage until its watches are established again:
// its cycles are skipped, the skip is logged once at Info level with what it waits for, no eviction
// is attempted in that window (its eviction observer sees none), and cycles resume afterwards.
func TestAPIServerRestart(t *testing.T) {
	ctx := context.Background()
	// The apiserver's shutdown waits for its open requests (the watches) as long as its request
	// timeout: 5 s here instead of the default minute.
	e, err := harness.Start(ctx, harness.Options{APIServerFlags: []string{"--request-timeout=5s"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	ns := "restart"
	if _, err := e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes := []string{"r1", "r2"}
	for _, n := range nodes {
		if _, err := e.Nodes.CreateNode(ctx, harness.NodeSpec{Name: n}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Accord.SchedulingV1alpha1().ClusterScopedResources().Create(ctx, &schedv1alpha1.ClusterScopedResource{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec:       schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Nodes.WaitForNodesReady(ctx, nodes...); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := e.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	schedulerConfig := filepath.Join(filepath.Dir(file), "..", "..", "manifests", "scheduler", "config.yaml")
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"+profile("restart", "NodeCRDResourceFit")), 0o644); err != nil {
		t.Fatal(err)
	}

	// The descheduler's log, captured (Info level) to find the skip in it.
	logCfg := ktesting.NewConfig(ktesting.BufferLogs(true))
	logger := ktesting.NewLogger(ktesting.NopTL{}, logCfg)
	var (
		mu       sync.Mutex
		staleAt  []time.Time // when OnCachesStale reported stale caches
		freshAt  []time.Time // ... and fresh ones again
		attempts []time.Time // every eviction attempt that was not held by the gate
		held     int         // eviction attempts held by the gate
		m        = metrics.New()
		observe  = func(r evictions.Record) {
			if r.Stage != evictions.StageEvict {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if framework.IsCachesNotSynced(r.Err) {
				held++
				return
			}
			attempts = append(attempts, time.Now())
		}
		onStale = func(w []string) {
			mu.Lock()
			defer mu.Unlock()
			if w == nil {
				freshAt = append(freshAt, time.Now())
			} else {
				staleAt = append(staleAt, time.Now())
			}
		}
	)
	runCtx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	schedDone, deschedDone := make(chan error, 1), make(chan error, 1)
	ready := make(chan struct{})
	go func() { schedDone <- server.RunInProcess(runCtx, kubeconfig, schedulerConfig) }()
	go func() {
		deschedDone <- runner.Run(runCtx, runner.Config{RestConfig: e.Config, PolicyConfigFile: policy, DeschedulingInterval: time.Second,
			EventDriven: true, OnReady: func() { close(ready) }, Metrics: m, Observer: observe, OnCachesStale: onStale})
	}()
	t.Cleanup(func() {
		cancel()
		for name, ch := range map[string]chan error{"scheduler": schedDone, "descheduler": deschedDone} {
			select {
			case err := <-ch:
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("%s did not stop", name)
			}
		}
	})
	select {
	case <-ready:
	case err := <-deschedDone:
		t.Fatalf("descheduler stopped: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("descheduler not ready")
	}

	seq := 0
	create := func(n int) []string {
		var names []string
		for range n {
			name := fmt.Sprintf("r%02d", seq)
			seq++
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: types.UID("rs-restart")}}},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), SchedulerName: "accord-scheduler", Containers: []corev1.Container{{Name: "c", Image: "pause",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}}}},
			}
			if _, err := e.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		}
		return names
	}
	scheduled := func(names []string, within time.Duration) map[string]string {
		t.Helper()
		where := map[string]string{}
		if err := harness.WaitFor(ctx, within, func(ctx context.Context) (bool, error) {
			for _, n := range names {
				p, err := e.Client.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
				if err != nil || p.Spec.NodeName == "" {
					return false, err
				}
				where[n] = p.Spec.NodeName
			}
			return true, nil
		}); err != nil {
			t.Fatalf("pods %v not scheduled within %s", names, within)
		}
		return where
	}
	scheduled(create(3), 30*time.Second)

	// The outage. The apiserver stops listening at once; stopping it returns once its open requests
	// (the watches) have drained, which its shutdown timeout bounds.
	stopped := time.Now()
	if err := e.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	stopTook := time.Since(stopped)
	time.Sleep(3 * time.Second)
	if err := e.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	after := create(5)
	where := scheduled(after, 60*time.Second)
	placedIn := time.Since(restarted)

	// The descheduler saw its caches go stale during the outage and come back after it.
	if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(freshAt) > 0 && freshAt[len(freshAt)-1].After(restarted), nil
	}); err != nil {
		mu.Lock()
		t.Fatalf("descheduler caches not reported fresh after the restart (stale at %v, fresh at %v)", staleAt, freshAt)
	}
	mu.Lock()
	if len(staleAt) == 0 || staleAt[0].Before(stopped) {
		t.Errorf("caches reported stale at %v; want the first report after the apiserver stopped (%v)", staleAt, stopped)
	}
	resumed := freshAt[len(freshAt)-1]
	staleFor := resumed.Sub(staleAt[0])
	mu.Unlock()
	skipped, _ := testutil.GetCounterMetricValue(m.CyclesSkipped.WithLabelValues(metrics.SkipCachesNotSynced))
	if skipped < 1 {
		t.Errorf("cycles_skipped_total{reason=%s} = %v, want cycles skipped during the outage", metrics.SkipCachesNotSynced, skipped)
	}
	// What the skipped cycles waited for (the later skips are logged at V(2)): the broken watches,
	// seen from the transport, and not only the failing probe.
	waitedFor := map[string]bool{}
	skipLines := 0
	for _, entry := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if entry.Message != fwruntime.SkipMessage {
			continue
		}
		for i := 0; i+1 < len(entry.ParameterKVList); i += 2 {
			if entry.ParameterKVList[i] == "waitingFor" {
				if w, ok := entry.ParameterKVList[i+1].([]string); ok {
					for _, what := range w {
						name, _, _ := strings.Cut(what, " ")
						waitedFor[name] = true
					}
				}
			}
		}
		if entry.Verbosity != 0 {
			continue
		}
		skipLines++
		if !slices.Contains(entry.WithKVList, any("waitingFor")) && !slices.Contains(entry.ParameterKVList, any("waitingFor")) {
			t.Errorf("skip logged without waitingFor: %+v", entry)
		}
	}
	if skipLines != 1 {
		t.Errorf("%q logged %d times at Info level across one outage, want once", fwruntime.SkipMessage, skipLines)
	}
	if !waitedFor["pods"] || !waitedFor["nodes"] {
		t.Errorf("skipped cycles waited for %v; want the pod and node watches among them", waitedFor)
	}
	waited := slices.Sorted(maps.Keys(waitedFor))

	// A CR change after the restart: the descheduler evicts the pods the node no longer fits.
	victimNode := where[after[0]]
	var victims []string
	for _, n := range after {
		if where[n] == victimNode {
			victims = append(victims, n)
		}
	}
	changed := time.Now()
	if _, err := e.Accord.SchedulingV1alpha1().ClusterScopedResources().Patch(ctx, victimNode, types.MergePatchType,
		[]byte(`{"spec":{"resourcesFilter":{"cpu":false}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		for _, n := range victims {
			p, err := e.Client.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil || p.DeletionTimestamp == nil {
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("pods %v on %s not evicted after the CR change: %v", victims, victimNode, err)
	}
	evictedIn := time.Since(changed)
	for name, ch := range map[string]chan error{"scheduler": schedDone, "descheduler": deschedDone} {
		select {
		case err := <-ch:
			t.Fatalf("%s stopped across the apiserver restart: %v", name, err)
		default:
		}
	}
	mu.Lock()
	for _, at := range attempts {
		switch {
		case at.Before(resumed) && at.After(stopped):
			t.Errorf("eviction attempted at %v, between the apiserver stop (%v) and the caches' re-sync (%v)", at, stopped, resumed)
		case at.Before(changed):
			// Nothing violates before the CR change.
			t.Errorf("eviction attempted at %v, before the CR change (%v)", at, changed)
		}
	}
	nAttempts, nHeld := len(attempts), held
	mu.Unlock()
	if nAttempts == 0 {
		t.Error("no eviction attempt observed after the caches re-synced")
	}
	figure(t, "apiserver_restart", "3s outage: scheduler placed the %d pods created after the restart in %.1fs; descheduler evicted %d pods %.1fs after a CR change; neither restarted",
		len(after), placedIn.Seconds(), len(victims), evictedIn.Seconds())
	figure(t, "apiserver_restart_stale_caches", "descheduler skipped %.0f cycles over %.1fs of stale caches (apiserver stop took %.1fs, then down 3s; re-synced %.1fs after it was back), skip logged once at Info (waiting for %s), %d evictions held, 0 attempted before re-sync",
		skipped, staleFor.Seconds(), stopTook.Seconds(), resumed.Sub(restarted).Seconds(), strings.Join(waited, ", "), nHeld)
}
