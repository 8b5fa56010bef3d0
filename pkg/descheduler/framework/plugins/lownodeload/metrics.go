package lownodeload

import (
	corev1 "k8s.io/api/core/v1"
	compmetrics "k8s.io/component-base/metrics"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
	deschedmetrics "github.com/accord-sched/accord/pkg/descheduler/metrics"
)

// usageMetrics are each judged node's reported and estimated usage, as a share of its allocatable,
// per resource of the thresholds: what LowNodeLoad (and LoadAware, with the same estimate) compares
// with the thresholds. The runtime registers them with the descheduler's registry (RegisterMetrics),
// one set per registry, shared by the profiles running the plugin (the profile label tells them
// apart). Series are bounded by nodes × threshold resources × profiles; a node's are deleted once it
// is no longer judged (deleted, out of the profile's nodes, or its NodeMetric missing or stale).
type usageMetrics struct {
	reported, estimated *compmetrics.GaugeVec
}

func newUsageMetrics() *usageMetrics {
	labels := []string{"profile", "node", "resource"}
	return &usageMetrics{
		reported: compmetrics.NewGaugeVec(&compmetrics.GaugeOpts{
			Namespace: "accord", Subsystem: "descheduler", Name: "node_usage_reported_ratio",
			Help: "LowNodeLoad, each cycle: a node's usage of a threshold resource as its NodeMetric reports it, over its allocatable " +
				"(nodes with a fresh NodeMetric; a node's series go once it is not judged).",
			StabilityLevel: compmetrics.ALPHA,
		}, labels),
		estimated: compmetrics.NewGaugeVec(&compmetrics.GaugeOpts{
			Namespace: "accord", Subsystem: "descheduler", Name: "node_usage_estimated_ratio",
			Help: "LowNodeLoad, each cycle: a node's estimated usage of a threshold resource (the reported usage adjusted for the pods " +
				"the NodeMetric does not count yet, as LoadAware estimates it), over its allocatable, the usage compared with the thresholds.",
			StabilityLevel: compmetrics.ALPHA,
		}, labels),
	}
}

// RegisterMetrics registers the usage gauges with reg, once per registry.
func (p *Plugin) RegisterMetrics(reg compmetrics.KubeRegistry) error {
	m, err := deschedmetrics.RegisterShared(reg, Name, func(reg compmetrics.KubeRegistry) (*usageMetrics, error) {
		m := newUsageMetrics()
		if err := reg.Register(m.reported); err != nil {
			return nil, err
		}
		return m, reg.Register(m.estimated)
	})
	if err != nil {
		return err
	}
	p.usage = m
	return nil
}

// recordUsage sets the gauges of the nodes judged this cycle and deletes those of the nodes judged
// last cycle and not this one.
func (p *Plugin) recordUsage(fresh []*nodeState) {
	if p.usage == nil {
		return
	}
	profile := p.h.ProfileName()
	p.mu.Lock()
	defer p.mu.Unlock()
	judged := make(map[string]bool, len(fresh))
	for _, s := range fresh {
		judged[s.node.Name] = true
		for _, name := range p.usageResources {
			alloc, ok := s.node.Status.Allocatable[name]
			reported, has := s.load.EstimatedUsage(name, nil)
			if !ok || !has || alloc.AsApproximateFloat64() <= 0 {
				p.usage.reported.DeleteLabelValues(profile, s.node.Name, string(name))
				p.usage.estimated.DeleteLabelValues(profile, s.node.Name, string(name))
				continue
			}
			estimated, _ := s.load.EstimatedUsage(name, &s.adj)
			p.usage.reported.WithLabelValues(profile, s.node.Name, string(name)).Set(reported / alloc.AsApproximateFloat64())
			p.usage.estimated.WithLabelValues(profile, s.node.Name, string(name)).Set(estimated / alloc.AsApproximateFloat64())
		}
	}
	for name := range p.usageNodes {
		if !judged[name] {
			for _, r := range p.usageResources {
				p.usage.reported.DeleteLabelValues(profile, name, string(r))
				p.usage.estimated.DeleteLabelValues(profile, name, string(r))
			}
		}
	}
	p.usageNodes = judged
}

// usageResourceNames are the resources of the high and low thresholds, sorted.
func usageResourceNames(args *LowNodeLoadArgs) []corev1.ResourceName {
	seen := map[corev1.ResourceName]bool{}
	for name := range args.HighThresholds {
		seen[name] = true
	}
	for name := range args.LowThresholds {
		seen[name] = true
	}
	return pluginutil.SortedResourceNames(seen)
}
