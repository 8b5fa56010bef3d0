package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics/testutil"

	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

// recorder logs every call of its plugins.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

type recPlugin struct {
	name string
	h    framework.Handle
	rec  *recorder
	fail string // "error" or "panic"
	// evict, when set, evicts every pod (that passes the filters) on the nodes it is given.
	evict bool
	errs  []error
	byPod map[string]error
}

func (p *recPlugin) Name() string { return p.name }
func (p *recPlugin) run(ctx context.Context, point string, nodes []*corev1.Node) *framework.Status {
	p.rec.add(fmt.Sprintf("%s/%s/%s/%d", p.h.ProfileName(), p.name, point, len(nodes)))
	switch p.fail {
	case "error":
		return framework.Errorf("boom")
	case "panic":
		panic("kaboom")
	}
	if p.evict {
		for _, n := range nodes {
			pods, _ := p.h.GetPodsAssignedToNode(n.Name, p.h.Evictor().Filter)
			slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
			for _, pod := range pods {
				err := p.h.Evictor().Evict(ctx, pod, framework.EvictOptions{PluginName: p.name, Reason: "test"})
				p.errs = append(p.errs, err)
				if p.byPod == nil {
					p.byPod = map[string]error{}
				}
				p.byPod[pod.Name] = err
				if framework.IsTotalLimit(err) {
					return nil
				}
			}
		}
	}
	return nil
}
func (p *recPlugin) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	return p.run(ctx, "deschedule", nodes)
}
func (p *recPlugin) Balance(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	return p.run(ctx, "balance", nodes)
}

// filterOnly implements only EvictorPlugin.
type filterOnly struct{}

func (filterOnly) Name() string                       { return "FilterOnly" }
func (filterOnly) Filter(pod *corev1.Pod) bool        { return pod.Labels["keep"] == "" }
func (filterOnly) PreEvictionFilter(*corev1.Pod) bool { return true }

func registry(rec *recorder, plugins_ map[string]*recPlugin) framework.Registry {
	reg := plugins.NewInTreeRegistry()
	for _, name := range []string{"D1", "D2", "B1", "B2", "Failing", "Panicking", "Evicting"} {
		_ = reg.Register(name, func(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
			p := &recPlugin{name: name, h: h, rec: rec, evict: name == "Evicting"}
			switch name {
			case "Failing":
				p.fail = "error"
			case "Panicking":
				p.fail = "panic"
			}
			if plugins_ != nil {
				plugins_[h.ProfileName()+"/"+name] = p
			}
			return p, nil
		})
	}
	_ = reg.Register("FilterOnly", func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
		return filterOnly{}, nil
	})
	return reg
}

func build(t *testing.T, c *fake.Cluster, reg framework.Registry, doc string, dryRun bool) (*fwruntime.Descheduler, error) {
	t.Helper()
	p, err := policy.Decode([]byte("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"+doc), plugins.NewInTreeArgs())
	if err != nil {
		t.Fatal(err)
	}
	if errs := policy.Validate(p, reg, plugins.NewInTreeArgs()); len(errs) > 0 {
		t.Fatal(errs)
	}
	return fwruntime.New(t.Context(), p, fwruntime.Options{Client: c.Client, InformerFactory: c.Factory, AccordInformerFactory: c.CRs,
		Registry: reg, DryRun: dryRun, Metrics: metrics.New()})
}

