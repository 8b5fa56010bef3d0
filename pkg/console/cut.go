package console

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// Bounds of what one view holds: the page sends the server its query, and gets back only what it
// shows, however large the cluster.
const (
	// DefaultPageSize is how many node cards a page holds unless the query says otherwise;
	// MaxPageSize is the most a query may ask for.
	DefaultPageSize = 50
	MaxPageSize     = 200
	// maxCardPods is how many pods a node card lists (its podCount says how many match).
	maxCardPods = 40
	// maxAttentionNodes, maxPendingGroups and maxGroupPods bound the attention summary; its counts
	// are always whole.
	maxAttentionNodes = 50
	maxPendingGroups  = 20
	maxGroupPods      = 5
	// maxPendingRows and maxMigrationRows bound the pending pods and PodMigrations tables (newest
	// migrations first); their counts are always whole.
	maxPendingRows   = 100
	maxMigrationRows = 50
	// maxFilterLength bounds a filter's length.
	maxFilterLength = 253
)

// Query is the view a page asks for, from the query parameters of /api/stream and /api/state.
type Query struct {
	// Node matches the nodes whose name contains it, or only the node of that name when one has
	// it exactly.
	Node string `json:"node,omitempty"`
	// Namespace matches the pods of that namespace only.
	Namespace string `json:"namespace,omitempty"`
	// Workload matches the pods whose controller (kind/name, e.g. ReplicaSet/web-5d8f) or own name
	// contains it.
	Workload string `json:"workload,omitempty"`
	// Attention keeps only the nodes that need attention (see AttentionNode).
	Attention bool `json:"attention,omitempty"`
	// Page is the page of node cards, from 1; PageSize the cards on a page.
	Page     int `json:"page"`
	PageSize int `json:"pageSize"`
}

// ParseQuery reads a Query from URL query parameters (node, namespace, workload, attention, page,
// pageSize), naming the parameter that is wrong.
func ParseQuery(v url.Values) (Query, error) {
	q := Query{Node: strings.TrimSpace(v.Get("node")), Namespace: strings.TrimSpace(v.Get("namespace")),
		Workload: strings.TrimSpace(v.Get("workload")), Page: 1, PageSize: DefaultPageSize}
	for name, s := range map[string]string{"node": q.Node, "namespace": q.Namespace, "workload": q.Workload} {
		if len(s) > maxFilterLength {
			return q, fmt.Errorf("%s: longer than %d characters", name, maxFilterLength)
		}
	}
	if s := v.Get("attention"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return q, fmt.Errorf("attention: %q: want true or false", s)
		}
		q.Attention = b
	}
	for _, p := range []struct {
		name     string
		into     *int
		min, max int
	}{{"page", &q.Page, 1, 1 << 30}, {"pageSize", &q.PageSize, 1, MaxPageSize}} {
		s := v.Get(p.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < p.min || n > p.max {
			return q, fmt.Errorf("%s: %q: want an integer in %d-%d", p.name, s, p.min, p.max)
		}
		*p.into = n
	}
	return q, nil
}

// View is what one page shows: the attention summary, one page of node cards under the query's
// filter, and the bounded tables. It is cut from a cluster snapshot for each page (cut).
type View struct {
	// Query is the query the view was cut for, its page clamped to the pages there are.
	Query     Query     `json:"query"`
	Attention Attention `json:"attention"`
	// Nodes is the page of node cards; NodesMatched how many nodes the filter matches, NodesTotal
	// how many there are under the namespace and workload filters (of what the user may see), Pages
	// how many pages NodesMatched fill.
	Nodes        []NodeView `json:"nodes"`
	NodesMatched int        `json:"nodesMatched"`
	NodesTotal   int        `json:"nodesTotal"`
	Pages        int        `json:"pages"`
	// Pending are the pending pods the filter matches (the first maxPendingRows); PendingMatched
	// counts them all.
	Pending        []PodView `json:"pending"`
	PendingMatched int       `json:"pendingMatched"`
	// Evictions are the timeline's rows the filter matches, newest first.
	Evictions []Eviction `json:"evictions"`
	// Migrations are the PodMigrations the filter matches, newest first (the first
	// maxMigrationRows); MigrationsMatched counts them all.
	Migrations        []MigrationView `json:"migrations"`
	MigrationsMatched int             `json:"migrationsMatched"`
	// Namespaces are the namespaces of the pods the user may see (for the namespace filter).
	Namespaces []string `json:"namespaces"`
	// Playground is true when the playground's write controls are enabled.
	Playground bool `json:"playground"`
}

