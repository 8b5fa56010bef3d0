package nodecrdresourcefit

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"

	"github.com/accord-sched/accord/apis/config"
	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

const (
	exMem corev1.ResourceName = "example.com/memory"
	exSSD corev1.ResourceName = "example.com/ssd"
)

func cr(node, rv string, filter map[corev1.ResourceName]bool, score map[corev1.ResourceName]schedv1alpha1.ResourceScore) *schedv1alpha1.ClusterScopedResource {
	return &schedv1alpha1.ClusterScopedResource{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterScopedResource"},
		ObjectMeta: metav1.ObjectMeta{Name: node, ResourceVersion: rv},
		Spec:       schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: filter, ResourcesScore: score},
	}
}

// offerIndex is a NodeIndex holding crs (nil ones skipped), each delivered as the Cache's informer
// delivers it.
func offerIndex(crs ...*schedv1alpha1.ClusterScopedResource) *crcache.NodeIndex {
	x := crcache.NewNodeIndex()
	h := x.ClusterScopedResourceHandler()
	for _, c := range crs {
		if c != nil {
			h.OnAdd(c, true)
		}
	}
	return x
}

func withArgs(args runtime.Object) tf.RegisterPluginFunc {
	return func(_ *frameworkruntime.Registry, profile *schedulerapi.KubeSchedulerProfile) {
		profile.PluginConfig = append(profile.PluginConfig, schedulerapi.PluginConfig{Name: Name, Args: args})
	}
}

// newFramework builds a real scheduler framework with the plugin at PreFilter, Filter and Score,
// created through its factory from a shared crcache over a fake Accord clientset.
func newFramework(t *testing.T, args runtime.Object, nodes []*corev1.Node, crs ...*schedv1alpha1.ClusterScopedResource) (framework.Framework, error) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	objs := make([]runtime.Object, 0, len(crs))
	for _, c := range crs {
		objs = append(objs, c)
	}
	cache := crcache.NewForClient(accordfake.NewClientset(objs...))
	t.Cleanup(func() { cancel(); cache.Shutdown() })
	client := clientsetfake.NewClientset()
	fns := []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(Name, NewFactory(cache), "PreFilter", "Filter", "Score"),
	}
	if args != nil {
		fns = append(fns, withArgs(args))
	}
	return tf.NewFramework(ctx, fns, "accord-scheduler",
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
		frameworkruntime.WithSnapshotSharedLister(schedcache.NewSnapshot(nil, nodes)),
	)
}

func nodeInfo(name string) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(st.MakeNode().Name(name).Obj())
	return ni
}

func tutorialCRs() []*schedv1alpha1.ClusterScopedResource {
	return []*schedv1alpha1.ClusterScopedResource{
		cr("node-55", "10", map[corev1.ResourceName]bool{exMem: true}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 55}),
		cr("node-80", "11", map[corev1.ResourceName]bool{exMem: true, exSSD: true}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 80, exSSD: 20}),
		cr("node-off", "12", map[corev1.ResourceName]bool{exMem: false}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 100}),
	}
}

