package console

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	schedlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
	slolisters "github.com/accord-sched/accord/pkg/generated/listers/slo/v1alpha1"
)

// now is the fixed time of the tests.
var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// newTestState fills a state's caches with objs, as the informers would (pods through the same
// handlers).
func newTestState(t testing.TB, objs ...runtime.Object) *state {
	t.Helper()
	idx := func(extra cache.Indexers) cache.Indexer {
		indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
		for k, v := range extra {
			indexers[k] = v
		}
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
	}
	nodes, pods, events, csrs, nms, pms := idx(nil), idx(nil), idx(eventIndexers()), idx(nil), idx(nil), idx(nil)
	s := newState()
	s.nodes, s.pods, s.events = corelisters.NewNodeLister(nodes), corelisters.NewPodLister(pods), events
	s.csrs, s.metrics = schedlisters.NewClusterScopedResourceLister(csrs), slolisters.NewNodeMetricLister(nms)
	s.migrations = schedlisters.NewPodMigrationLister(pms)
	s.thresholds = Thresholds{Percent: map[corev1.ResourceName]int64{corev1.ResourceCPU: 80, corev1.ResourceMemory: 80}, MaxAge: 3 * time.Minute}
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Node:
			err = nodes.Add(o)
		case *corev1.Pod:
			err = pods.Add(o)
			s.podSeen(o)
		case *corev1.Event:
			err = events.Add(o)
		case *schedv1alpha1.ClusterScopedResource:
			err = csrs.Add(o)
		case *slov1alpha1.NodeMetric:
			err = nms.Add(o)
		case *schedv1alpha1.PodMigration:
			err = pms.Add(o)
		default:
			t.Fatalf("no cache for %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func node(name, cpu string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("10Gi")},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
	}}
}

func pod(name, nodeName string, owner types.UID, created time.Time) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec: corev1.PodSpec{NodeName: nodeName}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if nodeName == "" {
		p.Status.Phase = corev1.PodPending
	}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: owner, Controller: new(true)}}
	}
	return p
}

func event(reason string, p *corev1.Pod, at time.Time, msg string) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name + "." + reason + at.Format("150405")},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Reason:         reason, Message: msg, EventTime: metav1.NewMicroTime(at)}
}

// fakeControls records the playground controls' calls.
type fakeControls struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (f *fakeControls) SetResource(_ context.Context, node, res string, enabled bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "resource "+node+" "+res+" "+map[bool]string{true: "on", false: "off"}[enabled])
	return f.err
}

func (f *fakeControls) SetLoad(_ context.Context, node string, cpu, mem int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "load "+node+" "+resource.NewQuantity(cpu, resource.DecimalSI).String()+" "+resource.NewQuantity(mem, resource.DecimalSI).String())
	return f.err
}

func newTestHandler(t *testing.T, s *state, controls Controls) *handler {
	logger, _ := ktesting.NewTestContext(t)
	h := &handler{logger: logger, state: s, hub: newHub(), controls: controls}
	h.setNotReady("")
	return h
}

// buildView is the whole cluster's View as one page (the tests' clusters fit on one).
func (s *state) buildView(now time.Time) View {
	return cut(s.snapshot(now), Query{PageSize: MaxPageSize})
}