// Attention is what needs an operator first, under the query's namespace and workload filters (not
// its node filter, page or attention switch): the nodes that need attention, most urgent first, the
// pending pods grouped by the scheduler's reason, most pods first, and the evictions and
// PodMigrations in flight.
type Attention struct {
	Nodes      []AttentionNode `json:"nodes"`
	NodesTotal int             `json:"nodesTotal"`
	// Pending groups the pending pods by the scheduler's message; PendingTotal counts them.
	Pending      []PendingGroup `json:"pending"`
	PendingTotal int            `json:"pendingTotal"`
	// Evictions in flight: not held, and either the evicted pod is still there (terminating, or
	// soft-evicted and waiting for its controller) or its replacement is not bound yet.
	Evictions []Eviction `json:"evictions"`
	// Migrations in flight: PodMigrations not yet Succeeded, Failed or Aborted.
	Migrations []MigrationView `json:"migrations"`
}

// AttentionNode is a node that needs attention: violators on it, usage over a LoadAware threshold
// (as both binaries judge it, on the estimate), NotReady, or a missing or stale NodeMetric (both
// binaries then ignore its load). The list is ordered by violators, then by how far over a threshold, then
// NotReady, then stale, then by name.
type AttentionNode struct {
	Name      string `json:"name"`
	Violators int    `json:"violators,omitempty"`
	// Over names the resources over their threshold ("cpu 92% > 80%").
	Over     []string `json:"over,omitempty"`
	NotReady bool     `json:"notReady,omitempty"`
	// Stale is true when the node's NodeMetric is missing or older than the expiration.
	Stale bool `json:"stale,omitempty"`
	// excess is the most a resource is over its threshold, in points, for the order.
	excess int64
}

// PendingGroup is the pending pods with one scheduler message ("" when not tried yet).
type PendingGroup struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	// Pods are the first maxGroupPods of them (namespace/name).
	Pods []string `json:"pods"`
}

// attention reports whether the node needs attention, and why. Restricted nodes carry no state.
func attention(n *NodeView) (AttentionNode, bool) {
	a := AttentionNode{Name: n.Name, Violators: n.Violators}
	if n.Restricted {
		return a, false
	}
	a.NotReady = !n.Ready
	a.Stale = n.Load.Stale
	for _, r := range n.Load.Resources {
		if r.Over {
			a.Over = append(a.Over, fmt.Sprintf("%s %d%% > %d%%", r.Name, r.EstimatedPercent, r.Threshold))
			a.excess = max(a.excess, r.EstimatedPercent-r.Threshold)
		}
	}
	return a, a.Violators > 0 || len(a.Over) > 0 || a.NotReady || a.Stale
}

func compareAttention(a, b AttentionNode) int {
	return cmp.Or(cmp.Compare(b.Violators, a.Violators), cmp.Compare(len(b.Over), len(a.Over)), cmp.Compare(b.excess, a.excess),
		compareBool(a.NotReady, b.NotReady), compareBool(a.Stale, b.Stale), strings.Compare(a.Name, b.Name))
}

// compareBool orders true first.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// filter is a Query's filters, compiled.
type filter struct {
	q Query
	// exactNode is true when some node's name is q.Node: only that node matches.
	exactNode bool
}

func (f filter) nodeMatches(name string) bool {
	if f.exactNode {
		return name == f.q.Node
	}
	return strings.Contains(name, f.q.Node)
}

// podFiltered is true when the query filters pods (by namespace or workload).
func (f filter) podFiltered() bool { return f.q.Namespace != "" || f.q.Workload != "" }

func (f filter) podMatches(p *podEntry) bool {
	return f.namespaceMatches(p.Namespace) && (f.q.Workload == "" || strings.Contains(p.workload, f.q.Workload) || strings.Contains(p.Name, f.q.Workload))
}

func (f filter) namespaceMatches(ns string) bool { return f.q.Namespace == "" || ns == f.q.Namespace }

// nameMatches is podMatches for a row that names only its pod (evictions, migrations).
func (f filter) nameMatches(ns, pod string) bool {
	return f.namespaceMatches(ns) && (f.q.Workload == "" || strings.Contains(pod, f.q.Workload))
}

