package monitoring

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/manifests/monitoring"
	"github.com/accord-sched/accord/manifests/render"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/metricsapi"
)

const exRes corev1.ResourceName = "example.com/memory"

// mayBeAbsent are the metrics the rules or the dashboard read that this test does not make appear,
// with why; when present, their labels are checked all the same.
var mayBeAbsent = map[string]string{
	"up": "written by Prometheus for each scraped target, not by a binary",
	"accord_descheduler_plugin_failures_total":           "only once a descheduler plugin call fails or panics",
	"accord_descheduler_flaps_total":                     "only once a replacement lands back on the node its predecessor was evicted from",
	"accord_descheduler_evictions_held_total":            "only once a workload budget or a closed eviction window holds a nominated pod",
	"accord_descheduler_evictions_in_progress":           "only while a soft or background eviction is in progress",
	"scheduler_plugin_execution_duration_seconds_bucket": "kube-scheduler times a sample (10%) of plugin calls; a few pods may draw none",
}

// TestRulesAndDashboardReadExportedMetrics runs the three binaries with the chart's configuration
// (reservationFirst, eventDriven, leader election), drives a NodeCRDResourceFit eviction through a
// reservation and leaves a pod unschedulable, then scrapes each binary's /metrics and fails for every
// metric or label an alert rule or dashboard panel reads that no binary exports.
func TestRulesAndDashboardReadExportedMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	ctx := context.Background()
	ns := env.CreateNamespace(t, "monitoring")
	bins := map[string]string{}
	for _, c := range []string{"scheduler", "descheduler", "metrics-reporter"} {
		bins[c] = harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/"+c)
	}
	usage := metricsapi.StartRegistered(t, env.Config)

	// Two nodes offering example.com/memory.
	var nodes []string
	for _, n := range []string{"a", "b"} {
		name := ns + "-" + n
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: name, Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods: resource.MustParse("110"), exRes: resource.MustParse("4")}}); err != nil {
			t.Fatal(err)
		}
		csr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: schedv1alpha1.ClusterScopedResourceSpec{
			ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true, exRes: true}}}
		if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Create(ctx, csr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = env.Accord.SchedulingV1alpha1().ClusterScopedResources().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		usage.SetNode(name, "500m", "1Gi")
		nodes = append(nodes, name)
	}
	if err := env.Nodes.WaitForNodesReady(ctx, nodes...); err != nil {
		t.Fatal(err)
	}

	// The chart's configurations, released into this namespace (the Leases go there).
	objs, err := render.Chart("../../../manifests/charts/accord", render.Release{Name: "accord", Namespace: ns, Values: map[string]any{
		// The test's workload has one replica, which the default budget would hold.
		"descheduler": map[string]any{"reservationFirst": true, "defaultEvictor": map[string]any{"minPodAge": "0s"},
			"limits": map[string]any{"evictSingleReplicaWorkloads": true}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	schedConfig := writeConfigMapFile(t, objs, "accord-scheduler-config", "scheduler-config.yaml", dir, func(cfg map[string]any) {
		cfg["clientConnection"].(map[string]any)["kubeconfig"] = kubeconfig
		le := cfg["leaderElection"].(map[string]any)
		le["leaseDuration"], le["renewDeadline"], le["retryPeriod"] = "4s", "3s", "500ms"
	})
	policy := writeConfigMapFile(t, objs, "accord-descheduler-policy", "policy.yaml", dir, nil)
	reporterConfig := filepath.Join(dir, "reporter.yaml")
	if err := os.WriteFile(reporterConfig, []byte("apiVersion: metricsreporter/v1alpha1\nkind: MetricsReporterConfiguration\nsamplingPeriodSeconds: 1\ndefaultReportIntervalSeconds: 1\nstatistic: last\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Anonymous callers may read /metrics here (test/integration/security checks the authorisation).
	open := "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
	lease := []string{"--leader-elect=true", "--leader-elect-resource-namespace=" + ns,
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}
	ports := map[string]int{"scheduler": harness.FreePort(t), "descheduler": harness.FreePort(t), "metrics-reporter": harness.FreePort(t)}
	procCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	harness.StartBinary(t, procCtx, bins["scheduler"], "--config="+schedConfig, "--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", ports["scheduler"]), open, "--v=2")
	harness.StartBinary(t, procCtx, bins["descheduler"], append([]string{"--kubeconfig=" + kubeconfig, "--policy-config-file=" + policy,
		"--scheduler-config-file=" + schedConfig, "--descheduling-interval=2s", "--event-driven", "--leader-elect-resource-name=accord-descheduler",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports["descheduler"]), open, "--v=2"}, lease...)...)
	harness.StartBinary(t, procCtx, bins["metrics-reporter"], append([]string{"--kubeconfig=" + kubeconfig, "--config=" + reporterConfig,
		"--leader-elect-resource-name=accord-metrics-reporter",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports["metrics-reporter"]), open, "--v=2"}, lease...)...)

	// A pod of a ReplicaSet requesting example.com/memory, placed by accord-scheduler.
	labels := map[string]string{"app": "mem"}
	spec := corev1.PodSpec{SchedulerName: "accord-scheduler", TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), exRes: resource.MustParse("1")},
			Limits:   corev1.ResourceList{exRes: resource.MustParse("1")}}}}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "mem", Namespace: ns}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
	if _, err := env.Client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := runningPod(t, ns, "")
	t.Logf("pod %s runs on %s", first.Name, first.Spec.NodeName)
	// A pod no node's ClusterScopedResource offers a resource for: unschedulable by NodeCRDResourceFit.
	gpu := spec.DeepCopy()
	gpu.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")},
		Limits: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: ns}, Spec: *gpu}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The pod's node stops offering example.com/memory: the descheduler reserves the other node,
	// evicts the pod, and its replacement lands in the reservation.
	csr, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Get(ctx, first.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Spec.ResourcesFilter[exRes] = false
	if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Update(ctx, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	second := runningPod(t, ns, first.Name)
	t.Logf("replacement %s runs on %s", second.Name, second.Spec.NodeName)

	// Scrape until the events' metrics are there (the replacement's landing is counted once the
	// descheduler sees it), at most a minute.
	uses := map[string]map[string]bool{}
	exprs, err := monitoring.Expressions()
	if err != nil {
		t.Fatal(err)
	}
	for where, e := range exprs {
		u, err := monitoring.Uses(e)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		for m, ls := range u {
			if uses[m] == nil {
				uses[m] = map[string]bool{}
			}
			for _, l := range ls {
				uses[m][l] = true
			}
		}
	}
	var missing []string
	var exported map[string]map[string]bool
	err = harness.WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		exported = map[string]map[string]bool{}
		for c, port := range ports {
			if err := scrape(ctx, port, exported); err != nil {
				t.Logf("%s: %v", c, err)
				return false, nil
			}
		}
		missing = check(uses, exported)
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Errorf("after a minute, the rules and the dashboard still read what no binary exports:\n%s", strings.Join(missing, "\n"))
	}
	// Each component exports its leader gauge (the AccordNoLeader rule), under its Lease's name.
	for c, port := range ports {
		got := map[string]map[string]bool{}
		if err := scrape(ctx, port, got); err != nil {
			t.Errorf("%s: %v", c, err)
		} else if !got["leader_election_master_status"]["name"] {
			t.Errorf("accord-%s does not export leader_election_master_status{name}", c)
		}
	}
	// The check itself names what is missing.
	if got := check(map[string]map[string]bool{"accord_nope_total": {}, "scheduler_pending_pods": {"nope": true}}, exported); len(got) != 2 {
		t.Errorf("check of a metric and a label no binary exports: %v, want both named", got)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for m := range uses {
			if !yield(m) {
				return
			}
		}
	})
	for _, m := range names {
		if exported[m] == nil {
			t.Logf("%s: absent (%s)", m, mayBeAbsent[m])
		} else {
			t.Logf("%s: exported, labels read %v", m, keys(uses[m]))
		}
	}
}

