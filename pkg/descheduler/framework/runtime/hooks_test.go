package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

// judge is a preEvictionFilter plugin using every hook the runtime offers.
type judge struct {
	rec        *recorder
	verdicters []string
	intrinsic  []string
}

func (j *judge) Name() string                       { return "Judge" }
func (j *judge) Filter(*corev1.Pod) bool            { return true }
func (j *judge) PreEvictionFilter(*corev1.Pod) bool { j.rec.add("unaware"); return true }
func (j *judge) PreEvictionFilterFor(pod *corev1.Pod, nominator string) (bool, *decision.Prediction) {
	j.rec.add("judge " + pod.Name + " for " + nominator)
	if pod.Labels["block"] != "" {
		return false, nil
	}
	return true, &decision.Prediction{Judge: j.Name(), Message: "predicted elsewhere"}
}
func (j *judge) SetNominators(nominators []framework.Nominator) {
	for _, n := range nominators {
		if n.Verdicter != nil {
			j.verdicters = append(j.verdicters, n.Name)
		}
		if n.PodIntrinsic {
			j.intrinsic = append(j.intrinsic, n.Name)
		}
	}
}
func (j *judge) Warm(context.Context) error        { j.rec.add("warm"); return nil }
func (j *judge) BeginCycle(context.Context)        { j.rec.add("begin") }
func (j *judge) EndCycle(context.Context)          { j.rec.add("end") }
func (j *judge) RefusalMessage(*corev1.Pod) string { return "" }
func (j *judge) HasSynced() bool                   { return true }

// aging declares itself pod-intrinsic (as PodLifeTime does) and nominates nothing.
type aging struct{}

func (aging) Name() string                                                 { return "Aging" }
func (aging) NominatesPodIntrinsically() bool                              { return true }
func (aging) Deschedule(context.Context, []*corev1.Node) *framework.Status { return nil }

// hookNominator evicts every pod of its nodes through its Handle and is a NodeVerdicter.
type hookNominator struct {
	name string
	h    framework.Handle
}

func (n *hookNominator) Name() string                                         { return n.name }
func (n *hookNominator) NodeVerdict(*corev1.Pod, *corev1.Node) (bool, string) { return false, "" }
func (n *hookNominator) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	for _, node := range nodes {
		pods, _ := n.h.GetPodsAssignedToNode(node.Name, nil)
		slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		for _, pod := range pods {
			if n.h.Evictor().PreEvictionFilter(pod) {
				_ = n.h.Evictor().Evict(ctx, pod, framework.EvictOptions{Reason: "test"})
			}
		}
	}
	return nil
}

func TestRuntimeWiresHooks(t *testing.T) {
	rec := &recorder{}
	j := &judge{rec: rec}
	reg := plugins.NewInTreeRegistry()
	_ = reg.Register("Judge", func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) { return j, nil })
	_ = reg.Register("Nominator", func(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
		return &hookNominator{name: "Nominator", h: h}, nil
	})
	_ = reg.Register("Aging", func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) { return aging{}, nil })
	blocked := fake.Pod("ns", "b", "n1", 100)
	blocked.Labels = map[string]string{"block": "yes"}
	c := fake.NewCluster(fake.Node("n1", nil, 4, 8), fake.Pod("ns", "a", "n1", 100), blocked)
	p, err := policy.Decode([]byte(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  plugins:
    deschedule: {enabled: [Nominator, Aging]}
    preEvictionFilter: {enabled: [Judge], disabled: [SchedulerSimulation]}
`), plugins.NewInTreeArgs())
	if err != nil {
		t.Fatal(err)
	}
	var records []evictions.Record
	d, err := fwruntime.New(t.Context(), p, fwruntime.Options{Client: c.Client, InformerFactory: c.Factory, AccordInformerFactory: c.CRs,
		Registry: reg, Metrics: metrics.New(), Observer: func(r evictions.Record) { records = append(records, r) }})
	if err != nil {
		t.Fatal(err)
	}
	startSynced(t, c, d)
	d.Warm(context.Background())
	d.RunCycle(context.Background())
	if !slices.Equal(j.verdicters, []string{"Nominator"}) {
		t.Errorf("NodeVerdicters registered: %v", j.verdicters)
	}
	if !slices.Equal(j.intrinsic, []string{"Aging"}) {
		t.Errorf("PodIntrinsicNominators registered: %v", j.intrinsic)
	}
	want := []string{"warm", "begin", "judge a for Nominator", "judge b for Nominator", "end"}
	if !slices.Equal(rec.calls, want) {
		t.Errorf("calls = %v, want %v", rec.calls, want)
	}
	var got []string
	for _, r := range records {
		got = append(got, fmt.Sprintf("%s %s %s blockedBy=%q err=%v", r.Stage, r.Plugin, r.Pod.Name, r.BlockedBy, r.Err))
	}
	wantRecords := []string{
		`preEvictionFilter Nominator a blockedBy="" err=<nil>`,
		`evict Nominator a blockedBy="" err=<nil>`,
		`preEvictionFilter Nominator b blockedBy="Judge" err=<nil>`,
	}
	if !slices.Equal(got, wantRecords) {
		t.Errorf("records = %q, want %q", got, wantRecords)
	}
	if evicted := c.Evictions(); len(evicted) != 1 {
		t.Errorf("evictions = %v", evicted)
	}
}

// A profile has one rule for nodes without a ClusterScopedResource: DefaultEvictor and
// NodeCRDResourceFit with different missingCRPolicy values are refused, naming both.
func TestProfileMissingCRPolicyMustAgree(t *testing.T) {
	c := fake.NewCluster(fake.Node("n1", nil, 4, 8))
	p, err := policy.Decode([]byte(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: DefaultEvictor
    args: {nodeFit: true, missingCRPolicy: Ignore}
  - name: NodeCRDResourceFit
    args: {missingCRPolicy: Reject}
  plugins:
    deschedule: {enabled: [NodeCRDResourceFit]}
    preEvictionFilter: {disabled: [SchedulerSimulation]}
`), plugins.NewInTreeArgs())
	if err != nil {
		t.Fatal(err)
	}
	_, err = fwruntime.New(t.Context(), p, fwruntime.Options{Client: c.Client, InformerFactory: c.Factory, AccordInformerFactory: c.CRs,
		Registry: plugins.NewInTreeRegistry(), Metrics: metrics.New()})
	if err == nil || !strings.Contains(err.Error(), `plugin "DefaultEvictor" has missingCRPolicy Ignore and plugin "NodeCRDResourceFit" has Reject`) {
		t.Fatalf("err = %v", err)
	}
}

