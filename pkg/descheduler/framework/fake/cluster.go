// Package fake builds in-memory clusters (fake clientsets and informer factories) for the
// descheduler's unit tests and benchmarks.
package fake

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
	"github.com/accord-sched/accord/pkg/informertransform"
)

// Node returns a Ready node with the given allocatable CPU (cores) and memory (GiB) and 110 pods.
func Node(name string, labels map[string]string, cpu, memGi int64) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{
			Allocatable: alloc, Capacity: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// Pod returns a running pod bound to node, owned by a ReplicaSet, requesting cpuMilli of CPU.
func Pod(namespace, name, node string, cpuMilli int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, UID: types.UID(namespace + "/" + name),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid"}},
		},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
			}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// Cluster is a fake cluster: clientsets, informer factories, and the evictions posted to it.
type Cluster struct {
	Client  *kubefake.Clientset
	Accord  *accordfake.Clientset
	Factory informers.SharedInformerFactory
	CRs     accordinformers.SharedInformerFactory

	mu        sync.Mutex
	evictions []string
	// Guard checks that no cached object is written to (informertransform.Guard).
	Guard *informertransform.Guard
	// RefuseEviction, when set, decides which evictions are refused (with its error).
	RefuseEviction func(ev *policyv1.Eviction) error
}

// NewCluster returns a fake cluster holding objs; Evictions posted to it are recorded and delete the
// pod, as the apiserver and a kubelet would.
func NewCluster(objs ...runtime.Object) *Cluster {
	return newCluster(informertransform.NewTrimmingPodSharer().Transform, objs)
}

// NewUntrimmedCluster is NewCluster whose pods keep every field (they are shared all the same):
// for the tests that compare decisions over trimmed and untrimmed pods.
func NewUntrimmedCluster(objs ...runtime.Object) *Cluster {
	return newCluster(informertransform.NewPodSharer().Transform, objs)
}

func newCluster(transform func(any) (any, error), objs []runtime.Object) *Cluster {
	c := &Cluster{Client: kubefake.NewClientset(objs...), Accord: accordfake.NewClientset()}
	// The pods and nodes are trimmed and shared as accord-descheduler trims and shares them
	// (informertransform.NewTrimmingPodSharer), and Guard remembers each cached object: Start fails
	// the test when a plugin wrote to one.
	c.Guard = informertransform.NewGuard(transform)
	c.Factory = informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithTransform(c.Guard.Transform))
	c.CRs = accordinformers.NewSharedInformerFactory(c.Accord, 0)
	// Handle.Nodes reads the node informer, which must be requested before Start.
	c.Factory.Core().V1().Nodes().Informer()
	c.Client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := action.(clienttesting.CreateAction).GetObject().(*policyv1.Eviction)
		if c.RefuseEviction != nil {
			if err := c.RefuseEviction(ev); err != nil {
				return true, nil, err
			}
		}
		// The apiserver's UID precondition: an eviction meant for another pod of the same name is a
		// Conflict.
		if d := ev.DeleteOptions; d != nil && d.Preconditions != nil && d.Preconditions.UID != nil {
			obj, err := c.Client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), ev.Namespace, ev.Name)
			if err != nil {
				return true, nil, err
			}
			if uid := obj.(*corev1.Pod).UID; uid != *d.Preconditions.UID {
				return true, nil, apierrors.NewConflict(corev1.Resource("pods"), ev.Name,
					fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s)", *d.Preconditions.UID, uid))
			}
		}
		c.mu.Lock()
		c.evictions = append(c.evictions, ev.Namespace+"/"+ev.Name)
		c.mu.Unlock()
		if err := c.Client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ev.Namespace, ev.Name); err != nil {
			return true, nil, err
		}
		return true, nil, nil
	})
	return c
}

// Evictions returns the pods evicted so far, as namespace/name, in order.
func (c *Cluster) Evictions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.evictions...)
}

// Start starts both informer factories and waits for their caches; they stop with the test, which
// then fails if a cached object was written to (Guard).
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c.Factory.Start(ctx.Done())
	c.CRs.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		c.Factory.Shutdown()
		c.CRs.Shutdown()
		if w := c.Guard.Written(); len(w) > 0 {
			t.Errorf("informer objects written to (they are shared; DeepCopy before changing one): %v", w)
		}
	})
	for typ, ok := range c.Factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("cache for %v did not sync", typ)
		}
	}
	for typ, ok := range c.CRs.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("cache for %v did not sync", typ)
		}
	}
}

// Names returns namespace/name of each pod.
func Names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = fmt.Sprintf("%s/%s", p.Namespace, p.Name)
	}
	return out
}
