package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	"github.com/accord-sched/accord/test/harness"
)

// cluster is a control plane holding the package's population, with unthrottled clients for the
// test and a kubeconfig for the binaries.
type cluster struct {
	client     kubernetes.Interface
	accord     accordclient.Interface
	kubeconfig string
}

// population is the kind of cluster a test builds: what its nodes, their ClusterScopedResources and
// NodeMetrics, and its pods look like.
type population int

const (
	// heterogeneous is the cluster users run, and the one every figure is read on first: CR scores
	// that differ from node to node, 30% of the nodes over a LoadAware threshold (a fifth over cpu,
	// a tenth over memory) and 1% with a stale NodeMetric, 2% control-plane-like nodes (tainted
	// NoSchedule, no CR), a tenth of the nodes with a PreferNoSchedule taint; pods of four shapes
	// owned by ReplicaSets (60%), StatefulSets (25%, required anti-affinity on the hostname) and Jobs
	// (15%), a third of the ReplicaSets spread over zones (DoNotSchedule) and the others over hosts
	// (ScheduleAnyway), tolerations on the Jobs and on half the ReplicaSets; a few bound pods with
	// many restarts. While a scheduler runs, each node's NodeMetric is updated once per report
	// interval (60 s) and one node's CR changes every 5 s (see churn).
	heterogeneous population = iota
	// uniform is issue #10's population: every node alike (one CR score, usage under the thresholds)
	// and identical pods of ReplicaSets without affinity, spread or tolerations.
	uniform
)

func (p population) String() string {
	if p == uniform {
		return "uniform"
	}
	return "heterogeneous"
}

// parsePopulations parses a comma-separated list of population names.
func parsePopulations(v string) ([]population, error) {
	var out []population
	for _, name := range strings.Split(v, ",") {
		switch strings.TrimSpace(name) {
		case "heterogeneous":
			out = append(out, heterogeneous)
		case "uniform":
			out = append(out, uniform)
		default:
			return nil, fmt.Errorf("population %q: want heterogeneous or uniform", name)
		}
	}
	return out, nil
}

// Node i's place in the heterogeneous population (the uniform one has none of these).
func (p population) controlPlane(i int) bool { return p == heterogeneous && i%50 == 49 }
func (p population) preferNoSchedule(i int) bool {
	return p == heterogeneous && i%10 == 3
}
func (p population) overCPU(i int) bool    { return p == heterogeneous && i%5 == 2 }
func (p population) overMemory(i int) bool { return p == heterogeneous && i%10 == 6 }
func (p population) staleMetric(i int) bool {
	return p == heterogeneous && i%100 == 41
}

// crScores are node i's ClusterScopedResource scores for cpu and memory (the uniform population: 50).
func (p population) crScores(i int) (cpu, memory int64) {
	if p == uniform {
		return 50, 50
	}
	return 10 + int64(i*37%81), 10 + int64(i*53%81)
}

