package deschedulerplugins

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/metricsource"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/metricsapi"
	"github.com/accord-sched/accord/test/promtest"
)

// startMetricsAPI serves metrics.k8s.io from the test, registered with the control plane's
// aggregator, until the test ends.
func startMetricsAPI(t *testing.T) *metricsapi.Server {
	t.Helper()
	return metricsapi.StartRegistered(t, env.Config)
}

func memory(q string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(q)
	}
}

// measuredCluster: by requests node a is the hot one (5 x 500m of 4 CPU: 62.5%, over the 60%
// target); by measured usage it is node b (3.2 of 4 CPU: 80%), whose five pods request 100m each
// and use 600m each; c is idle.
func measuredCluster(t *testing.T, prefix string, m *metricsapi.Server) (*cluster, []*corev1.Pod, []*corev1.Pod) {
	c := newCluster(t, prefix, harness.NodeSpec{Name: "a"}, harness.NodeSpec{Name: "b"}, harness.NodeSpec{Name: "c"})
	var onA, onB []*corev1.Pod
	for i := range 5 {
		onA = append(onA, c.pod(fmt.Sprintf("a%d", i), "a", requests("500m")))
		m.SetPod(c.ns, fmt.Sprintf("a%d", i), "80m", "100Mi")
		onB = append(onB, c.pod(fmt.Sprintf("b%d", i), "b", requests("100m")))
		m.SetPod(c.ns, fmt.Sprintf("b%d", i), "600m", "100Mi")
	}
	m.SetNode(c.node("a"), "400m", "1Gi")
	m.SetNode(c.node("b"), "3200m", "1Gi")
	m.SetNode(c.node("c"), "200m", "1Gi")
	return c, onA, onB
}

// TestLowNodeUtilizationKubernetesMetrics runs LowNodeUtilization with metricsUtilization
// {source: KubernetesMetrics} for one cycle against metrics.k8s.io served through the real
// apiserver's aggregator: the node metrics report hot is drained, not the one requests call hot.
func TestLowNodeUtilizationKubernetesMetrics(t *testing.T) {
	m := startMetricsAPI(t)
	c, onA, onB := measuredCluster(t, "lnu-kube", m)
	c.runPolicy("lownodeutilization-kubernetesmetrics.yaml")
	if got := c.evicted(onA...); len(got) != 0 {
		t.Fatalf("evicted %v from node a, which only requests call hot", got)
	}
	// 3.2 CPU: one pod (600m measured) leaves 2.6 (65%), a second 2.0 (50%, under the 60% target).
	if got := c.evicted(onB...); len(got) != 2 {
		t.Fatalf("evicted %v from node b, want two pods (80%% -> 50%% measured)", got)
	}
}

// TestLowNodeUtilizationMetricsServerDeprecated: the deprecated metricsCollector.enabled and
// metricsUtilization.metricsServer mean the same as the KubernetesMetrics provider and source.
func TestLowNodeUtilizationMetricsServerDeprecated(t *testing.T) {
	m := startMetricsAPI(t)
	c, onA, onB := measuredCluster(t, "lnu-ms", m)
	c.runPolicy("lownodeutilization-metricsserver.yaml")
	if got := c.evicted(onA...); len(got) != 0 {
		t.Fatalf("evicted %v from node a, which only requests call hot", got)
	}
	if got := c.evicted(onB...); len(got) != 2 {
		t.Fatalf("evicted %v from node b, want two pods (80%% -> 50%% measured)", got)
	}
}

// TestLowNodeUtilizationKubernetesMetricsDown: with metrics.k8s.io down the plugin skips the
// cycle: nothing is evicted, though the same cluster with the source up loses two pods.
func TestLowNodeUtilizationKubernetesMetricsDown(t *testing.T) {
	m := startMetricsAPI(t)
	c, onA, onB := measuredCluster(t, "lnu-down", m)
	m.SetDown(true)
	c.runPolicy("lownodeutilization-kubernetesmetrics.yaml")
	if got := c.evicted(append(onA, onB...)...); len(got) != 0 {
		t.Fatalf("evicted %v with the metrics source down", got)
	}
}

