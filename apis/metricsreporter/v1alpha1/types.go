package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// MetricsReporterConfiguration configures accord-metrics-reporter: where usage is read, how samples
// are aggregated over a NodeMetric's report interval, and how fast NodeMetrics are written.
type MetricsReporterConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// Source is where usage is read. Default: metrics.k8s.io.
	// +optional
	Source Source `json:"source,omitempty"`

	// SamplingPeriodSeconds is how often the source is read; every sample is kept until it is older
	// than the node's report interval. Default 15.
	// +optional
	SamplingPeriodSeconds *int64 `json:"samplingPeriodSeconds,omitempty"`

	// DefaultReportIntervalSeconds is the spec.reportIntervalSeconds of the NodeMetrics the reporter
	// creates; a NodeMetric whose spec sets another value is reported at that interval. Default 60.
	// +optional
	DefaultReportIntervalSeconds *int64 `json:"defaultReportIntervalSeconds,omitempty"`

	// Statistic is what is reported of the samples of one report interval: "last", "mean", or a
	// percentile "p1" to "p99" (nearest rank; "p95" ignores the top 5% of samples, so one spike does
	// not move pods). Default "mean".
	// +optional
	Statistic string `json:"statistic,omitempty"`

	// MaxConcurrentWrites bounds the status writes in flight at once; the client's QPS
	// (--kube-api-qps) bounds their rate. Default 8.
	// +optional
	MaxConcurrentWrites *int32 `json:"maxConcurrentWrites,omitempty"`
}

// Source types.
const (
	// SourceKubernetesMetrics reads metrics.k8s.io (metrics-server's NodeMetrics and PodMetrics).
	SourceKubernetesMetrics = "KubernetesMetrics"
	// SourcePrometheus runs instant PromQL queries.
	SourcePrometheus = "Prometheus"
)

// Source selects and configures the usage source.
type Source struct {
	// Type is KubernetesMetrics (default) or Prometheus.
	// +optional
	Type string `json:"type,omitempty"`
	// Prometheus configures the Prometheus source; required with type Prometheus, rejected otherwise.
	// +optional
	Prometheus *PrometheusSource `json:"prometheus,omitempty"`
}

// PrometheusSource reads usage with instant queries. Each query returns an instant vector; CPU
// values are in cores, memory values in bytes.
type PrometheusSource struct {
	// URL of the Prometheus server (its HTTP API is under URL/api/v1). Required.
	URL string `json:"url"`
	// BearerTokenFile, when set, is read on every request and sent as a bearer token.
	// +optional
	BearerTokenFile string `json:"bearerTokenFile,omitempty"`
	// CAFile, when set, is trusted in addition to the system roots.
	// +optional
	CAFile string `json:"caFile,omitempty"`
	// NodeCPUQuery returns each node's CPU usage in cores, one sample per node labelled NodeLabel.
	// Default: node_exporter's non-idle CPU seconds rate, summed by instance.
	// +optional
	NodeCPUQuery string `json:"nodeCPUQuery,omitempty"`
	// NodeMemoryQuery returns each node's memory usage in bytes. Default: node_exporter's
	// MemTotal - MemAvailable.
	// +optional
	NodeMemoryQuery string `json:"nodeMemoryQuery,omitempty"`
	// PodCPUQuery returns each pod's CPU usage in cores, one sample per pod labelled
	// PodNamespaceLabel and PodNameLabel. Default: cAdvisor's container_cpu_usage_seconds_total rate,
	// summed by namespace and pod.
	// +optional
	PodCPUQuery string `json:"podCPUQuery,omitempty"`
	// PodMemoryQuery returns each pod's memory working set in bytes. Default: cAdvisor's
	// container_memory_working_set_bytes, summed by namespace and pod.
	// +optional
	PodMemoryQuery string `json:"podMemoryQuery,omitempty"`
	// NodeLabel is the label naming the node (its Kubernetes name) in node samples. Default "instance".
	// +optional
	NodeLabel string `json:"nodeLabel,omitempty"`
	// PodNamespaceLabel is the label naming a pod's namespace. Default "namespace".
	// +optional
	PodNamespaceLabel string `json:"podNamespaceLabel,omitempty"`
	// PodNameLabel is the label naming a pod. Default "pod".
	// +optional
	PodNameLabel string `json:"podNameLabel,omitempty"`
	// TimeoutSeconds bounds each query. Default 10.
	// +optional
	TimeoutSeconds *int64 `json:"timeoutSeconds,omitempty"`
}