// startCluster starts a control plane (no controllers, no node simulator: nothing but the binaries
// measured acts on the population), stopped when the test ends, and creates nodes nodes of the
// population with their ClusterScopedResources and NodeMetrics.
func startCluster(t *testing.T, ctx context.Context, pop population, nodes int) cluster {
	t.Helper()
	env, err := harness.Start(ctx, harness.Options{WithoutControllers: true, WithoutNodeSimulator: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	// The population is created unthrottled.
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 20000, 20000
	crCfg := env.CRConfig()
	crCfg.QPS, crCfg.Burst = 20000, 20000
	c := cluster{
		client:     kubernetes.NewForConfigOrDie(cfg),
		accord:     accordclient.NewForConfigOrDie(crCfg),
		kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"),
	}
	if err := env.WriteKubeconfig(c.kubeconfig); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := createNodes(ctx, c.client, c.accord, nil, pop, nodes); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d nodes (%s) with ClusterScopedResources and NodeMetrics created in %s", nodes, pop, time.Since(start).Round(time.Millisecond))
	return c
}

// workers is how many requests the population is created with concurrently.
const workers = 32

// parallel runs fn(i) for i in [0, n) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func nodeName(i int) string { return fmt.Sprintf("scale-node-%05d", i) }

// Node shape: 8 CPUs, 32 GiB, 110 pods, Ready.
var nodeAllocatable = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("8"),
	corev1.ResourceMemory: resource.MustParse("32Gi"),
	corev1.ResourcePods:   resource.MustParse("110"),
}

const (
	controlPlaneTaint = "node-role.kubernetes.io/control-plane"
	spotTaint         = "example.com/spot"
)

// createNodes creates n Ready nodes of the population, each (but the control-plane-like ones) with
// a ClusterScopedResource enabling cpu and memory, and each with a NodeMetric. With a node
// simulator (sim not nil) the nodes are its simulated nodes: it keeps them Ready, runs the pods
// bound to them and finishes their terminating pods.
func createNodes(ctx context.Context, client kubernetes.Interface, accord accordclient.Interface, sim *harness.NodeSimulator, pop population, n int) error {
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		name := nodeName(i)
		now := metav1.Now()
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				corev1.LabelHostname: name, corev1.LabelOSStable: "linux",
				corev1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3),
			}},
			Status: corev1.NodeStatus{
				Capacity: nodeAllocatable.DeepCopy(), Allocatable: nodeAllocatable.DeepCopy(),
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
					LastHeartbeatTime: now, LastTransitionTime: now, Reason: "KubeletReady"}},
				NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.3", OperatingSystem: "linux", Architecture: "amd64"},
			},
		}
		if pop.controlPlane(i) {
			node.Labels[controlPlaneTaint] = ""
			node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: controlPlaneTaint, Effect: corev1.TaintEffectNoSchedule})
		}
		if pop.preferNoSchedule(i) {
			node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: spotTaint, Value: "true", Effect: corev1.TaintEffectPreferNoSchedule})
		}
		create := func(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
			return client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		}
		if sim != nil {
			create = sim.AddNode
		}
		if _, err := create(ctx, node); err != nil {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
		if !pop.controlPlane(i) {
			cpu, memory := pop.crScores(i)
			cr := &schedv1alpha1.ClusterScopedResource{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: schedv1alpha1.ClusterScopedResourceSpec{
					ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true},
					ResourcesScore:  map[corev1.ResourceName]schedv1alpha1.ResourceScore{corev1.ResourceCPU: schedv1alpha1.ResourceScore(cpu), corev1.ResourceMemory: schedv1alpha1.ResourceScore(memory)},
				},
			}
			if _, err := accord.SchedulingV1alpha1().ClusterScopedResources().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating ClusterScopedResource %s: %w", name, err)
			}
		}
		if _, err := accord.SloV1alpha1().NodeMetrics().Create(ctx, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating NodeMetric %s: %w", name, err)
		}
		return nil
	})
}

// nodeUsage is node i's measured usage: 1 to 4 CPUs of 8 and 4 to 12 GiB of 32, varied by node, all
// under LoadAware's 80%; in the heterogeneous population 7 CPUs (87.5%) on the nodes over cpu and
// 28 GiB on those over memory.
func (p population) nodeUsage(i int) corev1.ResourceList {
	cpu := resource.NewMilliQuantity(int64(1000+(i*37)%3000), resource.DecimalSI)
	memory := resource.NewQuantity(int64(4+(i*7)%8)<<30, resource.BinarySI)
	if p.overCPU(i) {
		cpu = resource.NewMilliQuantity(7000, resource.DecimalSI)
	}
	if p.overMemory(i) {
		memory = resource.NewQuantity(28<<30, resource.BinarySI)
	}
	return corev1.ResourceList{corev1.ResourceCPU: *cpu, corev1.ResourceMemory: *memory}
}

// nodeMetricPatch is the status merge patch that reports node i's usage at updateTime.
func (p population) nodeMetricPatch(i int, updateTime time.Time) ([]byte, error) {
	return json.Marshal(map[string]any{"status": map[string]any{
		"updateTime": metav1.NewTime(updateTime), "nodeUsage": p.nodeUsage(i)}})
}

