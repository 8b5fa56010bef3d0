package loadaware

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/apis/config"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

func TestMain(m *testing.M) {
	// The framework records plugin metrics; they must be registered first, as in the scheduler.
	metrics.Register()
	os.Exit(m.Run())
}

func args80() *config.LoadAwareArgs {
	return &config.LoadAwareArgs{
		UsageThresholds: map[corev1.ResourceName]int64{"cpu": 80, "memory": 80},
		UsageEstimateArgs: constraints.UsageEstimateArgs{
			ResourceWeights:             map[corev1.ResourceName]int64{"cpu": 1, "memory": 1},
			NodeMetricExpirationSeconds: ptr.To[int64](60),
		},
	}
}

func node(name string) *corev1.Node {
	return st.MakeNode().Name(name).Capacity(map[corev1.ResourceName]string{"cpu": "4", "memory": "16Gi"}).Obj()
}

func nm(name, rv string, updated time.Time, cpu, mem string) *slov1alpha1.NodeMetric {
	ts := metav1.NewTime(updated)
	return &slov1alpha1.NodeMetric{
		TypeMeta:   metav1.TypeMeta{APIVersion: slov1alpha1.SchemeGroupVersion.String(), Kind: "NodeMetric"},
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv},
		Status: slov1alpha1.NodeMetricStatus{UpdateTime: &ts, NodeUsage: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		}},
	}
}

func newFramework(t *testing.T, args runtime.Object, nodes []*corev1.Node, metricObjs ...*slov1alpha1.NodeMetric) (framework.Framework, error) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	objs := make([]runtime.Object, 0, len(metricObjs))
	for _, m := range metricObjs {
		objs = append(objs, m)
	}
	crs := crcache.NewForClient(accordfake.NewClientset(objs...))
	t.Cleanup(func() { cancel(); crs.Shutdown() })
	client := clientsetfake.NewClientset()
	fns := []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(Name, NewFactory(crs), "PreFilter", "Filter", "Score"),
		func(_ *frameworkruntime.Registry, profile *schedulerapi.KubeSchedulerProfile) {
			profile.PluginConfig = append(profile.PluginConfig, schedulerapi.PluginConfig{Name: Name, Args: args})
		},
	}
	return tf.NewFramework(ctx, fns, "accord-scheduler",
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
		frameworkruntime.WithSnapshotSharedLister(schedcache.NewSnapshot(nil, nodes)),
	)
}

func TestFilterAndScore(t *testing.T) {
	now := time.Now()
	nodes := []*corev1.Node{node("idle"), node("busy"), node("hot-cpu"), node("stale"), node("no-metric")}
	metricObjs := []*slov1alpha1.NodeMetric{
		nm("idle", "1", now, "0", "0"),
		nm("busy", "1", now, "2", "8Gi"),
		nm("hot-cpu", "1", now, "3800m", "1Gi"),
		nm("stale", "1", now.Add(-time.Hour), "4", "16Gi"),
	}
	pod := st.MakePod().Name("p").Namespace("ns").Req(map[corev1.ResourceName]string{"cpu": "400m", "memory": "1600Mi"}).Obj()
	fw, err := newFramework(t, args80(), nodes, metricObjs...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	state := framework.NewCycleState()
	if _, s, _ := fw.RunPreFilterPlugins(ctx, state, pod); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	want := map[string]struct {
		code   fwk.Code
		reason string
		score  int64
	}{
		// 400m of 4 CPUs and 1600Mi of 16Gi are ~10% each: an idle node is 90% free.
		"idle":      {score: 90},
		"busy":      {score: 40},
		"hot-cpu":   {code: fwk.UnschedulableAndUnresolvable, reason: "node(s) are over their cpu usage threshold"},
		"stale":     {score: 50},
		"no-metric": {score: 50},
	}
	var passing []fwk.NodeInfo
	for _, n := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		s := fw.RunFilterPlugins(ctx, state, pod, ni)
		w := want[n.Name]
		if s.Code() != w.code || (w.code != fwk.Success && s.Message() != w.reason) {
			t.Errorf("%s: Filter = %v %q, want %v %q", n.Name, s.Code(), s.Message(), w.code, w.reason)
		}
		if s.IsSuccess() {
			passing = append(passing, ni)
		}
	}
	scores, s := fw.RunScorePlugins(ctx, state, pod, passing)
	if !s.IsSuccess() {
		t.Fatal(s)
	}
	for _, sc := range scores {
		if sc.TotalScore != want[sc.Name].score {
			t.Errorf("%s: score %d, want %d", sc.Name, sc.TotalScore, want[sc.Name].score)
		}
	}
	if fw.SignPod(ctx, pod) == nil {
		t.Error("the profile signs no pods: the plugin disabled opportunistic batching")
	}
}

