// Package simload names the node annotation that sets a playground node's simulated load, for the
// playground's simulated metrics server (which reads it) and for the console's playground controls
// (which write it). It imports nothing of the playground, so the console can use it without linking
// a control plane. It sits outside pkg/demo/playground so that nothing the console imports is the
// playground's (the playground imports the console).
package simload

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// BaselineUsageAnnotation holds, on a node, as a JSON ResourceList, the usage the simulated metrics
// server attributes to the node besides its pods (system daemons, noisy neighbours): the per-node
// override of a node's simulated load. Change it to make a node hot or cool, e.g.
//
//	kubectl annotate node node-3 --overwrite sim.accord.dev/baseline-usage='{"cpu":"1","memory":"4Gi"}'
const BaselineUsageAnnotation = "sim.accord.dev/baseline-usage"

// UsageAnnotation holds, on a pod, as a JSON ResourceList in the form of BaselineUsageAnnotation, the
// usage the simulated metrics server reports for the pod instead of its requests, e.g. a pod that
// requests 100m and uses a whole CPU:
//
//	metadata:
//	  annotations:
//	    sim.accord.dev/usage: '{"cpu":"1","memory":"256Mi"}'
//
// Resources it leaves out are reported at the pod's requests.
const UsageAnnotation = "sim.accord.dev/usage"

// PodUsage returns the usage a pod's UsageAnnotation sets (nil when it has none).
func PodUsage(pod *corev1.Pod) (corev1.ResourceList, error) {
	raw := pod.Annotations[UsageAnnotation]
	if raw == "" {
		return nil, nil
	}
	usage := corev1.ResourceList{}
	if err := json.Unmarshal([]byte(raw), &usage); err != nil {
		return nil, fmt.Errorf("pod %s/%s: annotation %s: %w", pod.Namespace, pod.Name, UsageAnnotation, err)
	}
	for name, q := range usage {
		if q.Sign() < 0 {
			return nil, fmt.Errorf("pod %s/%s: annotation %s: %s must not be negative", pod.Namespace, pod.Name, UsageAnnotation, name)
		}
	}
	return usage, nil
}

// SetBaseline writes a node's baseline usage annotation with a merge patch.
func SetBaseline(ctx context.Context, client kubernetes.Interface, node string, usage corev1.ResourceList) error {
	value, err := json.Marshal(usage)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{BaselineUsageAnnotation: string(value)}}})
	if err != nil {
		return err
	}
	if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "accord-console"}); err != nil {
		return fmt.Errorf("node %s: annotation %s: %w", node, BaselineUsageAnnotation, err)
	}
	return nil
}
