package consistency

import (
	"context"
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/accord-sched/accord/apis/config"
	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/nodefit"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeload"
	descrfit "github.com/accord-sched/accord/pkg/descheduler/framework/plugins/nodecrdresourcefit"
	accordlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/loadaware"
	schedcrfit "github.com/accord-sched/accord/pkg/scheduler/plugins/nodecrdresourcefit"
)

var vocabulary = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, "example.com/memory", "example.com/gpu", "nvidia.com/gpu"}

func randomList(r *rand.Rand) corev1.ResourceList {
	l := corev1.ResourceList{}
	for _, name := range vocabulary {
		if r.Intn(3) == 0 {
			l[name] = *resource.NewQuantity(int64(r.Intn(3)), resource.DecimalSI) // zero is not a request
		}
	}
	return l
}

// scenario is one random (pod, node, CR, policy).
type scenario struct {
	pod    *corev1.Pod
	node   *corev1.Node
	csr    *schedv1alpha1.ClusterScopedResource
	policy config.MissingCRPolicy
}

func (scenario) Generate(r *rand.Rand, _ int) reflect.Value {
	s := scenario{policy: config.MissingCRPolicyReject}
	if r.Intn(2) == 0 {
		s.policy = config.MissingCRPolicyIgnore
	}
	s.node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	s.pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for range 1 + r.Intn(2) {
		s.pod.Spec.Containers = append(s.pod.Spec.Containers, corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: randomList(r)}})
	}
	if r.Intn(4) == 0 {
		s.pod.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: randomList(r)}}}
	}
	if r.Intn(6) == 0 {
		s.pod.Spec.Overhead = randomList(r)
	}
	if r.Intn(5) != 0 {
		s.csr = &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: "n"},
			Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{}}}
		for _, name := range vocabulary {
			if r.Intn(4) != 0 {
				s.csr.Spec.ResourcesFilter[name] = r.Intn(4) != 0
			}
		}
	}
	return reflect.ValueOf(s)
}