// cut is the View q asks for, from c (already scoped to the user). c is not modified.
func cut(c *cluster, q Query) View {
	if q.PageSize <= 0 {
		q.PageSize = DefaultPageSize
	}
	q.Page = max(q.Page, 1)
	f := filter{q: q}
	if q.Node != "" {
		_, f.exactNode = slices.BinarySearchFunc(c.nodes, q.Node, func(e nodeEntry, name string) int { return strings.Compare(e.view.Name, name) })
	}
	v := View{Nodes: []NodeView{}, Pending: []PodView{}, Evictions: []Eviction{}, Migrations: []MigrationView{}, Playground: c.playground,
		Attention: Attention{Nodes: []AttentionNode{}, Pending: []PendingGroup{}, Evictions: []Eviction{}, Migrations: []MigrationView{}}}
	namespaces := map[string]bool{}

	// The nodes: those the filters match, the attention list, then the page.
	var matched, podCounts []int
	for i := range c.nodes {
		e := &c.nodes[i]
		count := 0
		for j := range e.pods {
			p := &e.pods[j]
			namespaces[p.Namespace] = true
			if f.podMatches(p) {
				count++
			}
		}
		// A pod filter keeps the nodes with a matching pod; restricted nodes are there only for
		// their pods.
		if (f.podFiltered() || e.view.Restricted) && count == 0 {
			continue
		}
		v.NodesTotal++
		a, needs := attention(&e.view)
		if needs {
			v.Attention.NodesTotal++
			v.Attention.Nodes = append(v.Attention.Nodes, a)
		}
		if !f.nodeMatches(e.view.Name) || (q.Attention && !needs) {
			continue
		}
		matched = append(matched, i)
		podCounts = append(podCounts, count)
	}
	slices.SortFunc(v.Attention.Nodes, compareAttention)
	v.Attention.Nodes = v.Attention.Nodes[:min(len(v.Attention.Nodes), maxAttentionNodes)]
	v.NodesMatched = len(matched)
	v.Pages = max((len(matched)+q.PageSize-1)/q.PageSize, 1)
	q.Page = min(q.Page, v.Pages)
	for k := (q.Page - 1) * q.PageSize; k < min(q.Page*q.PageSize, len(matched)); k++ {
		e := &c.nodes[matched[k]]
		n := e.view
		n.Pods, n.PodCount = []PodView{}, podCounts[k]
		for j := range e.pods {
			if len(n.Pods) == maxCardPods {
				break
			}
			if p := &e.pods[j]; f.podMatches(p) {
				pv := p.PodView
				pv.Node = "" // the card's
				n.Pods = append(n.Pods, pv)
			}
		}
		v.Nodes = append(v.Nodes, n)
	}
	v.Query = q

	// Pending pods: grouped by reason for the attention summary, and the table's first rows.
	groups := map[string]*PendingGroup{}
	for i := range c.pending {
		p := &c.pending[i]
		namespaces[p.Namespace] = true
		if !f.podMatches(p) {
			continue
		}
		v.PendingMatched++
		if len(v.Pending) < maxPendingRows {
			v.Pending = append(v.Pending, p.PodView)
		}
		g := groups[p.Reason]
		if g == nil {
			g = &PendingGroup{Reason: p.Reason, Pods: []string{}}
			groups[p.Reason] = g
		}
		g.Count++
		if len(g.Pods) < maxGroupPods {
			g.Pods = append(g.Pods, p.Namespace+"/"+p.Name)
		}
	}
	v.Attention.PendingTotal = v.PendingMatched
	for _, g := range groups {
		v.Attention.Pending = append(v.Attention.Pending, *g)
	}
	slices.SortFunc(v.Attention.Pending, func(a, b PendingGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Reason, b.Reason))
	})
	v.Attention.Pending = v.Attention.Pending[:min(len(v.Attention.Pending), maxPendingGroups)]

	// Evictions and migrations: the node filter matches the nodes they name.
	for _, e := range c.evictions {
		if !f.nameMatches(e.Namespace, e.Pod) {
			continue
		}
		if e.Held == "" && ((e.Replacement == "" && c.live[e.Namespace+"/"+e.Pod]) || (e.Replacement != "" && e.ReplacementNode == "")) {
			v.Attention.Evictions = append(v.Attention.Evictions, e)
		}
		if q.Node == "" || f.nodeMatches(e.Node) || (e.ReplacementNode != "" && f.nodeMatches(e.ReplacementNode)) {
			v.Evictions = append(v.Evictions, e)
		}
	}
	for _, m := range c.migrations {
		if !f.nameMatches(m.Namespace, m.Pod) {
			continue
		}
		if !schedv1alpha1.PodMigrationPhase(m.Phase).Finished() {
			v.Attention.Migrations = append(v.Attention.Migrations, m)
		}
		if q.Node != "" && !f.nodeMatches(m.SourceNode) && !f.nodeMatches(m.TargetNode) && !f.nodeMatches(m.ReplacementNode) {
			continue
		}
		v.MigrationsMatched++
		if len(v.Migrations) < maxMigrationRows {
			v.Migrations = append(v.Migrations, m)
		}
	}
	v.Attention.Migrations = v.Attention.Migrations[:min(len(v.Attention.Migrations), maxMigrationRows)]
	v.Namespaces = make([]string, 0, len(namespaces))
	for ns := range namespaces {
		v.Namespaces = append(v.Namespaces, ns)
	}
	slices.Sort(v.Namespaces)
	return v
}