// filling is a PlacementJudge with state of its own still being filled from informer events until
// synced is set.
type filling struct{ synced atomic.Bool }

func (f *filling) Name() string                       { return "Filling" }
func (f *filling) Filter(*corev1.Pod) bool            { return true }
func (f *filling) PreEvictionFilter(*corev1.Pod) bool { return true }
func (f *filling) PreEvictionFilterFor(*corev1.Pod, string) (bool, *decision.Prediction) {
	return true, nil
}
func (f *filling) SetNominators([]framework.Nominator) {}
func (f *filling) RefusalMessage(*corev1.Pod) string   { return "" }
func (f *filling) HasSynced() bool                     { return f.synced.Load() }

// The runtime is synced only once every PlacementJudge is: the descheduler waits for them before
// its first cycle instead of the cycle waiting.
func TestRuntimeWaitsForPlacementJudges(t *testing.T) {
	f := &filling{}
	reg := plugins.NewInTreeRegistry()
	_ = reg.Register("Filling", func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) { return f, nil })
	c := fake.NewCluster(fake.Node("n1", nil, 4, 8), fake.Pod("ns", "a", "n1", 100))
	d, err := build(t, c, reg, `profiles:
- name: p
  plugins:
    preEvictionFilter: {enabled: [Filling], disabled: [SchedulerSimulation]}
`, false)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// With the informers synced and the plugin not, WaitForCacheSync gives up when ctx is done.
	waitFor(t, func() bool {
		return c.Factory.Core().V1().Pods().Informer().HasSynced() && c.Factory.Core().V1().Nodes().Informer().HasSynced()
	})
	if d.HasSynced() || d.WaitForCacheSync(ctx) {
		t.Fatal("the runtime reports synced while a PlacementJudge is not")
	}
	f.synced.Store(true)
	// WaitForCacheSync first: handler registrations (the tracker of evictions in progress) sync a
	// moment after their informer.
	if !d.WaitForCacheSync(context.Background()) || !d.HasSynced() {
		t.Fatal("the runtime is not synced once every PlacementJudge is")
	}
}

// A plugin's evictor answers CheckLimits with the cycle's limits, so framework.Evict stops a pod
// no limit lets go before the preEvictionFilters simulate it.
func TestPluginEvictorChecksLimits(t *testing.T) {
	rec := &recorder{}
	j := &judge{rec: rec}
	var nominator *hookNominator
	reg := plugins.NewInTreeRegistry()
	_ = reg.Register("Judge", func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) { return j, nil })
	_ = reg.Register("Nominator", func(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
		nominator = &hookNominator{name: "Nominator", h: h}
		return nominator, nil
	})
	a, b := fake.Pod("ns", "a", "n1", 100), fake.Pod("ns", "b", "n1", 100)
	c := fake.NewCluster(fake.Node("n1", nil, 4, 8), a, b)
	d, err := build(t, c, reg, `maxNoOfPodsToEvictTotal: 1
profiles:
- name: p
  plugins:
    deschedule: {enabled: [Nominator]}
    preEvictionFilter: {enabled: [Judge], disabled: [SchedulerSimulation]}
`, false)
	if err != nil {
		t.Fatal(err)
	}
	startSynced(t, c, d)
	lc := nominator.h.Evictor()
	d.Limiter().Reset()
	if err := lc.CheckLimits(b); err != nil {
		t.Fatalf("before any eviction: %v", err)
	}
	d.RunCycle(context.Background())
	if err := lc.CheckLimits(b); !framework.IsTotalLimit(err) {
		t.Errorf("after the cycle's one eviction: %v, want the total limit", err)
	}
}
