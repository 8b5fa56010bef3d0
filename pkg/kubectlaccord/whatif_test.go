package kubectlaccord

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/explain"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
)

const whatIfFileText = `apiVersion: scheduling.accord.dev/v1alpha1
kind: ClusterScopedResource
metadata:
  name: node-5
spec:
  resourcesFilter:
    example.com/memory: false
---
apiVersion: v1
kind: List
items:
- apiVersion: slo.accord.dev/v1alpha1
  kind: NodeMetric
  metadata: {name: node-9}
  status:
    nodeUsage: {cpu: "1"}
---
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles: []
`

func TestParseWhatIf(t *testing.T) {
	f, err := parseWhatIf(strings.NewReader(whatIfFileText))
	if err != nil {
		t.Fatal(err)
	}
	if cr := f.overlay.crs["node-5"]; cr == nil || cr.Spec.ResourcesFilter["example.com/memory"] {
		t.Errorf("node-5's CR: %+v", cr)
	}
	if nm := f.overlay.nms["node-9"]; nm == nil || nm.Status.NodeUsage.Cpu().String() != "1" {
		t.Errorf("node-9's NodeMetric from the List: %+v", nm)
	}
	if len(f.order) != 2 || f.order[0] != (ReplacedObject{Kind: "ClusterScopedResource", Name: "node-5"}) || !strings.Contains(string(f.policy), "DeschedulerPolicy") {
		t.Errorf("order %v, policy %q", f.order, f.policy)
	}
	for name, tc := range map[string]struct{ text, want string }{
		"unknown field": {"apiVersion: scheduling.accord.dev/v1alpha1\nkind: ClusterScopedResource\nmetadata: {name: a}\nspec: {resourcesFilters: {}}\n",
			`document 1: ClusterScopedResource: json: unknown field "resourcesFilters"`},
		"unknown kind":  {"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n", `document 1: apiVersion "v1" kind "Pod": what-if takes`},
		"twice":         {whatIfFileText + "---\n" + whatIfFileText, "document 4: ClusterScopedResource node-5: named twice"},
		"two policies":  {"apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n---\napiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n", "document 2: a second DeschedulerPolicy"},
		"no name":       {"apiVersion: slo.accord.dev/v1alpha1\nkind: NodeMetric\n", "document 1: NodeMetric: metadata.name is empty"},
		"empty":         {"---\n# nothing\n", "no ClusterScopedResource, NodeMetric or DeschedulerPolicy in it"},
		"list item bad": {"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node}\n", `document 1: List items[0]: apiVersion "v1" kind "Node"`},
	} {
		if _, err := parseWhatIf(strings.NewReader(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}

// The overlay answers Get, List and Watch with the file's objects in place of the live ones, adds
// the new ones, leaves the others alone, and hides the live object's watch events.
func TestOverlayClient(t *testing.T) {
	ctx := context.Background()
	live5 := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: "node-5", ResourceVersion: "7"},
		Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{"example.com/memory": true}}}
	live2 := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}
	fake := accordfake.NewSimpleClientset(live5, live2, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	f, err := parseWhatIf(strings.NewReader(whatIfFileText))
	if err != nil {
		t.Fatal(err)
	}
	c := f.overlay.wrap(fake)
	if u, ok := c.(interface{ IsWatchListSemanticsUnSupported() bool }); !ok || !u.IsWatchListSemanticsUnSupported() {
		t.Error("the overlay client lets informers stream their initial list past it")
	}
	crs := c.SchedulingV1alpha1().ClusterScopedResources()
	l, err := crs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]schedv1alpha1.ClusterScopedResource{}
	for _, cr := range l.Items {
		got[cr.Name] = cr
	}
	if len(got) != 2 || got["node-5"].Spec.ResourcesFilter["example.com/memory"] || got["node-5"].ResourceVersion != "7" || got["node-2"].Name == "" {
		t.Errorf("list: %+v", l.Items)
	}
	if cr, err := crs.Get(ctx, "node-5", metav1.GetOptions{}); err != nil || cr.Spec.ResourcesFilter["example.com/memory"] {
		t.Errorf("get node-5: %+v, %v", cr, err)
	}
	if l, err := crs.List(ctx, metav1.ListOptions{LabelSelector: "a=b"}); err != nil || len(l.Items) != 0 {
		t.Errorf("list a=b: %+v, %v", l, err)
	}
	nms, err := c.SloV1alpha1().NodeMetrics().List(ctx, metav1.ListOptions{})
	if err != nil || len(nms.Items) != 2 {
		t.Errorf("node metrics: %+v, %v (want node-1 live and node-9 added)", nms, err)
	}
	if nm, err := c.SloV1alpha1().NodeMetrics().Get(ctx, "node-1", metav1.GetOptions{}); err != nil || nm.Name != "node-1" {
		t.Errorf("get node-1 (live): %v, %v", nm, err)
	}

	w, err := crs.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live5.Spec.ResourcesFilter["example.com/memory"] = false
	if _, err := fake.SchedulingV1alpha1().ClusterScopedResources().Update(ctx, live5, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.SchedulingV1alpha1().ClusterScopedResources().Update(ctx, live2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case e := <-w.ResultChan():
			name := e.Object.(*schedv1alpha1.ClusterScopedResource).Name
			if name == "node-5" {
				t.Errorf("watch event %v for node-5, which the file stands in for", e.Type)
			}
			done = name == "node-2" && e.Type == watch.Modified
		case <-timeout:
			t.Fatal("no watch event for node-2's update in 10s")
		}
	}
	// Stopped with an event no one receives, the watch still ends.
	if _, err := fake.SchedulingV1alpha1().ClusterScopedResources().Update(ctx, live2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	w.Stop()
	for range w.ResultChan() {
	}
}

