package console

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/accord-sched/accord/pkg/descheduler/explain"
)

// sarClient answers SubjectAccessReviews from allowed ("user verb resource namespace"; namespace "" is
// cluster-wide) and counts them.
func sarClient(allowed ...string) (*kubefake.Clientset, *int) {
	c := kubefake.NewClientset()
	n := new(int)
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		*n++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ra := sar.Spec.ResourceAttributes
		sar.Status.Allowed = slices.Contains(allowed, sar.Spec.User+" "+ra.Verb+" "+ra.Resource+" "+ra.Namespace)
		return true, sar, nil
	})
	return c, n
}

func TestViewScopeFilter(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	pe := func(ns, name, node, reason string) podEntry {
		return podEntry{PodView: PodView{Namespace: ns, Name: name, Node: node, Reason: reason}}
	}
	c := &cluster{
		nodes: []nodeEntry{
			{view: NodeView{Name: "node-1", Ready: true, HasCR: true, Taints: []string{"t"}, Load: LoadView{Reported: true}},
				pods: []podEntry{pe("team-a", "a1", "node-1", ""), pe("team-b", "b1", "node-1", "")}},
			{view: NodeView{Name: "node-2", Ready: true}, pods: []podEntry{pe("team-b", "b2", "node-2", "")}},
		},
		pending:    []podEntry{pe("team-a", "a2", "", "0/2 nodes"), pe("team-b", "b3", "", "0/2 nodes")},
		evictions:  []Eviction{{Namespace: "team-a", Pod: "a0"}, {Namespace: "team-b", Pod: "b0"}},
		migrations: []MigrationView{{Namespace: "team-a", Name: "move-a1", Pod: "a1"}, {Namespace: "team-b", Name: "move-b1", Pod: "b1"}},
	}
	user := &authenticationv1.UserInfo{Username: "alice"}
	names := func(pods []PodView) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		return out
	}

	// Pods, Events and PodMigrations of team-a only, nothing cluster-scoped: node-1 shows as its name
	// and a1.
	client, _ := sarClient("alice list pods team-a", "alice list events team-a", "alice list podmigrations team-a")
	sc := &viewScope{access: NewAccess(client, AccessOptions{}), user: user}
	got := cut(sc.filter(ctx, logger, c), Query{})
	if len(got.Nodes) != 1 || got.Nodes[0].Name != "node-1" || !got.Nodes[0].Restricted || got.Nodes[0].HasCR || got.Nodes[0].Load.Reported || got.Nodes[0].Taints != nil {
		t.Errorf("nodes: %+v, want node-1 restricted, without its state", got.Nodes)
	} else if p := names(got.Nodes[0].Pods); !slices.Equal(p, []string{"team-a/a1"}) {
		t.Errorf("node-1's pods: %v", p)
	}
	if p := names(got.Pending); !slices.Equal(p, []string{"team-a/a2"}) || got.Pending[0].Reason == "" {
		t.Errorf("pending: %+v", got.Pending)
	}
	if len(got.Evictions) != 1 || got.Evictions[0].Pod != "a0" {
		t.Errorf("evictions: %+v", got.Evictions)
	}
	if len(got.Migrations) != 1 || got.Migrations[0].Name != "move-a1" {
		t.Errorf("migrations: %+v, want team-a's only", got.Migrations)
	}
	if len(got.Namespaces) != 1 || got.Namespaces[0] != "team-a" || got.NodesTotal != 1 || got.Attention.PendingTotal != 1 {
		t.Errorf("counts and namespaces beyond the user's scope: %v, %d nodes, %d pending", got.Namespaces, got.NodesTotal, got.Attention.PendingTotal)
	}
	if len(c.nodes[0].pods) != 2 || len(c.pending) != 2 {
		t.Error("filter modified the shared View")
	}

	// Pods of team-a without its Events: no scheduling failure, no evictions. With the cluster-scoped
	// reads, every node keeps its state.
	client, _ = sarClient("alice list pods team-a")
	sc = &viewScope{access: NewAccess(client, AccessOptions{}), user: user, cluster: true}
	got = cut(sc.filter(ctx, logger, c), Query{})
	if len(got.Nodes) != 2 || got.Nodes[0].Restricted || !got.Nodes[0].HasCR || len(got.Nodes[1].Pods) != 0 {
		t.Errorf("nodes with the cluster-scoped reads: %+v", got.Nodes)
	}
	if len(got.Pending) != 1 || got.Pending[0].Reason != "" || len(got.Evictions) != 0 {
		t.Errorf("without Events: pending %+v, evictions %+v", got.Pending, got.Evictions)
	}
	if len(got.Migrations) != 0 {
		t.Errorf("without list on podmigrations: migrations %+v", got.Migrations)
	}
}