func TestFilterAndScore(t *testing.T) {
	memPod := st.MakePod().Name("p").Namespace("ns").Req(map[corev1.ResourceName]string{exMem: "100Mi"}).Obj()
	bothPod := st.MakePod().Name("p").Namespace("ns").Req(map[corev1.ResourceName]string{exMem: "100Mi", exSSD: "1"}).Obj()
	initPod := st.MakePod().Name("p").Namespace("ns").Container("c").InitReq(map[corev1.ResourceName]string{exSSD: "1"}).Obj()
	emptyPod := st.MakePod().Name("p").Namespace("ns").Container("c").Obj()

	type nodeWant struct {
		code   fwk.Code
		reason string
		score  int64 // checked when the node passes
	}
	tests := []struct {
		name string
		args runtime.Object
		pod  *corev1.Pod
		want map[string]nodeWant
	}{
		{
			name: "tutorial: memory pod fits the two enabling nodes, 80 beats 55",
			pod:  memPod,
			want: map[string]nodeWant{
				"node-55":  {score: 55},
				"node-80":  {score: 80},
				"node-off": {code: fwk.UnschedulableAndUnresolvable, reason: "node(s) do not enable resource example.com/memory"},
				"node-cr0": {code: fwk.UnschedulableAndUnresolvable, reason: ReasonNoCR},
			},
		},
		{
			name: "two resources: the mean of their scores, missing one named",
			pod:  bothPod,
			want: map[string]nodeWant{
				"node-55":  {code: fwk.UnschedulableAndUnresolvable, reason: "node(s) do not enable resource example.com/ssd"},
				"node-80":  {score: 50},
				"node-off": {code: fwk.UnschedulableAndUnresolvable, reason: "node(s) do not enable resource example.com/memory"},
			},
		},
		{
			name: "init container requests count",
			pod:  initPod,
			want: map[string]nodeWant{
				"node-55": {code: fwk.UnschedulableAndUnresolvable, reason: "node(s) do not enable resource example.com/ssd"},
				"node-80": {score: 20},
			},
		},
		{
			name: "a pod requesting nothing fits every node with a CR and scores 0",
			pod:  emptyPod,
			want: map[string]nodeWant{
				"node-55":  {score: 0},
				"node-off": {score: 0},
				"node-cr0": {code: fwk.UnschedulableAndUnresolvable, reason: ReasonNoCR},
			},
		},
		{
			name: "missingCRPolicy Ignore lets nodes without a CR through with score 0",
			args: &config.NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyIgnore},
			pod:  memPod,
			want: map[string]nodeWant{
				"node-cr0": {score: 0},
				"node-80":  {score: 80},
				"node-off": {code: fwk.UnschedulableAndUnresolvable, reason: "node(s) do not enable resource example.com/memory"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nodes []*corev1.Node
			for name := range tt.want {
				nodes = append(nodes, st.MakeNode().Name(name).Obj())
			}
			fw, err := newFramework(t, tt.args, nodes, tutorialCRs()...)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			// Without PreFilter too: the seed walkthrough's profile enables the plugin at filter and
			// score only, and kube-scheduler then never calls its PreFilter.
			for _, preFilter := range []bool{true, false} {
				t.Run(fmt.Sprintf("preFilter=%v", preFilter), func(t *testing.T) {
					state := framework.NewCycleState()
					if preFilter {
						if _, st, _ := fw.RunPreFilterPlugins(ctx, state, tt.pod); !st.IsSuccess() {
							t.Fatalf("PreFilter: %v", st)
						}
					}
					var passing []fwk.NodeInfo
					for node, want := range tt.want {
						ni := nodeInfo(node)
						st := fw.RunFilterPlugins(ctx, state, tt.pod, ni)
						if st.Code() != want.code {
							t.Errorf("%s: Filter code %v (%v), want %v", node, st.Code(), st.Message(), want.code)
							continue
						}
						if want.code != fwk.Success {
							if st.Message() != want.reason || st.Plugin() != Name {
								t.Errorf("%s: Filter = %q from %q, want %q from %s", node, st.Message(), st.Plugin(), want.reason, Name)
							}
							continue
						}
						passing = append(passing, ni)
					}
					scores, st := fw.RunScorePlugins(ctx, state, tt.pod, passing)
					if !st.IsSuccess() {
						t.Fatalf("Score: %v", st)
					}
					for _, s := range scores {
						if want := tt.want[s.Name].score; s.TotalScore != want {
							t.Errorf("%s: score %d, want %d", s.Name, s.TotalScore, want)
						}
					}
				})
			}
			if sig := fw.SignPod(ctx, tt.pod); sig == nil {
				t.Errorf("the profile signs no pods: the plugin disabled opportunistic batching")
			}
		})
	}
}

