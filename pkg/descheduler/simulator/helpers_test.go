package simulator

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
	schedplugins "github.com/accord-sched/accord/pkg/scheduler/plugins"
)

// testEnv is a Simulator over a fake clientset's informers. Objects given to newTestEnv are in the
// informers' initial lists; later events are delivered to the simulator's handlers directly, as an
// informer delivers them, so each step of a test sees exactly the events it made.
type testEnv struct {
	t   testing.TB
	ctx context.Context
	sim *Simulator
	h   *handlers
	// factory is the informer factory the simulator's cache is fed from, client its clientset.
	factory informers.SharedInformerFactory
	client  *fake.Clientset
	// accordFactory and accordClient are Accord's (with envOptions.accord; nil otherwise).
	accordFactory accordinformers.SharedInformerFactory
	accordClient  *accordfake.Clientset
	// cancel ends ctx (the informers, the scheduler's metric recorders).
	cancel context.CancelFunc
}

type envOptions struct {
	config *schedconfig.KubeSchedulerConfiguration
	accord []runtime.Object
	// plugins replaces accord-scheduler's plugin list (with accord set).
	plugins     []schedplugins.Descriptor
	parallelism int
	// quiet: log through klog's global logger (verbosity 0) instead of the test's.
	quiet bool
	// transform is the informer factory's transform (nil: none).
	transform func(any) (any, error)
	// noReuse turns the PreFilter reuse off (Options.NoPreFilterReuse).
	noReuse bool
	// noIndex turns the label index off (Options.NoLabelIndex).
	noIndex bool
}

func newTestEnv(t testing.TB, o envOptions, objs ...any) *testEnv {
	t.Helper()
	logger, ctx := ktesting.NewTestContext(t)
	if o.quiet {
		logger = klog.Background()
		ctx = klog.NewContext(context.Background(), logger)
	}
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	client := fake.NewClientset()
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *corev1.Node:
			_, err = client.CoreV1().Nodes().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Pod:
			_, err = client.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Namespace:
			_, err = client.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		default:
			err = fmt.Errorf("unexpected %T", obj)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(o.transform))
	opts := Options{Config: o.config, Client: client, InformerFactory: factory, Parallelism: o.parallelism, NoPreFilterReuse: o.noReuse, NoLabelIndex: o.noIndex}
	var accordFactory accordinformers.SharedInformerFactory
	var accordClient *accordfake.Clientset
	if o.accord != nil {
		accordClient = accordfake.NewSimpleClientset(o.accord...)
		accordFactory = accordinformers.NewSharedInformerFactory(accordClient, 0)
		opts.AccordInformerFactory = accordFactory
		opts.Plugins = o.plugins
	}
	sim, err := New(ctx, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	factory.Start(ctx.Done())
	if accordFactory != nil {
		accordFactory.Start(ctx.Done())
	}
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
		if accordFactory != nil {
			accordFactory.Shutdown()
		}
	})
	return &testEnv{t: t, ctx: ctx, sim: sim, h: &handlers{s: sim, logger: logger}, factory: factory, client: client,
		accordFactory: accordFactory, accordClient: accordClient, cancel: cancel}
}

func (e *testEnv) predict(pod *corev1.Pod) Prediction {
	e.t.Helper()
	p, err := e.sim.Predict(e.ctx, pod)
	if err != nil {
		e.t.Fatalf("Predict(%s): %v", pod.Name, err)
	}
	return p
}

func (e *testEnv) beginCycle() {
	e.t.Helper()
	if err := e.sim.BeginCycle(e.ctx); err != nil {
		e.t.Fatalf("BeginCycle: %v", err)
	}
}

// expectNode asserts the prediction for pod.
func (e *testEnv) expectNode(pod *corev1.Pod, node string) Prediction {
	e.t.Helper()
	p := e.predict(pod)
	if !p.Feasible || p.Node != node {
		e.t.Fatalf("Predict(%s) = node %q (feasible %v, reason %q), want %q", pod.Name, p.Node, p.Feasible, p.Reason, node)
	}
	if p.CurrentNode != pod.Spec.NodeName {
		e.t.Fatalf("Predict(%s).CurrentNode = %q, want %q", pod.Name, p.CurrentNode, pod.Spec.NodeName)
	}
	return p
}

// requestedMilliCPU is the CPU the snapshot counts on a node.
func (e *testEnv) requestedMilliCPU(node string) int64 {
	e.t.Helper()
	e.sim.mu.Lock()
	defer e.sim.mu.Unlock()
	ni := e.sim.nodeInfo(node)
	if ni == nil {
		e.t.Fatalf("node %s not in the snapshot", node)
	}
	return ni.Requested.MilliCPU
}

// cachedMilliCPU is the CPU the simulator's scheduler cache counts on a node.
func (e *testEnv) cachedMilliCPU(node string) int64 {
	e.t.Helper()
	dump := e.sim.cache.Dump()
	ni, ok := dump.Nodes[node]
	if !ok {
		e.t.Fatalf("node %s not in the cache", node)
	}
	return ni.Requested.MilliCPU
}

func node(name, cpu string, mods ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(cpu),
				corev1.ResourceMemory: resource.MustParse("16Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	n.Status.Capacity = n.Status.Allocatable.DeepCopy()
	for _, m := range mods {
		m(n)
	}
	return n
}

func pod(name, nodeName, cpu string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName:      nodeName,
			SchedulerName: DefaultSchedulerName,
			Containers: []corev1.Container{{
				Name:      "c",
				Image:     "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}
