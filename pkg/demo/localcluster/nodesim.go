package localcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/internal/workqueueutil"
)

// SimulatedNodeLabel marks the nodes the NodeSimulator plays the kubelet for.
const SimulatedNodeLabel = "sim.accord.dev/managed"

// SimulatedKubeletVersion is the kubelet version simulated nodes report.
const SimulatedKubeletVersion = "v1.36.3-accord-sim"

// NodeSimulator plays the kubelet for simulated nodes: it keeps them Ready, moves the pods bound to
// them to Running, and finishes the deletion of their terminating pods once their grace period has
// passed, as a kubelet does when containers use all of it: a deleted (or evicted) pod stays Terminating
// for its deletion grace period (the pod's terminationGracePeriodSeconds, or the delete's
// gracePeriodSeconds), counted, as a kubelet counts it, from when the simulator sees the deletion.
type NodeSimulator struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	nodes   corelisters.NodeLister
	pods    corelisters.PodLister
	queue   workqueue.TypedRateLimitingInterface[simKey]
	wg      sync.WaitGroup

	mu sync.Mutex
	// terminating holds when the simulator first saw each terminating pod's deletion.
	terminating map[types.UID]time.Time
}

type simKey struct {
	kind      string // "node" or "pod"
	namespace string
	name      string
}

// NodeSpec describes a simulated node.
type NodeSpec struct {
	Name   string
	Labels map[string]string
	Taints []corev1.Taint
	// Allocatable defaults to 4 CPU, 16Gi memory and 110 pods when nil.
	Allocatable corev1.ResourceList
}

func newNodeSimulator(client kubernetes.Interface) *NodeSimulator {
	factory := informers.NewSharedInformerFactory(client, 0)
	s := &NodeSimulator{
		client:      client,
		factory:     factory,
		nodes:       factory.Core().V1().Nodes().Lister(),
		pods:        factory.Core().V1().Pods().Lister(),
		terminating: map[types.UID]time.Time{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[simKey](),
			workqueue.TypedRateLimitingQueueConfig[simKey]{Name: "accord-node-simulator"}),
	}
	enqueue := func(kind string) cache.ResourceEventHandlerFuncs {
		add := func(obj any) {
			if m, err := metaOf(obj); err == nil {
				s.queue.Add(simKey{kind: kind, namespace: m.GetNamespace(), name: m.GetName()})
			}
		}
		return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, n any) { add(n) }}
	}
	nodeHandler := enqueue("node")
	addNode := nodeHandler.AddFunc
	nodeHandler.AddFunc = func(obj any) {
		addNode(obj)
		// Pods bound to the node before the cache knew it are waiting for it.
		if n, ok := obj.(*corev1.Node); ok {
			pods, _ := s.pods.List(labels.Everything())
			for _, p := range pods {
				if p.Spec.NodeName == n.Name {
					s.queue.Add(simKey{kind: "pod", namespace: p.Namespace, name: p.Name})
				}
			}
		}
	}
	_, _ = factory.Core().V1().Nodes().Informer().AddEventHandler(nodeHandler)
	podHandler := enqueue("pod")
	podHandler.DeleteFunc = func(obj any) {
		if m, err := metaOf(obj); err == nil {
			s.mu.Lock()
			delete(s.terminating, m.GetUID())
			s.mu.Unlock()
		}
	}
	_, _ = factory.Core().V1().Pods().Informer().AddEventHandler(podHandler)
	return s
}

func metaOf(obj any) (metav1.Object, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	return m, nil
}

func (s *NodeSimulator) start(ctx context.Context, workers int) error {
	s.factory.Start(ctx.Done())
	for typ, ok := range s.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("node simulator: %v cache did not sync", typ)
		}
	}
	for range workers {
		s.wg.Go(func() {
			for s.processNext(ctx) {
			}
		})
	}
	return nil
}

func (s *NodeSimulator) stop() {
	s.queue.ShutDown()
	s.wg.Wait()
	s.factory.Shutdown()
}

func (s *NodeSimulator) processNext(ctx context.Context) bool {
	return workqueueutil.ProcessNext(ctx, s.queue, s.sync, func(key simKey, err error) {
		klog.FromContext(ctx).V(2).Info("Node simulator retrying", "kind", key.kind, "namespace", key.namespace, "name", key.name, "err", err)
	})
}

// sync brings the simulated node or pod of key in step; a positive delay asks for another pass
// after it.
func (s *NodeSimulator) sync(ctx context.Context, key simKey) (time.Duration, error) {
	if key.kind == "node" {
		return 0, s.syncNode(ctx, key.name)
	}
	return s.syncPod(ctx, key.namespace, key.name)
}

func (s *NodeSimulator) syncNode(ctx context.Context, name string) error {
	node, err := s.nodes.Get(name)
	if apierrors.IsNotFound(err) || (err == nil && node.Labels[SimulatedNodeLabel] != "true") {
		return nil
	}
	if err != nil {
		return err
	}
	if constraints.NodeReady(node) {
		return nil
	}
	node = node.DeepCopy()
	setReady(node, time.Now())
	_, err = s.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return ignoreGone(err)
}