// TestNodeCRDResourceFitAgreesWithTheSchedulerFilter: for every random (pod, node), the
// descheduler's "violates" equals the scheduler plugin's Filter "rejects".
func TestNodeCRDResourceFitAgreesWithTheSchedulerFilter(t *testing.T) {
	seen := map[bool]int{}
	prop := func(s scenario) bool {
		index := crcache.NewNodeIndex()
		if s.csr != nil {
			index.ClusterScopedResourceHandler().OnAdd(s.csr, true)
		}
		filter := schedcrfit.New(&config.NodeCRDResourceFitArgs{MissingCRPolicy: s.policy}, index)
		state := schedframework.NewCycleState()
		if _, st := filter.PreFilter(context.Background(), state, s.pod, nil); !st.IsSuccess() {
			t.Fatalf("PreFilter: %v", st)
		}
		ni := schedframework.NewNodeInfo()
		ni.SetNode(s.node)
		rejects := !filter.Filter(context.Background(), state, s.pod, ni).IsSuccess()
		_, violates := descrfit.Violation(s.csr, s.policy, s.pod, nil)
		seen[rejects]++
		if rejects != violates {
			t.Logf("scheduler rejects=%v, descheduler violates=%v for pod %+v on CR %+v (policy %s)", rejects, violates, s.pod.Spec, s.csr, s.policy)
		}
		return rejects == violates
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
	// Both verdicts must be well represented, or the property says little.
	if seen[true] < 500 || seen[false] < 500 {
		t.Fatalf("verdicts %v: the generator is too one-sided", seen)
	}
}

// loadScenario is one random (node, NodeMetric, thresholds, expiry).
type loadScenario struct {
	node       *corev1.Node
	metric     *slov1alpha1.NodeMetric
	thresholds map[corev1.ResourceName]int64
	expiry     int64
	// pods are bound to the node; the estimate's args are factors and after.
	pods    []*corev1.Pod
	factors map[corev1.ResourceName]int64
	after   int64
}

var now = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func (loadScenario) Generate(r *rand.Rand, _ int) reflect.Value {
	s := loadScenario{thresholds: map[corev1.ResourceName]int64{}, expiry: []int64{0, 60, 180, 300}[r.Intn(4)]}
	alloc := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(1000+r.Int63n(8000), resource.DecimalSI)}
	if r.Intn(4) != 0 {
		alloc[corev1.ResourceMemory] = *resource.NewQuantity((1+r.Int63n(64))<<30, resource.BinarySI)
	}
	s.node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: alloc}}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if r.Intn(5) != 0 {
			s.thresholds[name] = r.Int63n(101)
		}
	}
	if r.Intn(5) != 0 {
		usage := corev1.ResourceList{}
		if r.Intn(5) != 0 {
			usage[corev1.ResourceCPU] = *resource.NewMilliQuantity(r.Int63n(10000), resource.DecimalSI)
		}
		if r.Intn(3) != 0 {
			usage[corev1.ResourceMemory] = *resource.NewQuantity(r.Int63n(70)<<30, resource.BinarySI)
		}
		s.metric = &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: slov1alpha1.NodeMetricStatus{NodeUsage: usage}}
		if r.Intn(8) != 0 {
			s.metric.Status.UpdateTime = &metav1.Time{Time: now.Add(-time.Duration(r.Intn(400)) * time.Second)}
		}
		if r.Intn(2) == 0 {
			interval := int64(1 + r.Intn(60))
			s.metric.Spec.ReportIntervalSeconds = &interval
		}
	}
	// The usage estimate: off, or factors of 0-100 for cpu and memory, and pods bound to the node,
	// some reported, some assigned since the report, some leaving, and reported pods that are gone.
	if r.Intn(4) != 0 {
		s.factors = map[corev1.ResourceName]int64{corev1.ResourceCPU: r.Int63n(101), corev1.ResourceMemory: r.Int63n(101)}
		s.after = []int64{0, 0, 30, 600}[r.Intn(4)]
	}
	for i := range r.Intn(6) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: string(rune('a' + i))}, Spec: corev1.PodSpec{NodeName: "n"}}
		res := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		if r.Intn(4) != 0 {
			res.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(r.Int63n(3000), resource.DecimalSI)
		}
		if r.Intn(3) == 0 {
			res.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(r.Int63n(4000), resource.DecimalSI)
		}
		if r.Intn(2) == 0 {
			res.Requests[corev1.ResourceMemory] = *resource.NewQuantity(r.Int63n(8)<<30, resource.BinarySI)
		}
		pod.Spec.Containers = []corev1.Container{{Name: "c", Resources: res}}
		if r.Intn(4) != 0 {
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(now.Add(-time.Duration(r.Intn(900)) * time.Second))}}
		}
		if r.Intn(6) == 0 {
			pod.DeletionTimestamp = &metav1.Time{Time: now}
		}
		if r.Intn(8) == 0 {
			pod.Annotations = map[string]string{constraints.EstimatedUsageAnnotation: `{"cpu":"1500m"}`}
		}
		s.pods = append(s.pods, pod)
	}
	if s.metric != nil {
		for i := range r.Intn(8) {
			s.metric.Status.PodsUsage = append(s.metric.Status.PodsUsage, slov1alpha1.PodUsage{Namespace: "ns", Name: string(rune('a' + i)),
				Usage: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(r.Int63n(2000), resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(r.Int63n(4)<<30, resource.BinarySI)}})
		}
	}
	return reflect.ValueOf(s)
}