func TestCycleRunsDescheduleOfAllProfilesBeforeBalance(t *testing.T) {
	c := fake.NewCluster(
		fake.Node("a1", map[string]string{"pool": "a"}, 4, 8),
		fake.Node("a2", map[string]string{"pool": "a"}, 4, 8),
		fake.Node("b1", map[string]string{"pool": "b"}, 4, 8),
	)
	rec := &recorder{}
	d, err := build(t, c, registry(rec, nil), `
nodeSelector: "pool in (a,b)"
profiles:
- name: one
  nodeSelector: pool=a
  plugins:
    balance: {enabled: [B1]}
    deschedule: {enabled: [D1, Failing]}
- name: two
  plugins:
    deschedule: {enabled: [Panicking, D2]}
    balance: {enabled: [B2]}
`, false)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	d.RunCycle(context.Background())
	want := []string{
		"one/D1/deschedule/2", "one/Failing/deschedule/2", "two/Panicking/deschedule/3", "two/D2/deschedule/3",
		"one/B1/balance/2", "two/B2/balance/3",
	}
	if !slices.Equal(rec.calls, want) {
		t.Errorf("call order\n got %v\nwant %v", rec.calls, want)
	}
	m := d.Metrics()
	for _, l := range [][]string{{"Failing", "one", "deschedule"}, {"Panicking", "two", "deschedule"}} {
		if v, _ := testutil.GetCounterMetricValue(m.PluginFailures.WithLabelValues(l...)); v != 1 {
			t.Errorf("failures of %v = %v, want 1", l, v)
		}
	}
	if n := histogramCount(t, m, "accord_descheduler_cycle_duration_seconds", nil); n != 1 {
		t.Errorf("cycle histogram count = %d", n)
	}
	if n := histogramCount(t, m, "accord_descheduler_plugin_duration_seconds", map[string]string{"plugin": "D2", "profile": "two", "extension_point": "deschedule", "status": "success"}); n != 1 {
		t.Errorf("plugin histogram count = %d", n)
	}
	if n := histogramCount(t, m, "accord_descheduler_plugin_duration_seconds", map[string]string{"plugin": "Failing", "status": "error"}); n != 1 {
		t.Errorf("failed plugin histogram count = %d", n)
	}
}

