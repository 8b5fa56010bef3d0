// Package metricsource reads real resource usage from the sources clusters already run, with no
// dependency on the descheduler or scheduler frameworks:
//
//   - ResourceMetrics reads the resource metrics API, metrics.k8s.io (metrics-server's NodeMetrics
//     and PodMetrics), through k8s.io/metrics' clientset;
//   - NodeCollector polls a ResourceMetrics on an interval and keeps each node's usage smoothed
//     (an exponentially weighted moving average, as the upstream descheduler does), remembering when
//     the source was last reachable so that a source that is down is reported as such, never as
//     zero usage;
//   - Prometheus runs instant PromQL queries over a Prometheus server's HTTP API
//     (github.com/prometheus/client_golang/api), with a bearer token read per request.
//
// accord-descheduler's metricsProviders build on these; so can any other producer of NodeMetric.
package metricsource