// TestLowNodeLoadAgreesWithLoadAwareFilter: with LowNodeLoad's highThresholds equal to LoadAware's
// usageThresholds (and the same expiry and usage estimate), a node is hot exactly when LoadAware's
// Filter rejects it, for random pods bound to the node (reported or not, assigned before or after
// the report, leaving) and random estimate args, off included.
func TestLowNodeLoadAgreesWithLoadAwareFilter(t *testing.T) {
	env := plugintest.New(t, plugintest.Options{})
	seen := map[bool]int{}
	prop := func(s loadScenario) bool {
		factors := s.factors
		if factors == nil {
			factors = map[corev1.ResourceName]int64{} // off; nil would default to on
		}
		args := &lownodeload.LowNodeLoadArgs{HighThresholds: s.thresholds, LowThresholds: map[corev1.ResourceName]int64{},
			UsageEstimateArgs: constraints.UsageEstimateArgs{NodeMetricExpirationSeconds: &s.expiry, EstimatedScalingFactors: factors, EstimatedSecondsAfterPodScheduled: &s.after}}
		args.SetDefaults()
		pl, err := lownodeload.New(t.Context(), args, env.Handle())
		if err != nil {
			t.Fatal(err)
		}
		hot := pl.(*lownodeload.Plugin).Hot(s.node, s.metric, s.pods, now)

		index := crcache.NewNodeIndex()
		if s.metric != nil {
			index.NodeMetricHandler().OnAdd(s.metric, true)
		}
		filter := loadaware.New(&config.LoadAwareArgs{UsageThresholds: s.thresholds, UsageEstimateArgs: constraints.UsageEstimateArgs{ResourceWeights: map[corev1.ResourceName]int64{corev1.ResourceCPU: 1},
			NodeMetricExpirationSeconds: &s.expiry, EstimatedScalingFactors: s.factors, EstimatedSecondsAfterPodScheduled: &s.after}},
			index, nil, testingclock.NewFakePassiveClock(now))
		state := schedframework.NewCycleState()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
		if _, pre := filter.PreFilter(context.Background(), state, pod, nil); !pre.IsSuccess() {
			t.Fatalf("PreFilter: %v", pre)
		}
		ni := schedframework.NewNodeInfo()
		ni.SetNode(s.node)
		for _, p := range s.pods {
			ni.AddPod(p)
		}
		rejects := !filter.Filter(context.Background(), state, pod, ni).IsSuccess()
		seen[rejects]++
		if rejects != hot {
			t.Logf("LoadAware rejects=%v, LowNodeLoad hot=%v: thresholds %v, expiry %d, alloc %v, metric %+v", rejects, hot, s.thresholds, s.expiry, s.node.Status.Allocatable, s.metric)
		}
		return rejects == hot
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
	// Both verdicts must be well represented, or the property says little.
	if seen[true] < 500 || seen[false] < 500 {
		t.Fatalf("verdicts %v: the generator is too one-sided", seen)
	}
}

// TestNodeFitAgreesWithTheSchedulerFilter: DefaultEvictor's nodeFit and the plugins' shared fit check
// (pluginutil.Fitter, with the profile's missingCRPolicy) reject a node for its ClusterScopedResource
// exactly when the scheduler plugin's Filter does. The node is otherwise roomy, Ready and untainted,
// so the CR rule is the only one that can say no.
func TestNodeFitAgreesWithTheSchedulerFilter(t *testing.T) {
	roomy := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
	for _, name := range vocabulary {
		roomy[name] = resource.MustParse("1000")
	}
	seen := map[bool]int{}
	prop := func(s scenario) bool {
		node := s.node.DeepCopy()
		node.Status.Allocatable = roomy
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}

		index := crcache.NewNodeIndex()
		indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		if s.csr != nil {
			index.ClusterScopedResourceHandler().OnAdd(s.csr, true)
			if err := indexer.Add(s.csr); err != nil {
				t.Fatal(err)
			}
		}
		filter := schedcrfit.New(&config.NodeCRDResourceFitArgs{MissingCRPolicy: s.policy}, index)
		state := schedframework.NewCycleState()
		if _, st := filter.PreFilter(context.Background(), state, s.pod, nil); !st.IsSuccess() {
			t.Fatalf("PreFilter: %v", st)
		}
		ni := schedframework.NewNodeInfo()
		ni.SetNode(node)
		rejects := !filter.Filter(context.Background(), state, s.pod, ni).IsSuccess()

		h := &fake.Handle{Cluster: fake.NewCluster(), CRPolicy: s.policy}
		requested := constraints.AppendRequestedResources(nil, s.pod)
		fits, why := nodefit.New(h, accordlisters.NewClusterScopedResourceLister(indexer), s.policy).Fits(s.pod, node, requested)
		// The one documented exception: a pod that requests nothing fits a node without a CR
		// (nodeFit also judges pods kube-scheduler places).
		if s.csr == nil && len(requested) == 0 {
			rejects = false
		}
		seen[rejects]++
		if rejects == fits {
			t.Logf("scheduler rejects=%v, nodeFit fits=%v (%s) for pod %+v on CR %+v (policy %s)", rejects, fits, why, s.pod.Spec, s.csr, s.policy)
			return false
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 3000}); err != nil {
		t.Fatal(err)
	}
	if seen[true] < 300 || seen[false] < 300 {
		t.Fatalf("verdicts %v: the generator is too one-sided", seen)
	}
}

// TestPluginFitterFollowsTheProfilePolicy: the shared fit check (RemovePodsViolatingNodeAffinity,
// RemovePodsViolatingTopologySpreadConstraint) takes the profile's missingCRPolicy, not Reject
// regardless: under Ignore a node without a ClusterScopedResource is a home.
func TestPluginFitterFollowsTheProfilePolicy(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bare"}, Status: corev1.NodeStatus{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: "elsewhere",
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	for policy, want := range map[config.MissingCRPolicy]bool{config.MissingCRPolicyIgnore: true, config.MissingCRPolicyReject: false, "": false} {
		c := fake.NewCluster(node)
		f := pluginutil.NewFitter(t.Context(), &fake.Handle{Cluster: c, CRPolicy: policy})
		c.Start(t)
		if got := f.FitsOn(pod, node, constraints.AppendRequestedResources(nil, pod)); got != want {
			t.Errorf("policy %q: fits a node without a ClusterScopedResource = %v, want %v", policy, got, want)
		}
	}
}
