package playground

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/accord-sched/accord/pkg/simload"
)

func TestSimulatedUsage(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	node := func(name, baseline string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if baseline != "" {
			n.Annotations = map[string]string{BaselineUsageAnnotation: baseline}
		}
		return n
	}
	requests := func(cpu, memory string) corev1.ResourceRequirements {
		rl := corev1.ResourceList{}
		if cpu != "" {
			rl[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if memory != "" {
			rl[corev1.ResourceMemory] = resource.MustParse(memory)
		}
		return corev1.ResourceRequirements{Requests: rl}
	}
	pod := func(name, nodeName string, phase corev1.PodPhase, containers ...corev1.Container) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: containers}, Status: corev1.PodStatus{Phase: phase}}
	}
	for _, o := range []any{
		node("hot", `{"cpu":"7","memory":"20Gi"}`),
		node("plain", ""),
		node("broken", `{"cpu":`),
	} {
		if err := nodes.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []any{
		pod("a", "hot", corev1.PodRunning,
			corev1.Container{Name: "app", Resources: requests("500m", "1Gi")},
			corev1.Container{Name: "side", Resources: requests("", "")}),
		pod("b", "plain", corev1.PodRunning, corev1.Container{Name: "app", Resources: requests("250m", "")}),
		pod("pending", "", corev1.PodPending, corev1.Container{Name: "app", Resources: requests("1", "1Gi")}),
		pod("done", "hot", corev1.PodSucceeded, corev1.Container{Name: "app", Resources: requests("1", "1Gi")}),
		pod("c", "broken", corev1.PodRunning, corev1.Container{Name: "app", Resources: requests("1", "1Gi")}),
		annotatedPod(pod("under", "plain", corev1.PodRunning,
			corev1.Container{Name: "app", Resources: requests("100m", "64Mi")},
			corev1.Container{Name: "side", Resources: requests("50m", "")}), `{"cpu":"1"}`),
		annotatedPod(pod("bad", "plain", corev1.PodRunning, corev1.Container{Name: "app", Resources: requests("10m", "")}), `{"cpu":"-1"}`),
	} {
		if err := pods.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	u := &simulatedUsage{logger: logger, nodes: corelisters.NewNodeLister(nodes), pods: corelisters.NewPodLister(pods)}
	gotNodes, gotPods := u.Usage()

	// A node reports its baseline + its running pods' requests; a node whose annotation does not
	// parse is left out, never reported as zero.
	// "under" uses its annotated 1 CPU (on its first container) and its 64Mi of requested memory;
	// "bad"'s annotation is rejected, so it uses its requests.
	wantNodes := map[string]string{"hot": "7500m/21Gi", "plain": "1260m/64Mi"}
	if len(gotNodes) != len(wantNodes) {
		t.Fatalf("nodes %v, want %v", gotNodes, wantNodes)
	}
	for name, want := range wantNodes {
		rl := gotNodes[name]
		if got := rl.Cpu().String() + "/" + rl.Memory().String(); got != want {
			t.Errorf("node %s: usage %s, want %s", name, got, want)
		}
	}
	// Running pods report each container's requests, both resources always present.
	wantPods := map[string]map[string]string{"a": {"app": "500m/1Gi", "side": "0/0"}, "b": {"app": "250m/0"}, "c": {"app": "1/1Gi"},
		"under": {"app": "1/64Mi", "side": "0/0"}, "bad": {"app": "10m/0"}}
	if len(gotPods) != len(wantPods) {
		t.Fatalf("pods %v, want %v", gotPods, wantPods)
	}
	for name, containers := range wantPods {
		got := gotPods[types.NamespacedName{Namespace: "ns", Name: name}]
		if len(got) != len(containers) {
			t.Fatalf("pod %s: containers %v, want %v", name, got, containers)
		}
		for _, c := range got {
			if s := c.Usage.Cpu().String() + "/" + c.Usage.Memory().String(); s != containers[c.Name] {
				t.Errorf("pod %s container %s: usage %s, want %s", name, c.Name, s, containers[c.Name])
			}
		}
	}
}

func annotatedPod(p *corev1.Pod, usage string) *corev1.Pod {
	p.Annotations = map[string]string{simload.UsageAnnotation: usage}
	return p
}