func TestWhatIfExitCodes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "change.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(whatIfFileText, "---\napiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles: []\n", "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	withPolicy := filepath.Join(t.TempDir(), "with-policy.yaml")
	if err := os.WriteFile(withPolicy, []byte(whatIfFileText), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no file":      {[]string{"what-if"}, ExitUsage, "-f FILE is required"},
		"argument":     {[]string{"what-if", "node-5", "-f", file}, ExitUsage, "what-if takes no arguments"},
		"no policy":    {[]string{"what-if", "-f", file}, ExitUsage, "holds no DeschedulerPolicy; give accord-descheduler's with --policy"},
		"two policies": {[]string{"what-if", "-f", withPolicy, "--policy", "p.yaml"}, ExitUsage, "holds a DeschedulerPolicy and --policy names another"},
		"bad output":   {[]string{"what-if", "-f", file, "-o", "csv"}, ExitUsage, `-o "csv"`},
		"missing file": {[]string{"what-if", "-f", file + ".nope", "--policy", "p.yaml"}, ExitUsage, "no such file"},
		"forbidden":    {[]string{"what-if", "-f", file, "--policy", "p.yaml"}, ExitForbidden, `this needs RBAC verb "list" on pods cluster-wide`},
	} {
		code, _, errOut := runWith(t, nil, nil, func(k *kubefake.Clientset, _ *accordfake.Clientset) {
			k.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
			})
		}, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", name, code, errOut, tc.code, tc.want)
		}
	}
}

// The file's objects are checked before the cycle: a CR RBAC refuses to get names the verb and
// resource, and one no live object has the name of is new.
func TestCheckWhatIfAccess(t *testing.T) {
	f, err := parseWhatIf(strings.NewReader(whatIfFileText))
	if err != nil {
		t.Fatal(err)
	}
	a := accordfake.NewSimpleClientset(&schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: "node-5"}})
	c := &Clients{Kube: kubefake.NewClientset(), Accord: a}
	got, err := checkWhatIfAccess(context.Background(), c, f)
	if err != nil || len(got) != 2 || got[0].New || !got[1].New {
		t.Errorf("replaced %+v, %v; want node-5 live and node-9 new", got, err)
	}
	a.PrependReactor("get", "nodemetrics", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "slo.accord.dev", Resource: "nodemetrics"}, "node-9", nil)
	})
	if _, err := checkWhatIfAccess(context.Background(), c, f); ExitCode(err) != ExitForbidden || !strings.Contains(err.Error(), `verb "get" on nodemetrics.slo.accord.dev`) {
		t.Errorf("refused get: %v", err)
	}
}

func TestHeld(t *testing.T) {
	for _, tc := range []struct {
		row  explain.Row
		want bool
	}{
		{explain.Row{Verdict: explain.VerdictBlocked, BlockedBy: "limit"}, true},
		{explain.Row{Verdict: explain.VerdictBlocked, BlockedBy: explain.BlockedByWorkloadBudget}, true},
		{explain.Row{Verdict: explain.VerdictBlocked, BlockedBy: explain.BlockedByWindow}, true},
		{explain.Row{Verdict: explain.VerdictBlocked, BlockedBy: "SchedulerSimulation"}, false},
		{explain.Row{Verdict: explain.VerdictBlocked, BlockedBy: explain.BlockedByInProgress}, false},
		{explain.Row{Verdict: explain.VerdictEvict}, false},
	} {
		if got := Held(tc.row); got != tc.want {
			t.Errorf("Held(%+v) = %t, want %t", tc.row, got, tc.want)
		}
	}
}

func TestPrintWhatIf(t *testing.T) {
	score := int64(88)
	rep := &WhatIfReport{File: "c.yaml", Policy: "p.yaml", Replaced: []ReplacedObject{{Kind: "ClusterScopedResource", Name: "node-5"}},
		Evictions: 1, Held: 1, Rows: []explain.Row{
			{Profile: "accord", Plugin: "NodeCRDResourceFit", Namespace: "demo", Pod: "a", Node: "node-5", Verdict: "evict", PredictedNode: "node-2", Score: &score},
			{Profile: "accord", Plugin: "NodeCRDResourceFit", Namespace: "demo", Pod: "b", Node: "node-5", Verdict: "blocked", BlockedBy: "limit", Message: "node\nlimit"},
		}}
	var b strings.Builder
	if err := printWhatIf(&b, "wide", rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"What if c.yaml (ClusterScopedResource node-5), policy p.yaml", "1 eviction(s) now, 1 held for later cycles (eviction limits, workload budget, window), 0 blocked",
		"demo/a   node-5   NodeCRDResourceFit   evict     -            node-2", "88", "node limit"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
