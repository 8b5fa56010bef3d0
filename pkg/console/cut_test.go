package console

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

func nodeNames(nodes []NodeView) []string {
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

// 120 nodes, team-a's web pods on the even ones, team-b's db pods on the odd ones, 45 pods on
// node-007: the filters, the pages and the card's pod cap.
func TestCutFiltersAndPages(t *testing.T) {
	var objs []runtime.Object
	for i := range 120 {
		name := fmt.Sprintf("node-%03d", i)
		objs = append(objs, node(name, "10"), metric(name, "1", now))
		p := pod(fmt.Sprintf("web-%03d", i), name, "web-uid", now)
		p.OwnerReferences[0].Name = "web-5d8f"
		if i%2 == 1 {
			p = pod(fmt.Sprintf("db-%03d", i), name, "db-uid", now)
			p.Namespace, p.OwnerReferences[0].Kind, p.OwnerReferences[0].Name = "team-b", "StatefulSet", "db"
		} else {
			p.Namespace = "team-a"
		}
		objs = append(objs, p)
	}
	for i := range 44 {
		p := pod(fmt.Sprintf("many-%02d", i), "node-007", "", now)
		objs = append(objs, p)
	}
	c := newTestState(t, objs...).snapshot(now)

	for _, tc := range []struct {
		name        string
		q           Query
		first, last string
		page, pages int
		matched     int
		total       int
	}{
		{"first page", Query{}, "node-000", "node-049", 1, 3, 120, 120},
		{"last page", Query{Page: 3}, "node-100", "node-119", 3, 3, 120, 120},
		{"a page past the last is the last", Query{Page: 9}, "node-100", "node-119", 3, 3, 120, 120},
		{"page size", Query{Page: 2, PageSize: 7}, "node-007", "node-013", 2, 18, 120, 120},
		{"node substring", Query{Node: "node-01"}, "node-010", "node-019", 1, 1, 10, 120},
		{"node's exact name", Query{Node: "node-011"}, "node-011", "node-011", 1, 1, 1, 120},
		{"namespace", Query{Namespace: "team-a"}, "node-000", "node-098", 1, 2, 60, 60},
		{"workload by controller", Query{Workload: "StatefulSet/db"}, "node-001", "node-099", 1, 2, 60, 60},
		{"workload by pod name", Query{Workload: "web-01"}, "node-010", "node-018", 1, 1, 5, 5},
		{"namespace and node", Query{Namespace: "team-b", Node: "node-00"}, "node-001", "node-009", 1, 1, 5, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := cut(c, tc.q)
			names := nodeNames(v.Nodes)
			if len(names) == 0 || names[0] != tc.first || names[len(names)-1] != tc.last || v.Query.Page != tc.page || v.Pages != tc.pages ||
				v.NodesMatched != tc.matched || v.NodesTotal != tc.total {
				t.Errorf("nodes %v, page %d of %d, %d matched of %d; want %s..%s, page %d of %d, %d of %d",
					names, v.Query.Page, v.Pages, v.NodesMatched, v.NodesTotal, tc.first, tc.last, tc.page, tc.pages, tc.matched, tc.total)
			}
			for _, n := range v.Nodes {
				for _, p := range n.Pods {
					if (tc.q.Namespace != "" && p.Namespace != tc.q.Namespace) || (tc.q.Workload == "web-01" && p.Name[:6] != "web-01") {
						t.Errorf("node %s shows %s/%s, which the filter does not match", n.Name, p.Namespace, p.Name)
					}
				}
			}
		})
	}

	v := cut(c, Query{Node: "node-007"})
	if n := v.Nodes[0]; len(n.Pods) != maxCardPods || n.PodCount != 45 {
		t.Errorf("node-007's card: %d pods listed, podCount %d; want %d listed of 45", len(n.Pods), n.PodCount, maxCardPods)
	}
	if want := []string{"demo", "team-a", "team-b"}; !slices.Equal(v.Namespaces, want) {
		t.Errorf("namespaces %v, want %v (all the user may see, whatever the filter)", v.Namespaces, want)
	}
	if v := cut(c, Query{Namespace: "nowhere"}); len(v.Nodes) != 0 || v.Pages != 1 || v.Query.Page != 1 {
		t.Errorf("a filter nothing matches: %d nodes, page %d of %d; want none on page 1 of 1", len(v.Nodes), v.Query.Page, v.Pages)
	}
}