// check returns what uses reads that exported lacks: metrics (unless in mayBeAbsent) and labels.
func check(uses, exported map[string]map[string]bool) []string {
	var out []string
	for m, ls := range uses {
		got := exported[m]
		if got == nil {
			if _, ok := mayBeAbsent[m]; !ok {
				out = append(out, fmt.Sprintf("metric %s", m))
			}
			continue
		}
		for l := range ls {
			if !got[l] {
				out = append(out, fmt.Sprintf("label %s of %s (exported: %v)", l, m, keys(got)))
			}
		}
	}
	sort.Strings(out)
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// scrape reads https://127.0.0.1:port/metrics and adds each series name (a histogram's _bucket, _sum
// and _count) with its label names to into.
func scrape(ctx context.Context, port int, into map[string]map[string]bool) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the binaries' self-signed serving certificates
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return err
	}
	add := func(name string, m *dto.Metric, extra ...string) {
		if into[name] == nil {
			into[name] = map[string]bool{}
		}
		for _, l := range m.GetLabel() {
			into[name][l.GetName()] = true
		}
		for _, l := range extra {
			into[name][l] = true
		}
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetType() == dto.MetricType_HISTOGRAM {
				add(name+"_bucket", m, "le")
				add(name+"_sum", m)
				add(name+"_count", m)
				continue
			}
			add(name, m)
		}
	}
	return nil
}

// writeConfigMapFile writes key of the rendered ConfigMap name to dir, after edit (when set) changed
// its decoded YAML, and returns the file's path.
func writeConfigMapFile(t *testing.T, objs []*unstructured.Unstructured, name, key, dir string, edit func(map[string]any)) string {
	t.Helper()
	data, err := render.ConfigMapData(objs, name, key)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
			t.Fatal(err)
		}
		edit(cfg)
		b, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		data = string(b)
	}
	path := filepath.Join(dir, key)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runningPod waits (at most 2 minutes) for a Running pod of the namespace's ReplicaSet other than
// not, and returns it.
func runningPod(t *testing.T, ns, not string) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	if err := harness.WaitFor(context.Background(), 2*time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=mem"})
		if err != nil {
			return false, err
		}
		for i, p := range pods.Items {
			if p.Name != not && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				found = &pods.Items[i]
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no Running pod of ReplicaSet mem (other than %q): %v", not, err)
	}
	return found
}
