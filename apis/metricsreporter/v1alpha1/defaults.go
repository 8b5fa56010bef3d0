package v1alpha1

import (
	"k8s.io/utils/ptr"
)

// Defaults of the Prometheus queries: node_exporter for nodes, cAdvisor (the kubelet's
// /metrics/cadvisor) for pods.
const (
	DefaultNodeCPUQuery    = `sum by (instance) (rate(node_cpu_seconds_total{mode!="idle",mode!="iowait",mode!="steal"}[1m]))`
	DefaultNodeMemoryQuery = `node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes`
	DefaultPodCPUQuery     = `sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{container!="",container!="POD"}[1m]))`
	DefaultPodMemoryQuery  = `sum by (namespace, pod) (container_memory_working_set_bytes{container!="",container!="POD"})`
)

// SetDefaults_MetricsReporterConfiguration fills in the defaults.
func SetDefaults_MetricsReporterConfiguration(obj *MetricsReporterConfiguration) {
	if obj.Source.Type == "" {
		obj.Source.Type = SourceKubernetesMetrics
	}
	if obj.SamplingPeriodSeconds == nil {
		obj.SamplingPeriodSeconds = ptr.To[int64](15)
	}
	if obj.DefaultReportIntervalSeconds == nil {
		obj.DefaultReportIntervalSeconds = ptr.To[int64](60)
	}
	if obj.Statistic == "" {
		obj.Statistic = "mean"
	}
	if obj.MaxConcurrentWrites == nil {
		obj.MaxConcurrentWrites = ptr.To[int32](8)
	}
}

// SetDefaults_PrometheusSource fills in the node_exporter and cAdvisor defaults.
func SetDefaults_PrometheusSource(obj *PrometheusSource) {
	for _, d := range []struct {
		f *string
		v string
	}{
		{&obj.NodeCPUQuery, DefaultNodeCPUQuery}, {&obj.NodeMemoryQuery, DefaultNodeMemoryQuery},
		{&obj.PodCPUQuery, DefaultPodCPUQuery}, {&obj.PodMemoryQuery, DefaultPodMemoryQuery},
		{&obj.NodeLabel, "instance"}, {&obj.PodNamespaceLabel, "namespace"}, {&obj.PodNameLabel, "pod"},
	} {
		if *d.f == "" {
			*d.f = d.v
		}
	}
	if obj.TimeoutSeconds == nil {
		obj.TimeoutSeconds = ptr.To[int64](10)
	}
}
