package scale

import (
	"context"
	"fmt"
	"path/filepath"
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

// startCluster starts a control plane (no controllers, no node simulator: nothing but the binaries
// measured acts on the population), stopped when the test ends, and creates nodes nodes with their
// ClusterScopedResources and NodeMetrics.
func startCluster(t *testing.T, ctx context.Context, nodes int) cluster {
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
	if err := createNodes(ctx, c.client, c.accord, nodes); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d nodes with ClusterScopedResources and NodeMetrics created in %s", nodes, time.Since(start).Round(time.Millisecond))
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

// createNodes creates n Ready nodes, each with a ClusterScopedResource enabling cpu and memory
// (scored 50) and a NodeMetric.
func createNodes(ctx context.Context, client kubernetes.Interface, accord accordclient.Interface, n int) error {
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
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
		cr := &schedv1alpha1.ClusterScopedResource{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: schedv1alpha1.ClusterScopedResourceSpec{
				ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true},
				ResourcesScore:  map[corev1.ResourceName]schedv1alpha1.ResourceScore{corev1.ResourceCPU: 50, corev1.ResourceMemory: 50},
			},
		}
		if _, err := accord.SchedulingV1alpha1().ClusterScopedResources().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ClusterScopedResource %s: %w", name, err)
		}
		if _, err := accord.SloV1alpha1().NodeMetrics().Create(ctx, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating NodeMetric %s: %w", name, err)
		}
		return nil
	})
}

// refreshNodeMetrics writes a fresh usage (updateTime now) into the NodeMetric of each of the n
// nodes: 1 to 4 CPUs of 8 and 4 to 12 GiB of 32, varied by node, all under LoadAware's 80%.
func refreshNodeMetrics(ctx context.Context, accord accordclient.Interface, n int) error {
	client := accord.SloV1alpha1().NodeMetrics()
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		m, err := client.Get(ctx, nodeName(i), metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("NodeMetric %s: %w", nodeName(i), err)
		}
		now := metav1.Now()
		m.Status.UpdateTime = &now
		m.Status.NodeUsage = corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(1000+(i*37)%3000), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(4+(i*7)%8)<<30, resource.BinarySI),
		}
		if _, err := client.UpdateStatus(ctx, m, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating NodeMetric %s status: %w", nodeName(i), err)
		}
		return nil
	})
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

// podTemplate is scheduler_perf's default pod shape (one container requesting 100m CPU and 500Mi),
// owned by ReplicaSet rs-<i/10> so the descheduler's DefaultEvictor treats it as evictable (the
// ReplicaSet itself is not created: no controller runs).
func podTemplate(ns, name, schedulerName string, i int) *corev1.Pod {
	ctrl := true
	rs := fmt.Sprintf("rs-%05d", i/10)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": rs},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
				UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i/10)), Controller: &ctrl}}},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("500Mi")}}}},
		},
	}
}

// createPendingPods creates n unbound pods for schedulerName in ns.
func createPendingPods(ctx context.Context, client kubernetes.Interface, ns, schedulerName string, n int) error {
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		p := podTemplate(ns, fmt.Sprintf("pod-%06d", i), schedulerName, i)
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

// createBoundPods creates n pods of schedulerName bound to the nodes (spec.nodeName set, the ten
// replicas of a ReplicaSet on ten different nodes) and Running, as a kubelet would report them; no
// kubelet runs.
func createBoundPods(ctx context.Context, client kubernetes.Interface, ns, schedulerName string, n, nodes int) error {
	started := metav1.NewTime(time.Now().Add(-time.Hour))
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		p := podTemplate(ns, fmt.Sprintf("bound-%06d", i), schedulerName, i)
		p.Spec.NodeName = nodeName(boundNodeOf(i, nodes))
		created, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", ns, p.Name, err)
		}
		created.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: started}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "pause", Ready: true, Image: "registry.k8s.io/pause:3.10",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}}
		if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating pod %s/%s status to Running: %w", ns, p.Name, err)
		}
		return nil
	})
}
