package console

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/accord-sched/accord/apis/config"
	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/manifests"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	"github.com/accord-sched/accord/pkg/simload"
)

func TestClientControls(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset(node("node-3", "8"))
	accord := accordfake.NewSimpleClientset(&schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: "node-5"},
		Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{"cpu": true, "example.com/memory": true}}})
	c := ClientControls{Kube: kube, Accord: accord}

	if err := c.SetResource(ctx, "node-5", "example.com/memory", false); err != nil {
		t.Fatal(err)
	}
	csr, err := accord.SchedulingV1alpha1().ClusterScopedResources().Get(ctx, "node-5", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f := csr.Spec.ResourcesFilter; f["example.com/memory"] || !f["cpu"] {
		t.Errorf("resourcesFilter after the toggle: %v, want example.com/memory off and cpu kept", f)
	}
	if err := c.SetResource(ctx, "node-9", "cpu", true); err == nil {
		t.Error("toggling a resource of a node without a ClusterScopedResource succeeded")
	}

	if err := c.SetLoad(ctx, "node-3", 25, 50); err != nil {
		t.Fatal(err)
	}
	n, err := kube.CoreV1().Nodes().Get(ctx, "node-3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n.Annotations[simload.BaselineUsageAnnotation], `{"cpu":"2","memory":"5Gi"}`; got != want {
		t.Errorf("baseline annotation %q, want %q (25%% of 8 CPUs, 50%% of 10Gi)", got, want)
	}
}

func TestLoadThresholds(t *testing.T) {
	th, err := LoadThresholds("", "")
	if def := config.DefaultUsageThresholds(); err != nil || !maps.Equal(th.Percent, def) || th.MaxAge != time.Duration(config.DefaultNodeMetricExpirationSeconds)*time.Second {
		t.Errorf("defaults: %+v, %v; want LoadAware's (%v, %ds)", th, err, def, config.DefaultNodeMetricExpirationSeconds)
	}
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, manifests.DeschedulerPlaygroundPolicy, 0o644); err != nil {
		t.Fatal(err)
	}
	sched := filepath.Join(dir, "scheduler.yaml")
	if err := os.WriteFile(sched, manifests.SchedulerConfig, 0o644); err != nil {
		t.Fatal(err)
	}
	th, err = LoadThresholds(policy, sched)
	// The policy's nodeMetricExpirationSeconds is the default (a generated region).
	if err != nil || th.Percent[corev1.ResourceCPU] != 80 || th.Percent[corev1.ResourceMemory] != 80 || th.MaxAge != time.Duration(config.DefaultNodeMetricExpirationSeconds)*time.Second {
		t.Errorf("the playground's policy: %+v, %v; want its LowNodeLoad highThresholds (80, 80) and %ds", th, err, config.DefaultNodeMetricExpirationSeconds)
	}
	if _, err := LoadThresholds(filepath.Join(dir, "missing.yaml"), ""); err == nil {
		t.Error("a missing policy file gave no error")
	}
}