// syncPod returns how long to wait before looking at the pod again: the rest of a terminating pod's
// grace period.
func (s *NodeSimulator) syncPod(ctx context.Context, namespace, name string) (time.Duration, error) {
	pod, err := s.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if pod.Spec.NodeName == "" {
		return 0, nil
	}
	node, err := s.nodes.Get(pod.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		// The pod may have been bound to a node this simulator's cache has not seen yet: retry (the
		// node's Add event also requeues its pods).
		return 0, fmt.Errorf("node %s of pod %s/%s is not in the cache yet", pod.Spec.NodeName, namespace, name)
	}
	if err != nil {
		return 0, err
	}
	if node.Labels[SimulatedNodeLabel] != "true" {
		return 0, nil
	}
	if pod.DeletionTimestamp != nil {
		if rest := s.gracePeriodLeft(pod); rest > 0 {
			klog.FromContext(ctx).V(4).Info("Node simulator waiting for the grace period of a terminating pod", "pod", klog.KObj(pod), "remaining", rest)
			return rest, nil
		}
		uid := pod.UID
		err := s.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64),
			Preconditions:      &metav1.Preconditions{UID: &uid},
		})
		return 0, ignoreGone(err)
	}
	if pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "" {
		return 0, nil
	}
	pod = pod.DeepCopy()
	markRunning(pod, time.Now())
	_, err = s.client.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return 0, ignoreGone(err)
}

// gracePeriodLeft is what remains of a terminating pod's grace period, counted from the first time
// it is asked about the pod.
func (s *NodeSimulator) gracePeriodLeft(pod *corev1.Pod) time.Duration {
	grace := time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, ok := s.terminating[pod.UID]
	if !ok {
		seen = time.Now()
		s.terminating[pod.UID] = seen
	}
	return time.Until(seen.Add(grace))
}

func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// CreateNode creates a simulated node; the simulator reports it Ready.
func (s *NodeSimulator) CreateNode(ctx context.Context, spec NodeSpec) (*corev1.Node, error) {
	alloc := spec.Allocatable
	if alloc == nil {
		alloc = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("16Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
	}
	lbls := map[string]string{}
	for k, v := range spec.Labels {
		lbls[k] = v
	}
	return s.AddNode(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: lbls},
		Spec:       corev1.NodeSpec{Taints: spec.Taints},
		Status:     corev1.NodeStatus{Capacity: alloc.DeepCopy(), Allocatable: alloc.DeepCopy()},
	})
}

// AddNode creates node as a simulated node: it gets the simulator's label, the usual hostname and OS
// labels, capacity defaulted from allocatable, and a Ready condition.
func (s *NodeSimulator) AddNode(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	node = node.DeepCopy()
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels[SimulatedNodeLabel] = "true"
	if _, ok := node.Labels[corev1.LabelHostname]; !ok {
		node.Labels[corev1.LabelHostname] = node.Name
	}
	if _, ok := node.Labels[corev1.LabelOSStable]; !ok {
		node.Labels[corev1.LabelOSStable] = "linux"
	}
	if node.Status.Capacity == nil {
		node.Status.Capacity = node.Status.Allocatable.DeepCopy()
	}
	if node.Status.NodeInfo.KubeletVersion == "" {
		node.Status.NodeInfo.KubeletVersion = SimulatedKubeletVersion
		node.Status.NodeInfo.OperatingSystem = "linux"
		node.Status.NodeInfo.Architecture = "amd64"
	}
	setReady(node, time.Now())
	return s.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
}

// WaitForNodesReady waits until every simulated node is Ready.
func (s *NodeSimulator) WaitForNodesReady(ctx context.Context, names ...string) error {
	for {
		ready := true
		for _, n := range names {
			node, err := s.client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil || !constraints.NodeReady(node) {
				ready = false
				break
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nodes %v not Ready: %w", names, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// SimulatedNodes lists the nodes the simulator manages, from its cache.
func (s *NodeSimulator) SimulatedNodes() ([]*corev1.Node, error) {
	return s.nodes.List(labels.SelectorFromSet(labels.Set{SimulatedNodeLabel: "true"}))
}

func setReady(n *corev1.Node, now time.Time) {
	t := metav1.NewTime(now)
	ready := corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "simulated by accord's node simulator", LastHeartbeatTime: t, LastTransitionTime: t,
	}
	for i, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			n.Status.Conditions[i] = ready
			return
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, ready)
}

func markRunning(pod *corev1.Pod, now time.Time) {
	t := metav1.NewTime(now)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &t
	pod.Status.HostIP = "10.0.0.1"
	pod.Status.PodIP = fmt.Sprintf("10.244.%d.%d", (now.UnixNano()>>8)%250+1, now.UnixNano()%250+1)
	pod.Status.Conditions = nil
	for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: ct, Status: corev1.ConditionTrue, LastTransitionTime: t})
	}
	pod.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		})
	}
}
