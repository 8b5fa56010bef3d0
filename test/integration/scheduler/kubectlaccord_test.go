package scheduler

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/test/harness"
)

// TestKubectlAccord runs the real kubectl-accord binary against the control plane: `nodes` reports
// each node's CR offer and its load verdict, and `why` names the Accord plugin that refused a
// Pending pod (LoadAware for a node over its cpu threshold, NodeCRDResourceFit for one whose CR does
// not enable the requested resource), from the FailedScheduling events the in-process
// accord-scheduler wrote. It lives here to use this package's node, CR, NodeMetric and pod helpers.
func TestKubectlAccord(t *testing.T) {
	bin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/kubectl-accord")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	accord := func(args ...string) (string, int) {
		t.Helper()
		return harness.RunBinary(t, time.Minute, bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}

	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods: resource.MustParse("110"), exMem: resource.MustParse("1Gi")}
	nodes := testNodes(t, "kacc", alloc, 2)
	hot, off := nodes[0], nodes[1]
	createCR(t, hot, map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true, exMem: true},
		map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 60})
	createCR(t, off, map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true, exMem: false}, nil)
	setNodeMetric(t, hot, "3900m", "1Gi") // 97% cpu: over the sample configuration's 80% and LoadAware's default
	setNodeMetric(t, off, "400m", "1Gi")

	out, code := accord("nodes", hot, off)
	if code != 0 {
		t.Fatalf("nodes: exit %d\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], hot) || !strings.Contains(lines[1], string(exMem)) || !strings.HasSuffix(lines[1], "over cpu") ||
		!strings.Contains(lines[2], off) || !strings.HasSuffix(lines[2], "ok") {
		t.Errorf("nodes: want %s over cpu offering %s and %s ok:\n%s", hot, exMem, off, out)
	}

	ns := env.CreateNamespace(t, "kacc")
	startScheduler(t)
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	createPod(t, ns, "on-hot", small, onNode(hot))
	createPod(t, ns, "on-off", corev1.ResourceList{exMem: resource.MustParse("100Mi")}, onNode(off))
	waitFailedScheduling(t, ns, "on-hot", "over their cpu usage threshold")
	waitFailedScheduling(t, ns, "on-off", "do not enable resource "+string(exMem))

	out, code = accord("why", "on-hot", "-n", ns)
	if code != 0 || !strings.Contains(out, "Pending") || !strings.Contains(out, "refused by LoadAware: node(s) are over their cpu usage threshold") {
		t.Errorf("why on-hot: exit %d, want LoadAware named:\n%s", code, out)
	}
	out, code = accord("why", "on-off", "-n", ns)
	if code != 0 || !strings.Contains(out, "refused by NodeCRDResourceFit: node(s) do not enable resource "+string(exMem)) {
		t.Errorf("why on-off: exit %d, want NodeCRDResourceFit named:\n%s", code, out)
	}
	if out, code = accord("why", "no-such-pod", "-n", ns); code != 1 || !strings.Contains(out, "not found") {
		t.Errorf("why no-such-pod: exit %d, want 1:\n%s", code, out)
	}
}