func TestExtensionPointNotImplemented(t *testing.T) {
	c := fake.NewCluster()
	_, err := build(t, c, registry(&recorder{}, nil), `
profiles:
- name: p
  plugins:
    deschedule: {enabled: [FilterOnly]}
    filter: {enabled: [D1]}
    evict: {enabled: [DefaultEvictor]}
`, false)
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{
		"profiles[0].plugins.deschedule.enabled[0]: Invalid value: \"FilterOnly\": plugin does not implement the deschedule extension point",
		"profiles[0].plugins.filter.enabled[0]: Invalid value: \"D1\": plugin does not implement the filter extension point",
		"profiles[0].plugins.evict.enabled[0]: Invalid value: \"DefaultEvictor\": plugin does not implement the evict extension point",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

func pods(n int, node string) []runtime.Object {
	var out []runtime.Object
	for i := range n {
		out = append(out, fake.Pod("ns", fmt.Sprintf("%s-p%d", node, i), node, 100))
	}
	return out
}

func cluster(nodes, podsPerNode int) *fake.Cluster {
	var objs []runtime.Object
	for i := range nodes {
		name := fmt.Sprintf("n%d", i)
		objs = append(objs, fake.Node(name, nil, 4, 8))
		objs = append(objs, pods(podsPerNode, name)...)
	}
	return fake.NewCluster(objs...)
}

func TestSafeDefaultLimits(t *testing.T) {
	c := cluster(30, 5)
	plugs := map[string]*recPlugin{}
	d, err := build(t, c, registry(&recorder{}, plugs), `
profiles:
- name: p
  plugins:
    deschedule: {enabled: [Evicting]}
    filter: {enabled: [FilterOnly]}
`, false)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	d.RunCycle(context.Background())
	got := c.Evictions()
	if len(got) != evictions.DefaultMaxPodsToEvictTotal {
		t.Fatalf("evicted %d pods, want the default total cap %d", len(got), evictions.DefaultMaxPodsToEvictTotal)
	}
	perNode := map[string]int{}
	for _, e := range got {
		perNode[strings.Split(strings.TrimPrefix(e, "ns/"), "-")[0]]++
	}
	for n, k := range perNode {
		if k > evictions.DefaultMaxPodsToEvictPerNode {
			t.Errorf("node %s: %d evictions, above the default per-node cap", n, k)
		}
	}
	errs := plugs["p/Evicting"].errs
	if !framework.IsTotalLimit(errs[len(errs)-1]) || !slices.ContainsFunc(errs, framework.IsNodeLimit) {
		t.Errorf("plugin did not see node and total limit errors: %v", errs)
	}
	var success float64
	for i := range 30 {
		v, _ := testutil.GetCounterMetricValue(d.Metrics().PodsEvicted.WithLabelValues("success", "Evicting", "p", "ns", fmt.Sprintf("n%d", i)))
		if v > evictions.DefaultMaxPodsToEvictPerNode {
			t.Errorf("success metric for n%d = %v", i, v)
		}
		success += v
	}
	if success != evictions.DefaultMaxPodsToEvictTotal {
		t.Errorf("success metric total = %v", success)
	}
}

func TestPolicyLimitsAndReset(t *testing.T) {
	c := cluster(3, 4)
	d, err := build(t, c, registry(&recorder{}, nil), `
maxNoOfPodsToEvictPerNode: 3
maxNoOfPodsToEvictTotal: 7
profiles:
- name: p
  plugins:
    deschedule: {enabled: [Evicting]}
    filter: {enabled: [FilterOnly]}
`, false)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	d.RunCycle(context.Background())
	if got := len(c.Evictions()); got != 7 {
		t.Fatalf("first cycle evicted %d, want 7", got)
	}
	// The evicted pods leave the cache; the next cycle has fresh limits and evicts the rest (5).
	waitFor(t, func() bool { l, _ := c.Factory.Core().V1().Pods().Lister().List(everything()); return len(l) == 5 })
	d.RunCycle(context.Background())
	if got := len(c.Evictions()); got != 12 {
		t.Fatalf("after the second cycle %d evictions, want 12", got)
	}
}

func TestNamespaceLimit(t *testing.T) {
	c := cluster(2, 3)
	d, err := build(t, c, registry(&recorder{}, nil), `
maxNoOfPodsToEvictPerNamespace: 4
profiles:
- name: p
  plugins:
    deschedule: {enabled: [Evicting]}
`, false)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	d.RunCycle(context.Background())
	if got := len(c.Evictions()); got != 4 {
		t.Fatalf("evicted %d, want the namespace limit 4", got)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	c := cluster(2, 2)
	plugs := map[string]*recPlugin{}
	d, err := build(t, c, registry(&recorder{}, plugs), `
profiles:
- name: p
  plugins:
    deschedule: {enabled: [Evicting]}
    filter: {enabled: [FilterOnly]}
`, true)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	d.RunCycle(context.Background())
	if got := c.Evictions(); len(got) != 0 {
		t.Fatalf("dry run evicted %v", got)
	}
	for _, a := range c.Client.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("dry run wrote: %v", a)
		}
	}
	errs := plugs["p/Evicting"].errs
	if len(errs) != 4 || !errors.Is(errs[0], framework.ErrDryRun) {
		t.Errorf("plugin saw %v, want 4 ErrDryRun", errs)
	}
	if v, _ := testutil.GetCounterMetricValue(d.Metrics().PodsEvicted.WithLabelValues("dry-run", "Evicting", "p", "ns", "n1")); v != 2 {
		t.Errorf("dry-run metric = %v", v)
	}
}

func TestRefusedEvictionIsCountedAndFreesTheSlot(t *testing.T) {
	c := cluster(1, 3)
	c.RefuseEviction = func(ev *policyv1.Eviction) error {
		if ev.Name == "n0-p0" {
			return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
		}
		return nil
	}
	plugs := map[string]*recPlugin{}
	d, err := build(t, c, registry(&recorder{}, plugs), `
maxNoOfPodsToEvictPerNode: 2
profiles:
- name: p
  plugins:
    deschedule: {enabled: [Evicting]}
`, false)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	d.RunCycle(context.Background())
	got := c.Evictions()
	slices.Sort(got)
	if !slices.Equal(got, []string{"ns/n0-p1", "ns/n0-p2"}) {
		t.Errorf("evicted %v; the refused eviction must not use up a per-node slot", got)
	}
	if err := plugs["p/Evicting"].byPod["n0-p0"]; !apierrors.IsTooManyRequests(err) {
		t.Errorf("plugin saw %v, want TooManyRequests", err)
	}
	if v, _ := testutil.GetCounterMetricValue(d.Metrics().PodsEvicted.WithLabelValues("error", "Evicting", "p", "ns", "n0")); v != 1 {
		t.Errorf("error metric = %v", v)
	}
	for _, a := range c.Client.Actions() {
		if a.GetVerb() == "delete" {
			t.Errorf("fell back to delete: %v", a)
		}
	}
}

func TestHandleNodeSelectorIsTheProfiles(t *testing.T) {
	nodes := map[string]labels.Set{"a": {"pool": "a"}, "b": {"pool": "b"}, "c": {"pool": "c"}, "none": {}}
	for _, tc := range []struct {
		name, doc string
		want      map[string][]string // profile -> nodes its Handle's NodeSelector matches
	}{
		{name: "policy-level and per-profile", doc: `
nodeSelector: "pool in (a,b)"
profiles:
- name: one
  nodeSelector: pool=a
  plugins: {deschedule: {enabled: [D1]}}
- name: two
  plugins: {deschedule: {enabled: [D1]}}
`, want: map[string][]string{"one": {"a"}, "two": {"a", "b"}}},
		{name: "no selector selects every node", doc: `
profiles:
- name: one
  plugins: {deschedule: {enabled: [D1]}}
`, want: map[string][]string{"one": {"a", "b", "c", "none"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plugs := map[string]*recPlugin{}
			if _, err := build(t, fake.NewCluster(), registry(&recorder{}, plugs), tc.doc, false); err != nil {
				t.Fatal(err)
			}
			for profile, want := range tc.want {
				sel := plugs[profile+"/D1"].h.NodeSelector()
				var got []string
				for name, l := range nodes {
					if sel.Matches(l) {
						got = append(got, name)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("profile %s: NodeSelector %q matches %v, want %v", profile, sel, got, want)
				}
			}
		})
	}
}

// TestTotalCapSkipsRemainingPlugins: once a cycle's total cap is reached, its remaining Deschedule
// and Balance plugins are not called (and each skipped call is counted); with RunPastTotalCap
// (explain) they are. The next cycle starts with fresh limits and calls its plugins again.
func TestTotalCapSkipsRemainingPlugins(t *testing.T) {
	doc := `
maxNoOfPodsToEvictTotal: 2
profiles:
- name: p
  plugins:
    deschedule: {enabled: [Evicting, D1]}
    balance: {enabled: [B1]}
`
	for _, past := range []bool{false, true} {
		t.Run(fmt.Sprintf("runPastTotalCap=%v", past), func(t *testing.T) {
			c := cluster(2, 3)
			rec := &recorder{}
			reg := registry(rec, nil)
			p, err := policy.Decode([]byte("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"+doc), plugins.NewInTreeArgs())
			if err != nil {
				t.Fatal(err)
			}
			if errs := policy.Validate(p, reg, plugins.NewInTreeArgs()); len(errs) > 0 {
				t.Fatal(errs)
			}
			d, err := fwruntime.New(t.Context(), p, fwruntime.Options{Client: c.Client, InformerFactory: c.Factory, AccordInformerFactory: c.CRs,
				Registry: reg, DryRun: true, Metrics: metrics.New(), RunPastTotalCap: past})
			if err != nil {
				t.Fatal(err)
			}
			c.Start(t)
			d.RunCycle(context.Background())
			want := []string{"p/Evicting/deschedule/2"}
			var skipped float64
			if past {
				want = append(want, "p/D1/deschedule/2", "p/B1/balance/2")
			} else {
				for _, c := range []struct{ plugin, point string }{{"D1", "deschedule"}, {"B1", "balance"}} {
					v, _ := testutil.GetCounterMetricValue(d.Metrics().CapSkippedPluginCalls.WithLabelValues(c.plugin, "p", c.point))
					skipped += v
				}
			}
			if !slices.Equal(rec.calls, want) {
				t.Fatalf("calls %v, want %v", rec.calls, want)
			}
			if !past && skipped != 2 {
				t.Fatalf("cap_skipped_plugin_calls_total = %v, want 2", skipped)
			}
			// A new cycle has fresh limits: its first plugin runs again.
			rec.calls = nil
			d.RunCycle(context.Background())
			if len(rec.calls) == 0 || rec.calls[0] != "p/Evicting/deschedule/2" {
				t.Fatalf("second cycle's calls %v", rec.calls)
			}
		})
	}
}