// memoryQuery is node_exporter's memory utilisation per node (the scrape target labels its series
// with the node name, as kube-prometheus relabels them), with the node put into `instance`.
const memoryQuery = `label_replace(1 - node_memory_MemAvailable_bytes{job="test"} / node_memory_MemTotal_bytes{job="test"}, "instance", "$1", "node", "(.+)")`

// TestLowNodeUtilizationPrometheus runs LowNodeUtilization with metricsUtilization {source:
// Prometheus} for one cycle against a real Prometheus (Debian's package, run by the test) scraping
// node_exporter-style gauges, through a proxy that demands the bearer token of the Secret the
// policy's authToken names: with a wrong token nothing happens; with the right one a pod leaves the
// node whose memory is 90% used (one pod per node and cycle, as upstream).
func TestLowNodeUtilizationPrometheus(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, "lnu-prom", harness.NodeSpec{Name: "a"}, harness.NodeSpec{Name: "b"}, harness.NodeSpec{Name: "c"})
	target := promtest.NewTarget(t)
	const total = 16 << 30
	for node, used := range map[string]float64{"a": 0.9, "b": 0.2, "c": 0.1} {
		target.Set("node_memory_MemTotal_bytes", total, "node", c.node(node))
		target.Set("node_memory_MemAvailable_bytes", total*(1-used), "node", c.node(node))
	}
	prom := promtest.Start(t, target.Addr())

	// Wait until Prometheus has scraped the target and the query answers for every node.
	direct, err := metricsource.NewPrometheus(metricsource.PrometheusConfig{URL: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.CloseIdleConnections()
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		f, err := direct.NodeFractions(ctx, memoryQuery)
		return err == nil && len(f) == 3 && f[c.node("a")] > 0.89, nil
	}); err != nil {
		t.Fatalf("prometheus has no samples for the nodes: %v\n%s", err, prom.Log)
	}

	// The proxy in front of Prometheus checks the bearer token.
	const token = "s3cret-token"
	var authorized, refused atomic.Int64
	upstream, _ := url.Parse(prom.URL)
	rp := httputil.NewSingleHostReverseProxy(upstream)
	tr := &http.Transport{}
	rp.Transport = tr
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			refused.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		authorized.Add(1)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { proxy.Close(); tr.CloseIdleConnections() })

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "prometheus-token"},
		Data: map[string][]byte{"prometheusAuthToken": []byte("wrong")}}
	if _, err := env.Client.CoreV1().Secrets(c.ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var onA, others []*corev1.Pod
	for i := range 3 {
		onA = append(onA, c.pod(fmt.Sprintf("a%d", i), "a", requests("100m"), memory("100Mi")))
		others = append(others, c.pod(fmt.Sprintf("b%d", i), "b", requests("100m")), c.pod(fmt.Sprintf("c%d", i), "c", requests("100m")))
	}
	run := func() {
		c.runPolicy("lownodeutilization-prometheus.yaml",
			"http://prometheus.monitoring.svc:9090", proxy.URL,
			"namespace: kube-system", "namespace: "+c.ns,
			"query: instance:node_memory_utilisation:ratio", "query: '"+memoryQuery+"'")
	}

	run()
	if got := c.evicted(append(onA, others...)...); len(got) != 0 {
		t.Fatalf("evicted %v though Prometheus refused the token", got)
	}
	if refused.Load() == 0 || authorized.Load() != 0 {
		t.Fatalf("proxy saw %d refused and %d authorized queries, want the wrong token refused", refused.Load(), authorized.Load())
	}

	secret.Data["prometheusAuthToken"] = []byte(token)
	if _, err := env.Client.CoreV1().Secrets(c.ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	run()
	if authorized.Load() == 0 {
		t.Fatal("no query carried the Secret's token")
	}
	if got := c.evicted(others...); len(got) != 0 {
		t.Fatalf("evicted %v from nodes under the target", got)
	}
	got := c.evicted(onA...)
	if len(got) != 1 || !slices.ContainsFunc(onA, func(p *corev1.Pod) bool { return p.Name == got[0] }) || !strings.HasPrefix(got[0], "a") {
		t.Fatalf("evicted %v from node a, want exactly one pod (90%% memory, one pod per node and cycle)", got)
	}
}
