package metricsource

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Usage is one reading of a whole cluster: the usage of every node and pod the source reports.
// A node or pod the source does not report is absent, never zero.
type Usage struct {
	Nodes map[string]corev1.ResourceList
	Pods  map[types.NamespacedName]corev1.ResourceList
}

// UsageSource reads the current usage of every node and pod (accord-metrics-reporter samples one).
type UsageSource interface {
	// Name names the source in logs, errors and metrics.
	Name() string
	// Usage reads the cluster's usage; an error means nothing was read.
	Usage(ctx context.Context) (Usage, error)
}

// KubernetesUsage reads metrics.k8s.io: one list of NodeMetrics and one of PodMetrics per reading.
type KubernetesUsage struct{ *ResourceMetrics }

var _ UsageSource = KubernetesUsage{}

// Name is "metrics.k8s.io".
func (KubernetesUsage) Name() string { return "metrics.k8s.io" }

// Usage lists nodes and pods. A failed node list fails the reading; a failed pod list too (pod
// usage would be missing for every node).
func (k KubernetesUsage) Usage(ctx context.Context) (Usage, error) {
	nodes, err := k.NodeUsages(ctx)
	if err != nil {
		return Usage{}, err
	}
	pods, err := k.PodUsages(ctx, "")
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Nodes: make(map[string]corev1.ResourceList, len(nodes)), Pods: make(map[types.NamespacedName]corev1.ResourceList, len(pods))}
	for n, s := range nodes {
		u.Nodes[n] = s.Usage
	}
	for p, s := range pods {
		u.Pods[p] = s.Usage
	}
	return u, nil
}

// PrometheusUsageQueries are the four instant queries of a PrometheusUsage and the labels their
// samples name nodes and pods with. CPU values are in cores, memory values in bytes.
type PrometheusUsageQueries struct {
	NodeCPU, NodeMemory, PodCPU, PodMemory     string
	NodeLabel, PodNamespaceLabel, PodNameLabel string
}

// PrometheusUsage reads node and pod usage with four instant queries per reading.
type PrometheusUsage struct {
	Client  *Prometheus
	Queries PrometheusUsageQueries
}

var _ UsageSource = PrometheusUsage{}

// Name is "prometheus".
func (PrometheusUsage) Name() string { return "prometheus" }

// Usage runs the queries. A failed query fails the reading; a node or pod present in only one of
// its two queries is left out (its usage would be partial). Negative or non-finite values and
// samples without the mapping labels are skipped.
func (p PrometheusUsage) Usage(ctx context.Context) (Usage, error) {
	q := p.Queries
	nodeCPU, err := p.by(ctx, q.NodeCPU, q.NodeLabel)
	if err != nil {
		return Usage{}, err
	}
	nodeMem, err := p.by(ctx, q.NodeMemory, q.NodeLabel)
	if err != nil {
		return Usage{}, err
	}
	podCPU, err := p.by(ctx, q.PodCPU, q.PodNamespaceLabel, q.PodNameLabel)
	if err != nil {
		return Usage{}, err
	}
	podMem, err := p.by(ctx, q.PodMemory, q.PodNamespaceLabel, q.PodNameLabel)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Nodes: map[string]corev1.ResourceList{}, Pods: map[types.NamespacedName]corev1.ResourceList{}}
	for k, cpu := range nodeCPU {
		if mem, ok := nodeMem[k]; ok {
			u.Nodes[k[0]] = cpuMemory(cpu, mem)
		}
	}
	for k, cpu := range podCPU {
		if mem, ok := podMem[k]; ok {
			u.Pods[types.NamespacedName{Namespace: k[0], Name: k[1]}] = cpuMemory(cpu, mem)
		}
	}
	return u, nil
}

func cpuMemory(cores, bytes float64) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(math.Round(cores*1000)), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(math.Round(bytes)), resource.BinarySI),
	}
}

// by runs query and keys its values by the given labels (at most two). Samples missing a label or
// with a negative or non-finite value are skipped; a key seen twice fails the query.
func (p PrometheusUsage) by(ctx context.Context, query string, labels ...string) (map[[2]string]float64, error) {
	if len(labels) == 0 || len(labels) > 2 {
		return nil, errors.New("prometheus usage: one or two key labels")
	}
	samples, err := p.Client.Query(ctx, query, time.Time{})
	if err != nil {
		return nil, err
	}
	out := make(map[[2]string]float64, len(samples))
	for _, s := range samples {
		var k [2]string
		ok := true
		for i, l := range labels {
			k[i] = s.Labels[l]
			ok = ok && k[i] != ""
		}
		if !ok || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) || s.Value < 0 {
			continue
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("prometheus query %q: more than one sample for %v=%v", query, labels, k[:len(labels)])
		}
		out[k] = s.Value
	}
	return out, nil
}
