package kubectlaccord

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
)

var testNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func testNode(name, cpu, mem string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
	}}
}

func testMetric(name, cpu, mem string, age time.Duration) *slov1alpha1.NodeMetric {
	t := metav1.NewTime(testNow.Add(-age))
	return &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: slov1alpha1.NodeMetricStatus{
		UpdateTime: &t,
		NodeUsage:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
	}}
}

// runWith runs args against fake clients at testNow; it returns the exit code, stdout and stderr.
func runWith(t *testing.T, kube []runtime.Object, accord []runtime.Object, react func(*kubefake.Clientset, *accordfake.Clientset), args ...string) (int, string, string) {
	t.Helper()
	k := kubefake.NewClientset(kube...)
	a := accordfake.NewSimpleClientset(accord...)
	if react != nil {
		react(k, a)
	}
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	o := &Options{Streams: streams, Flags: genericclioptions.NewConfigFlags(true), now: func() time.Time { return testNow },
		NewClients: func() (*Clients, error) { return &Clients{Kube: k, Accord: a}, nil }}
	code := run(newCommand(o), streams, args)
	return code, out.String(), errOut.String()
}

func nodesFixture() ([]runtime.Object, []runtime.Object) {
	kube := []runtime.Object{testNode("node-1", "4", "8Gi"), testNode("node-2", "4", "8Gi"), testNode("node-3", "4", "8Gi")}
	accord := []runtime.Object{
		&schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: schedv1alpha1.ClusterScopedResourceSpec{
			ResourcesFilter: map[corev1.ResourceName]bool{"example.com/gpu": true, "example.com/fpga": false},
			ResourcesScore:  map[corev1.ResourceName]schedv1alpha1.ResourceScore{"example.com/gpu": 70}}},
		testMetric("node-1", "3800m", "1Gi", 10*time.Second), // 95% cpu: over LoadAware's default 65%
		testMetric("node-2", "400m", "1Gi", 10*time.Second),
		testMetric("node-3", "3900m", "1Gi", time.Hour), // stale: not judged
	}
	return kube, accord
}

func TestNodesTable(t *testing.T) {
	kube, accord := nodesFixture()
	code, out, errOut := runWith(t, kube, accord, nil, "nodes")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a header and 3 nodes, got:\n%s", out)
	}
	for i, want := range [][]string{
		{"NODE", "OFFERS", "LOAD"},
		{"node-1", "example.com/gpu", "cpu 95%/95%/65%!", "over cpu"},
		{"node-2", "<no CR>", "cpu 10%/10%/65%", "ok"},
		{"node-3", "<no CR>", "1h0m0s", "stale (not judged)"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q does not contain %q", i, lines[i], w)
			}
		}
	}
	if strings.Contains(lines[1], "fpga") {
		t.Errorf("node-1 offers example.com/fpga, which its filter sets to false: %q", lines[1])
	}
}

func TestNodesJSONAndWide(t *testing.T) {
	kube, accord := nodesFixture()
	code, out, _ := runWith(t, kube, accord, nil, "nodes", "node-1", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var got struct{ Nodes []NodeReport }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if len(got.Nodes) != 1 || !got.Nodes[0].Overloaded || got.Nodes[0].Resource != "cpu" || got.Nodes[0].Scores["example.com/gpu"] != 70 {
		t.Errorf("-o json node-1: %+v", got.Nodes)
	}
	code, out, _ = runWith(t, kube, accord, nil, "nodes", "-o", "wide")
	if code != ExitOK || !strings.Contains(out, "SCORES") || !strings.Contains(out, "example.com/gpu=70") {
		t.Errorf("-o wide: exit %d\n%s", code, out)
	}
	code, out, _ = runWith(t, kube, accord, nil, "nodes", "-o", "yaml")
	if code != ExitOK || !strings.Contains(out, "overResource: cpu") {
		t.Errorf("-o yaml: exit %d\n%s", code, out)
	}
}

func TestExitCodes(t *testing.T) {
	kube, accord := nodesFixture()
	if code, _, errOut := runWith(t, kube, accord, nil, "nodes", "-o", "table"); code != ExitUsage || !strings.Contains(errOut, "json, yaml, wide") {
		t.Errorf("-o table: exit %d, stderr %q; want %d", code, errOut, ExitUsage)
	}
	if code, _, _ := runWith(t, kube, accord, nil, "nodes", "--no-such-flag"); code != ExitUsage {
		t.Errorf("unknown flag: exit %d, want %d", code, ExitUsage)
	}
	if code, _, _ := runWith(t, kube, accord, nil, "frobnicate"); code != ExitUsage {
		t.Errorf("unknown command: exit %d, want %d", code, ExitUsage)
	}
	if code, _, errOut := runWith(t, kube, accord, nil, "nodes", "node-9"); code != ExitError || !strings.Contains(errOut, "node-9") {
		t.Errorf("missing node: exit %d, stderr %q; want %d", code, errOut, ExitError)
	}
	forbid := func(_ *kubefake.Clientset, a *accordfake.Clientset) {
		a.PrependReactor("list", "nodemetrics", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrorsForbidden("nodemetrics")
		})
	}
	code, _, errOut := runWith(t, kube, accord, forbid, "nodes")
	if code != ExitForbidden || !strings.Contains(errOut, `RBAC verb "list" on nodemetrics.slo.accord.dev`) {
		t.Errorf("forbidden: exit %d, stderr %q; want %d naming the verb and resource", code, errOut, ExitForbidden)
	}
}

func apierrorsForbidden(resource string) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: slov1alpha1.GroupName, Resource: resource}, "", errors.New("RBAC: access denied"))
}

// TestNodesSchedulerConfigThresholds: --scheduler-config alone judges with its LoadAware args, so a
// node at 95% cpu is within a 97% threshold.
func TestNodesSchedulerConfigThresholds(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: accord-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: LoadAware
  pluginConfig:
  - name: LoadAware
    args:
      usageThresholds: {cpu: 97}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	kube, accord := nodesFixture()
	code, out, errOut := runWith(t, kube, accord, nil, "nodes", "node-1", "--scheduler-config", cfg)
	if code != ExitOK || !strings.Contains(out, "cpu 95%/95%/97%") || !strings.HasSuffix(strings.TrimSpace(out), "ok") {
		t.Errorf("exit %d, want node-1 ok under 97%%:\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runWith(t, kube, accord, nil, "nodes", "--scheduler-config", cfg+".missing"); code != ExitUsage || !strings.Contains(errOut, "--scheduler-config") {
		t.Errorf("missing config: exit %d, stderr %q; want %d naming the flag", code, errOut, ExitUsage)
	}
}