// A team's user gets only the team's pods from /api/state and the stream, a user of no namespace the
// console shows 403; reviews are cached.
func TestAccessScopesTheView(t *testing.T) {
	other := pod("b1", "node-1", "", now)
	other.Namespace = "team-b"
	s := newTestState(t, node("node-1", "4"), pod("a1", "node-1", "", now), other)
	h := newTestHandler(t, s, nil)
	h.hub.publish(s.snapshot(now))
	client, reviews := sarClient("alice list pods demo", "alice list events demo")
	client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		tr.Status.Authenticated = true
		tr.Status.User = authenticationv1.UserInfo{Username: tr.Spec.Token}
		tr.Status.Audiences = tr.Spec.Audiences
		return true, tr, nil
	})
	h.access = NewAccess(client, AccessOptions{})
	srv := httptest.NewServer(h.mux())
	defer srv.Close()
	get := func(path, user string) *http.Response {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := get("/api/state", "alice")
	var v View
	if err := json.NewDecoder(resp.Body).Decode(&v); resp.StatusCode != 200 || err != nil {
		t.Fatalf("/api/state as demo's user: %d %v", resp.StatusCode, err)
	}
	if len(v.Nodes) != 1 || len(v.Nodes[0].Pods) != 1 || v.Nodes[0].Pods[0].Name != "a1" || !v.Nodes[0].Restricted {
		t.Errorf("demo's user's view: %+v", v.Nodes)
	}
	before := *reviews
	if resp := get("/api/state", "alice"); resp.StatusCode != 200 || *reviews != before {
		t.Errorf("second request: %d, %d more reviews (want them cached)", resp.StatusCode, *reviews-before)
	}
	resp = get("/api/stream", "alice")
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	for err == nil && !strings.HasPrefix(line, "data: ") {
		line, err = r.ReadString('\n')
	}
	if err != nil || !strings.Contains(line, `"demo"`) || strings.Contains(line, "team-b") {
		t.Errorf("stream as demo's user: %q %v", line, err)
	}
	if resp := get("/api/state", "bob"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("/api/state as a user of no namespace the console shows: %d, want 403", resp.StatusCode)
	}
}

// TestViewScopeFilterExplain: explain rows are scoped as the page is: the namespaces where the user
// may list pods, and the nodes' state only with the cluster-wide reads.
func TestViewScopeFilterExplain(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	score := int64(80)
	rows := []explain.Row{
		{Namespace: "team-a", Pod: "a1", Node: "node-1", Reason: "node-1 over cpu 85%", SimulationReason: "0/3 nodes", PredictedNode: "node-2", Score: &score, CurrentNodeScore: &score, Verdict: "evict"},
		{Namespace: "team-b", Pod: "b1", Node: "node-1", Reason: "node-1 over cpu 85%", Verdict: "evict"},
	}
	user := &authenticationv1.UserInfo{Username: "alice"}
	client, _ := sarClient("alice list pods team-a")
	sc := &viewScope{access: NewAccess(client, AccessOptions{}), user: user}
	got := sc.filterExplain(ctx, logger, rows)
	if len(got) != 1 || got[0].Pod != "a1" || got[0].Node != "node-1" || got[0].PredictedNode != "node-2" || got[0].Verdict != "evict" {
		t.Fatalf("rows: %+v, want team-a's a1 with its nodes and verdict", got)
	}
	if got[0].Reason != "" || got[0].SimulationReason != "" || got[0].Score != nil || got[0].CurrentNodeScore != nil {
		t.Errorf("without the cluster-wide reads the nodes' state shows: %+v", got[0])
	}
	if rows[0].Reason == "" {
		t.Error("filterExplain modified the rows")
	}
	sc.cluster = true
	if got := sc.filterExplain(ctx, logger, rows); len(got) != 1 || got[0].Reason == "" || got[0].Score == nil {
		t.Errorf("with the cluster-wide reads: %+v, want team-a's row whole", got)
	}
	none, _ := sarClient()
	if got := (&viewScope{access: NewAccess(none, AccessOptions{}), user: user}).filterExplain(ctx, logger, rows); len(got) != 0 {
		t.Errorf("a user who may list pods nowhere sees %+v", got)
	}
}
