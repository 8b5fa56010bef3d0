package console

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/accord-sched/accord/pkg/constraints"
)

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
	// Pods are the node's pods the view's filter matches, at most maxCardPods of them; PodCount is
	// how many it matches in all.
	Pods     []PodView `json:"pods"`
	PodCount int       `json:"podCount"`
	// Violators are the pods on the node that request a resource its ClusterScopedResource does not
	// enable (constraints.FitCR, the rule of NodeCRDResourceFit); a node without a CR counts none.
	Violators int `json:"violators,omitempty"`
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
	// UpdatedAt is when the metric was reported (the page ages it: a View that carried the age
	// would change every second).
	UpdatedAt time.Time `json:"updatedAt"`
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
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Node is the pod's node (empty on a node card: the card's).
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

// cluster is one snapshot of everything the page can show, built from the informer caches on
// every change (state.snapshot) and never sent whole: each page gets the cut of it its query asks
// for (cut), after its user's scope (viewScope.filter).
type cluster struct {
	// nodes are sorted by name; each holds its live pods, sorted by namespace and name.
	nodes []nodeEntry
	// pending are the pods no node was assigned, sorted by namespace and name.
	pending []podEntry
	// evictions are the newest maxEvictions rows of the timeline, newest first.
	evictions  []Eviction
	migrations []MigrationView
	// live holds the namespace/name of the evicted pods (evictions' rows) still in the cache, for
	// the evictions in flight.
	live       map[string]bool
	playground bool
}

// nodeEntry is one node of the snapshot: its card without pods, and its pods.
type nodeEntry struct {
	view NodeView
	pods []podEntry
}

// podEntry is a pod of the snapshot with the workload the filter matches: its controller's kind
// and name ("" for none).
type podEntry struct {
	PodView
	workload string
}

// snapshot reads the caches. now is the time metrics are aged against.
func (s *state) snapshot(now time.Time) *cluster {
	c := &cluster{playground: s.playground}
	nodes, _ := s.nodes.List(labels.Everything())
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	pods, _ := s.pods.List(labels.Everything())
	byNode := map[string][]podEntry{}
	bound := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			bound[p.Spec.NodeName] = append(bound[p.Spec.NodeName], p)
		}
		if podPhaseDone(p) {
			continue
		}
		pe := podEntry{PodView: PodView{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase), Terminating: p.DeletionTimestamp != nil},
			workload: workloadOf(p)}
		if p.Spec.NodeName == "" {
			pe.Reason = s.schedulingFailure(p)
			c.pending = append(c.pending, pe)
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], pe)
	}
	slices.SortFunc(c.pending, comparePods)
	buf := make([]corev1.ResourceName, 0, 8)
	c.nodes = make([]nodeEntry, 0, len(nodes))
	for _, n := range nodes {
		e := nodeEntry{view: NodeView{Name: n.Name, Ready: constraints.NodeReady(n), Unschedulable: n.Spec.Unschedulable}, pods: byNode[n.Name]}
		slices.SortFunc(e.pods, comparePods)
		for _, t := range n.Spec.Taints {
			e.view.Taints = append(e.view.Taints, taintString(t))
		}
		if csr, err := s.csrs.Get(n.Name); err == nil {
			e.view.HasCR = true
			e.view.Resources = resourceViews(csr.Spec.ResourcesFilter, func(name corev1.ResourceName) int64 { return constraints.ResourceScore(csr, name) })
			for _, p := range bound[n.Name] {
				if !podPhaseDone(p) && constraints.FitCR(csr, constraints.AppendRequestedResources(buf[:0], p), true).Rejected {
					e.view.Violators++
				}
			}
		}
		nm, err := s.metrics.Get(n.Name)
		if err != nil {
			nm = nil
		}
		e.view.Load = loadView(nm, n.Status.Allocatable, bound[n.Name], s.thresholds, now)
		c.nodes = append(c.nodes, e)
	}
	c.evictions = s.evictions(pods)
	c.live = s.evictedLive(c.evictions)
	c.migrations = s.migrationViews()
	return c
}

// evictedLive returns the namespace/name of the evicted pods still in the cache.
func (s *state) evictedLive(evs []Eviction) map[string]bool {
	live := map[string]bool{}
	for _, e := range evs {
		if _, err := s.pods.Pods(e.Namespace).Get(e.Pod); err == nil {
			live[e.Namespace+"/"+e.Pod] = true
		}
	}
	return live
}

func comparePods(a, b podEntry) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// workloadOf is the pod's controller as kind/name ("" for none).
func workloadOf(p *corev1.Pod) string {
	for _, ref := range p.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return ref.Kind + "/" + ref.Name
		}
	}
	return ""
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
