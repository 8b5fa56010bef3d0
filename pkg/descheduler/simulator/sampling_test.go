package simulator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// TestSamplingMatchesKubeScheduler pins the simulator's copy of kube-scheduler's node sampling
// (filter, numFeasibleNodesToFind and the rotating start index, which kube-scheduler does not
// export) to kube-scheduler itself. On randomised clusters (sizes around the 100-node floor and
// up to thousands, random percentageOfNodesToScore, a random share of nodes that fail Filter) it
// places the same sequence of pods with the simulator and with a real kube-scheduler instance built
// by scheduler.New over the same informers, and compares, pod by pod, how many nodes each found
// feasible and evaluated, and the "0/N nodes are available" message when none fits. A Kubernetes
// bump that changes the scheduler's sampling fails here.
func TestSamplingMatchesKubeScheduler(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SAMPLING_SEED"); s != "" {
		if _, err := fmt.Sscan(s, &seed); err != nil {
			t.Fatalf("SAMPLING_SEED: %v", err)
		}
	}
	t.Logf("seed %d (rerun with SAMPLING_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var sizes []int
	for range 2 {
		sizes = append(sizes, 1, 60, 99, 100, 101, 120+rng.IntN(100), 250, 300+rng.IntN(400), 700+rng.IntN(600), 1500+rng.IntN(1500))
	}
	cut := 0
	for i, n := range sizes {
		t.Run(fmt.Sprintf("case%d-%dnodes", i, n), func(t *testing.T) {
			cut += compareSampling(t, rng, n)
		})
	}
	// The comparison is only worth something if the search stopped early (sampling) at times.
	if cut == 0 && !t.Failed() {
		t.Errorf("no prediction stopped its search before evaluating every node")
	}
}

// compareSampling compares the simulator with kube-scheduler on one random cluster of numNodes
// nodes, and returns how many predictions stopped searching before evaluating every node.
func compareSampling(t *testing.T, rng *rand.Rand, numNodes int) int {
	// Global and per-profile percentageOfNodesToScore: unset, adaptive (0) or a percentage.
	percentage := func() string {
		switch rng.IntN(3) {
		case 0:
			return ""
		case 1:
			return "0"
		default:
			return fmt.Sprint(1 + rng.IntN(100))
		}
	}
	doc := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 1\n"
	if p := percentage(); p != "" {
		doc += "percentageOfNodesToScore: " + p + "\n"
	}
	doc += "profiles:\n- schedulerName: default-scheduler\n"
	if p := percentage(); p != "" {
		doc += "  percentageOfNodesToScore: " + p + "\n"
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("configuration:\n%s", doc)

	// Nodes: a random share tainted (TaintToleration rejects them), mostly small, or too small for
	// some pods.
	infeasibleShare := rng.Float64() * 0.3
	if rng.IntN(4) == 0 {
		infeasibleShare = rng.Float64()
	}
	var objs []runtime.Object
	for i := range numNodes {
		n := node(fmt.Sprintf("n%05d", i), fmt.Sprint(1+rng.IntN(8)))
		if rng.Float64() < infeasibleShare {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "other", Effect: corev1.TaintEffectNoSchedule}}
		}
		objs = append(objs, n)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	defer cancel()

	sim, err := New(ctx, Options{Config: cfg, Client: client, InformerFactory: factory, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamicinformer.NewDynamicSharedInformerFactory(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), 0)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	defer broadcaster.Shutdown()
	pct := cfg.PercentageOfNodesToScore
	sched, err := scheduler.New(ctx, client, factory, dyn, profile.NewRecorderFactory(broadcaster),
		scheduler.WithProfiles(cfg.Profiles...), scheduler.WithParallelism(1), scheduler.WithPercentageOfNodesToScore(pct))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	dyn.Start(ctx.Done())
	// Informers stop when ctx ends: cancel it before waiting for them.
	defer func() {
		cancel()
		factory.Shutdown()
		dyn.Shutdown()
	}()
	factory.WaitForCacheSync(ctx.Done())
	if err := sim.BeginCycle(ctx); err != nil {
		t.Fatal(err)
	}
	defer sim.EndCycle(ctx)
	fw := sched.Profiles[DefaultSchedulerName]
	snapshot, ok := fw.SnapshotSharedLister().(*internalcache.Snapshot)
	if !ok {
		t.Fatalf("kube-scheduler's snapshot is a %T", fw.SnapshotSharedLister())
	}
	deadline := time.Now().Add(30 * time.Second)
	for sched.Cache.NodeCount() != numNodes {
		if time.Now().After(deadline) {
			t.Fatalf("kube-scheduler's cache has %d nodes, want %d", sched.Cache.NodeCount(), numNodes)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := sched.Cache.UpdateSnapshot(klog.Background(), snapshot); err != nil {
		t.Fatal(err)
	}

	cut := 0
	for i := range 12 {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprintf("uid-p%d", i))},
			Spec: corev1.PodSpec{
				SchedulerName: DefaultSchedulerName,
				Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(fmt.Sprintf("%dm", podMilliCPU(rng)))}}}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodPending},
		}
		if rng.IntN(4) == 0 {
			// NodeAffinity's PreFilter narrows the nodes to a few named ones.
			var names []string
			for range 1 + rng.IntN(5) {
				names = append(names, fmt.Sprintf("n%05d", rng.IntN(numNodes)))
			}
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: names}},
				}}},
			}}
		}
		pred, err := sim.Predict(ctx, p)
		if err != nil {
			t.Fatalf("pod %d: Predict: %v", i, err)
		}
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		res, err := sched.SchedulePod(ctx, fw, framework.NewCycleState(), &framework.QueuedPodInfo{PodInfo: pi})
		if fitErr, ok := err.(*framework.FitError); ok {
			if pred.Feasible {
				t.Fatalf("pod %d: kube-scheduler finds no node (%v); the simulator predicts %+v", i, fitErr, pred)
			}
			if pred.Reason != fitErr.Error() {
				t.Fatalf("pod %d: simulator's reason %q, kube-scheduler's %q", i, pred.Reason, fitErr.Error())
			}
			continue
		}
		if err != nil {
			t.Fatalf("pod %d: SchedulePod: %v", i, err)
		}
		if res.EvaluatedNodes < numNodes && p.Spec.Affinity == nil {
			cut++
		}
		t.Logf("pod %d: simulator %d feasible of %d evaluated; kube-scheduler %d of %d", i, pred.FeasibleNodes, pred.EvaluatedNodes, res.FeasibleNodes, res.EvaluatedNodes)
		if !pred.Feasible || pred.FeasibleNodes != res.FeasibleNodes || pred.EvaluatedNodes != res.EvaluatedNodes {
			t.Fatalf("pod %d: simulator found %d feasible of %d evaluated (feasible %v); kube-scheduler %d of %d (placing on %s)",
				i, pred.FeasibleNodes, pred.EvaluatedNodes, pred.Feasible, res.FeasibleNodes, res.EvaluatedNodes, res.SuggestedHost)
		}
	}
	return cut
}

// podMilliCPU is a pod's CPU request: mostly small (fits most nodes), sometimes large.
func podMilliCPU(rng *rand.Rand) int {
	if rng.IntN(4) == 0 {
		return 100 + rng.IntN(6000)
	}
	return 100 + rng.IntN(900)
}
