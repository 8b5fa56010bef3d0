package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

const (
	numNodes    = 5000
	podsPerNode = 20
	numNS       = 100
	numOwners   = 1000
	zones       = 10
)

// benchNow anchors pod ages and metric times; the plugins under test use the real clock.
var benchNow = time.Now()

// synthetic builds a cluster with a realistic sprinkling of everything the plugins look for: about
// 2% tainted nodes, 1% pods whose node affinity no longer holds, 5% pods with hostname
// anti-affinity, 10% with a zone spread constraint, some duplicates, crash loops, old and failed
// pods, ClusterScopedResources for every node (1% not enabling what their pods use) and NodeMetrics
// (3% hot).
func synthetic() (objs, crs []runtime.Object) {
	r := rand.New(rand.NewPCG(1, 2))
	alloc := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "example.com/memory": resource.MustParse("1000"),
	}
	for i := range numNS {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", i), Labels: map[string]string{"team": fmt.Sprint(i % 7)}}})
	}
	for n := range numNodes {
		name := fmt.Sprintf("node-%05d", n)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, "zone": fmt.Sprintf("z%d", n%zones), "pool": fmt.Sprint(n % 3)}},
			Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}
		if r.IntN(100) < 2 {
			node.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}}
		}
		objs = append(objs, node)
		csr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: schedv1alpha1.ClusterScopedResourceSpec{
			ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true, "example.com/memory": r.IntN(100) != 0},
			ResourcesScore:  map[corev1.ResourceName]schedv1alpha1.ResourceScore{"example.com/memory": schedv1alpha1.ResourceScore(r.IntN(100))},
		}}
		crs = append(crs, csr)
		cpu := 8000 + r.Int64N(12000)
		if r.IntN(100) < 3 {
			cpu = 29000 + r.Int64N(3000)
		}
		m := &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: slov1alpha1.NodeMetricStatus{
			UpdateTime: &metav1.Time{Time: benchNow.Add(-30 * time.Second)},
			NodeUsage:  corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpu, resource.DecimalSI), corev1.ResourceMemory: resource.MustParse("40Gi")},
		}}
		for k := range podsPerNode {
			g := n*podsPerNode + k
			// Each owner's 100 pods land on 100 nodes spread over all zones.
			owner := (n*7 + k*131) % numOwners
			if r.IntN(100) == 0 {
				owner = (n*7 + ((k+1)%podsPerNode)*131) % numOwners // a duplicate of a neighbour
			}
			ns := fmt.Sprintf("ns-%d", owner%numNS)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: fmt.Sprintf("p-%d", g), UID: types.UID(fmt.Sprintf("uid-%d", g)),
					Labels:            map[string]string{"app": fmt.Sprintf("app-%d", owner), "tier": "stateless"},
					CreationTimestamp: metav1.NewTime(benchNow.Add(-time.Duration(r.IntN(48*3600)) * time.Second)),
					OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: fmt.Sprintf("rs-%d", owner), UID: types.UID(fmt.Sprintf("rs-%d", owner)), Controller: ptr.To(true)}},
				},
				Spec: corev1.PodSpec{
					NodeName: name, Priority: ptr.To(int32(r.IntN(3) * 1000)),
					Containers: []corev1.Container{{Name: "c", Image: fmt.Sprintf("img-%d", owner), Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: *resource.NewMilliQuantity(200+r.Int64N(1000), resource.DecimalSI), corev1.ResourceMemory: resource.MustParse("1Gi"),
					}}}},
				},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: int32(r.IntN(3))}}},
			}
			switch x := r.IntN(1000); {
			case x < 10: // node affinity that no longer holds
				pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{fmt.Sprint((n + 1) % 3)}}}}}}}}
			case x < 60: // hostname anti-affinity against its own app
				pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pod.Labels["app"]}}, TopologyKey: corev1.LabelHostname}}}}
			case x < 160: // zone spread
				pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pod.Labels["app"]}}}}
			case x < 165: // crash loop
				pod.Status.ContainerStatuses[0].RestartCount = 50
				pod.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
			case x < 170:
				pod.Status.Phase = corev1.PodFailed
				pod.Status.Reason = "NodeAffinity"
			case x < 180: // uses the Accord resource
				pod.Spec.Containers[0].Resources.Requests["example.com/memory"] = resource.MustParse("1")
			}
			objs = append(objs, pod)
			m.Status.PodsUsage = append(m.Status.PodsUsage, slov1alpha1.PodUsage{Namespace: ns, Name: pod.Name,
				Usage: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpu/podsPerNode, resource.DecimalSI)}})
		}
		crs = append(crs, m)
	}
	return objs, crs
}