func TestSignPodReflectsRequestedResources(t *testing.T) {
	fw, err := newFramework(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := fw.SignPod(ctx, st.MakePod().Req(map[corev1.ResourceName]string{exMem: "1"}).Obj())
	b := fw.SignPod(ctx, st.MakePod().Req(map[corev1.ResourceName]string{exMem: "2"}).Obj())
	c := fw.SignPod(ctx, st.MakePod().Req(map[corev1.ResourceName]string{exSSD: "1"}).Obj())
	if a == nil || string(a) != string(b) {
		t.Errorf("pods requesting the same resources signed differently: %s vs %s", a, b)
	}
	if string(a) == string(c) {
		t.Errorf("pods requesting different resources signed the same: %s", a)
	}
}

func TestInvalidArgs(t *testing.T) {
	_, err := newFramework(t, &config.NodeCRDResourceFitArgs{MissingCRPolicy: "Sometimes"}, nil)
	if err == nil || !strings.Contains(err.Error(), "NodeCRDResourceFitArgs.missingCRPolicy") {
		t.Fatalf("err = %v, want one naming NodeCRDResourceFitArgs.missingCRPolicy", err)
	}
	_, err = newFramework(t, &config.LoadAwareArgs{}, nil)
	if err == nil || !strings.Contains(err.Error(), "want args of type NodeCRDResourceFitArgs") {
		t.Fatalf("err = %v, want a wrong-type error", err)
	}
}

func toUnstructured(t *testing.T, c *schedv1alpha1.ClusterScopedResource) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func TestQueueingHints(t *testing.T) {
	memPod := st.MakePod().Name("p").Namespace("ns").Req(map[corev1.ResourceName]string{exMem: "100Mi"}).Obj()
	enabled := map[corev1.ResourceName]bool{exMem: true}
	scored := map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 90}

	tests := []struct {
		name     string
		policy   config.MissingCRPolicy
		old, new *schedv1alpha1.ClusterScopedResource
		want     fwk.QueueingHint
	}{
		{name: "added CR enables the resource", new: cr("n3", "7", enabled, nil), want: fwk.Queue},
		{name: "added CR does not enable it", new: cr("n3", "7", map[corev1.ResourceName]bool{exSSD: true}, nil), want: fwk.QueueSkip},
		{name: "update enables the resource", old: cr("n3", "6", map[corev1.ResourceName]bool{exMem: false}, nil), new: cr("n3", "7", enabled, nil), want: fwk.Queue},
		{name: "update disables the resource", old: cr("n3", "6", enabled, nil), new: cr("n3", "7", map[corev1.ResourceName]bool{exMem: false}, nil), want: fwk.QueueSkip},
		{name: "unrelated update (score only) on an enabling CR", old: cr("n3", "6", enabled, nil), new: cr("n3", "7", enabled, scored), want: fwk.QueueSkip},
		{name: "unrelated update on a non-enabling CR", old: cr("n3", "6", nil, nil), new: cr("n3", "7", nil, scored), want: fwk.QueueSkip},
		{name: "delete with Ignore", policy: config.MissingCRPolicyIgnore, old: cr("n3", "6", nil, nil), want: fwk.Queue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			policy := tt.policy
			if policy == "" {
				policy = config.MissingCRPolicyReject
			}
			// The index already holds the event's object, as it will once the Cache's informer has
			// seen the event.
			p := New(&config.NodeCRDResourceFitArgs{MissingCRPolicy: policy}, offerIndex(tt.new))
			var oldObj, newObj any
			if tt.old != nil {
				oldObj = toUnstructured(t, tt.old)
			}
			if tt.new != nil {
				newObj = toUnstructured(t, tt.new)
			}
			got, err := p.isSchedulableAfterCRChange(logger, memPod, oldObj, newObj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQueueingHintNodeAdd(t *testing.T) {
	memPod := st.MakePod().Name("p").Namespace("ns").Req(map[corev1.ResourceName]string{exMem: "100Mi"}).Obj()
	index := offerIndex(
		cr("with-cr", "1", map[corev1.ResourceName]bool{exMem: true}, nil),
		cr("wrong-cr", "1", map[corev1.ResourceName]bool{exSSD: true}, nil))
	tests := []struct {
		policy config.MissingCRPolicy
		node   string
		want   fwk.QueueingHint
	}{
		{config.MissingCRPolicyReject, "with-cr", fwk.Queue},
		{config.MissingCRPolicyReject, "wrong-cr", fwk.QueueSkip},
		{config.MissingCRPolicyReject, "no-cr", fwk.QueueSkip},
		{config.MissingCRPolicyIgnore, "no-cr", fwk.Queue},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy)+"/"+tt.node, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			p := New(&config.NodeCRDResourceFitArgs{MissingCRPolicy: tt.policy}, index)
			got, err := p.isSchedulableAfterNodeAdd(logger, memPod, nil, st.MakeNode().Name(tt.node).Obj())
			if err != nil || got != tt.want {
				t.Fatalf("hint = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestEventsToRegister(t *testing.T) {
	for _, tt := range []struct {
		policy config.MissingCRPolicy
		want   fwk.ActionType
	}{
		{config.MissingCRPolicyReject, fwk.Add | fwk.Update},
		{config.MissingCRPolicyIgnore, fwk.Add | fwk.Update | fwk.Delete},
	} {
		p := New(&config.NodeCRDResourceFitArgs{MissingCRPolicy: tt.policy}, crcache.NewNodeIndex())
		events, err := p.EventsToRegister(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range events {
			if e.Event.Resource == "clusterscopedresources.v1alpha1.scheduling.accord.dev" {
				found = true
				if e.Event.ActionType != tt.want || e.QueueingHintFn == nil {
					t.Errorf("%s: CR event %v (hint set: %v), want %v with a hint", tt.policy, e.Event.ActionType, e.QueueingHintFn != nil, tt.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no ClusterScopedResource event registered", tt.policy)
		}
	}
}
