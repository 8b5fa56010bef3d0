package metricsource

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// Sample is one usage reading: usage over [Timestamp-Window, Timestamp]. Memory is the working set.
type Sample struct {
	Usage     corev1.ResourceList
	Timestamp time.Time
	Window    time.Duration
}

// ResourceMetrics reads metrics.k8s.io.
type ResourceMetrics struct {
	client metricsclient.Interface
}

// NewResourceMetrics reads metrics.k8s.io through client.
func NewResourceMetrics(client metricsclient.Interface) *ResourceMetrics {
	return &ResourceMetrics{client: client}
}

// NewResourceMetricsForConfig builds the metrics.k8s.io clientset from cfg. The resource metrics API
// is served by an aggregated apiserver; JSON is asked for, which every implementation serves.
func NewResourceMetricsForConfig(cfg *rest.Config) (*ResourceMetrics, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	c, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metrics.k8s.io client: %w", err)
	}
	return NewResourceMetrics(c), nil
}

// Client returns the clientset.
func (r *ResourceMetrics) Client() metricsclient.Interface { return r.client }

// NodeUsages lists the NodeMetrics of every node the source reports (one request), by node name.
func (r *ResourceMetrics) NodeUsages(ctx context.Context) (map[string]Sample, error) {
	list, err := r.client.MetricsV1beta1().NodeMetricses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing metrics.k8s.io nodes: %w", err)
	}
	out := make(map[string]Sample, len(list.Items))
	for i := range list.Items {
		m := &list.Items[i]
		out[m.Name] = Sample{Usage: m.Usage, Timestamp: m.Timestamp.Time, Window: m.Window.Duration}
	}
	return out, nil
}

// PodUsage returns a pod's current usage: the sum over its containers. A container that does not
// report a resource makes that resource absent from the sum (a partial sum would understate it).
func (r *ResourceMetrics) PodUsage(ctx context.Context, namespace, name string) (Sample, error) {
	m, err := r.client.MetricsV1beta1().PodMetricses(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return Sample{}, fmt.Errorf("getting metrics.k8s.io pod %s/%s: %w", namespace, name, err)
	}
	return podSample(m), nil
}

// PodUsages lists the PodMetrics of namespace ("" for all namespaces), one request.
func (r *ResourceMetrics) PodUsages(ctx context.Context, namespace string) (map[types.NamespacedName]Sample, error) {
	list, err := r.client.MetricsV1beta1().PodMetricses(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing metrics.k8s.io pods: %w", err)
	}
	out := make(map[types.NamespacedName]Sample, len(list.Items))
	for i := range list.Items {
		m := &list.Items[i]
		out[types.NamespacedName{Namespace: m.Namespace, Name: m.Name}] = podSample(m)
	}
	return out, nil
}

func podSample(m *metricsv1beta1.PodMetrics) Sample {
	s := Sample{Usage: corev1.ResourceList{}, Timestamp: m.Timestamp.Time, Window: m.Window.Duration}
	if len(m.Containers) == 0 {
		return s
	}
	for r := range m.Containers[0].Usage {
		var sum resource.Quantity
		complete := true
		for _, c := range m.Containers {
			q, ok := c.Usage[r]
			if !ok {
				complete = false
				break
			}
			sum.Add(q)
		}
		if complete {
			s.Usage[r] = sum
		}
	}
	return s
}

// MilliValues returns the usage of resources in milli-units (cpu in millicores, memory in
// milli-bytes), and false when one of them is absent.
func MilliValues(usage corev1.ResourceList, resources ...corev1.ResourceName) (map[corev1.ResourceName]int64, bool) {
	out := make(map[corev1.ResourceName]int64, len(resources))
	for _, r := range resources {
		q, ok := usage[r]
		if !ok {
			return nil, false
		}
		out[r] = q.MilliValue()
	}
	return out, true
}
