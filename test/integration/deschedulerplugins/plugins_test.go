package deschedulerplugins

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/test/harness"
)

func zone(name, z string) harness.NodeSpec {
	return harness.NodeSpec{Name: name, Labels: map[string]string{"zone": z}}
}

func TestRemoveDuplicates(t *testing.T) {
	c := newCluster(t, "dups", zone("n0", "a"), zone("n1", "a"), zone("n2", "a"))
	var pods []*corev1.Pod
	for i := range 4 {
		pods = append(pods, c.pod(fmt.Sprintf("web-%d", i), "n0"))
	}
	pods = append(pods, c.pod("web-4", "n1"))
	c.runPolicy("removeduplicates.yaml")
	// 5 pods over 3 nodes: at most 2 per node, so 2 of the 4 on n0 go.
	if got := c.evicted(pods...); len(got) != 2 || slices.Contains(got, "web-4") {
		t.Fatalf("evicted %v, want two of web-0..3", got)
	}
}

func TestRemovePodsViolatingNodeAffinity(t *testing.T) {
	c := newCluster(t, "nodeaff", zone("a", "a"), zone("b", "b"))
	require := func(z string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}}}}}
		}
	}
	wrong := c.pod("wants-b", "a", require("b"), labels("movable", "true"))
	right := c.pod("wants-a", "a", require("a"), labels("movable", "true"))
	unlabelled := c.pod("wants-b-unlabelled", "a", require("b"))
	c.runPolicy("removepodsviolatingnodeaffinity.yaml", `- "default"`, "- "+c.ns)
	c.expect(c.evicted(wrong, right, unlabelled), "wants-b")
}

func TestRemovePodsViolatingNodeTaints(t *testing.T) {
	tainted := harness.NodeSpec{Name: "t", Taints: []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}}
	excluded := harness.NodeSpec{Name: "x", Taints: []corev1.Taint{{Key: "reserved", Value: "yes", Effect: corev1.TaintEffectNoSchedule}}}
	c := newCluster(t, "taints", tainted, excluded, harness.NodeSpec{Name: "free"})
	plain := c.pod("plain", "t")
	tolerating := c.pod("tolerating", "t", func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	})
	onExcluded := c.pod("on-excluded", "x")
	c.runPolicy("removepodsviolatingnodetaints.yaml")
	c.expect(c.evicted(plain, tolerating, onExcluded), "plain")
}

func TestRemovePodsViolatingInterPodAntiAffinity(t *testing.T) {
	c := newCluster(t, "antiaff", zone("n0", "a"), zone("n1", "a"))
	db := c.pod("db", "n0", labels("app", "db"))
	web := c.pod("web", "n0", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: corev1.LabelHostname}}}}
	})
	c.runPolicy("removepodsviolatinginterpodantiaffinity.yaml")
	c.expect(c.evicted(db, web), "web")
}

func TestRemovePodsViolatingTopologySpreadConstraint(t *testing.T) {
	c := newCluster(t, "spread", zone("a", "a"), zone("b", "b"), zone("c", "c"))
	spread := func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone",
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	}
	var pods []*corev1.Pod
	for i := range 4 {
		pods = append(pods, c.pod(fmt.Sprintf("web-%d", i), "a", spread))
	}
	pods = append(pods, c.pod("web-b", "b", spread))
	c.runPolicy("removepodsviolatingtopologyspreadconstraint.yaml")
	// 4/1/0 with maxSkew 1: two pods leave zone a (2/2/1).
	if got := c.evicted(pods...); len(got) != 2 || slices.Contains(got, "web-b") {
		t.Fatalf("evicted %v, want two of zone a's pods", got)
	}
}

func TestRemovePodsHavingTooManyRestarts(t *testing.T) {
	c := newCluster(t, "restarts", harness.NodeSpec{Name: "n0"})
	crashing := c.pod("crashing", "n0")
	c.status(crashing, func(s *corev1.PodStatus) {
		s.ContainerStatuses[0].RestartCount = 150
		s.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	})
	restartedButRunning := c.pod("running", "n0")
	c.status(restartedButRunning, func(s *corev1.PodStatus) { s.ContainerStatuses[0].RestartCount = 150 })
	fine := c.pod("fine", "n0")
	c.runPolicy("removepodshavingtoomanyrestarts.yaml")
	c.expect(c.evicted(crashing, restartedButRunning, fine), "crashing")
}

func TestPodLifeTime(t *testing.T) {
	c := newCluster(t, "lifetime", harness.NodeSpec{Name: "n0"})
	old := c.pod("old", "n0")
	time.Sleep(4 * time.Second)
	young := c.pod("young", "n0")
	// The file's 24h and Pending states, shortened so a test can reach them.
	c.runPolicy("podlifetime.yaml", "maxPodLifeTimeSeconds: 86400", "maxPodLifeTimeSeconds: 3", `- "Pending"`, `- "Running"`)
	c.expect(c.evicted(old, young), "old")
}