// refreshNodeMetrics writes node i's usage into the NodeMetric of each of the n nodes, with
// updateTime now, or (a stale metric) ten minutes ago, past LoadAware's 180 s expiry.
func refreshNodeMetrics(ctx context.Context, accord accordclient.Interface, pop population, n int) error {
	client := accord.SloV1alpha1().NodeMetrics()
	now := time.Now()
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		at := now
		if pop.staleMetric(i) {
			at = now.Add(-10 * time.Minute)
		}
		patch, err := pop.nodeMetricPatch(i, at)
		if err != nil {
			return err
		}
		if _, err := client.Patch(ctx, nodeName(i), types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("updating NodeMetric %s status: %w", nodeName(i), err)
		}
		return nil
	})
}

// metricInterval is the report interval of the heterogeneous population's NodeMetrics: each node's
// is updated once per interval while a scheduler runs (5000 nodes: 83 updates/s).
const metricInterval = 60 * time.Second

// crChangeInterval is how often churn changes one node's ClusterScopedResource scores.
const crChangeInterval = 5 * time.Second

// churnCounts is what churn wrote.
type churnCounts struct {
	metrics, crs int
	err          error
}

// churn, for the heterogeneous population (nothing for the uniform one), updates the NodeMetric
// status of the n nodes (but the stale ones), one node at a time, each node once per metricInterval,
// and every crChangeInterval the cpu score of one node's ClusterScopedResource, until stop is
// closed; it then returns what it wrote on the channel.
func churn(ctx context.Context, accord accordclient.Interface, pop population, n int, stop <-chan struct{}) <-chan churnCounts {
	out := make(chan churnCounts, 1)
	if pop != heterogeneous {
		out <- churnCounts{}
		return out
	}
	go func() {
		var c churnCounts
		defer func() { out <- c }()
		metrics := time.NewTicker(metricInterval / time.Duration(n))
		defer metrics.Stop()
		crs := time.NewTicker(crChangeInterval)
		defer crs.Stop()
		// Updates go out on four goroutines, so one slow response does not hold the rate back.
		work := make(chan func() error, 64)
		errs := make(chan error, 4)
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var first error
				for fn := range work {
					if err := fn(); err != nil && first == nil {
						first = err
					}
				}
				errs <- first
			}()
		}
		next, nextCR := 0, 0
		for running := true; running; {
			select {
			case <-stop:
				running = false
			case <-ctx.Done():
				running = false
			case <-metrics.C:
				for pop.staleMetric(next % n) {
					next++
				}
				i := next % n
				next++
				c.metrics++
				work <- func() error {
					patch, err := pop.nodeMetricPatch(i, time.Now())
					if err != nil {
						return err
					}
					_, err = accord.SloV1alpha1().NodeMetrics().Patch(ctx, nodeName(i), types.MergePatchType, patch, metav1.PatchOptions{}, "status")
					return err
				}
			case <-crs.C:
				i := (nextCR * 7919) % n
				if pop.controlPlane(i) {
					i = (i + 1) % n
				}
				nextCR++
				c.crs++
				score := 10 + (nextCR*31)%81
				work <- func() error {
					patch := []byte(fmt.Sprintf(`{"spec":{"resourcesScore":{"cpu":%d}}}`, score))
					_, err := accord.SchedulingV1alpha1().ClusterScopedResources().Patch(ctx, nodeName(i), types.MergePatchType, patch, metav1.PatchOptions{})
					return err
				}
			}
		}
		close(work)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && c.err == nil && ctx.Err() == nil {
				c.err = err
			}
		}
	}()
	return out
}

// disableMemory makes the ClusterScopedResource of node i stop offering memory: its pods then
// violate NodeCRDResourceFit.
func disableMemory(ctx context.Context, accord accordclient.Interface, i int) error {
	client := accord.SchedulingV1alpha1().ClusterScopedResources()
	cr, err := client.Get(ctx, nodeName(i), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("ClusterScopedResource %s: %w", nodeName(i), err)
	}
	cr.Spec.ResourcesFilter[corev1.ResourceMemory] = false
	if _, err := client.Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating ClusterScopedResource %s spec.resourcesFilter: %w", nodeName(i), err)
	}
	return nil
}

// podShapes are the heterogeneous population's container requests (cpu, memory); their mean is
// about the uniform population's 100m and 500Mi, so the nodes hold as many pods.
var podShapes = [][2]string{{"100m", "500Mi"}, {"50m", "256Mi"}, {"200m", "512Mi"}, {"50m", "750Mi"}}