// The attention summary: nodes by violators, then how far over a threshold, then NotReady, then a
// missing or stale metric; pending pods grouped by reason, most first; evictions and migrations in
// flight only. Attention=true keeps those nodes in the grid.
func TestCutAttention(t *testing.T) {
	disabled := func(name string) *schedv1alpha1.ClusterScopedResource {
		return &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: schedv1alpha1.ClusterScopedResourceSpec{
			ResourcesFilter: map[corev1.ResourceName]bool{"cpu": true, "example.com/memory": false}}}
	}
	hungry := func(name, nodeName string) *corev1.Pod {
		p := pod(name, nodeName, "", now)
		p.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"example.com/memory": resource.MustParse("1")}}}}
		return p
	}
	notReady := node("notready", "10")
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	pending := func(name, reason string) []runtime.Object {
		p := pod(name, "", "", now)
		if reason == "" {
			return []runtime.Object{p}
		}
		return []runtime.Object{p, event("FailedScheduling", p, now, reason)}
	}
	objs := []runtime.Object{
		node("fine", "10"), metric("fine", "1", now),
		node("two-violators", "10"), metric("two-violators", "1", now), disabled("two-violators"),
		hungry("h1", "two-violators"), hungry("h2", "two-violators"), pod("ok", "two-violators", "", now),
		node("violator-and-hot", "10"), metric("violator-and-hot", "9", now), disabled("violator-and-hot"), hungry("h3", "violator-and-hot"),
		node("hot-95", "10"), metric("hot-95", "9500m", now),
		node("hot-85", "10"), metric("hot-85", "8500m", now),
		notReady, metric("notready", "1", now),
		node("stale", "10"), metric("stale", "1", now.Add(-time.Hour)),
		node("unreported", "10"),
	}
	for i, r := range []string{"A", "A", "", "A", "B", ""} {
		objs = append(objs, pending(fmt.Sprintf("p%d", i), r)...)
	}
	// Evictions: held (never in flight), the evicted pod still there (in flight), gone without a
	// replacement (done), its replacement pending (in flight) or bound (done).
	objs = append(objs, pod("terminating", "fine", "", now.Add(-time.Hour)))
	objs = append(objs,
		&schedv1alpha1.PodMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "running", CreationTimestamp: metav1.NewTime(now)},
			Spec: schedv1alpha1.PodMigrationSpec{PodName: "h1"}, Status: schedv1alpha1.PodMigrationStatus{Phase: schedv1alpha1.PodMigrationRunning}},
		&schedv1alpha1.PodMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "done", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
			Spec: schedv1alpha1.PodMigrationSpec{PodName: "h2"}, Status: schedv1alpha1.PodMigrationStatus{Phase: schedv1alpha1.PodMigrationSucceeded}})
	s := newTestState(t, objs...)
	c := s.snapshot(now)
	c.evictions = []Eviction{
		{Namespace: "demo", Pod: "held", Held: "workload budget"},
		{Namespace: "demo", Pod: "terminating"},
		{Namespace: "demo", Pod: "gone"},
		{Namespace: "demo", Pod: "replaced-pending", Replacement: "r1"},
		{Namespace: "demo", Pod: "replaced-bound", Replacement: "r2", ReplacementNode: "fine"},
	}
	c.live = s.evictedLive(c.evictions)

	v := cut(c, Query{})
	want := []AttentionNode{
		{Name: "two-violators", Violators: 2},
		{Name: "violator-and-hot", Violators: 1, Over: []string{"cpu 90% > 80%"}},
		{Name: "hot-95", Over: []string{"cpu 95% > 80%"}},
		{Name: "hot-85", Over: []string{"cpu 85% > 80%"}},
		{Name: "notready", NotReady: true},
		{Name: "stale", Stale: true},
		{Name: "unreported", Stale: true},
	}
	if d := cmp.Diff(want, v.Attention.Nodes, cmp.AllowUnexported(AttentionNode{}), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".excess" }, cmp.Ignore())); d != "" {
		t.Errorf("attention nodes (-want +got):\n%s", d)
	}
	if v.Attention.NodesTotal != 7 {
		t.Errorf("attention nodes total %d, want 7", v.Attention.NodesTotal)
	}
	wantPending := []PendingGroup{{Reason: "A", Count: 3, Pods: []string{"demo/p0", "demo/p1", "demo/p3"}}, {Reason: "", Count: 2, Pods: []string{"demo/p2", "demo/p5"}},
		{Reason: "B", Count: 1, Pods: []string{"demo/p4"}}}
	if d := cmp.Diff(wantPending, v.Attention.Pending); d != "" || v.Attention.PendingTotal != 6 {
		t.Errorf("pending groups (-want +got), total %d of 6:\n%s", v.Attention.PendingTotal, d)
	}
	var inFlight []string
	for _, e := range v.Attention.Evictions {
		inFlight = append(inFlight, e.Pod)
	}
	if want := []string{"terminating", "replaced-pending"}; !slices.Equal(inFlight, want) {
		t.Errorf("evictions in flight %v, want %v", inFlight, want)
	}
	if len(v.Attention.Migrations) != 1 || v.Attention.Migrations[0].Name != "running" || len(v.Migrations) != 2 {
		t.Errorf("migrations in flight %+v (table %d rows), want running only (table 2)", v.Attention.Migrations, len(v.Migrations))
	}

	grid := cut(c, Query{Attention: true})
	if got := nodeNames(grid.Nodes); len(got) != 7 || slices.Contains(got, "fine") {
		t.Errorf("attention=true grid %v, want the 7 attention nodes", got)
	}
	// The attention summary follows the namespace filter, not the node filter.
	if v := cut(c, Query{Node: "fine"}); v.Attention.NodesTotal != 7 {
		t.Errorf("with node=fine: %d attention nodes, want 7", v.Attention.NodesTotal)
	}
	if v := cut(c, Query{Namespace: "team-z"}); v.Attention.NodesTotal != 0 || v.Attention.PendingTotal != 0 || len(v.Attention.Evictions) != 0 {
		t.Errorf("with a namespace of no pods: %+v", v.Attention)
	}
}

