package console

import (
	"context"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/explain"
)

// viewScope is what of the View a user who may not read the whole cluster may see: the pods of the
// namespaces where the user may list pods, their scheduling failures and evictions where the user
// may also list Events, their PodMigrations where the user may also list those, and the nodes' state, ClusterScopedResources and NodeMetrics only if the
// user may list all three cluster-wide; otherwise a node appears as its name and the user's pods on
// it (Restricted). The answers come from Access's SubjectAccessReview cache (a short TTL), so a
// stream follows a change of the user's RBAC within accessCacheTTL.
type viewScope struct {
	access *Access
	user   *authenticationv1.UserInfo
	// cluster is true when the user may list nodes, ClusterScopedResources and NodeMetrics.
	cluster bool
}

type scopeKey struct{}

// scopeFrom returns the request's scope; nil: the user may read everything (or there is no Access).
func scopeFrom(ctx context.Context) *viewScope {
	s, _ := ctx.Value(scopeKey{}).(*viewScope)
	return s
}

// clusterReads are the cluster-scoped parts of the View.
var clusterReads = []authorizationv1.ResourceAttributes{
	{Verb: "list", Resource: "nodes"},
	{Verb: "list", Group: "scheduling.accord.dev", Resource: "clusterscopedresources"},
	{Verb: "list", Group: "slo.accord.dev", Resource: "nodemetrics"},
}

// nsReads is what the user may read in one namespace.
type nsReads struct{ pods, events, migrations bool }

// namespaceReads asks whether the user may list pods, Events and PodMigrations in ns; a failed
// review is a refusal (logged).
func (s *viewScope) namespaceReads(ctx context.Context, logger klog.Logger, ns string) nsReads {
	var r nsReads
	var err error
	if r.pods, err = s.access.allowed(ctx, s.user, authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: ns}); err != nil {
		logger.Error(err, "Authorizing a console user's namespace; hiding it", "user", s.user.Username, "namespace", ns)
		return nsReads{}
	}
	if !r.pods {
		return r
	}
	if r.events, err = s.access.allowed(ctx, s.user, authorizationv1.ResourceAttributes{Verb: "list", Resource: "events", Namespace: ns}); err != nil {
		logger.Error(err, "Authorizing a console user's namespace's Events; hiding them", "user", s.user.Username, "namespace", ns)
		r.events = false
	}
	if r.migrations, err = s.access.allowed(ctx, s.user, authorizationv1.ResourceAttributes{Verb: "list", Group: "scheduling.accord.dev", Resource: "podmigrations", Namespace: ns}); err != nil {
		logger.Error(err, "Authorizing a console user's namespace's PodMigrations; hiding them", "user", s.user.Username, "namespace", ns)
		r.migrations = false
	}
	return r
}

// filter returns what of c the user may see, before the view is cut (cut): counts, pages and the
// attention summary then count only what the user may see. c is not modified.
func (s *viewScope) filter(ctx context.Context, logger klog.Logger, c *cluster) *cluster {
	reads := map[string]nsReads{}
	may := func(ns string) nsReads {
		r, ok := reads[ns]
		if !ok {
			r = s.namespaceReads(ctx, logger, ns)
			reads[ns] = r
		}
		return r
	}
	out := &cluster{nodes: make([]nodeEntry, 0, len(c.nodes)), live: c.live, playground: c.playground}
	for _, n := range c.nodes {
		pods := make([]podEntry, 0, len(n.pods))
		for _, p := range n.pods {
			if may(p.Namespace).pods {
				pods = append(pods, p)
			}
		}
		if s.cluster {
			out.nodes = append(out.nodes, nodeEntry{view: n.view, pods: pods})
			continue
		}
		if len(pods) > 0 {
			out.nodes = append(out.nodes, nodeEntry{view: NodeView{Name: n.view.Name, Restricted: true}, pods: pods})
		}
	}
	for _, p := range c.pending {
		r := may(p.Namespace)
		if !r.pods {
			continue
		}
		if !r.events {
			p.Reason = ""
		}
		out.pending = append(out.pending, p)
	}
	for _, e := range c.evictions {
		if r := may(e.Namespace); r.pods && r.events {
			out.evictions = append(out.evictions, e)
		}
	}
	for _, m := range c.migrations {
		if r := may(m.Namespace); r.pods && r.migrations {
			out.migrations = append(out.migrations, m)
		}
	}
	return out
}

// filterExplain returns the explain rows the user may see, as the page's scope does: the rows of the
// namespaces where the user may list pods; without the cluster-wide reads (nodes,
// ClusterScopedResources, NodeMetrics), a row keeps its pod, its nodes' names, its verdict and what
// blocked it, and loses what describes the nodes' state: the plugin's reason (a node's CR, its load),
// the scheduler simulation's reason (every node's verdict) and the nodes' scores.
func (s *viewScope) filterExplain(ctx context.Context, logger klog.Logger, rows []explain.Row) []explain.Row {
	pods := map[string]bool{}
	out := []explain.Row{}
	for _, r := range rows {
		may, ok := pods[r.Namespace]
		if !ok {
			may = s.namespaceReads(ctx, logger, r.Namespace).pods
			pods[r.Namespace] = may
		}
		if !may {
			continue
		}
		if !s.cluster {
			r.Reason, r.SimulationReason, r.Score, r.CurrentNodeScore = "", "", nil, nil
		}
		out = append(out, r)
	}
	return out
}

// podNamespaces returns the namespaces of the pods the console holds, sorted.
func (s *state) podNamespaces() []string {
	pods, _ := s.pods.List(labels.Everything())
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
