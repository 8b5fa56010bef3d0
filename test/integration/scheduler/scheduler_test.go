package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

const (
	exMem corev1.ResourceName = "example.com/memory"
	exSSD corev1.ResourceName = "example.com/ssd"
)

// requeueDeadline is how soon after the CR update the pending pod must be bound: far inside the
// scheduler's 5-minute flush of unschedulable pods, so only the QueueingHint can explain it.
const requeueDeadline = 2 * time.Second

// TestTutorialScenario is the NodeCRDResourceFit tutorial: six nodes, two of which enable
// example.com/memory through their ClusterScopedResource, with scores 55 and 80.
func TestTutorialScenario(t *testing.T) {
	// Every node can hold the extended resources, so only the CRs tell the nodes apart.
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		exMem:                 resource.MustParse("64Gi"),
		exSSD:                 resource.MustParse("10"),
	}
	nodes := testNodes(t, "tut", alloc, 6)
	off := map[corev1.ResourceName]bool{exMem: false}
	createCR(t, nodes[0], off, nil)
	createCR(t, nodes[1], map[corev1.ResourceName]bool{exMem: true}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 55})
	third := createCR(t, nodes[2], off, nil)
	createCR(t, nodes[3], off, nil)
	createCR(t, nodes[4], map[corev1.ResourceName]bool{exMem: true}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 80})
	// nodes[5] has no ClusterScopedResource at all.
	enabled := map[string]bool{nodes[1]: true, nodes[4]: true}

	ns := env.CreateNamespace(t, "tutorial")
	startScheduler(t)

	mem := corev1.ResourceList{exMem: resource.MustParse("100Mi")}
	createPod(t, ns, "nginx", mem)
	if got := waitBound(t, ns, "nginx", 60*time.Second); got != nodes[4] {
		t.Fatalf("nginx bound to %s, want %s (the node whose CR scores example.com/memory 80)", got, nodes[4])
	}

	// Pods requesting the resource land only on the two nodes that enable it. Each is pinned to one
	// node in turn, so every node is really tried: only the two enabling nodes take their pod.
	for i, node := range nodes {
		name := fmt.Sprintf("pinned-%d", i)
		createPod(t, ns, name, mem, onNode(node))
		if enabled[node] {
			if got := waitBound(t, ns, name, 30*time.Second); got != node {
				t.Errorf("%s bound to %s, want %s", name, got, node)
			}
			continue
		}
		want := "do not enable resource example.com/memory"
		if node == nodes[5] {
			want = "have no ClusterScopedResource"
		}
		waitFailedScheduling(t, ns, name, want)
	}
	for i := range 4 {
		name := fmt.Sprintf("free-%d", i)
		createPod(t, ns, name, mem)
		if got := waitBound(t, ns, name, 30*time.Second); !enabled[got] {
			t.Errorf("%s bound to %s, which does not enable example.com/memory", name, got)
		}
	}

	// A pod that also needs example.com/ssd fits nowhere, and the event says why.
	both := corev1.ResourceList{exMem: resource.MustParse("100Mi"), exSSD: resource.MustParse("1")}
	createPod(t, ns, "needs-ssd", both)
	note := waitFailedScheduling(t, ns, "needs-ssd", "do not enable resource example.com/ssd")
	t.Logf("FailedScheduling: %s", note)

	// Enabling both resources on the third node's CR must get it bound, fast.
	third.Spec.ResourcesFilter = map[corev1.ResourceName]bool{exMem: true, exSSD: true}
	third.Spec.ResourcesScore = map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 60, exSSD: 60}
	start := time.Now()
	if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Update(context.Background(), third, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating the third node's CR: %v", err)
	}
	got := waitBound(t, ns, "needs-ssd", 30*time.Second)
	elapsed := time.Since(start)
	if got != nodes[2] {
		t.Fatalf("needs-ssd bound to %s, want %s", got, nodes[2])
	}
	t.Logf("needs-ssd bound %v after the CR update", elapsed)
	if elapsed > requeueDeadline {
		t.Fatalf("needs-ssd bound %v after the CR update, want within %v", elapsed, requeueDeadline)
	}
}

// TestLoadAwareScenario: a node at 95% CPU is avoided under 80% thresholds, and a pod that only fits
// there is bound once the node's NodeMetric drops.
func TestLoadAwareScenario(t *testing.T) {
	nodes := testNodes(t, "load", nil, 3) // 4 CPU, 16Gi each
	hot := nodes[0]
	cpuAndMem := map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true}
	for _, n := range nodes {
		createCR(t, n, cpuAndMem, map[corev1.ResourceName]schedv1alpha1.ResourceScore{corev1.ResourceCPU: 50, corev1.ResourceMemory: 50})
	}
	setNodeMetric(t, hot, "3800m", "2Gi") // 95% CPU
	setNodeMetric(t, nodes[1], "1", "4Gi")
	setNodeMetric(t, nodes[2], "2", "4Gi")

	ns := env.CreateNamespace(t, "loadaware")
	startScheduler(t)

	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	ours := map[string]bool{}
	for _, n := range nodes {
		ours[n] = true
	}
	for i := range 6 {
		name := fmt.Sprintf("web-%d", i)
		// Keep the pods on this test's nodes.
		createPod(t, ns, name, req, func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "accord.test/node", Operator: corev1.NodeSelectorOpIn, Values: nodes}},
				}}},
			}}
		})
		got := waitBound(t, ns, name, 60*time.Second)
		if got == hot {
			t.Errorf("%s bound to the node at 95%% CPU", name)
		}
		if !ours[got] {
			t.Errorf("%s bound to %s, not one of this test's nodes", name, got)
		}
	}

	createPod(t, ns, "only-hot", req, onNode(hot))
	note := waitFailedScheduling(t, ns, "only-hot", "over their cpu usage threshold")
	if !strings.Contains(note, "1 node(s) are over their cpu usage threshold") {
		t.Errorf("event %q does not count the hot node", note)
	}

	start := time.Now()
	setNodeMetric(t, hot, "1", "2Gi")
	if got := waitBound(t, ns, "only-hot", 30*time.Second); got != hot {
		t.Fatalf("only-hot bound to %s, want %s", got, hot)
	}
	elapsed := time.Since(start)
	t.Logf("only-hot bound %v after the NodeMetric dropped", elapsed)
	if elapsed > requeueDeadline {
		t.Fatalf("only-hot bound %v after the NodeMetric dropped, want within %v", elapsed, requeueDeadline)
	}
}
