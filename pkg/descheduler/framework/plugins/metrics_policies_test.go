package plugins_test

import (
	"testing"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeutilization"
)

// TestMetricsUtilizationPolicies decodes and validates the LowNodeUtilization policies that read
// real utilization (run for a cycle against metrics.k8s.io and a real Prometheus in
// test/integration/deschedulerplugins).
func TestMetricsUtilizationPolicies(t *testing.T) {
	p := load(t, "lownodeutilization-kubernetesmetrics.yaml")
	if len(p.MetricsProviders) != 1 || p.MetricsProviders[0].Source != descheduler.KubernetesMetrics {
		t.Fatalf("metricsProviders = %+v", p.MetricsProviders)
	}
	a := args(t, p, lownodeutilization.Name).(*lownodeutilization.LowNodeUtilizationArgs)
	if a.MetricsUtilization.Source != descheduler.KubernetesMetrics || a.Thresholds["pods"] != 100 {
		t.Fatalf("args = %+v (pods defaults to 100 as with requests)", a)
	}

	p = load(t, "lownodeutilization-metricsserver.yaml")
	if p.MetricsCollector == nil || !p.MetricsCollector.Enabled {
		t.Fatalf("metricsCollector = %+v", p.MetricsCollector)
	}
	if a := args(t, p, lownodeutilization.Name).(*lownodeutilization.LowNodeUtilizationArgs); !a.MetricsUtilization.MetricsServer {
		t.Fatalf("metricsUtilization = %+v", a.MetricsUtilization)
	}

	p = load(t, "lownodeutilization-prometheus.yaml")
	prom := p.MetricsProviders[0].Prometheus
	if p.MetricsProviders[0].Source != descheduler.PrometheusMetrics || prom.URL != "http://prometheus.monitoring.svc:9090" ||
		prom.AuthToken.SecretReference.Namespace != "kube-system" || prom.AuthToken.SecretReference.Name != "prometheus-token" {
		t.Fatalf("metricsProviders = %+v", p.MetricsProviders)
	}
	a = args(t, p, lownodeutilization.Name).(*lownodeutilization.LowNodeUtilizationArgs)
	want := pluginutil.ResourceThresholds{lownodeutilization.MetricResource: 30}
	if len(a.Thresholds) != 1 || a.Thresholds[lownodeutilization.MetricResource] != want[lownodeutilization.MetricResource] ||
		a.MetricsUtilization.Prometheus.Query != "instance:node_memory_utilisation:ratio" {
		t.Fatalf("args = %+v, %+v (no cpu/memory/pods defaults with Prometheus)", a, a.MetricsUtilization)
	}
}