func TestRemoveFailedPods(t *testing.T) {
	c := newCluster(t, "failed", harness.NodeSpec{Name: "n0"})
	fail := func(p *corev1.Pod, reason string, exit int32) {
		c.status(p, func(s *corev1.PodStatus) {
			s.Phase, s.Reason = corev1.PodFailed, reason
			s.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Error"}}
		})
	}
	affinity := c.pod("affinity", "n0")
	fail(affinity, "NodeAffinity", 1)
	otherReason := c.pod("other-reason", "n0")
	fail(otherReason, "Evicted", 1)
	bare := c.pod("bare", "n0", func(p *corev1.Pod) { p.OwnerReferences = nil })
	fail(bare, "NodeAffinity", 1)
	job := c.pod("job", "n0", func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "Job" })
	fail(job, "NodeAffinity", 1)
	time.Sleep(1100 * time.Millisecond)
	c.runPolicy("removefailedpods.yaml", "minPodLifetimeSeconds: 3600", "minPodLifetimeSeconds: 1")
	// evictFailedBarePods in the file's DefaultEvictor args lets the bare pod go too.
	c.expect(c.evicted(affinity, otherReason, bare, job), "affinity", "bare")
}

func TestLowNodeUtilization(t *testing.T) {
	c := newCluster(t, "lnu", harness.NodeSpec{Name: "busy"}, harness.NodeSpec{Name: "idle"})
	var pods []*corev1.Pod
	for i := range 5 {
		// 5 x 500m on a 4-CPU node: 62.5%, over the 50% target.
		pods = append(pods, c.pod(fmt.Sprintf("p%d", i), "busy", requests("500m")))
	}
	c.runPolicy("lownodeutilization.yaml")
	if got := c.evicted(pods...); len(got) != 1 {
		t.Fatalf("evicted %v, want one pod (62.5%% -> 50%%)", got)
	}
}

func TestHighNodeUtilization(t *testing.T) {
	c := newCluster(t, "hnu", harness.NodeSpec{Name: "sparse"}, harness.NodeSpec{Name: "dense"})
	lonely := c.pod("lonely", "sparse", requests("100m"))
	var dense []*corev1.Pod
	for i := range 4 {
		dense = append(dense, c.pod(fmt.Sprintf("d%d", i), "dense", requests("500m")))
	}
	c.runPolicy("highnodeutilization.yaml")
	c.expect(c.evicted(append(dense, lonely)...), "lonely")
}

const exRes corev1.ResourceName = "example.com/memory"

func crNode(name string) harness.NodeSpec {
	return harness.NodeSpec{Name: name, Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110"), exRes: resource.MustParse("100"),
	}}
}

func (c *cluster) csr(node string, enabled ...corev1.ResourceName) {
	c.t.Helper()
	f := map[corev1.ResourceName]bool{}
	for _, r := range enabled {
		f[r] = true
	}
	csr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: c.node(node)}, Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: f}}
	if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Create(context.Background(), csr, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	name := csr.Name
	c.t.Cleanup(func() {
		_ = env.Accord.SchedulingV1alpha1().ClusterScopedResources().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

func TestNodeCRDResourceFit(t *testing.T) {
	c := newCluster(t, "crfit", crNode("enabled"), crNode("disabled"))
	c.csr("enabled", corev1.ResourceCPU, exRes)
	c.csr("disabled", corev1.ResourceCPU)
	wants := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), exRes: resource.MustParse("1")}
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{exRes: resource.MustParse("1")}
	}
	ok := c.pod("ok", "enabled", wants)
	bad := c.pod("bad", "disabled", wants)
	plain := c.pod("plain", "disabled", requests("100m"))
	c.runPolicy("nodecrdresourcefit.yaml")
	c.expect(c.evicted(ok, bad, plain), "bad")
}

func TestLowNodeLoad(t *testing.T) {
	c := newCluster(t, "load", harness.NodeSpec{Name: "hot"}, harness.NodeSpec{Name: "cool"})
	var pods []*corev1.Pod
	var usage []slov1alpha1.PodUsage
	for i := range 3 {
		p := c.pod(fmt.Sprintf("s%d", i), "hot", labels("tier", "stateless"), requests("100m"))
		pods = append(pods, p)
		usage = append(usage, slov1alpha1.PodUsage{Namespace: c.ns, Name: p.Name, Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}})
	}
	pinned := c.pod("pinned", "hot", requests("100m"))
	// hot: 3.6 of 4 CPUs (90% > 80%); cool: 0.4 (10% <= 40%).
	c.metric("hot", "3600m", usage)
	c.metric("cool", "400m", nil)
	// The file asks for two hot cycles in a row; one cycle here.
	c.runPolicy("lownodeload.yaml", "consecutiveAbnormalities: 2", "consecutiveAbnormalities: 1")
	// One stateless pod (1 CPU) takes the node to 65%, under 80%; the unselected pod stays.
	if got := c.evicted(append(pods, pinned)...); len(got) != 1 || got[0] == "pinned" {
		t.Fatalf("evicted %v, want one stateless pod", got)
	}
}

