package console

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/accord-sched/accord/pkg/constraints"
)

// View is what the page shows: the whole state, sent on every change.
type View struct {
	Nodes     []NodeView `json:"nodes"`
	Pending   []PodView  `json:"pending"`
	Evictions []Eviction `json:"evictions"`
	// Migrations are the PodMigrations, newest first.
	Migrations []MigrationView `json:"migrations"`
	// Playground is true when the playground's write controls are enabled.
	Playground bool `json:"playground"`
}

// NodeView is one card of the node grid.
type NodeView struct {
	Name          string   `json:"name"`
	Ready         bool     `json:"ready"`
	Unschedulable bool     `json:"unschedulable,omitempty"`
	Taints        []string `json:"taints,omitempty"`
	// Resources are the node's ClusterScopedResource entries (nil when the node has none).
	Resources []ResourceView `json:"resources"`
	HasCR     bool           `json:"hasCR"`
	Load      LoadView       `json:"load"`
	Pods      []PodView      `json:"pods"`
	// Restricted is true when the user may not read the cluster-scoped state: the card holds only
	// the node's name and the user's pods on it (see viewScope).
	Restricted bool `json:"restricted,omitempty"`
}

// ResourceView is one resource of a ClusterScopedResource.
type ResourceView struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	Score   int64  `json:"score"`
}

// LoadView is a node's NodeMetric against the LoadAware thresholds.
type LoadView struct {
	// Reported is false when the node has no NodeMetric with a status.
	Reported bool `json:"reported"`
	// Stale is true when the metric is missing or older than the expiration: the scheduler and
	// descheduler ignore it.
	Stale bool `json:"stale"`
	// AgeSeconds is the metric's age.
	AgeSeconds int64 `json:"ageSeconds"`
	// EstimatedPods and GonePods are the pods the usage estimate counts beyond the report (assigned
	// since) and takes off it (left since).
	EstimatedPods int            `json:"estimatedPods"`
	GonePods      int            `json:"gonePods"`
	Resources     []LoadResource `json:"resources"`
}

// LoadResource is one resource's reported and estimated usage in percent of allocatable and its
// threshold (0 = none); Over is judged on the estimated usage, as LoadAware and LowNodeLoad judge.
type LoadResource struct {
	Name             string `json:"name"`
	Percent          int64  `json:"percent"`
	EstimatedPercent int64  `json:"estimatedPercent"`
	Threshold        int64  `json:"threshold"`
	Over             bool   `json:"over"`
}

// PodView is a pod on a node or pending.
type PodView struct {
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Node        string `json:"node,omitempty"`
	Phase       string `json:"phase"`
	Terminating bool   `json:"terminating,omitempty"`
	// Reason is, for a pending pod, the scheduler's last FailedScheduling message.
	Reason string `json:"reason,omitempty"`
}

// Thresholds are the LoadAware usage thresholds and metric expiration the node grid compares with.
type Thresholds struct {
	Percent map[corev1.ResourceName]int64
	MaxAge  time.Duration
	// Estimator is the usage estimate LoadAware and LowNodeLoad apply (nil: off).
	Estimator *constraints.UsageEstimator
}

// buildView reads the caches. now is the time metrics are aged against.
func (s *state) buildView(now time.Time) View {
	v := View{Nodes: []NodeView{}, Pending: []PodView{}, Playground: s.playground}
	nodes, _ := s.nodes.List(labels.Everything())
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	pods, _ := s.pods.List(labels.Everything())
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	byNode := map[string][]PodView{}
	bound := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			bound[p.Spec.NodeName] = append(bound[p.Spec.NodeName], p)
		}
		if podPhaseDone(p) {
			continue
		}
		pv := PodView{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase), Terminating: p.DeletionTimestamp != nil}
		if p.Spec.NodeName == "" {
			pv.Reason = s.schedulingFailure(p)
			v.Pending = append(v.Pending, pv)
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], pv)
	}
	for _, n := range nodes {
		nv := NodeView{Name: n.Name, Ready: constraints.NodeReady(n), Unschedulable: n.Spec.Unschedulable, Pods: byNode[n.Name]}
		if nv.Pods == nil {
			nv.Pods = []PodView{}
		}
		for _, t := range n.Spec.Taints {
			nv.Taints = append(nv.Taints, taintString(t))
		}
		if csr, err := s.csrs.Get(n.Name); err == nil {
			nv.HasCR = true
			nv.Resources = resourceViews(csr.Spec.ResourcesFilter, func(name corev1.ResourceName) int64 { return constraints.ResourceScore(csr, name) })
		}
		nm, err := s.metrics.Get(n.Name)
		if err != nil {
			nm = nil
		}
		nv.Load = loadView(nm, n.Status.Allocatable, bound[n.Name], s.thresholds, now)
		v.Nodes = append(v.Nodes, nv)
	}
	v.Evictions = s.evictions(pods)
	v.Migrations = s.migrationViews(now)
	return v
}

func taintString(t corev1.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}

func resourceViews(filter map[corev1.ResourceName]bool, score func(corev1.ResourceName) int64) []ResourceView {
	out := make([]ResourceView, 0, len(filter))
	for name, enabled := range filter {
		out = append(out, ResourceView{Name: string(name), Enabled: enabled, Score: score(name)})
	}
	slices.SortFunc(out, func(a, b ResourceView) int { return strings.Compare(a.Name, b.Name) })
	return out
}
