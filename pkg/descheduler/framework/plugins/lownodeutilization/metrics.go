package lownodeutilization

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// MetricResource is the one threshold resource of the Prometheus source: the query's value per node,
// as a percentage (upstream's name).
const MetricResource corev1.ResourceName = "MetricResource"

// MetricsUtilization makes LowNodeUtilization classify nodes by measured usage (upstream's
// metricsUtilization). The source must be configured in the policy's metricsProviders.
type MetricsUtilization struct {
	// MetricsServer is the deprecated form of `source: KubernetesMetrics`.
	MetricsServer bool `json:"metricsServer,omitempty"`
	// Source is KubernetesMetrics (cpu and memory usage from metrics.k8s.io, smoothed over the
	// collector's polls; pods counts the pods) or Prometheus (the value of prometheus.query).
	Source descheduler.MetricsSource `json:"source,omitempty"`
	// Prometheus holds the query of the Prometheus source.
	Prometheus *MetricsPrometheus `json:"prometheus,omitempty"`
}

// MetricsPrometheus is the query LowNodeUtilization runs against the Prometheus source.
type MetricsPrometheus struct {
	// Query is PromQL returning one sample per node, labelled `instance` with the node's name, with
	// a value in [0, 1]; thresholds compare it, in percent, as the resource MetricResource.
	Query string `json:"query,omitempty"`
}

// source returns the effective metrics source ("" for requests).
func (m *MetricsUtilization) source() descheduler.MetricsSource {
	switch {
	case m == nil:
		return ""
	case m.MetricsServer:
		return descheduler.KubernetesMetrics
	}
	return m.Source
}

func validateMetricsUtilization(path *field.Path, a *LowNodeUtilizationArgs) field.ErrorList {
	m := a.MetricsUtilization
	if m == nil {
		for _, t := range []struct {
			name string
			m    pluginutil.ResourceThresholds
		}{{"thresholds", a.Thresholds}, {"targetThresholds", a.TargetThresholds}} {
			if _, ok := t.m[MetricResource]; ok {
				return field.ErrorList{field.Invalid(path.Child(t.name).Key(string(MetricResource)), string(MetricResource), "only with metricsUtilization.source Prometheus")}
			}
		}
		return nil
	}
	var errs field.ErrorList
	mp := path.Child("metricsUtilization")
	switch {
	case m.MetricsServer && m.Source != "":
		errs = append(errs, field.Invalid(mp.Child("metricsServer"), true, "set either metricsServer (deprecated) or source, not both"))
	case !m.MetricsServer && m.Source == "":
		errs = append(errs, field.Required(mp.Child("source"), "KubernetesMetrics or Prometheus"))
	case m.Source != "" && m.Source != descheduler.KubernetesMetrics && m.Source != descheduler.PrometheusMetrics:
		errs = append(errs, field.NotSupported(mp.Child("source"), m.Source, []string{string(descheduler.KubernetesMetrics), string(descheduler.PrometheusMetrics)}))
	}
	switch m.source() {
	case descheduler.KubernetesMetrics:
		if m.Prometheus != nil {
			errs = append(errs, field.Invalid(mp.Child("prometheus"), "", "only with source Prometheus"))
		}
		for _, t := range []struct {
			name string
			m    pluginutil.ResourceThresholds
		}{{"thresholds", a.Thresholds}, {"targetThresholds", a.TargetThresholds}} {
			for _, r := range pluginutil.SortedResourceNames(t.m) {
				if r != corev1.ResourceCPU && r != corev1.ResourceMemory && r != corev1.ResourcePods {
					errs = append(errs, field.Invalid(path.Child(t.name).Key(string(r)), string(r), "metrics.k8s.io measures cpu and memory (and pods are counted); no other resource can be judged by KubernetesMetrics"))
				}
			}
		}
	case descheduler.PrometheusMetrics:
		if m.Prometheus == nil || m.Prometheus.Query == "" {
			errs = append(errs, field.Required(mp.Child("prometheus", "query"), "the Prometheus source needs a query"))
		}
		for _, t := range []struct {
			name string
			m    pluginutil.ResourceThresholds
		}{{"thresholds", a.Thresholds}, {"targetThresholds", a.TargetThresholds}} {
			if _, ok := t.m[MetricResource]; !ok || len(t.m) != 1 {
				errs = append(errs, field.Invalid(path.Child(t.name), pluginutil.SortedResourceNames(t.m),
					fmt.Sprintf("with source Prometheus, exactly one resource: %s (the query's value, in percent)", MetricResource)))
			}
		}
	}
	return errs
}

