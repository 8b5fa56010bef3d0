package nodefit

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/apis/config"
	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	accordlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
)

// fitEnv is a handle over informer caches filled directly (no informer events), the way the
// benchmarks and plugintest's settle change them.
type fitEnv struct {
	c    *fake.Cluster
	h    *fake.Handle
	csrs accordlisters.ClusterScopedResourceLister
}

func newFitEnv(t *testing.T) *fitEnv {
	t.Helper()
	c := fake.NewCluster()
	indexer, err := fwruntime.AddPodNodeIndex(c.Factory)
	if err != nil {
		t.Fatal(err)
	}
	inf := c.CRs.Scheduling().V1alpha1().ClusterScopedResources()
	return &fitEnv{c: c, h: &fake.Handle{Cluster: c, Pods: indexer}, csrs: inf.Lister()}
}

func (e *fitEnv) addPod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if err := e.h.Pods.Add(p); err != nil {
		t.Fatal(err)
	}
}

func (e *fitEnv) updatePod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if err := e.h.Pods.Update(p); err != nil {
		t.Fatal(err)
	}
}

func (e *fitEnv) deletePod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if err := e.h.Pods.Delete(p); err != nil {
		t.Fatal(err)
	}
}

func (e *fitEnv) addCSR(t *testing.T, node string, enabled ...corev1.ResourceName) {
	t.Helper()
	f := map[corev1.ResourceName]bool{}
	for _, r := range enabled {
		f[r] = true
	}
	csr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: f}}
	if err := e.c.CRs.Scheduling().V1alpha1().ClusterScopedResources().Informer().GetIndexer().Add(csr); err != nil {
		t.Fatal(err)
	}
}

func requested(p *corev1.Pod) []corev1.ResourceName {
	return constraints.AppendRequestedResources(nil, p)
}

// check asserts that the cached Fitter, a fresh one and the uncached fits agree, and
// returns the verdict.
func (e *fitEnv) check(t *testing.T, f *Fitter, p *corev1.Pod, n *corev1.Node) bool {
	t.Helper()
	got, why := f.Fits(p, n, requested(p))
	fresh, freshWhy := New(e.h, e.csrs, config.MissingCRPolicyReject).Fits(p, n, requested(p))
	plain, plainWhy := fits(p, n, requested(p), e.h, e.csrs)
	if got != fresh || why != freshWhy || got != plain || why != plainWhy {
		t.Fatalf("pod %s on %s: cached %v %q, fresh %v %q, fits %v %q", p.Name, n.Name, got, why, fresh, freshWhy, plain, plainWhy)
	}
	return got
}

// TestNodeFitterFollowsTheCaches changes pods and nodes behind the Fitter's back, without
// informer events, and checks that every verdict is the one an uncached check gives.
func TestNodeFitterFollowsTheCaches(t *testing.T) {
	e := newFitEnv(t)
	n := fake.Node("n", nil, 2, 4)
	e.addCSR(t, "n", corev1.ResourceCPU)
	f := New(e.h, e.csrs, config.MissingCRPolicyReject)
	victim := fake.Pod("ns", "victim", "home", 1000)

	if !e.check(t, f, victim, n) {
		t.Fatal("an empty node does not fit the pod")
	}
	big := fake.Pod("ns", "big", "n", 1500)
	e.addPod(t, big)
	if e.check(t, f, victim, n) {
		t.Fatal("the pod fits a node whose new pod leaves it 500m")
	}
	// The big pod finishes: a terminal pod requests nothing.
	done := big.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	e.updatePod(t, done)
	if !e.check(t, f, victim, n) {
		t.Fatal("a succeeded pod still counts")
	}
	// It is replaced by a running pod again (a new object with the same key).
	e.updatePod(t, big.DeepCopy())
	if e.check(t, f, victim, n) {
		t.Fatal("the running pod again does not count")
	}
	// A terminating pod (e.g. evicted earlier in the cycle, once the informer has seen it) still
	// counts, as for the scheduler.
	terminating := big.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{}
	e.updatePod(t, terminating)
	if e.check(t, f, victim, n) {
		t.Fatal("a terminating pod does not count")
	}
	e.deletePod(t, terminating)
	if !e.check(t, f, victim, n) {
		t.Fatal("a deleted pod still counts")
	}
	// The node grows: a new node object.
	e.addPod(t, big)
	if e.check(t, f, victim, n) {
		t.Fatal("setup: the pod fits")
	}
	bigger := fake.Node("n", nil, 4, 4)
	if !e.check(t, f, victim, bigger) {
		t.Fatal("a node update is not seen")
	}
	// Many pods on a node (the set-based identity check): replace one of them with a bigger one.
	m := fake.Node("m", nil, 64, 64)
	e.addCSR(t, "m", corev1.ResourceCPU)
	var many []*corev1.Pod
	for i := range 2 * setThreshold {
		p := fake.Pod("ns", fmt.Sprintf("m-%d", i), "m", 900)
		many = append(many, p)
		e.addPod(t, p)
	}
	if !e.check(t, f, victim, m) {
		t.Fatal("the pod does not fit a node with 64-57.6 cores free")
	}
	grown := many[3].DeepCopy()
	grown.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("7")
	e.updatePod(t, grown)
	if e.check(t, f, victim, m) {
		t.Fatal("an updated pod among many is not seen")
	}
	e.deletePod(t, grown)
	e.addPod(t, fake.Pod("ns", "other", "m", 900))
	if !e.check(t, f, victim, m) {
		t.Fatal("a pod swapped for another among many is not seen")
	}

	f.Reset()
	if len(f.nodes) != 0 {
		t.Errorf("Reset kept %d nodes", len(f.nodes))
	}
	if !e.check(t, f, victim, m) {
		t.Fatal("after Reset")
	}
}

// TestNodeFitterConcurrent runs checks while the pods change (run with -race).
func TestNodeFitterConcurrent(t *testing.T) {
	e := newFitEnv(t)
	nodes := []*corev1.Node{fake.Node("a", nil, 4, 4), fake.Node("b", nil, 4, 4)}
	e.addCSR(t, "a", corev1.ResourceCPU)
	e.addCSR(t, "b", corev1.ResourceCPU)
	f := New(e.h, e.csrs, config.MissingCRPolicyReject)
	victim := fake.Pod("ns", "victim", "home", 1000)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					f.FitsAnyOther(victim, nodes, nil)
				}
			}
		}()
	}
	for i := range 200 {
		p := fake.Pod("ns", fmt.Sprintf("p-%d", i%10), nodes[i%2].Name, 300)
		if i >= 10 {
			e.updatePod(t, p)
		} else {
			e.addPod(t, p)
		}
		if i%7 == 0 {
			f.Reset()
		}
	}
	close(stop)
	wg.Wait()
	for _, n := range nodes {
		e.check(t, f, victim, n)
	}
}