// podTemplate is pod i of the population, in group i/10 (ten pods per owner; the owners themselves
// are not created: no controller runs). Uniform: scheduler_perf's default pod shape (one container
// requesting 100m CPU and 500Mi) owned by ReplicaSet rs-<group>, which the descheduler's
// DefaultEvictor treats as evictable. Heterogeneous: see the population's description.
func (p population) podTemplate(ns, name, schedulerName string, i int) *corev1.Pod {
	ctrl := true
	g := i / 10
	kind, owner, shape := "ReplicaSet", fmt.Sprintf("rs-%05d", g), podShapes[0]
	if p == heterogeneous {
		switch k := g % 20; {
		case k >= 17:
			kind, owner = "Job", fmt.Sprintf("job-%05d", g)
		case k >= 12:
			kind, owner = "StatefulSet", fmt.Sprintf("sts-%05d", g)
		}
		shape = podShapes[g%len(podShapes)]
	}
	apiVersion := "apps/v1"
	if kind == "Job" {
		apiVersion = "batch/v1"
	}
	labels := map[string]string{"app": owner}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner,
				UID: types.UID(fmt.Sprintf("00000000-0000-0000-%04d-%012d", g%20, g)), Controller: &ctrl}}},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(shape[0]), corev1.ResourceMemory: resource.MustParse(shape[1])}}}},
		},
	}
	if p == uniform {
		return pod
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": owner}}
	switch kind {
	case "StatefulSet":
		pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: selector, TopologyKey: corev1.LabelHostname}}}}
	case "ReplicaSet":
		if g%3 == 0 {
			pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selector}}
		} else {
			pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
				WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: selector}}
		}
	}
	if kind == "Job" || (kind == "ReplicaSet" && g%2 == 1) {
		pod.Spec.Tolerations = []corev1.Toleration{{Key: spotTaint, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectPreferNoSchedule}}
	}
	return pod
}

// createPendingPods creates n unbound pods of the population for schedulerName in ns.
func createPendingPods(ctx context.Context, client kubernetes.Interface, pop population, ns, schedulerName string, n int) error {
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		p := pop.podTemplate(ns, fmt.Sprintf("pod-%06d", i), schedulerName, i)
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", ns, p.Name, err)
		}
		return nil
	})
}

// boundNodeOf spreads the bound pods unevenly, so LowNodeUtilization has work: every fifth node
// holds four shares of pods (over its 50% target at 20 pods per node on average), the others one
// share (under its 20% threshold).
func boundNodeOf(i, nodes int) int {
	heavy := (nodes + 4) / 5 // nodes 0, 5, 10, ...
	light := nodes - heavy
	// Half the pods on the heavy nodes, half on the light ones.
	if i%2 == 0 || light == 0 {
		return (i / 2 % heavy) * 5
	}
	j := i / 2 % light
	return j/4*5 + j%4 + 1
}

// createBoundPods creates n pods of the population for schedulerName bound to the nodes
// (spec.nodeName set, the ten replicas of an owner on ten different nodes; the pods of a
// control-plane-like node go to the node before it) and Running, as a kubelet would report them;
// no kubelet runs. In the heterogeneous population one pod in 500 has restarted 150 times.
func createBoundPods(ctx context.Context, client kubernetes.Interface, pop population, ns, schedulerName string, n, nodes int) error {
	started := metav1.NewTime(time.Now().Add(-time.Hour))
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		p := pop.podTemplate(ns, fmt.Sprintf("bound-%06d", i), schedulerName, i)
		node := boundNodeOf(i, nodes)
		if pop.controlPlane(node) {
			node--
		}
		p.Spec.NodeName = nodeName(node)
		created, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", ns, p.Name, err)
		}
		var restarts int32
		if pop == heterogeneous && i%500 == 7 {
			restarts = 150
		}
		created.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: started}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "pause", Ready: true, Image: "registry.k8s.io/pause:3.10", RestartCount: restarts,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}}
		if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating pod %s/%s status to Running: %w", ns, p.Name, err)
		}
		return nil
	})
}