// metricsSource is where Balance reads usage from when metricsUtilization is set.
type metricsSource struct {
	kube  framework.KubernetesMetrics
	prom  framework.PrometheusMetrics
	query string
}

// newMetricsSource asks the handle for the source the args name.
func newMetricsSource(args *LowNodeUtilizationArgs, h framework.Handle) (*metricsSource, error) {
	src := args.MetricsUtilization.source()
	if src == "" {
		return nil, nil
	}
	mp := h.MetricsProviders()
	if mp == nil {
		return nil, fmt.Errorf("metricsUtilization.source %s: the descheduler has no metrics providers", src)
	}
	switch src {
	case descheduler.KubernetesMetrics:
		k, err := mp.KubernetesMetrics()
		if err != nil {
			return nil, fmt.Errorf("metricsUtilization.source %s: %w", src, err)
		}
		return &metricsSource{kube: k}, nil
	case descheduler.PrometheusMetrics:
		p, err := mp.Prometheus()
		if err != nil {
			return nil, fmt.Errorf("metricsUtilization.source %s: %w", src, err)
		}
		return &metricsSource{prom: p, query: args.MetricsUtilization.Prometheus.Query}, nil
	}
	return nil, fmt.Errorf("metricsUtilization.source %q is not supported", src)
}

// nodeUsages measures the nodes. Any node without a measurement fails the whole call: judging the
// others against a cluster with a hole in it (or taking the hole for an idle node) is what the
// plugin must not do, so the cycle is skipped, as upstream does.
func (m *metricsSource) nodeUsages(ctx context.Context, h framework.Handle, nodes []*corev1.Node, resources []corev1.ResourceName) ([]*pluginutil.NodeUsage, error) {
	var fractions map[string]float64
	if m.prom != nil {
		var err error
		if fractions, err = m.prom.NodeFractions(ctx, m.query); err != nil {
			return nil, err
		}
	}
	out := make([]*pluginutil.NodeUsage, 0, len(nodes))
	for _, n := range nodes {
		pods, err := h.GetPodsAssignedToNode(n.Name, func(p *corev1.Pod) bool { return !pluginutil.IsFinished(p) })
		if err != nil {
			return nil, err
		}
		usage := make(map[corev1.ResourceName]int64, len(resources))
		var capacity map[corev1.ResourceName]int64
		if m.prom != nil {
			v, ok := fractions[n.Name]
			if !ok {
				return nil, fmt.Errorf("prometheus query %q returned no sample for node %s", m.query, n.Name)
			}
			// Whole percent, truncated, as upstream compares it.
			usage[MetricResource] = int64(v*100) * 1000
			capacity = map[corev1.ResourceName]int64{MetricResource: 100 * 1000}
		} else {
			measured, err := m.kube.NodeUsage(n.Name)
			if err != nil {
				return nil, err
			}
			for _, r := range resources {
				if r == corev1.ResourcePods {
					usage[r] = int64(len(pods)) * 1000
				} else {
					usage[r] = measured[r]
				}
			}
		}
		out = append(out, pluginutil.NewNodeUsage(n, pods, usage, capacity, resources))
	}
	return out, nil
}

// podUsage is what evicting pod takes off its node (KubernetesMetrics; the Prometheus source does
// not measure pods).
func (m *metricsSource) podUsage(ctx context.Context, pod *corev1.Pod) (map[corev1.ResourceName]int64, error) {
	u, err := m.kube.PodUsage(ctx, pod)
	if err != nil {
		return nil, err
	}
	u[corev1.ResourcePods] = 1000
	return u, nil
}

func (m *metricsSource) name() string {
	if m.prom != nil {
		return string(descheduler.PrometheusMetrics)
	}
	return string(descheduler.KubernetesMetrics)
}
