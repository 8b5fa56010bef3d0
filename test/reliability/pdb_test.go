package reliability

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/test/harness"
)

// availability follows, from a watch, how many pods of a workload are available (Ready and not
// terminating), and the fewest seen once counting started.
type availability struct {
	mu        sync.Mutex
	available map[types.UID]bool
	counting  bool
	lowest    int
}

func watchAvailability(t testing.TB, ns, selector string) *availability {
	t.Helper()
	a := &availability{available: map[types.UID]bool{}}
	w, err := env.Client.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { w.Stop(); <-done })
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			a.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(a.available, pod.UID)
			} else {
				a.available[pod.UID] = podReady(pod) && pod.DeletionTimestamp == nil
			}
			if a.counting {
				if n := a.count(); n < a.lowest {
					a.lowest = n
				}
			}
			a.mu.Unlock()
		}
	}()
	return a
}

func (a *availability) count() int {
	n := 0
	for _, ok := range a.available {
		if ok {
			n++
		}
	}
	return n
}

// now returns the number of available pods.
func (a *availability) now() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count()
}

// start begins tracking the lowest count.
func (a *availability) start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.counting, a.lowest = true, a.count()
}

func (a *availability) min() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lowest
}

// Three profiles evict from one workload of 100 pods at the same time, over and over, while the
// event-triggered controller of a fourth (NodeCRDResourceFit: the nodes' ClusterScopedResources stop
// enabling the CPU every pod of the workload requests) evicts them too, and a PDB with
// maxUnavailable: 1 covers them: the apiserver lets one disruption through at a time, so at no moment
// (counted from a watch) are more than one of the 100 pods unavailable.
func TestPDBHeldUnderConcurrentProfiles(t *testing.T) {
	const replicas = 100
	ctx := context.Background()
	c := newCluster(t, "pdb", "n1", "n2")
	c.createCRs()
	proxy := newFaultProxy(t)
	profiles := []string{"a", "b", "c"}
	d := buildDescheduler(t, c.writePolicy(evictionPolicy(profiles...)+profile("events", "NodeCRDResourceFit")), proxy.config())
	if len(d.Controllers()) != 1 {
		t.Fatalf("%d controllers, want the events profile's NodeCRDResourceFit", len(d.Controllers()))
	}

	labels := map[string]string{"app": "guarded"}
	avail := watchAvailability(t, c.ns, "app=guarded")
	_, err := env.Client.PolicyV1().PodDisruptionBudgets(c.ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: c.ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A ReplicaSet whose template binds its pods to a node, so the replacements of evicted pods run
	// without a scheduler; the PDB's expected count is the ReplicaSet's replicas.
	for i, node := range c.nodes {
		_, err := env.Client.AppsV1().ReplicaSets(c.ns).Create(ctx, &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "guarded-" + string(rune('a'+i)), Namespace: c.ns},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr.To(int32(replicas / len(c.nodes))),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded", "rs": string(rune('a' + i))}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "guarded", "rs": string(rune('a' + i))}},
					Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "pause",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}}}}},
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := harness.WaitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		pdb, err := env.Client.PolicyV1().PodDisruptionBudgets(c.ns).Get(ctx, "guarded", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return avail.now() == replicas && pdb.Status.CurrentHealthy == replicas && pdb.Status.DisruptionsAllowed == 1, nil
	}); err != nil {
		t.Fatalf("%d of %d pods available, PDB not settled: %v", avail.now(), replicas, err)
	}

	avail.start()
	// Event mode: the controller evicts every pod of the workload as its node's CR stops enabling CPU.
	ctlCtx, stopController := context.WithCancel(ctx)
	waitController := d.StartControllers(ctlCtx)
	defer func() { stopController(); waitController() }()
	c.disableCPU(c.nodes...)
	// Each profile walks the workload's pods in its own order and evicts every one, until 10
	// evictions got through in all.
	const wantEvictions = 10
	var (
		mu               sync.Mutex
		evicted, refused int
	)
	stop := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	deadline := time.Now().Add(90 * time.Second)
	for pi, prof := range d.Profiles()[:len(profiles)] {
		ev := prof.Evictor()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; ; round++ {
				select {
				case <-stop:
					return
				default:
				}
				if time.Now().After(deadline) {
					once.Do(func() { close(stop) })
					return
				}
				d.Limiter().Reset()
				list, err := env.Client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=guarded"})
				if err != nil {
					t.Error(err)
					return
				}
				n := len(list.Items)
				for k := range n {
					pod := &list.Items[(k*(pi+1)+round)%n]
					if pod.DeletionTimestamp != nil {
						continue
					}
					err := ev.Evict(ctx, pod, framework.EvictOptions{PluginName: "Reliability", Reason: "pdb"})
					mu.Lock()
					switch {
					case err == nil:
						evicted++
					case apierrors.IsTooManyRequests(err):
						refused++
					}
					done := evicted >= wantEvictions
					mu.Unlock()
					if done {
						once.Do(func() { close(stop) })
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	// The controller keeps evicting (its retries back off after 429s); wait for one of its evictions
	// to get through too, under the same PDB.
	acceptedAll := func() (accepted, refused int) {
		for _, codes := range proxy.answers() {
			for code, n := range codes {
				switch {
				case code >= 200 && code < 300:
					accepted += n
				case code == http.StatusTooManyRequests:
					refused += n
				}
			}
		}
		return accepted, refused
	}
	if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		a, _ := acceptedAll()
		mu.Lock()
		defer mu.Unlock()
		return a > evicted, nil
	}); err != nil {
		a, _ := acceptedAll()
		t.Errorf("the event-triggered controller got no eviction through in 60 s (%d accepted in all, %d by the 3 profiles)", a, evicted)
	}
	stopController()
	waitController()
	lowest := avail.min()
	mu.Lock()
	defer mu.Unlock()
	if evicted < wantEvictions {
		t.Errorf("only %d evictions got through in 90 s (%d refused)", evicted, refused)
	}
	if replicas-lowest > 1 {
		t.Errorf("%d pods unavailable at once, PDB allows 1", replicas-lowest)
	}
	accepted, refusedAll := acceptedAll()
	byController := accepted - evicted
	figure(t, "pdb_max_unavailable", "%d of %d pods (maxUnavailable 1; 3 profiles + event mode: %d evictions accepted, %d by the controller; %d refused with 429)", replicas-lowest, replicas, accepted, byController, refusedAll)
}
