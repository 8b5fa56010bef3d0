package reservation

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
	"github.com/accord-sched/accord/test/harness"
)

// ledgerWatch follows one namespace's pods and reservations and checks, at every event, that no
// node holds more than its allocatable CPU and pods: its bound pods plus its Available
// reservations. A reservation whose owner is bound on its node is consumed (the pod holds the room)
// whatever its status still says.
type ledgerWatch struct {
	ns    string
	alloc map[string]int64 // milli-CPU per node
	pods  int64            // pods per node

	mu        sync.Mutex
	bound     map[string]*corev1.Pod // by name
	available map[string]*schedv1alpha1.Reservation
	placed    map[string]string // reservation name -> node, once seen Available
	// over: each distinct over-committed state of a node, when first seen; overEvents: the events
	// after which some node was over-committed.
	over       []string
	overSeen   map[string]bool
	overEvents int
	events     int
	onPlaced   func(r *schedv1alpha1.Reservation)
}

func milliCPU(spec corev1.PodSpec) int64 {
	var n int64
	for _, c := range spec.Containers {
		n += c.Resources.Requests.Cpu().MilliValue()
	}
	return n
}

// ownerOf is the pod a test reservation was made for (its pod owner's name).
func ownerOf(r *schedv1alpha1.Reservation) string {
	for _, o := range r.Spec.Owners {
		if o.Pod != nil {
			return o.Pod.Name
		}
	}
	return ""
}