func TestInvalidArgs(t *testing.T) {
	bad := args80()
	bad.UsageThresholds["cpu"] = 120
	_, err := newFramework(t, bad, nil)
	if err == nil || !strings.Contains(err.Error(), "LoadAwareArgs.usageThresholds[cpu]") {
		t.Fatalf("err = %v, want one naming LoadAwareArgs.usageThresholds[cpu]", err)
	}
}

func nodeLister(t testing.TB, nodes ...*corev1.Node) corelisters.NodeLister {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		if err := indexer.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewNodeLister(indexer)
}

// metricIndex is a NodeIndex holding ms (nil ones skipped), each delivered as the Cache's informer
// delivers it.
func metricIndex(ms ...*slov1alpha1.NodeMetric) *crcache.NodeIndex {
	x := crcache.NewNodeIndex()
	h := x.NodeMetricHandler()
	for _, m := range ms {
		if m != nil {
			h.OnAdd(m, true)
		}
	}
	return x
}

func unstructuredOf(t *testing.T, m *slov1alpha1.NodeMetric) any {
	t.Helper()
	if m == nil {
		return nil
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(m)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestMetricQueueingHint(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	pod := st.MakePod().Name("p").Namespace("ns").Req(map[corev1.ResourceName]string{"cpu": "1"}).Obj()
	tests := []struct {
		name     string
		old, new *slov1alpha1.NodeMetric
		want     fwk.QueueingHint
	}{
		{name: "drops under threshold", old: nm("n1", "5", now, "3800m", "0"), new: nm("n1", "6", now, "1", "0"), want: fwk.Queue},
		{name: "stays over", old: nm("n1", "5", now, "3800m", "0"), new: nm("n1", "6", now, "3700m", "0"), want: fwk.QueueSkip},
		{name: "was already under", old: nm("n1", "5", now, "1", "0"), new: nm("n1", "6", now, "500m", "0"), want: fwk.QueueSkip},
		{name: "old metric had expired but was over", old: nm("n1", "5", now.Add(-time.Hour), "4", "0"), new: nm("n1", "6", now, "1", "0"), want: fwk.Queue},
		{name: "added under threshold", new: nm("n1", "6", now, "1", "0"), want: fwk.Queue},
		{name: "added over threshold", new: nm("n1", "6", now, "4", "0"), want: fwk.QueueSkip},
		{name: "deleted from an overloaded node", old: nm("n1", "5", now, "4", "0"), want: fwk.Queue},
		{name: "metric of an unknown node", old: nm("ghost", "5", now, "4", "0"), new: nm("ghost", "6", now, "0", "0"), want: fwk.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			p := New(args80(), metricIndex(tt.new), nodeLister(t, node("n1")), clocktesting.NewFakePassiveClock(now))
			got, err := p.isSchedulableAfterMetricChange(logger, pod, unstructuredOf(t, tt.old), unstructuredOf(t, tt.new))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNodeQueueingHint(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	pod := st.MakePod().Name("p").Namespace("ns").Obj()
	p := New(args80(), metricIndex(nm("hot", "1", now, "4", "0"), nm("cool", "1", now, "1", "0")), nodeLister(t), clocktesting.NewFakePassiveClock(now))
	for name, want := range map[string]fwk.QueueingHint{"hot": fwk.QueueSkip, "cool": fwk.Queue, "unmeasured": fwk.Queue} {
		logger, _ := ktesting.NewTestContext(t)
		got, err := p.isSchedulableAfterNodeChange(logger, pod, nil, node(name))
		if err != nil || got != want {
			t.Errorf("%s: hint = %v, %v; want %v", name, got, err, want)
		}
	}
}

// TestViewsAgreeWithConstraints: Filter and Score answer exactly as constraints.CheckLoad and
// LoadScore on the node's current NodeMetric, whether the plugin's compiled view was built for the
// Node object the scheduler passes (the usual case), for an older or newer one, or for none yet;
// across metric and node updates and deletes, and when a metric expires after its view was built.
func TestViewsAgreeWithConstraints(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	index := metricIndex(nm("n1", "1", now, "3800m", "1Gi"))
	metrics := index.NodeMetricHandler()
	p := New(args80(), index, nodeLister(t), clk)
	h := index.NodeHandler()
	pod := st.MakePod().Name("p").Namespace("ns").Req(map[corev1.ResourceName]string{"cpu": "400m", "memory": "1600Mi"}).Obj()
	ctx := context.Background()

	small := node("n1")
	big := st.MakeNode().Name("n1").Capacity(map[corev1.ResourceName]string{"cpu": "8", "memory": "32Gi"}).Obj()
	expect := func(step string, n *corev1.Node, compiled bool) {
		t.Helper()
		if _, e := p.entryFor(n); (e != nil) != compiled {
			t.Errorf("%s: compiled view used = %v, want %v", step, !compiled, compiled)
		}
		state := framework.NewCycleState()
		_, pre := p.PreFilter(ctx, state, pod, nil)
		if !pre.IsSuccess() && !pre.IsSkip() {
			t.Fatal(pre)
		}
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		var m *slov1alpha1.NodeMetric
		if d := index.Get(n.Name); d != nil {
			m = d.Metric
		}
		want := constraints.CheckLoad(m, n.Status.Allocatable, p.thresholds, clk.Now(), p.maxAge)
		s := p.Filter(ctx, state, pod, ni)
		if s.IsSuccess() == want.Overloaded || (want.Overloaded && s.Message() != OverThresholdReason(want.Resource)) {
			t.Errorf("%s: Filter = %v, CheckLoad = %+v", step, s, want)
		}
		if pre.IsSkip() && !s.IsSuccess() && compiled {
			t.Errorf("%s: PreFilter skipped Filter, which rejects the node the index holds: %v", step, s)
		}
		reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		wantScore := constraints.LoadScore(m, n.Status.Allocatable, reqs, p.weights, clk.Now(), p.maxAge)
		if got, _ := p.Score(ctx, state, pod, ni); got != wantScore {
			t.Errorf("%s: Score = %d, LoadScore = %d", step, got, wantScore)
		}
		// Without PreFilter (a profile enabling the plugin at filter and score only): the same.
		bare := framework.NewCycleState()
		if got := p.Filter(ctx, bare, pod, ni); got.Code() != s.Code() || got.Message() != s.Message() {
			t.Errorf("%s: Filter without PreFilter = %v, with = %v", step, got, s)
		}
		if got, st := p.Score(ctx, bare, pod, ni); got != wantScore || !st.IsSuccess() {
			t.Errorf("%s: Score without PreFilter = %d (%v), LoadScore = %d", step, got, st, wantScore)
		}
	}

	expect("metric, node not seen by the informer", small, false)
	h.OnAdd(small, true)
	expect("over threshold", small, true)
	h.OnUpdate(small, big)
	expect("allocatable grew", big, true)
	expect("snapshot still has the old node", small, false)
	metrics.OnAdd(nm("n1", "2", now, "1", "1Gi"), false)
	expect("metric dropped", big, true)
	clk.SetTime(now.Add(2 * time.Minute))
	expect("metric expired after its view was built", big, true)
	metrics.OnAdd(nm("n1", "3", clk.Now(), "7900m", "1Gi"), false)
	expect("fresh metric over threshold", big, true)
	metrics.OnDelete(nm("n1", "3", clk.Now(), "7900m", "1Gi"))
	expect("metric deleted", big, false)
	metrics.OnAdd(nm("n1", "4", clk.Now(), "7900m", "1Gi"), false)
	expect("metric back", big, true)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "n1", Obj: big})
	expect("node deleted", big, false)
	metrics.OnDelete(cache.DeletedFinalStateUnknown{Key: "n1", Obj: nm("n1", "4", clk.Now(), "7900m", "1Gi")})
	if index.Get("n1") != nil {
		t.Error("the index kept a node after both its Node and its metric were deleted")
	}
}

// TestFilterAndScoreCountEstimatedUsage: with estimatedScalingFactors, Filter and Score judge the
// node's reported usage plus the estimate of the NodeInfo's pods the report does not include, minus
// the reported pods that are leaving; without them, the reported usage alone. The adjustment follows
// the NodeInfo's pods.
func TestFilterAndScoreCountEstimatedUsage(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	m := nm("n1", "1", now.Add(-time.Second), "1", "1Gi")
	m.Status.PodsUsage = []slov1alpha1.PodUsage{{Namespace: "ns", Name: "old", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("900m")}}}
	index := metricIndex(m)
	n := node("n1")
	index.NodeHandler().OnAdd(n, true)
	withEst := args80()
	withEst.EstimatedScalingFactors = map[corev1.ResourceName]int64{"cpu": 85, "memory": 70}
	on := New(withEst, index, nodeLister(t), clk)
	off := New(args80(), index, nodeLister(t), clk)
	pod := st.MakePod().Name("p").Namespace("ns").Req(map[corev1.ResourceName]string{"cpu": "100m"}).Obj()
	ctx := context.Background()
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	old := st.MakePod().Name("old").UID("old").Namespace("ns").Node("n1").Req(map[corev1.ResourceName]string{"cpu": "1"}).Obj()
	ni.AddPod(old)
	verdict := func(p *Plugin) (bool, int64) {
		state := framework.NewCycleState()
		if _, st := p.PreFilter(ctx, state, pod, nil); !st.IsSuccess() {
			t.Fatalf("PreFilter: %v", st)
		}
		score, st := p.Score(ctx, state, pod, ni)
		if !st.IsSuccess() {
			t.Fatalf("Score: %v", st)
		}
		return p.Filter(ctx, state, pod, ni).IsSuccess(), score
	}
	passOn, scoreOn := verdict(on)
	passOff, scoreOff := verdict(off)
	if !passOn || !passOff || scoreOn != scoreOff {
		t.Fatalf("no pod beyond the report: on (%v, %d), off (%v, %d); want both passing alike", passOn, scoreOn, passOff, scoreOff)
	}
	// Three pods assumed on the node (not in the report): 1 + 3 * 0.85 = 3.55 of 4 CPU.
	for i := range 3 {
		ni.AddPod(st.MakePod().Name(fmt.Sprintf("new%d", i)).UID(fmt.Sprintf("new%d", i)).Namespace("ns").Node("n1").
			Req(map[corev1.ResourceName]string{"cpu": "100m"}).Lim(map[corev1.ResourceName]string{"cpu": "1"}).Obj())
	}
	passOn, scoreOn = verdict(on)
	passOff, scoreOff = verdict(off)
	t.Logf("with the estimate: pass %v score %d; reported usage alone: pass %v score %d", passOn, scoreOn, passOff, scoreOff)
	if passOn || !passOff || scoreOn >= scoreOff {
		t.Fatalf("three new pods: on (%v, %d) must reject and score lower than off (%v, %d)", passOn, scoreOn, passOff, scoreOff)
	}
	// The reported pod "old" is evicted (terminating): its 900m go, 2.65 of 4 CPU passes.
	evicted := old.DeepCopy()
	evicted.DeletionTimestamp = &metav1.Time{Time: now}
	if err := ni.RemovePod(klog.Background(), old); err != nil {
		t.Fatal(err)
	}
	ni.AddPod(evicted)
	if passOn, _ = verdict(on); !passOn {
		t.Fatal("the evicted pod's reported usage still counts")
	}
}

// TestHugeLimitNeitherEmptiesNorFillsItsNode: a pod on the node since the report with limits of 100Pi
// CPU and memory (above the node's allocatable, so ignored: it counts its request × factor) leaves
// the node at about its reported usage: Filter still passes it and Score does not rise (before, the
// estimate overflowed and the node looked empty).
func TestHugeLimitNeitherEmptiesNorFillsItsNode(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	p, n := estimating(t, now, "2", "8Gi", map[corev1.ResourceName]int64{"cpu": 85, "memory": 70})
	pod := st.MakePod().Name("p").Namespace("ns").Req(map[corev1.ResourceName]string{"cpu": "100m"}).Obj()
	ctx := context.Background()
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	verdict := func() (bool, int64) {
		state := framework.NewCycleState()
		if _, st := p.PreFilter(ctx, state, pod, nil); !st.IsSuccess() {
			t.Fatalf("PreFilter: %v", st)
		}
		score, st := p.Score(ctx, state, pod, ni)
		if !st.IsSuccess() {
			t.Fatalf("Score: %v", st)
		}
		return p.Filter(ctx, state, pod, ni).IsSuccess(), score
	}
	passBefore, scoreBefore := verdict()
	ni.AddPod(st.MakePod().Name("hostile").UID("hostile").Namespace("tenant").Node("n1").
		Req(map[corev1.ResourceName]string{"cpu": "100m", "memory": "100Mi"}).Lim(map[corev1.ResourceName]string{"cpu": "100Pi", "memory": "100Pi"}).Obj())
	pass, score := verdict()
	t.Logf("without the hostile pod: pass %v score %d; with it: pass %v score %d", passBefore, scoreBefore, pass, score)
	if !passBefore || !pass {
		t.Errorf("the 100Pi-limit pod fills the node: Filter %v", pass)
	}
	if score > scoreBefore || score < scoreBefore-2 {
		t.Errorf("score %d with the 100Pi-limit pod, %d without: the node looks emptier, or much fuller than its 85m and 70Mi", score, scoreBefore)
	}
}

// TestWarmNodesKeepsTheEstimate: WarmNodes computes and keeps each node's estimate for its current
// generation, the one Filter's first visit would compute; a change of the node's pods (a new
// generation) is estimated again.
func TestWarmNodesKeepsTheEstimate(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	p, n := estimating(t, now, "1", "1Gi", map[corev1.ResourceName]int64{"cpu": 85})
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	ni.AddPod(st.MakePod().Name("new").UID("new").Namespace("ns").Node("n1").Req(map[corev1.ResourceName]string{"cpu": "1"}).Obj())
	_, e := p.entryFor(n)
	if e == nil {
		t.Fatal("no entry for n1")
	}
	if _, ok := e.est.load(ni.GetGeneration(), now, nil); ok {
		t.Fatal("an estimate before WarmNodes")
	}
	p.WarmNodes([]fwk.NodeInfo{ni})
	warmed, ok := e.est.load(ni.GetGeneration(), now, nil)
	if !ok {
		t.Fatal("WarmNodes kept no estimate for the node's generation")
	}
	// What Filter's first visit computes: the same deltas.
	want := func() []float64 {
		d, _ := p.entryFor(n)
		pods := ni.GetPods()
		nl := constraints.NewNodeLoad(d.Load, n.Status.Allocatable, p.thresholds, p.weights)
		adj := p.est.Adjust(d.Load, n.Status.Allocatable, len(pods), func(i int) *corev1.Pod { return pods[i].GetPod() }, now)
		return nl.Deltas(&adj, nil)
	}()
	if !slices.Equal(warmed, want) {
		t.Fatalf("warmed deltas %v, Filter's %v", warmed, want)
	}
	ni.AddPod(st.MakePod().Name("newer").UID("newer").Namespace("ns").Node("n1").Req(map[corev1.ResourceName]string{"cpu": "1"}).Obj())
	if _, ok := e.est.load(ni.GetGeneration(), now, nil); ok {
		t.Fatal("the warmed estimate answered for a new generation")
	}
}

// estimating is a plugin with args80's thresholds and the estimate's factors, at now, over node n1
// whose NodeMetric (a second old) reports cpu and mem in use.
func estimating(t *testing.T, now time.Time, cpu, mem string, factors map[corev1.ResourceName]int64) (*Plugin, *corev1.Node) {
	t.Helper()
	index := metricIndex(nm("n1", "1", now.Add(-time.Second), cpu, mem))
	n := node("n1")
	index.NodeHandler().OnAdd(n, true)
	args := args80()
	args.EstimatedScalingFactors = factors
	return New(args, index, nodeLister(t), clocktesting.NewFakePassiveClock(now)), n
}
