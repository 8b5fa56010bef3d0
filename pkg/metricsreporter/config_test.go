package metricsreporter

import (
	"strings"
	"testing"

	"github.com/accord-sched/accord/apis/metricsreporter/v1alpha1"
)

const header = "apiVersion: metricsreporter/v1alpha1\nkind: MetricsReporterConfiguration\n"

func TestDecodeConfigDefaults(t *testing.T) {
	c, err := DecodeConfig([]byte(header))
	if err != nil {
		t.Fatal(err)
	}
	if c.Source.Type != v1alpha1.SourceKubernetesMetrics || *c.SamplingPeriodSeconds != 15 || *c.DefaultReportIntervalSeconds != 60 || c.Statistic != "mean" || *c.MaxConcurrentWrites != 8 {
		t.Fatalf("defaults: %+v", c)
	}
	c, err = DecodeConfig([]byte(header + "source:\n  type: Prometheus\n  prometheus:\n    url: http://prometheus:9090\nstatistic: p95\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Source.Prometheus
	if p.NodeCPUQuery != v1alpha1.DefaultNodeCPUQuery || p.PodMemoryQuery != v1alpha1.DefaultPodMemoryQuery || p.NodeLabel != "instance" || p.PodNamespaceLabel != "namespace" || p.PodNameLabel != "pod" || *p.TimeoutSeconds != 10 {
		t.Fatalf("prometheus defaults: %+v", p)
	}
}

func TestDecodeConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown field", "samplingPeriod: 5\n", `unknown field "samplingPeriod"`},
		{"duplicate field", "statistic: last\nstatistic: mean\n", `"statistic" already set`},
		{"statistic", "statistic: p100\n", "statistic: Unsupported value"},
		{"sampling", "samplingPeriodSeconds: 0\n", "samplingPeriodSeconds: Invalid value"},
		{"sampling over interval", "samplingPeriodSeconds: 90\n", "samplingPeriodSeconds: Invalid value: 90: must not exceed defaultReportIntervalSeconds"},
		{"writes", "maxConcurrentWrites: 0\n", "maxConcurrentWrites: Invalid value"},
		{"type", "source:\n  type: Graphite\n", "source.type: Unsupported value"},
		{"prometheus missing", "source:\n  type: Prometheus\n", "source.prometheus: Required value"},
		{"prometheus forbidden", "source:\n  prometheus:\n    url: http://p\n", "source.prometheus: Forbidden"},
		{"prometheus url", "source:\n  type: Prometheus\n  prometheus:\n    url: p:9090\n", "source.prometheus.url: Invalid value"},
		{"prometheus unknown", "source:\n  type: Prometheus\n  prometheus:\n    url: http://p\n    query: x\n", `unknown field "source.prometheus.query"`},
		{"kind", "apiVersion: metricsreporter/v1alpha1\nkind: Other\n", "no kind \"Other\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := header + tc.yaml
			if strings.HasPrefix(tc.yaml, "apiVersion") {
				data = tc.yaml
			}
			_, err := DecodeConfig([]byte(data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestExamples: the README's example files load.
func TestExamples(t *testing.T) {
	for _, f := range []string{"examples/metrics-server.yaml", "examples/prometheus.yaml"} {
		if _, err := LoadConfigFile(f); err != nil {
			t.Error(err)
		}
	}
}