func TestParseQuery(t *testing.T) {
	q, err := ParseQuery(url.Values{"node": {" node-1 "}, "namespace": {"demo"}, "workload": {"web"}, "attention": {"true"}, "page": {"3"}, "pageSize": {"20"}})
	if want := (Query{Node: "node-1", Namespace: "demo", Workload: "web", Attention: true, Page: 3, PageSize: 20}); err != nil || q != want {
		t.Errorf("%+v %v, want %+v", q, err, want)
	}
	if q, err := ParseQuery(url.Values{}); err != nil || q != (Query{Page: 1, PageSize: DefaultPageSize}) {
		t.Errorf("defaults: %+v %v", q, err)
	}
	for param, value := range map[string]string{"page": "0", "pageSize": "201", "attention": "yes", "node": string(make([]byte, 254))} {
		if _, err := ParseQuery(url.Values{param: {value}}); err == nil || err.Error()[:len(param)+1] != param+":" {
			t.Errorf("%s=%q: %v, want an error naming %s", param, value, err, param)
		}
	}
}

// The server's side of a page at the scale benchmark's size: 5000 nodes with a NodeMetric and a CR,
// 100k pods (20 a node): building the snapshot, and cutting one page from it.
func BenchmarkSnapshotAndCut(b *testing.B) {
	var objs []runtime.Object
	for i := range 5000 {
		name := fmt.Sprintf("node-%04d", i)
		objs = append(objs, node(name, "8"), metric(name, "7", now), &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{"cpu": true, "memory": i%100 != 1}}})
		for j := range 20 {
			p := pod(fmt.Sprintf("p-%04d-%02d", i, j), name, "rs", now)
			p.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("500Mi")}}}}
			objs = append(objs, p)
		}
	}
	s := newTestState(b, objs...)
	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			s.snapshot(now)
		}
	})
	c := s.snapshot(now)
	for _, q := range []Query{{}, {Namespace: "demo", Workload: "p-0042"}, {Attention: true, Page: 3}} {
		b.Run(fmt.Sprintf("cut %+v", q), func(b *testing.B) {
			for b.Loop() {
				cut(c, q)
			}
		})
	}
}
