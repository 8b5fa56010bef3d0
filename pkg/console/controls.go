package console

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	"github.com/accord-sched/accord/pkg/simload"
)

// Controls are the playground's write controls. The console serves them only when it has some
// (playground mode); otherwise their endpoints do not exist.
type Controls interface {
	// SetResource enables or disables a resource in a node's ClusterScopedResource.
	SetResource(ctx context.Context, node, resource string, enabled bool) error
	// SetLoad sets a node's simulated baseline load, in percent of its allocatable cpu and memory.
	SetLoad(ctx context.Context, node string, cpuPercent, memoryPercent int64) error
}

// fieldManager names the console's writes.
const fieldManager = "accord-console"

// ClientControls writes through the API: a merge patch of the ClusterScopedResource's
// resourcesFilter, and the node's simload.BaselineUsageAnnotation (what the playground's simulated
// metrics server reads).
type ClientControls struct {
	Kube   kubernetes.Interface
	Accord accordclient.Interface
}

var _ Controls = ClientControls{}

// SetResource patches spec.resourcesFilter[resource] of the node's ClusterScopedResource.
func (c ClientControls) SetResource(ctx context.Context, node, res string, enabled bool) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"resourcesFilter": map[string]bool{res: enabled}}})
	if err != nil {
		return err
	}
	_, err = c.Accord.SchedulingV1alpha1().ClusterScopedResources().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		return fmt.Errorf("ClusterScopedResource %s: spec.resourcesFilter[%s]: %w", node, res, err)
	}
	return nil
}

// SetLoad writes the node's baseline usage as the given shares of its allocatable.
func (c ClientControls) SetLoad(ctx context.Context, node string, cpuPercent, memoryPercent int64) error {
	n, err := c.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	cpu := n.Status.Allocatable.Cpu().MilliValue() * cpuPercent / 100
	mem := n.Status.Allocatable.Memory().Value() * memoryPercent / 100
	usage := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
	}
	return simload.SetBaseline(ctx, c.Kube, node, usage)
}