func (w *ledgerWatch) pod(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Namespace != w.ns {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if deleted || p.Spec.NodeName == "" {
		delete(w.bound, p.Name)
	} else {
		w.bound[p.Name] = p
	}
	w.check("pod " + p.Name)
}

func (w *ledgerWatch) reservation(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	r, ok := obj.(*schedv1alpha1.Reservation)
	if !ok || r.Namespace != w.ns {
		return
	}
	w.mu.Lock()
	first := false
	if !deleted && r.Status.Phase == schedv1alpha1.ReservationAvailable {
		w.available[r.Name] = r
		if _, seen := w.placed[r.Name]; !seen {
			w.placed[r.Name] = r.Status.NodeName
			first = true
		}
	} else {
		delete(w.available, r.Name)
	}
	w.check("reservation " + r.Name)
	w.mu.Unlock()
	if first && w.onPlaced != nil {
		w.onPlaced(r)
	}
}

// check records every node over its allocatable; w.mu is held.
func (w *ledgerWatch) check(event string) {
	w.events++
	cpu, pods := map[string]int64{}, map[string]int64{}
	what := map[string][]string{}
	for _, p := range w.bound {
		cpu[p.Spec.NodeName] += milliCPU(p.Spec)
		pods[p.Spec.NodeName]++
	}
	for _, r := range w.available {
		if o := w.bound[ownerOf(r)]; o != nil && o.Spec.NodeName == r.Status.NodeName && !o.CreationTimestamp.Before(&r.CreationTimestamp) {
			continue
		}
		cpu[r.Status.NodeName] += milliCPU(r.Spec.Template.Spec)
		pods[r.Status.NodeName]++
		what[r.Status.NodeName] = append(what[r.Status.NodeName], r.Name)
	}
	for node, used := range cpu {
		if used > w.alloc[node] || pods[node] > w.pods {
			sort.Strings(what[node])
			w.overEvents++
			state := fmt.Sprintf("node %s holds %dm CPU and %d pods (allocatable %dm, %d), reservations %v", node, used, pods[node], w.alloc[node], w.pods, what[node])
			if !w.overSeen[state] {
				w.overSeen[state] = true
				w.over = append(w.over, "after "+event+": "+state)
			}
		}
	}
}

// TestPlacementSerialisedWithBurst: 50 reservations interleaved with a burst of 500 pods on a
// nearly full cluster (10 nodes of 8 CPUs, each 5 CPUs used: 30 CPUs free for 25 CPUs of pods and
// 25 of reservations and their owners). A watch checks at every event that no node's bound pods and Available
// reservations exceed its allocatable; the owner of each reservation is created as soon as the
// reservation is Available, and must bind on its node.
func TestPlacementSerialisedWithBurst(t *testing.T) {
	const (
		nodes        = 10
		burst        = 500
		reservations = 50
	)
	startScheduler(t)
	c := newCluster(t, "rsv-burst", 0)
	ctx := context.Background()
	for i := range nodes {
		name := fmt.Sprintf("%s-n%d", c.ns, i)
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: name, Labels: map[string]string{nsLabel: c.ns},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		c.nodes = append(c.nodes, name)
	}
	if err := env.Nodes.WaitForNodesReady(ctx, c.nodes...); err != nil {
		t.Fatal(err)
	}
	w := &ledgerWatch{ns: c.ns, alloc: map[string]int64{}, pods: 110, bound: map[string]*corev1.Pod{},
		available: map[string]*schedv1alpha1.Reservation{}, placed: map[string]string{}, overSeen: map[string]bool{}}
	for _, n := range c.nodes {
		w.alloc[n] = 8000
	}
	// Nearly full: 5 of each node's 8 CPUs are used by a pod bound there.
	for i, n := range c.nodes {
		s := c.spec("5")
		s.NodeName = n
		c.createPod(t, fmt.Sprintf("fill-%d", i), s)
	}

	// The owners are created, from a goroutine, as soon as their reservation is Available.
	owners := make(chan string, reservations)
	w.onPlaced = func(r *schedv1alpha1.Reservation) { owners <- ownerOf(r) }
	ownersDone := make(chan struct{})
	var ownerErrs []error
	go func() {
		defer close(ownersDone)
		for name := range owners {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns}, Spec: c.spec("500m")}
			if _, err := env.Client.CoreV1().Pods(c.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				ownerErrs = append(ownerErrs, err)
			}
		}
	}()

	pf := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(c.ns))
	if _, err := pf.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.pod(obj, false) }, UpdateFunc: func(_, obj any) { w.pod(obj, false) },
		DeleteFunc: func(obj any) { w.pod(obj, true) }}); err != nil {
		t.Fatal(err)
	}
	rf := accordinformers.NewSharedInformerFactoryWithOptions(env.Accord, 0, accordinformers.WithNamespace(c.ns))
	if _, err := rf.Scheduling().V1alpha1().Reservations().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.reservation(obj, false) }, UpdateFunc: func(_, obj any) { w.reservation(obj, false) },
		DeleteFunc: func(obj any) { w.reservation(obj, true) }}); err != nil {
		t.Fatal(err)
	}
	harness.StartInformers(t, pf)
	harness.StartInformers(t, rf)
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.bound) == nodes, nil
	}); err != nil {
		t.Fatalf("the fill pods are not bound: %v", err)
	}

	// The burst: 50m pods, a 500m reservation after every 10 of them, from 5 creators at once.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, burst+reservations)
	for g := range 5 {
		wg.Go(func() {
			for i := g * (burst / 5); i < (g+1)*(burst/5); i++ {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("burst-%03d", i), Namespace: c.ns}, Spec: c.spec("50m")}
				if _, err := env.Client.CoreV1().Pods(c.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
				if i%10 == 9 {
					n := i / 10
					r := &schedv1alpha1.Reservation{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r-%02d", n), Namespace: c.ns},
						Spec: schedv1alpha1.ReservationSpec{
							Template: corev1.PodTemplateSpec{Spec: c.spec("500m")},
							Owners:   []schedv1alpha1.ReservationOwner{{Pod: &schedv1alpha1.ReservationPodOwner{Name: fmt.Sprintf("owner-%02d", n)}}},
							TTL:      &metav1.Duration{Duration: 5 * time.Minute},
						},
					}
					if _, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Settled: every reservation placed or failed, every placed one's owner bound, and no pod
	// bound for 3 s.
	var placed, onNode int
	lastBound, lastCount := time.Now(), -1
	err := harness.WaitFor(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
		list, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		final := 0
		for _, r := range list.Items {
			if r.Status.Phase != "" && r.Status.Phase != schedv1alpha1.ReservationPending && r.Status.Phase != schedv1alpha1.ReservationAvailable {
				final++
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		placed, onNode = len(w.placed), 0
		for rsv, node := range w.placed {
			if o := w.bound["owner-"+strings.TrimPrefix(rsv, "r-")]; o != nil && o.Spec.NodeName == node {
				onNode++
			}
		}
		if len(w.bound) != lastCount {
			lastBound, lastCount = time.Now(), len(w.bound)
		}
		return final == reservations && onNode == placed && time.Since(lastBound) > 3*time.Second, nil
	})
	close(owners)
	<-ownersDone
	for _, err := range ownerErrs {
		t.Error(err)
	}
	if list, lerr := env.Accord.SchedulingV1alpha1().Reservations(c.ns).List(ctx, metav1.ListOptions{}); lerr == nil {
		reasons := map[string]int{}
		for _, r := range list.Items {
			reasons[string(r.Status.Phase)+" "+r.Status.Message]++
		}
		t.Logf("reservations by phase and message: %v", reasons)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	burstBound := 0
	for name := range w.bound {
		if strings.HasPrefix(name, "burst-") {
			burstBound++
		}
	}
	fmt.Printf("FIGURE reservations in a burst: %d of %d reservations placed, %d owners bound on their reservation's node, %d of %d burst pods bound, %d over-committed node states (after %d of %d events), %s\n",
		placed, reservations, onNode, burstBound, burst, len(w.over), w.overEvents, w.events, time.Since(start).Round(100*time.Millisecond))
	for i, o := range w.over {
		if i == 10 {
			t.Errorf("... and %d more over-commits", len(w.over)-10)
			break
		}
		t.Errorf("over-commit %s", o)
	}
	if err != nil {
		t.Fatalf("not settled within 90 s (%d placed, %d owners on their node): %v", placed, onNode, err)
	}
	if placed == 0 {
		t.Fatal("no reservation was placed: the test proves nothing")
	}
	if onNode != placed {
		t.Errorf("%d of %d placed reservations' owners bound on their node", onNode, placed)
	}
}