func (c *cluster) metric(node, cpu string, pods []slov1alpha1.PodUsage) {
	c.t.Helper()
	ctx := context.Background()
	m, err := env.Accord.SloV1alpha1().NodeMetrics().Create(ctx, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: c.node(node)}}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	name := m.Name
	c.t.Cleanup(func() {
		_ = env.Accord.SloV1alpha1().NodeMetrics().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	m.Status = slov1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: time.Now()}, PodsUsage: pods,
		NodeUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}
	if _, err := env.Accord.SloV1alpha1().NodeMetrics().UpdateStatus(ctx, m, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// PodLifeTime with upstream's newer criteria, no maxPodLifeTimeSeconds: a crash-looping pod and an
// OOM-killed one go at any age, a healthy one stays, and ownerKinds keeps the Job's; then exitCodes
// alone picks the OOM-killed pod's 137.
func TestPodLifeTimeTransitions(t *testing.T) {
	c := newCluster(t, "transitions", harness.NodeSpec{Name: "n0"})
	crash := func(s *corev1.PodStatus) {
		s.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	}
	oom := func(s *corev1.PodStatus) {
		s.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}
	}
	crashing, killed, healthy := c.pod("crashing", "n0"), c.pod("killed", "n0"), c.pod("healthy", "n0")
	jobCrashing := c.pod("job-crashing", "n0", func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "Job" })
	c.status(crashing, crash)
	c.status(jobCrashing, crash)
	c.status(killed, oom)
	noConditions := []string{"        conditions:\n        - type: Ready\n          status: \"False\"\n          minTimeSinceLastTransitionSeconds: 600\n", ""}
	c.runPolicy("podlifetime-transitions.yaml", append(noConditions, "        exitCodes: [137]\n", "", `exclude: ["DaemonSet"]`, `exclude: ["Job"]`)...)
	c.expect(c.evicted(crashing, killed, healthy, jobCrashing), "crashing", "killed")

	c2 := newCluster(t, "exitcodes", harness.NodeSpec{Name: "n0"})
	killed2, crashing2 := c2.pod("killed", "n0"), c2.pod("crashing", "n0")
	c2.status(killed2, oom)
	c2.status(crashing2, crash)
	c2.runPolicy("podlifetime-transitions.yaml", append(noConditions, `states: ["CrashLoopBackOff", "OOMKilled"]`, "")...)
	c2.expect(c2.evicted(killed2, crashing2), "killed")
}

// DefaultEvictor's upstream protection fields on the real control plane: only pods of namespaces
// whose labels match namespaceLabelSelector, a claim of a protected storage class keeps its pod,
// another class's does not, and a pod with a ResourceClaim is kept (PodsWithResourceClaims).
func TestDefaultEvictorProtections(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, "protections", harness.NodeSpec{Name: "n0"})
	// The other namespace's node carries this test's node label, so the policy's nodeSelector takes it.
	other := newCluster(t, "unprotected", harness.NodeSpec{Name: "n0", Labels: map[string]string{nsLabel: c.ns}})
	ns, err := env.Client.CoreV1().Namespaces().Get(ctx, c.ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels["team"] = "payments"
	if _, err := env.Client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, class := range map[string]string{"local": "local-path", "net": "ceph"} {
		if _, err := env.Client.CoreV1().PersistentVolumeClaims(c.ns).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(pvc string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc}}}}
		}
	}
	failed := func(c *cluster, p *corev1.Pod) {
		c.status(p, func(s *corev1.PodStatus) {
			s.Phase = corev1.PodFailed
			s.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
		})
	}
	local, net, plain := c.pod("local", "n0", claim("local")), c.pod("net", "n0", claim("net")), c.pod("plain", "n0")
	dra := c.pod("dra", "n0", func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu-claim")}}
	})
	elsewhere := other.pod("elsewhere", "n0")
	for _, p := range []*corev1.Pod{local, net, plain, dra} {
		failed(c, p)
	}
	failed(other, elsewhere)
	c.runPolicy("defaultevictor-protections.yaml")
	c.expect(c.evicted(local, net, plain, dra), "net", "plain")
	other.expect(other.evicted(elsewhere))
}
